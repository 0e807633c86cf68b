"""Runs suites in worker processes, merges them into pyperf JSON, keeps the manifest current.

Interruptions (Ctrl-C, SIGTERM) stop the current worker, keep every finished suite, and mark
the run incomplete with what is missing; `python -m bench run --resume RUN` finishes it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench import suites
from bench.base.names import CaseKey
from bench.base.storage import read_json, write_json
from bench.base.timing import wall_s
from bench.config.runconfig import RunConfig
from bench.core.scenarios import format_value
from bench.core.sglang_req import sglang_version
from bench.orchestration.progress import Progress
from bench.runformat.envinfo import environment
from bench.runformat.pyperf_io import BenchValues, dump_pyperf, to_pyperf_suite
from bench.runformat.schema import (
    MANIFEST,
    SCHEMA,
    CaseMeta,
    Environment,
    ExtraFile,
    FamilyRecord,
    Manifest,
    StrategyMeta,
    SuiteExtras,
    SuiteRecord,
    decode,
    extra_file,
    pyperf_file,
)
from bench.suites.spec import Job
from strategies import Strategy


class Interrupted(Exception):
    """SIGINT/SIGTERM arrived; partial results are already on disk."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    def handler(signum: int, _frame: object) -> None:
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


# Study knob (python -m bench.commands.variation): one hash seed for every worker.
FIXED_HASH_SEED_ENV = "REQSTATE_FIXED_HASH_SEED"


def run_worker(
    suite: str,
    config_path: Path,
    out_path: Path,
    index: int,
    on_progress: Callable[[float, str], None],
    *,
    cwd: Path | None = None,
) -> tuple[int, str]:
    """Run one worker (in `cwd`'s source tree when given: `-m` puts it first on sys.path);
    relay its progress; return (exit code, tail of its stderr)."""
    cmd = [sys.executable, "-m", "bench.worker", suite, str(config_path), str(out_path), str(index)]
    # each worker its own hash seed (pyperf's practice); the variation study fixes one for all
    seed = os.environ.get(FIXED_HASH_SEED_ENV) or str(index + 1)
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd
    )
    tail: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("@progress "):
                _, frac, label = line.rstrip("\n").split(" ", 2)
                on_progress(float(frac), label)
            else:
                tail = [*tail[-40:], line.rstrip("\n")]
        rc = proc.wait()
    except BaseException:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise
    return rc, "\n".join(tail)


@dataclass
class SuiteState:
    """What a suite's workers have produced so far (an adaptive policy reads it)."""

    suite: str
    merged: dict[str, list[BenchValues]] = field(default_factory=dict)  # per worker process
    extras: SuiteExtras = field(default_factory=SuiteExtras)  # of the suite's EXTRAS type
    failures: dict[str, str] = field(default_factory=dict)
    worker_wall_s: list[float] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)  # every job run, in order
    started: float = field(default_factory=wall_s)

    @property
    def elapsed_s(self) -> float:
        return wall_s() - self.started


class RoundPolicy(Protocol):
    """Decides a suite's further rounds after its plan (bench.orchestration.adaptive under --budget)."""

    def begin(self, suite: str) -> float | None:
        """The suite is about to run: its share of the budget in seconds (None: no budget)."""

    def further(self, state: SuiteState) -> tuple[list[Job], str]:
        """The next round's worker jobs (none: the suite is finished) and a progress label."""

    def families(self, state: SuiteState) -> dict[str, FamilyRecord]:
        """Per family, its rounds, precision reached and why it stopped (once finished)."""


def run_suite(
    config: RunConfig,
    suite: str,
    run_dir: Path,
    progress: Progress,
    policy: RoundPolicy | None = None,
) -> SuiteRecord:
    """All workers of one suite (its plan, then any further rounds the policy asks for);
    writes <suite>.json and <suite>.extra.json; returns its record."""
    spec = suites.get(suite)
    state = SuiteState(suite, extras=suites.get(suite).extras())
    worker_errors: list[str] = []
    budget_s = policy.begin(suite) if policy is not None else None
    jobs = spec.plan(config)
    with tempfile.TemporaryDirectory(prefix=f".{suite}-", dir=run_dir) as tmp:
        label = ""
        while jobs:
            first = len(state.jobs)
            state.jobs += jobs
            for j, job in enumerate(jobs, start=first):
                _run_job(suite, job, j, Path(tmp), state, worker_errors, progress, label)
            jobs, label = policy.further(state) if policy is not None else ([], "")
    families = policy.families(state) if policy is not None else {}
    environment = Manifest.read(run_dir).environment.to_json()
    files: dict[str, str] = {}
    if state.merged:
        dump_pyperf(to_pyperf_suite(state.merged, environment), run_dir / pyperf_file(suite))
        files["pyperf"] = pyperf_file(suite)
    extra = ExtraFile(schema=SCHEMA, suite=suite, extras=state.extras)
    write_json(run_dir / extra_file(suite), dataclasses.asdict(extra))
    files["extra"] = extra_file(suite)
    if worker_errors and not state.merged:
        status = "failed"
    elif state.failures or worker_errors:
        status = "partial"
    else:
        status = "done"
    return SuiteRecord(
        status=status,
        files=files,
        failures=state.failures,
        worker_errors=worker_errors,
        wall_s=round(state.elapsed_s, 2),
        workers=len({job.worker_index for job in state.jobs}),
        worker_wall_s=state.worker_wall_s,
        budget_s=None if budget_s is None else round(budget_s, 1),
        families=families,
    )


