"""`python -m bench run --real SRC[,SRC]`: the revisions' own schedulers, measured.

Each process is one driver (bench/real/driver/) in the revision's environment, building one
preset's scheduler and measuring it; a round measures every (revision, preset) once, in a
seeded shuffled order, so two revisions' processes of a round run moments apart over the same
request stream (a comparison pairs them). The plan is `min_rounds` rounds; then, once, each
preset's rounds are fixed from the spread those showed (bench.real.report.rounds_needed, Stein's
two-stage rule) for a 95% half-width of `precision_pct`: of its figure for one revision, of each
paired change against the first for several (it aimed at each revision's absolute figure
before, and stopped at the first look that met it). While the budget lasts, the presets still
short of their rounds get them, the least precise first.

Every process's output is written into the run folder as it ends (raw/), with the manifest
updated, so an interrupted run keeps what it measured and reports it; the pyperf file, the
report and summary.md are built from the raw outputs at the end (bench.real.report).
"""

from __future__ import annotations

import os
import platform
import random
import shlex
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from dataclasses import replace as copy
from pathlib import Path
from typing import Any

from bench.base.errors import EXIT_FAILED, EXIT_OK, UsageError
from bench.base.storage import check_free_space, new_run_dir, write_json
from bench.base.timing import wall_s
from bench.core.hotpath import HOT_PATH
from bench.real import capabilities, freqmap, protocol, report, venv
from bench.real import presets as rp
from bench.real.driver.inject import MODULE
from bench.real.folder import MANIFEST, RAW, SCHEMA, raw_path
from bench.real.presets import RealPreset
from bench.real.process import run_lockstep, run_one
from bench.real.report import precision, rounds_needed
from bench.real.source import Source, parse
from strategies import resolve

DEFAULT_BUDGET_S = 540.0
DEFAULT_PRECISION_PCT = 10.0
MIN_ROUNDS = 3
MAX_ROUNDS = 40


def progress(msg: str) -> None:
    print(f"[real] {msg}", file=sys.stderr, flush=True)


@dataclass
class Revision:
    """A revision and its environment (bench/real/venv.py)."""

    source: Source
    env: venv.Env
    tree: Path | None
    built_now: bool
    home: str | None = None  # a built-in strategy injected as its PD hidden state home

    @property
    def name(self) -> str:
        return self.source.name + (f".{self.home}" if self.home else "")

    @property
    def label(self) -> str:
        return self.source.label + (f" with {self.home}" if self.home else "")

    def package_root(self) -> Path | None:
        """The revision's sglang folder: in its exported tree, or installed in its
        environment; None where neither is here (an interpreter given with --real-python)."""
        if self.tree is not None:
            return self.tree / "sglang"
        for site in self.env.path.glob("lib/python*/site-packages"):
            if (site / "sglang").is_dir():
                return site / "sglang"
        return None

    def has_side_table(self) -> bool:
        """Whether the revision keeps PD hidden state behind a getter the driver can replace
        (bench/real/driver/inject.py): the module is in its tree or its installed package."""
        rel = Path("sglang", *inject_module_path())
        if self.tree is not None:
            return (self.tree / rel).is_file()
        site = list(self.env.path.glob("lib/python*/site-packages"))
        return any((s / rel).is_file() for s in site)

    def meta(self) -> dict[str, Any]:
        return {
            "spec": self.label,
            "home": self.home or "as written",
            "kind": self.source.kind,
            "commit": self.source.commit,
            "version": self.source.version,
            "environment": self.env.key,
            "environment_size_bytes": self.env.size_bytes,
            "environment_build_s": self.env.build_s,
            "built_now": self.built_now,
            "stubs": self.env.stubs,
        }


def inject_module_path() -> tuple[str, ...]:

    *folders, last = MODULE.split(".")[1:]
    return (*folders, f"{last}.py")


def with_homes(revisions: list[Revision], homes: list[str]) -> tuple[list[Revision], list[str]]:
    """Each revision that keeps PD hidden state in a side table, also with every named built-in
    strategy as its home; (the revisions, a note per revision that cannot take one)."""

    known = {s.name for s in resolve()}
    for h in homes:
        if h not in known:
            raise UsageError(
                f"--real-home {h}: unknown strategy; choose from {', '.join(sorted(known))}"
            )
    out, notes = [], []
    for rev in revisions:
        out.append(rev)
        if not homes:
            continue
        if not rev.has_side_table():
            notes.append(f"{rev.source.label}: no PD hidden side table, measured as written only")
            continue
        out += [copy(rev, home=h) for h in homes]
    return out, notes


