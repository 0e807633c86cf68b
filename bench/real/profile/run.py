"""`python -m bench profile --real SRC[,SRC]`: each revision's own scheduler sampled by py-spy in
its measured iterations, several processes per revision in lockstep (bench.real.process), with
unprofiled processes of the same revision in the same rounds to measure the profiler's cost.

Per round, every revision starts `profiled` processes that py-spy samples and `plain` ones it
does not; all settle, py-spy attaches to the profiled ones (before any measures), and all
measure their windows in turns. A profiled process spins in a mark at each measured boundary
(bench.real.driver.marks), outside every iteration's figure, so its samples split into its
iterations. Each process's samples and records are kept as the round ends (raw/), so an
interrupted run keeps its finished rounds.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.base.errors import EXIT_FAILED, EXIT_OK, DataError, UsageError
from bench.base.storage import write_atomic, write_json
from bench.base.timing import wall_s
from bench.profiling.run import find_py_spy
from bench.real.measure import figures
from bench.real.presets import RealPreset
from bench.real.process import run_lockstep
from bench.real.profile import render, samples, spy, table
from bench.real.profile.diff import MIN_PROCESSES, Diff, diff
from bench.real.profile.spy import Spy, probe
from bench.real.run import job, prepare
from bench.stats import mean_t_ci

DEFAULT_RATE_HZ = 250
GAP_PERIODS = 4  # sampling periods spun in each mark, so that every mark is sampled
DEFAULT_PROFILED = 3  # per revision and round
DEFAULT_PLAIN = 1
DEFAULT_ROUNDS = 2


def progress(msg: str) -> None:
    print(f"[profile] {msg}", file=sys.stderr, flush=True)


@dataclass
class Side:
    """One revision's processes over all rounds."""

    label: str
    profiles: list[samples.Profile] = field(default_factory=list)
    records: list[list[dict[str, Any]]] = field(default_factory=list)  # per profiled process
    profiled_us: list[list[float]] = field(default_factory=list)  # per round
    plain_us: list[list[float]] = field(default_factory=list)

    def counted(self) -> list[dict[str, table.Counted]]:
        return [table.counted(p, r) for p, r in zip(self.profiles, self.records, strict=True)]

    def overhead(self) -> list[float]:
        """Per sampled process, its µs per iteration less the mean of its round's unsampled
        ones (the processes, not the rounds, are the replicates: two rounds give no interval)."""
        return [
            x - sum(b) / len(b)
            for a, b in zip(self.profiled_us, self.plain_us, strict=True)
            if b
            for x in a
        ]


@dataclass(frozen=True)
class ProfileRun:
    specs: list[str]
    preset: RealPreset
    rounds: int = DEFAULT_ROUNDS
    profiled: int = DEFAULT_PROFILED
    plain: int = DEFAULT_PLAIN
    rate_hz: int = DEFAULT_RATE_HZ
    seed: int = 0
    top: int = 20
    function: str | None = None
    interpreter: str | None = None
    output_dir: Path = Path("reports")


def check(cfg: ProfileRun) -> None:
    if not 1 <= len(cfg.specs) <= 2:
        raise UsageError("profile --real takes one revision, or two to diff (base,head)")
    if cfg.rounds < 1 or cfg.profiled < 1 or cfg.plain < 1:
        raise UsageError("--rounds, --processes and --plain must each be at least 1")
    if len(cfg.specs) == 2 and cfg.rounds * cfg.profiled < MIN_PROCESSES:
        raise UsageError(
            f"a diff needs at least {MIN_PROCESSES} profiled processes per revision: "
            f"--rounds {cfg.rounds} x --processes {cfg.profiled} gives {cfg.rounds * cfg.profiled}"
        )
    if not 20 <= cfg.rate_hz <= 2000:
        raise UsageError(f"--rate-hz {cfg.rate_hz}: between 20 and 2000 samples per second")
    find_py_spy()
    probe()


def _round(
    revs: list[Any], cfg: ProfileRun, index: int, raw: Path, rng: random.Random
) -> list[tuple[int, bool, dict[str, Any], dict[str, Any] | None]]:
    """One lockstep round: (revision index, profiled, driver output, py-spy document) per
    process, each kept under raw/ as read."""
    gap_s = GAP_PERIODS / cfg.rate_hz
    units, roles = [], []
    per_rev = cfg.profiled + cfg.plain
    for r, rev in enumerate(revs):
        for k in range(per_rev):
            worker = (index * len(revs) + r) * per_rev + k
            j = job(rev, cfg.preset, seed=cfg.seed, worker=worker)
            # the unsampled processes spin in the same marks: a core that spins between turns
            # runs the next iteration faster than one that slept, so the overhead compares
            # like with like and is the sampler's alone
            # (no re-warm iterations: their samples would fall to the next iteration's mark)
            j["plan"] = {**j["plan"], "profile_gap_s": gap_s, "rewarm_iterations": 0}
            units.append((rev.env, rev.tree, j))
            roles.append((r, k < cfg.profiled, worker))
    spies: dict[int, Spy] = {}

    def attach(procs: Any) -> None:
        for i, (_, profiled, worker) in enumerate(roles):
            if profiled:
                path = raw / f"w{worker}.speedscope.json"
                spies[i] = spy.attach(procs[i].proc.pid, path, cfg.rate_hz)

    try:
        outs = run_lockstep(units, rng, on_settled=attach)
    except BaseException:
        for sampler in spies.values():
            sampler.stop()
        raise
    got = []
    for i, ((r, profiled, worker), out) in enumerate(zip(roles, outs, strict=True)):
        doc = spies[i].result() if i in spies else None
        write_json(raw / f"w{worker}.out.json", {k: v for k, v in out.items() if k != "calls"})
        if not out.get("ok"):
            raise DataError(f"{revs[r].source.label} process {worker}: {out.get('message')}")
        if profiled and doc is None:
            raise DataError(f"py-spy wrote no profile of process {worker}: {spies[i].why()}")
        got.append((r, profiled, out, doc))
    return got


