"""Runs suites in worker processes, merges them into pyperf JSON, keeps the manifest current.

Interruptions (Ctrl-C, SIGTERM) stop the current worker, keep every finished suite, and mark
the run incomplete with what is missing; `python -m bench run --resume RUN` finishes it.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import analysis
from bench.config import RunConfig
from bench.results import (
    SCHEMA,
    BenchValues,
    dump_pyperf,
    environment,
    read_json,
    strategy_metadata,
    to_pyperf_suite,
    write_json,
)
from bench.timing import resolve_device, wall_s
from strategies import resolve

# Rough relative cost of each suite, for the ETA before any suite has finished.
_SUITE_WEIGHT = {"lookup": 1.0, "step": 1.0, "gc": 1.0, "scaling": 1.0}


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


def workers_for(config: RunConfig, suite: str) -> int:
    return {
        "gc": config.gc_workers,
        "scaling": config.scaling_workers,
        "step": config.step_workers,
    }.get(suite, config.workers)


@dataclass
class Progress:
    """Prints `[suite i/n] label  (x% of run, ETA ...)` lines to stderr."""

    suites: list[str]
    stream: Any = field(default_factory=lambda: sys.stderr)
    started: float = field(default_factory=wall_s)
    done_weight: float = 0.0

    def total_weight(self) -> float:
        return sum(_SUITE_WEIGHT[s] for s in self.suites)

    def update(self, suite: str, fraction_of_suite: float, label: str) -> None:
        frac = (self.done_weight + _SUITE_WEIGHT[suite] * fraction_of_suite) / self.total_weight()
        elapsed = wall_s() - self.started
        eta = f"ETA {_fmt_s(elapsed * (1 - frac) / frac)}" if frac > 0.02 else "ETA --"
        idx = self.suites.index(suite) + 1
        print(
            f"[{suite} {idx}/{len(self.suites)}] {label:<34} {frac:6.1%} of run, {eta}",
            file=self.stream,
            flush=True,
        )

    def suite_done(self, suite: str) -> None:
        self.done_weight += _SUITE_WEIGHT[suite]


def _fmt_s(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


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
    env = {**os.environ, "PYTHONHASHSEED": str(index + 1)}
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


def worker_jobs(config: RunConfig, suite: str, n_workers: int) -> list[tuple[int, RunConfig]]:
    """(worker index, configuration) per worker process. The gc suite needs one strategy's
    heap alone: one process per strategy per repetition, strategies in a seeded shuffled
    order each repetition. Other suites: every strategy in each process, interleaved."""
    if suite == "step":
        return [(w, replace(config, values=config.step_values)) for w in range(n_workers)]
    if suite != "gc":
        return [(w, config) for w in range(n_workers)]
    names = [s.name for s in resolve(config.strategies, external=config.external)]
    rng = random.Random(config.seed)
    jobs = []
    for w in range(n_workers):
        order = list(names)
        rng.shuffle(order)
        jobs += [
            (w, replace(config, strategies=(name,), external=_external_for(config, name)))
            for name in order
        ]
    return jobs


def _external_for(config: RunConfig, name: str) -> tuple[str, ...]:
    """Only the external spec that defines `name` (a worker resolves just its strategy)."""
    for spec in config.external:
        if resolve_external_name(spec) == name:
            return (spec,)
    return ()


def resolve_external_name(spec: str) -> str:
    from strategies import load_external

    return load_external(spec).name


def run_suite(config: RunConfig, suite: str, run_dir: Path, progress: Progress) -> dict[str, Any]:
    """All workers of one suite; writes <suite>.json and <suite>.extra.json; returns status."""
    n_workers = workers_for(config, suite)
    merged: dict[str, list[BenchValues]] = {}
    units: dict[str, str] = {}
    failures: dict[str, str] = {}
    extras: list[dict[str, Any]] = []
    worker_errors: list[str] = []
    t0 = wall_s()
    jobs = worker_jobs(config, suite, n_workers)
    with tempfile.TemporaryDirectory(prefix=f".{suite}-", dir=run_dir) as tmp:
        for j, (w, job_config) in enumerate(jobs):
            cfg_path = Path(tmp) / f"config{j}.json"
            cfg_path.write_text(job_config.to_json(), encoding="utf-8")
            out_path = Path(tmp) / f"worker{j}.json"

            def relay(frac: float, label: str, j: int = j) -> None:
                progress.update(
                    suite, (j + frac) / len(jobs), f"{label} (worker {j + 1}/{len(jobs)})"
                )

            rc, tail = run_worker(suite, cfg_path, out_path, w, relay)
            if rc != 0 or not out_path.exists():
                last = tail.strip().splitlines()[-1] if tail.strip() else f"exit status {rc}"
                worker_errors.append(f"worker {j} failed: {last}")
                continue
            data = read_json(out_path)
            for name, b in data["benchmarks"].items():
                if not b["values"]:
                    continue
                merged.setdefault(name, []).append(
                    BenchValues(name, b["values"], b["warmups"], b["loops"], b["unit"])
                )
                units[name] = b["unit"]
            failures.update(data["failures"])
            extras.append(data["extra"])
    env_md = read_json(run_dir / "manifest.json")["environment"]
    files: dict[str, str] = {}
    if merged:
        md = {**env_md, "gc_mode": "enabled"}
        dump_pyperf(to_pyperf_suite(merged, md), run_dir / f"{suite}.json")
        files["pyperf"] = f"{suite}.json"
    values = {n: [v for bv in runs for v in bv.values] for n, runs in merged.items()}
    extra = summarize_extras(suite, values, units, extras, config)
    write_json(run_dir / f"{suite}.extra.json", extra)
    files["extra"] = f"{suite}.extra.json"
    if worker_errors and not merged:
        status = "failed"
    elif failures or worker_errors:
        status = "partial"
    else:
        status = "done"
    return {
        "status": status,
        "files": files,
        "failures": failures,
        "worker_errors": worker_errors,
        "wall_s": round(wall_s() - t0, 2),
        "workers": n_workers,
    }


def summarize_extras(
    suite: str,
    values: dict[str, list[float]],
    units: dict[str, str],
    extras: list[dict[str, Any]],
    config: RunConfig,
) -> dict[str, Any]:
    summaries = analysis.summarize(values, units, baseline=config.baseline)
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "suite": suite,
        "baseline": config.baseline,
        "summaries": [s.to_dict() for s in summaries],
    }
    if suite in ("step", "gc", "scaling"):
        per_step: dict[str, dict[str, list[int]]] = {}
        sources = []
        for e in extras:
            if suite == "gc":
                sources += [m.get("steps", {}) for m in e.get("modes", {}).values()]
            else:
                sources.append(e.get("steps", {}))
        for src in sources:
            for name, kept in src.items():
                acc = per_step.setdefault(name, {"host_ns": [], "device_ns": [], "gc": []})
                for key in acc:
                    acc[key].extend(kept.get(key, []))
        out["percentiles"] = {
            name: {
                **analysis.step_percentiles(d["host_ns"], d["gc"]),
                "device_p50_ns": analysis.stats.median(d["device_ns"])
                if any(d["device_ns"])
                else None,
            }
            for name, d in per_step.items()
            if d["host_ns"]
        }
        # keep raw per-step host latencies for plots (bounded: at most 5,000 per benchmark)
        out["step_host_ns"] = {name: d["host_ns"][:5000] for name, d in per_step.items()}
    if suite == "step":
        out["pattern_ratios"] = analysis.pattern_ratios(values)
    if suite == "scaling":
        out["fits"] = analysis.scaling_fits(values)
        out["pattern"] = config.scaling_pattern
    if suite == "gc":
        modes: dict[str, Any] = {}
        for e in extras:
            for mode, m in e.get("modes", {}).items():
                acc = modes.setdefault(mode, {"per_benchmark": {}, "tracked_objects_at_start": []})
                acc["tracked_objects_at_start"].extend(m["tracked_objects_at_start"])
                for name, pb in m["per_benchmark"].items():
                    tot = acc["per_benchmark"].setdefault(
                        name,
                        {
                            "collections": [0, 0, 0],
                            "pause_ns": [0, 0, 0],
                            "max_pause_ns": 0,
                            "steps": 0,
                        },
                    )
                    tot["collections"] = [
                        a + b for a, b in zip(tot["collections"], pb["collections"], strict=True)
                    ]
                    tot["pause_ns"] = [
                        a + b for a, b in zip(tot["pause_ns"], pb["pause_ns"], strict=True)
                    ]
                    tot["max_pause_ns"] = max(tot["max_pause_ns"], pb["max_pause_ns"])
                    tot["steps"] += pb["steps"]
        out["gc_rates"] = {mode: analysis.gc_rates(m["per_benchmark"]) for mode, m in modes.items()}
        out["tracked_objects_at_start"] = {
            m: v["tracked_objects_at_start"] for m, v in modes.items()
        }
        memory: dict[str, Any] = {}
        for e in extras:  # one strategy per gc worker: merge their memory figures
            memory.update(e.get("memory", {}))
        out["memory"] = memory
    return out


def start_run(config: RunConfig, run_dir: Path, command: str) -> dict[str, Any]:
    device = resolve_device(config.device)
    strategies = resolve(config.strategies, external=config.external)
    manifest = {
        "schema": SCHEMA,
        "created": wall_s(),
        "command": command,
        "config": config.as_dict(),
        "environment": environment(device),
        "strategies": strategy_metadata(strategies),
        "suites": {s: {"status": "pending"} for s in config.suites},
        "status": "running",
    }
    write_json(run_dir / "manifest.json", manifest)
    return manifest


def execute(run_dir: Path, manifest: dict[str, Any], config: RunConfig) -> dict[str, Any]:
    """Run every suite not yet done; the manifest on disk is current after each suite."""
    todo = [
        s
        for s in config.suites
        if manifest["suites"].get(s, {}).get("status") not in ("done", "partial")
    ]
    progress = Progress(suites=todo)
    manifest["status"] = "running"
    write_json(run_dir / "manifest.json", manifest)
    try:
        with _signals_raise():
            for suite in todo:
                manifest["suites"][suite] = {"status": "running"}
                write_json(run_dir / "manifest.json", manifest)
                manifest["suites"][suite] = run_suite(config, suite, run_dir, progress)
                progress.suite_done(suite)
                write_json(run_dir / "manifest.json", manifest)
    except Interrupted as exc:
        finish(run_dir, manifest, interrupted=exc.signum)
        raise
    finish(run_dir, manifest)
    return manifest


def missing_suites(manifest: dict[str, Any]) -> list[str]:
    return [
        s for s, st in manifest["suites"].items() if st.get("status") not in ("done", "partial")
    ]


def finish(run_dir: Path, manifest: dict[str, Any], interrupted: int | None = None) -> None:
    missing = missing_suites(manifest)
    for s in missing:
        if manifest["suites"][s].get("status") == "running":
            manifest["suites"][s] = {"status": "interrupted"}
    if missing:
        manifest["status"] = "incomplete"
        manifest["missing"] = missing
    else:
        failed = any(st.get("status") == "partial" for st in manifest["suites"].values())
        manifest["status"] = "failed" if failed else "complete"
        manifest.pop("missing", None)
    if interrupted is not None:
        manifest["interrupted_by"] = signal.Signals(interrupted).name
    write_json(run_dir / "manifest.json", manifest)