def prepare(
    specs: list[str], interpreter: str | None = None, presets: Sequence[RealPreset] = ()
) -> list[Revision]:
    """Every revision parsed (all of them before any is built: a typo fails at once), checked
    for what `presets` ask of it (bench.real.capabilities: a git revision before its
    environment is built, a release once it is installed), and its environment built or found
    (`interpreter`: the user's own, for every revision)."""
    sources = [parse(s) for s in specs]
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise UsageError(f"the same revision twice: {', '.join(names)}")
    for s in sources:
        if s.kind == "git":
            capabilities.check(s.label, capabilities.files_of(s), presets)
    out: list[Revision] = []
    for s in sources:
        t0 = wall_s()
        # one job, one set of resolved versions: later builds take the first's for what their
        # own lists leave unpinned
        align = out[0].env.installed if out else None
        env, tree, built = venv.ensure(s, progress, interpreter=interpreter, align=align)
        if built:
            progress(
                f"{s.label}: environment built in {wall_s() - t0:.0f} s, "
                f"{env.size_bytes / 1e9:.2f} GB ({len(env.installed)} packages)"
            )
        rev = Revision(s, env, tree, built)
        if s.kind != "git":
            capabilities.check(s.label, capabilities.files_of(s, rev.package_root()), presets)
        out.append(rev)
    for rev in out:
        for preset in presets:
            if preset.spec is not None:
                check_speculation(rev, preset)
    return out


def check_speculation(rev: Revision, preset: RealPreset) -> None:
    """Build the revision's scheduler as the preset asks, and run no iteration: a speculative
    configuration its own checks refuse, or resolve to other values than the preset's (its
    accept length then drawn against the wrong number of drafts), is refused in one line before
    anything is measured or written (~15 s a revision and preset here)."""
    progress(f"{rev.source.label}: checking {preset.name}'s speculative configuration")
    out = run_one(rev.env, rev.tree, job(rev, preset, seed=0, worker=0, mode="check"), timeout=600)
    where = f"{rev.source.label}: preset {preset.name}"
    if not out.get("ok"):
        raise UsageError(f"{where}: the revision refuses it: {out.get('message', 'failed')}")
    spec = preset.spec
    assert spec is not None
    resolved = out.get("spec_resolved") or {}
    asked = spec.server()
    for key in ("speculative_num_draft_tokens", "speculative_num_steps", "speculative_eagle_topk"):
        got = resolved.get(key)
        if key in asked and got is not None and int(got) != int(asked[key]):
            raise UsageError(
                f"{where}: the revision resolves {key} to {got}, not the preset's {asked[key]} "
                f"(--set {_SET_NAME[key]}={got} asks for what it runs)"
            )


_SET_NAME = {
    "speculative_num_draft_tokens": "spec_draft_tokens",
    "speculative_num_steps": "spec_steps",
    "speculative_eagle_topk": "spec_topk",
}


def job(
    rev: Revision,
    preset: RealPreset,
    *,
    seed: int,
    worker: int,
    mode: str = "measure",
    coverage: bool = False,
) -> dict[str, Any]:
    """The driver's job for one process (bench.real.protocol)."""

    return {
        "mode": mode,
        "check_defined": [h.name for h in HOT_PATH] if mode == "count" else [],
        "coverage": coverage,
        "stubs": rev.env.stubs,
        "env": {**protocol.DRIVER_ENV, **preset.env(), **protocol.jit_env(preset)},
        "context_len": preset.context_len,
        "server": preset.server(seed),
        "workload": preset.workload(seed, protocol.VOCAB_SIZE),
        "plan": preset.plan(),
        "hash_seed": worker + 1,
        "inject": f"strategies.{rev.home}" if rev.home else None,
        "tokenizer_cache": str(protocol.tokenizer_cache()),
        "hidden_width": preset.hidden_width,
        "transfer": preset.disaggregation == "prefill",
        "spec": preset.spec.job() if preset.spec is not None else None,
        "claim_amx": preset.spec is not None and preset.spec.draft and not preset.spec.dspark,
    }


@dataclass
class RealRun:
    """What a real run measures and how long it may take."""

    specs: list[str]
    presets: list[RealPreset]
    budget_s: float | None = DEFAULT_BUDGET_S
    precision_pct: float = DEFAULT_PRECISION_PCT
    min_rounds: int = MIN_ROUNDS
    seed: int = 0
    count: bool = True  # one untimed counting pass per revision (the frequency map)
    command: str = ""
    output_dir: Path = Path("reports")
    interpreter: str | None = None  # --real-python: the user's environment, nothing built
    homes: list[str] = field(default_factory=list)  # --real-home: built-in strategies injected
    changed: dict[str, Any] = field(default_factory=dict)  # --set on every preset