def measure(revs: list[Any], cfg: ProfileRun, folder: Path) -> list[Side]:
    sides = [Side(r.source.label) for r in revs]
    if len(sides) == 2 and sides[0].label == sides[1].label:
        sides[1].label += " (A/A copy)"
    raw = folder / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    rng = random.Random(cfg.seed)
    for i in range(cfg.rounds):
        n = len(revs) * (cfg.profiled + cfg.plain)
        progress(
            f"round {i + 1}/{cfg.rounds}: {n} processes in lockstep, {cfg.profiled} per "
            f"revision sampled at {cfg.rate_hz} Hz"
        )
        for side in sides:
            side.profiled_us.append([])
            side.plain_us.append([])
        for r, profiled, out, doc in _round(revs, cfg, i, raw, rng):
            side = sides[r]
            us = figures(out["records"])["iteration"] * 1e6
            (side.profiled_us if profiled else side.plain_us)[-1].append(us)
            if profiled and doc is not None:
                side.profiles.append(samples.parse(doc, cfg.rate_hz))
                side.records.append(out["records"])
    return sides


def summary(sides: list[Side], cfg: ProfileRun) -> dict[str, Any]:
    out: dict[str, Any] = {"rate_hz": cfg.rate_hz, "preset": cfg.preset.name, "sides": []}
    for side in sides:
        counted = side.counted()
        frames = table.frames_by_key(side.profiles)
        over = side.overhead()
        plain = [x for r in side.plain_us for x in r]
        plain_mean = sum(plain) / len(plain) if plain else float("nan")
        entry = {
            "label": side.label,
            "processes": len(side.profiles),
            "samples": [p.samples() for p in side.profiles],
            "segments": [dict(p.segments) for p in side.profiles],
            "iterations": [len(r) for r in side.records],
            "stand_in_samples": [sum(p.stand_in.values()) for p in side.profiles],
            "boundary_samples": [sum(p.boundary.values()) for p in side.profiles],
            "plain_us": plain_mean,
            "overhead_us": mean_t_ci(over)
            if len(over) > 1
            else (over[0], None, None)
            if over
            else None,
            "rows": {
                which: [render.row_json(r) for r in table.rows(counted, frames, which)]
                for which in table.KINDS
            },
        }
        out["sides"].append(entry)
    return out


def _diff(sides: list[Side], seed: int) -> Diff | None:
    if len(sides) != 2:
        return None
    a, b = sides
    return diff(
        [c["all"] for c in a.counted()],
        [c["all"] for c in b.counted()],
        table.frames_by_key(a.profiles),
        table.frames_by_key(b.profiles),
        seed=seed,
        stacks={st for side in sides for p in side.profiles for st in p.merged()},
    )


def where_moved(
    base: Any, head: Any, preset: RealPreset, folder: Path, *, seed: int = 0
) -> dict[str, Any]:
    """The functions whose time moved from `base` to `head` (bench.real.profile.diff), from
    profiled processes of both in lockstep rounds of their own (the default rounds and
    processes, no unprofiled ones): what gate, history and bisect add beside a change.
    Kept under `folder`."""
    cfg = ProfileRun(specs=[], preset=preset, plain=0, seed=seed)
    sides = measure([base, head], cfg, folder)
    moved = _diff(sides, seed)
    assert moved is not None
    out = {**render.diff_json(moved), "rate_hz": cfg.rate_hz, "preset": preset.name}
    write_json(folder / "where.json", out)
    return out


def execute(cfg: ProfileRun) -> int:
    check(cfg)
    same = len(cfg.specs) == 2 and cfg.specs[0] == cfg.specs[1]
    revs = prepare(cfg.specs[:1] if same else cfg.specs, cfg.interpreter, [cfg.preset])
    if same:  # a revision against itself: the diff's resolution, and what it names by chance
        revs = [revs[0], revs[0]]
    if cfg.function:
        render.check_function(cfg.function, revs)
    t0 = wall_s()
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = cfg.output_dir / f"profile-real-{stamp}-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    progress(f"profile folder: {folder}")
    try:
        sides = measure(revs, cfg, folder)
    except DataError as exc:
        progress(f"a process failed: {exc}")
        write_json(folder / "profile.json", {"status": "failed", "error": str(exc)})
        return EXIT_FAILED
    result = summary(sides, cfg)
    moved = _diff(sides, cfg.seed)
    if moved is not None:
        result["diff"] = render.diff_json(moved)
    result["wall_s"] = round(wall_s() - t0, 1)
    result["status"] = "complete"
    write_json(folder / "profile.json", result)
    for side in sides:
        name = render.safe(side.label)
        write_json(folder / f"{name}.speedscope.json", render.speedscope(side))
    text = render.markdown(result, cfg.top, cfg.function)
    write_atomic(folder / "profile.md", text)
    write_atomic(folder / "report.html", render.page(result, sides, moved, text))
    print(text, end="")
    print(f"profile folder: {folder}")
    print(f"report: {folder / 'report.html'}")
    return EXIT_OK if all(s.profiles for s in sides) else EXIT_FAILED