def _run_job(
    suite: str,
    job: Job,
    j: int,
    tmp: Path,
    state: SuiteState,
    worker_errors: list[str],
    progress: Progress,
    label: str,
) -> None:
    """One worker process; its values, extras and failures folded into the suite's state."""
    cfg_path = tmp / f"config{j}.json"
    cfg_path.write_text(job.config.to_json(), encoding="utf-8")
    out_path = tmp / f"worker{j}.json"
    planned = len(state.jobs)

    def relay(frac: float, text: str) -> None:
        where = f"worker {j + 1}/{planned}" + (f", {label}" if label else "")
        progress.update(suite, min(1.0, (j + frac) / planned), f"{text} ({where})")

    started = wall_s()
    rc, tail = run_worker(suite, cfg_path, out_path, job.worker_index, relay)
    state.worker_wall_s.append(round(wall_s() - started, 2))
    if rc != 0 or not out_path.exists():
        last = tail.strip().splitlines()[-1] if tail.strip() else f"exit status {rc}"
        worker_errors.append(f"worker {j} failed: {last}")
        return
    data = read_json(out_path)
    for name, b in data["benchmarks"].items():
        if not b["values"]:
            continue
        state.merged.setdefault(name, []).append(
            BenchValues(
                name,
                b["values"],
                b["warmups"],
                b["loops"],
                b["unit"],
                b["gc_mode"],
                worker=job.worker_index,
            )
        )
    state.failures.update(data["failures"])
    state.extras.merge(decode(type(state.extras), data["extra"], out_path, "worker extras"))


def strategy_metadata(strategies: list[Strategy]) -> dict[str, StrategyMeta]:
    return {
        s.name: StrategyMeta(
            description=s.description,
            source=s.source_path,
            source_sha256=s.source_sha256,
            external=s.external,
            thread_safe_create=s.thread_safe_create,
            holds_state=s.holds_state,
            twin_of=s.twin_of,
            target=s.is_target,
            request_model=s.request_model,
        )
        for s in strategies
    }


def case_metadata(config: RunConfig) -> list[CaseMeta]:
    """Every scheduler case the run measures, as it ran: preset, values, their sources, and
    what --set / --sweep changed (the report says 'modified preset')."""

    out: dict[str, CaseMeta] = {}
    for scenario, extra in config.all_cases():
        key = CaseKey.of(scenario.name, **extra).text
        out.setdefault(
            key,
            CaseMeta(
                key=key,
                scenario=scenario.name,
                description=scenario.description,
                modified=list(scenario.modified),
                values={
                    k: v if isinstance(v, (int, float, bool)) else format_value(v)
                    for k, v in scenario.values().items()
                },
                sources={
                    k: ("set on the command line" if k in scenario.modified else src)
                    for k, src in scenario.sources.items()
                },
            ),
        )
    return list(out.values())


def write_manifest(run_dir: Path, manifest: Manifest) -> None:
    write_json(run_dir / MANIFEST, manifest.to_json())


def _sglang_version() -> str | None:

    return sglang_version()


def start_run(
    config: RunConfig,
    run_dir: Path,
    command: str,
    *,
    targets: dict[str, dict[str, Any]] | None = None,
) -> Manifest:

    device, strategies = config.subjects()
    manifest = Manifest(
        schema=SCHEMA,
        created=wall_s(),
        command=command,
        config=config.flat(),
        environment=Environment(
            **environment(device),
            request_class=config.requests.label,
            sglang=_sglang_version() if config.request_class == "sglang" else None,
        ),
        strategies=strategy_metadata(strategies),
        targets=targets or {},
        cases=case_metadata(config),
        suites={s: SuiteRecord() for s in config.suites},
        status="running",
    )
    write_manifest(run_dir, manifest)
    return manifest


def execute(
    run_dir: Path, manifest: Manifest, config: RunConfig, policy: RoundPolicy | None = None
) -> Manifest:
    """Run every suite not yet done (with the policy's further rounds); the manifest on disk is
    current after each suite."""
    todo = suites.run_order(
        s for s in config.suites if not manifest.suites.get(s, SuiteRecord()).finished
    )
    progress = Progress(suites=todo)
    manifest.status = "running"
    write_manifest(run_dir, manifest)
    try:
        with _signals_raise():
            for suite in todo:
                manifest.suites[suite] = SuiteRecord(status="running")
                write_manifest(run_dir, manifest)
                manifest.suites[suite] = run_suite(config, suite, run_dir, progress, policy)
                progress.suite_done(suite)
                write_manifest(run_dir, manifest)
    except Interrupted as exc:
        finish(run_dir, manifest, interrupted=exc.signum)
        raise
    finish(run_dir, manifest)
    return manifest


def finish(run_dir: Path, manifest: Manifest, interrupted: int | None = None) -> None:
    missing = manifest.missing_suites()
    for s in missing:
        if manifest.suites[s].status == "running":
            manifest.suites[s] = SuiteRecord(status="interrupted")
    if missing:
        manifest.status = "incomplete"
        manifest.missing = missing
    else:
        failed = any(st.status == "partial" for st in manifest.suites.values())
        manifest.status = "failed" if failed else "complete"
        manifest.missing = []
    if interrupted is not None:
        manifest.interrupted_by = signal.Signals(interrupted).name
    write_manifest(run_dir, manifest)