def machine() -> dict[str, Any]:

    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    return {
        "cpu": cpu or platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": venv.TORCH_SPEC.partition("==")[2] or venv.TORCH_SPEC,
        "platform": platform.platform(terse=True),
    }


def execute(cfg: RealRun) -> tuple[Path, int]:
    """Measure; returns (the run folder, exit status). Interrupted: the folder keeps every
    finished process and says what is missing."""

    revisions, notes = with_homes(prepare(cfg.specs, cfg.interpreter, cfg.presets), cfg.homes)
    for note in notes:
        progress(note)
    if len(revisions) > 1:  # measured together, in turns (bench.real.process)
        cfg = replace(cfg, presets=[p.in_lockstep(cfg.changed) for p in cfg.presets])
    run_dir = new_run_dir(cfg.output_dir)
    check_free_space(run_dir)
    manifest: dict[str, Any] = {
        "schema": SCHEMA,
        "command": cfg.command,
        "created": wall_s(),
        "status": "running",
        "revisions": {r.name: r.meta() for r in revisions},
        "order": [r.name for r in revisions],  # the first is the baseline of every difference
        "presets": {p.name: p.meta(cfg.changed) for p in cfg.presets},
        "lockstep": len(revisions) > 1,
        "budget_s": cfg.budget_s,
        "precision_pct": cfg.precision_pct,
        "seed": cfg.seed,
        "machine": machine(),
        "processes": [],
        "failures": {},
    }
    write_json(run_dir / MANIFEST, manifest)
    status = "complete"

    def terminated(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        _measure(cfg, revisions, run_dir, manifest)
        if cfg.count:
            _count(cfg, revisions, run_dir, manifest)
    except KeyboardInterrupt:
        status = "incomplete"
        manifest["interrupted"] = True
        progress("interrupted: the finished processes are kept")
    finally:
        signal.signal(signal.SIGTERM, previous)
    if manifest["failures"]:
        status = "failed" if status == "complete" else status
    manifest["status"] = status
    write_json(run_dir / MANIFEST, manifest)
    report.write(run_dir)
    print(report.terminal(run_dir))
    print(f"run folder: {run_dir}")
    return run_dir, EXIT_OK if status == "complete" else EXIT_FAILED


def _group(
    revs: list[Revision],
    preset: RealPreset,
    run_dir: Path,
    manifest: dict[str, Any],
    *,
    seed: int,
    first: int,
    rng: random.Random,
) -> list[dict[str, Any]]:
    """One round of a preset: a single revision's process, or every revision's in lockstep
    (bench.real.process); each output recorded as it is read."""

    if len(revs) == 1:
        return [_one(revs[0], preset, run_dir, manifest, seed=seed, index=first)]
    started = wall_s()
    units = [
        (r.env, r.tree, job(r, preset, seed=seed, worker=first + k)) for k, r in enumerate(revs)
    ]
    outs = run_lockstep(units, rng)
    wall = round(wall_s() - started, 2)
    for k, (rev, out) in enumerate(zip(revs, outs, strict=True)):
        _record(rev, preset, run_dir, manifest, out, index=first + k, wall=wall, mode="measure")
    return outs


def _record(
    rev: Revision,
    preset: RealPreset,
    run_dir: Path,
    manifest: dict[str, Any],
    out: dict[str, Any],
    *,
    index: int,
    wall: float,
    mode: str,
) -> None:
    path = raw_path(run_dir, rev.name, preset.name, index, mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    out["process"] = {"index": index, "wall_s": wall, "mode": mode}
    write_json(path, out)
    manifest["processes"].append(
        {
            "revision": rev.name,
            "preset": preset.name,
            "index": index,
            "mode": mode,
            "ok": bool(out.get("ok")),
            "wall_s": wall,
            "file": str(path.relative_to(run_dir)),
        }
    )
    if not out.get("ok"):
        manifest["failures"][f"{rev.name}/{preset.name}"] = out.get("message", "failed")
    write_json(run_dir / MANIFEST, manifest)


def _one(
    rev: Revision,
    preset: RealPreset,
    run_dir: Path,
    manifest: dict[str, Any],
    *,
    seed: int,
    index: int,
    mode: str = "measure",
) -> dict[str, Any]:
    started = wall_s()
    out = run_one(rev.env, rev.tree, job(rev, preset, seed=seed, worker=index, mode=mode))
    _record(
        rev,
        preset,
        run_dir,
        manifest,
        out,
        index=index,
        wall=round(wall_s() - started, 2),
        mode=mode,
    )
    return out


def _measure(
    cfg: RealRun, revisions: list[Revision], run_dir: Path, manifest: dict[str, Any]
) -> None:

    rng = random.Random(cfg.seed)
    started = wall_s()
    index = 0
    dead: set[tuple[str, str]] = set()  # (revision, preset) whose process failed
    rounds: dict[str, int] = {p.name: 0 for p in cfg.presets}
    cost: dict[str, float] = {}  # preset -> seconds per process (measured)
    planned: dict[str, int] = {}  # preset -> its rounds, fixed after the first min_rounds
    todo = [p for p in cfg.presets]
    while todo:
        order = list(todo)
        rng.shuffle(order)
        for preset in order:
            revs = [r for r in revisions if (r.name, preset.name) not in dead]
            if not revs:
                continue
            names = ", ".join(r.label for r in revs)
            how = " in lockstep" if len(revs) > 1 else ""
            progress(f"{preset.name}, round {rounds[preset.name] + 1}: {names}{how}")
            t0 = wall_s()
            outs = _group(revs, preset, run_dir, manifest, seed=cfg.seed, first=index, rng=rng)
            index += len(revs)
            cost[preset.name] = (wall_s() - t0) / len(revs)
            for rev, out in zip(revs, outs, strict=True):
                if not out.get("ok"):
                    dead.add((rev.name, preset.name))
                    progress(f"{preset.name} {rev.label}: failed: {out.get('message')}")
        for p in todo:
            rounds[p.name] += 1
        spent = wall_s() - started
        todo = []
        for p in cfg.presets:
            if rounds[p.name] < cfg.min_rounds:
                todo.append(p)
                continue
            if cfg.budget_s is None or rounds[p.name] >= MAX_ROUNDS:
                continue
            if p.name not in planned:  # fixed once, at the first look (no optional stopping)
                need = rounds_needed(run_dir, p.name, cfg.precision_pct)
                planned[p.name] = min(MAX_ROUNDS, max(rounds[p.name], need or 0))
            if rounds[p.name] < planned[p.name]:
                todo.append(p)
        if cfg.budget_s is not None and any(rounds[p.name] >= cfg.min_rounds for p in todo):
            # the least precise first, while the rest of the budget pays for a round of each
            todo.sort(key=lambda p: -(precision(run_dir, p.name) or 0.0))
            left = cfg.budget_s - spent
            affordable = []
            for p in todo:
                price = cost.get(p.name, 0.0) * len(revisions)
                if rounds[p.name] < cfg.min_rounds or price <= left:
                    affordable.append(p)
                    left -= price
            todo = affordable
        manifest["rounds"] = rounds
        manifest["measure_wall_s"] = round(wall_s() - started, 1)
        write_json(run_dir / MANIFEST, manifest)
        further = [p for p in todo if rounds[p.name] >= cfg.min_rounds]
        if further:
            shown = ", ".join(f"{p.name} ±{precision(run_dir, p.name) or 0:.1f}%" for p in further)
            progress(f"further rounds for the presets short of ±{cfg.precision_pct:g}%: {shown}")


def run_count(
    rev: Revision, preset: RealPreset, *, seed: int = 0, coverage: bool = False
) -> dict[str, Any]:
    """One untimed counting process (calls per function per iteration; with `coverage`, the
    lines and functions of the scheduler's packages its measured iterations executed)."""
    j = job(rev, preset, seed=seed, worker=0, mode="count", coverage=coverage)
    return run_one(rev.env, rev.tree, j)


def _count(
    cfg: RealRun, revisions: list[Revision], run_dir: Path, manifest: dict[str, Any]
) -> None:
    """One untimed counting process per revision, on the first preset (bench.real.freqmap)."""

    preset = cfg.presets[0]
    for rev in revisions:
        progress(f"{preset.name} {rev.source.label}: counting calls per function (untimed)")
        out = _one(rev, preset, run_dir, manifest, seed=cfg.seed, index=0, mode="count")
        if out.get("ok"):
            measured = freqmap.build(out, revision=rev.source.label, preset=preset.name)
            freqmap.store(measured, rev.source, cfg.changed)
            write_json(run_dir / RAW / rev.name / preset.name / "freqmap.json", measured.to_json())


def selected(names: list[str], changes: dict[str, Any]) -> list[RealPreset]:
    try:
        chosen = [rp.get(n) for n in names]
        return [rp.with_changes(p, changes) for p in chosen] if changes else chosen
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def command_line(argv: list[str]) -> str:
    return "python -m bench " + " ".join(shlex.quote(a) for a in argv)
