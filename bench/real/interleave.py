"""`python -m bench real interleave BASE HEAD`: how a change's size depends on what runs between
two of one process's measured iterations.

In lockstep (bench.real.process) the processes of a group take turns, one iteration each, so
between two iterations of one process the others run one each: 3 in a gate of four processes,
12 in a history round of eleven commits beside the anchor and its copy. Their data push this
process's out of the caches it shares with them, and its next iteration pays to bring them
back: the more of them, the dearer the iteration and the smaller a change looks beside it. A
commit read -8.1% in a 3-process gate and -4.3% in an 11-process history, on one machine.

The study measures one change (HEAD against BASE, the same preset) with groups of 2, 4, 8 and
12 processes (1, 3, 7 and 11 others between two of one's iterations), half of them each side,
each configuration with and without re-warming (the first `rewarm` iterations of every turn run
and are not recorded, so the recorded one follows the process's own iteration, as a scheduler's
follows its own between forwards); and against the figure of processes measured alone, one
after another, each its iterations back to back (no turns at all). Every figure is
bench.stats.paired's: per round the ratio of the sides' mean iteration, over rounds the mean
log ratio with a t interval. docs/REAL.md holds the measured table and the choice it made.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import random
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.base.errors import EXIT_OK, DataError
from bench.base.storage import write_atomic, write_json
from bench.base.timing import wall_s
from bench.real.measure import values
from bench.real.presets import RealPreset
from bench.real.process import run_lockstep, run_one
from bench.real.run import Revision, job, prepare
from bench.stats.paired import PairedChange, paired_change

SCHEMA = "reqstate-bench-interleave/1"
DEFAULT_OTHERS = (1, 3, 7, 11)
DEFAULT_REWARMS = (0, 1)
DEFAULT_PROCESSES = 24  # per configuration (its rounds: this over the group's size, at least 2)


def progress(msg: str) -> None:
    print(f"[interleave] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Study:
    base: str
    head: str
    preset: RealPreset  # in lockstep, --set applied
    others: tuple[int, ...] = DEFAULT_OTHERS
    rewarms: tuple[int, ...] = DEFAULT_REWARMS
    processes: int = DEFAULT_PROCESSES
    seed: int = 0
    interpreter: str | None = None
    output_dir: Path = Path("reports")


def _iterations(out: dict[str, Any], preset: RealPreset, what: str) -> list[float]:
    if not out.get("ok"):
        raise DataError(f"{what}: {out.get('message')}")
    return values(out["records"], preset.iterations).get("iteration", [])


def _row(label: str, others: int | None, rewarm: int, ch: PairedChange, base_s: float) -> dict:
    return {
        "label": label,
        "others": others,
        "rewarm": rewarm,
        "rounds": ch.rounds,
        "change_pct": ch.pct,
        "low_pct": (ch.ratio_low - 1) * 100,
        "high_pct": (ch.ratio_high - 1) * 100,
        "change_us": ch.difference * 1e6,
        "low_us": ch.difference_low * 1e6,
        "high_us": ch.difference_high * 1e6,
        "base_us": base_s * 1e6,
    }


def grouped(
    cfg: Study, base: Revision, head: Revision, others: int, rewarm: int, index: int
) -> dict[str, Any]:
    """Rounds of `others + 1` processes in lockstep, half each side."""
    size = others + 1
    if size % 2:
        raise DataError(f"{others} others: a group of {size} cannot hold both sides equally")
    preset = replace(cfg.preset, rewarm=rewarm)
    rounds = max(2, math.ceil(cfg.processes / size))
    rng = random.Random(cfg.seed * 1000 + others * 10 + rewarm)
    num: list[list[float]] = []
    den: list[list[float]] = []
    for r in range(rounds):
        progress(f"{others} others, rewarm {rewarm}: round {r + 1}/{rounds} of {size} processes")
        sides = [base, head] * (size // 2)
        units = [
            (rev.env, rev.tree, job(rev, preset, seed=cfg.seed, worker=index + r * size + k))
            for k, rev in enumerate(sides)
        ]
        outs = run_lockstep(units, rng)
        vals = [_iterations(o, preset, f"{others} others, round {r + 1}") for o in outs]
        den.append([x for v in vals[0::2] for x in v])
        num.append([x for v in vals[1::2] for x in v])
    base_s = sum(sum(d) / len(d) for d in den) / len(den)
    label = f"{others} other(s) between two iterations" + (f", {rewarm} re-warm" if rewarm else "")
    return _row(label, others, rewarm, paired_change(num, den), base_s)


def alone(cfg: Study, base: Revision, head: Revision, index: int) -> dict[str, Any]:
    """Pairs of processes measured one at a time, each its iterations back to back (the order
    within a pair alternating)."""
    pairs = max(2, cfg.processes // 2)
    num: list[list[float]] = []
    den: list[list[float]] = []
    for k in range(pairs):
        progress(f"alone: pair {k + 1}/{pairs}")
        order = [(base, den), (head, num)] if k % 2 == 0 else [(head, num), (base, den)]
        for j, (rev, into) in enumerate(order):
            out = run_one(
                rev.env, rev.tree, job(rev, cfg.preset, seed=cfg.seed, worker=index + 2 * k + j)
            )
            into.append(_iterations(out, cfg.preset, f"alone, pair {k + 1}"))
    base_s = sum(sum(d) / len(d) for d in den) / len(den)
    return _row("alone (no turns)", None, 0, paired_change(num, den), base_s)


def table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| protocol | rounds | change [95% CI] | µs per iteration [95% CI] | baseline iteration |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['label']} | {r['rounds']} | {r['change_pct']:+.2f}% [{r['low_pct']:+.2f}, "
            f"{r['high_pct']:+.2f}] | {r['change_us']:+,.1f} [{r['low_us']:+,.1f}, "
            f"{r['high_us']:+,.1f}] | {r['base_us']:,.0f} µs |"
        )
    return out


def execute(cfg: Study) -> int:
    started = wall_s()
    base, head = prepare([cfg.base, cfg.head], cfg.interpreter, (cfg.preset,))
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = cfg.output_dir / f"interleave-{stamp}-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []

    def save() -> None:  # after every configuration: an interruption keeps what was measured
        write_json(
            folder / "interleave.json",
            {
                "schema": SCHEMA,
                "base": base.source.label,
                "head": head.source.label,
                "preset": cfg.preset.name,
                "rows": rows,
                "wall_s": round(wall_s() - started, 1),
            },
        )
        title = f"**{head.source.label} against {base.source.label}**, {cfg.preset.name}:"
        write_atomic(folder / "interleave.md", "\n".join([title, "", *table(rows)]) + "\n")

    index = 0
    rows.append(alone(cfg, base, head, index))
    save()
    for rewarm in cfg.rewarms:
        for others in cfg.others:
            index += 1000
            rows.append(grouped(cfg, base, head, others, rewarm, index))
            save()
    print("\n".join(table(rows)))
    print(f"interleave folder: {folder}")
    return EXIT_OK
