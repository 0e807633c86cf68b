"""At a step: which functions the scheduler calls a different number of times per iteration.

For each step a real-mode history finds, one untimed counting pass (bench/real/driver/calls.py,
the pass behind the measured hot-path map) runs at the step's commit and one at the commit
before it, on the line's preset; the functions whose calls per iteration moved by more than
MIN_MOVED_PCT (and by at least MIN_MOVED_CALLS), per phase, are listed, the largest moves first.
A step whose code runs the same functions the same number of times shows none: its cost moved
inside them. The counts are kept in the history's manifest, so a later call does not count
again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.base.errors import DataError
from bench.history.commits import Commit
from bench.real import freqmap
from bench.real.presets import RealPreset
from bench.real.run import run_count

MIN_MOVED_PCT = 10.0
MIN_MOVED_CALLS = 0.5
MAX_SHOWN = 5

# (repository, commit, preset) -> calls per iteration, "Qualname (phase)" -> calls
Counter = Callable[[Path, Commit, RealPreset], dict[str, float]]


def real_counter(preparer: Callable[[Path, Commit], Any]) -> Counter:
    def count(repo: Path, commit: Commit, preset: RealPreset) -> dict[str, float]:

        rev = preparer(repo, commit)
        out = run_count(rev, preset)
        if not out.get("ok"):
            raise DataError(f"{commit.short}: the counting pass failed: {out.get('message')}")
        measured = freqmap.build(out, revision=commit.short, preset=preset.name)
        calls: dict[str, float] = {}
        for f in measured.functions.values():
            for phase, fit in f["fits"].items():
                key = f"{f['qualname']} ({phase})"
                calls[key] = calls.get(key, 0.0) + fit.calls_per_iteration
        return calls

    return count


def moved(before: Mapping[str, float], after: Mapping[str, float]) -> list[str]:
    """'Qualname (phase): 2.00 → 1.00 calls per iteration', the largest moves first."""
    rows = []
    for key in set(before) | set(after):
        a, b = before.get(key, 0.0), after.get(key, 0.0)
        change = b - a
        if abs(change) < MIN_MOVED_CALLS:
            continue
        if a and abs(change) / a * 100 <= MIN_MOVED_PCT:
            continue
        rows.append((abs(change), f"{key}: {a:.2f} → {b:.2f} calls per iteration"))
    rows.sort(key=lambda r: (-r[0], r[1]))
    return [text for _size, text in rows[:MAX_SHOWN]]


def at_steps(
    counter: Counter,
    repo: Path,
    preset: RealPreset,
    steps: list[tuple[Commit, Commit]],
    kept: dict[str, Any],
) -> dict[str, list[str]]:
    """Per step commit (sha), the functions whose calls moved against the commit before it.
    `kept` (the manifest's "calls": sha -> calls) is read and filled."""
    out: dict[str, list[str]] = {}
    for commit, before in steps:
        for c in (before, commit):
            if c.sha not in kept:
                kept[c.sha] = counter(repo, c, preset)
        out[commit.sha] = moved(kept[before.sha], kept[commit.sha]) or [
            "no function's calls per iteration moved (the cost moved inside them)"
        ]
    return out
