"""The check on the modelled extra pause: how much the MEASURED full-collection pause grows per
tracked object between two live sizes, against the pooled per-object cost the model uses.

The modelled extra pause (bench.suites.gc.view_pressure) multiplies counted objects by a cost
per object: a process's pause at L live requests over every object that collection traversed,
an average over the whole heap. What a state's objects add is a marginal cost, which the suite
measures directly: each process times full collections at two live sizes (gc_live, 1,500 and
4,096 by default), so within one process

    slope = (median pause at the larger size - median pause at the smaller)
            / (tracked objects at the larger - tracked objects at the smaller)

in seconds per tracked object, from measured pauses and the tracked objects those collections
traversed. Pairing the two sizes within a process cancels what differs between processes (the
heap's layout, the machine's load). The slope pooled over processes is the median of theirs;
its interval a two-level bootstrap (processes, then the values of each size within one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.base.names import BenchName

# The live sizes the slope is taken between: where PR #36366 reports gen-2 pauses (1,500) and
# the high end of max_running_requests per DP worker (4,096), as the suite's live_sizes.
SLOPE_LIVE: tuple[int, int] = (1_500, 4_096)
# Bootstrap resamples and seed of the slope's interval (2,000: the 2.5%/97.5% quantiles stable
# to ~1% of the width, as bench.stats.robust's).
RESAMPLES = 2_000
SEED = 0
LEVEL = 0.95


@dataclass(frozen=True)
class Slope:
    """The measured full pause's growth per tracked object between two live sizes, one mode."""

    mode: str
    low_live: int
    high_live: int
    median_s_per_object: float
    low_s_per_object: float
    high_s_per_object: float
    processes: int
    wanted: tuple[int, int]  # the sizes asked for; low_live/high_live: the nearest measured

    @property
    def substituted(self) -> bool:
        return (self.low_live, self.high_live) != self.wanted


@dataclass(frozen=True)
class Agreement:
    """A per-object cost against the slope: within its interval, or how far off."""

    cost_s_per_object: float
    ratio: float | None  # cost / slope (None: the slope is not positive)
    within: bool
    gap_s_per_object: float  # how far the cost lies outside the slope's interval (0: within)


def nearest_sizes(measured: Sequence[int], wanted: tuple[int, int]) -> tuple[int, int] | None:
    """The two distinct measured live sizes nearest the wanted ones (None: fewer than two)."""
    sizes = sorted(set(measured))
    if len(sizes) < 2:
        return None
    low = min(sizes, key=lambda s: (abs(s - wanted[0]), s))
    high = min((s for s in sizes if s != low), key=lambda s: (abs(s - wanted[1]), s))
    return (low, high) if low < high else (high, low)


def _measured(
    live_runs: Mapping[str, Sequence[Sequence[float]]], mode: str
) -> dict[int, list[str]]:
    """The strategies measured at each live size in mode."""
    out: dict[int, list[str]] = {}
    for name in live_runs:
        b = BenchName.parse(name)
        if b.kind == "gc_live" and b.get("gc") == mode:
            out.setdefault(b.int("live"), []).append(b.strategy)
    return out


def pause_slope(
    live_runs: Mapping[str, Sequence[Sequence[float]]],
    live_objects: Mapping[str, int],
    mode: str,
    wanted: tuple[int, int] = SLOPE_LIVE,
) -> Slope | None:
    """The slope of the measured full pause per tracked object, pooled over every process that
    timed both sizes in mode. live_runs: gc_live benchmark -> per process values (seconds);
    live_objects: gc_live benchmark -> the tracked objects its collections traversed."""
    import numpy as np

    by_size = _measured(live_runs, mode)
    sizes = nearest_sizes(list(by_size), wanted)
    if sizes is None:
        return None
    low, high = sizes
    pairs: list[tuple[list[float], list[float], int]] = []  # per process: values, values, objects
    for strategy in sorted(set(by_size[low]) & set(by_size[high])):
        lo_name = str(BenchName.of("gc_live", strategy, live=low, gc=mode))
        hi_name = str(BenchName.of("gc_live", strategy, live=high, gc=mode))
        objects = live_objects.get(hi_name, 0) - live_objects.get(lo_name, 0)
        lo_runs, hi_runs = live_runs[lo_name], live_runs[hi_name]
        if objects <= 0 or len(lo_runs) != len(hi_runs):
            continue  # both sizes are timed in one process, so their runs pair in order
        pairs += [
            (list(a), list(b), objects) for a, b in zip(lo_runs, hi_runs, strict=True) if a and b
        ]
    if not pairs:
        return None
    point = float(np.median([(np.median(b) - np.median(a)) / n for a, b, n in pairs]))
    rng = np.random.default_rng(SEED)
    per_process = []
    for a, b, n in pairs:
        av, bv = np.asarray(a), np.asarray(b)
        ma = np.median(av[rng.integers(0, av.size, (RESAMPLES, av.size))], axis=1)
        mb = np.median(bv[rng.integers(0, bv.size, (RESAMPLES, bv.size))], axis=1)
        per_process.append((mb - ma) / n)
    table = np.stack(per_process)  # (processes, resamples)
    pick = rng.integers(0, len(pairs), (RESAMPLES, len(pairs)))
    dist = np.median(table[pick, np.arange(RESAMPLES)[:, None]], axis=1)
    tail = (1 - LEVEL) / 2
    lo_ci, hi_ci = (float(x) for x in np.quantile(dist, [tail, 1 - tail]))
    return Slope(mode, low, high, point, lo_ci, hi_ci, len(pairs), wanted)


def agreement(slope: Slope, cost_s_per_object: float) -> Agreement:
    """Whether a pooled per-object cost lies within the slope's interval, or by how much not."""
    if cost_s_per_object < slope.low_s_per_object:
        gap = cost_s_per_object - slope.low_s_per_object
    elif cost_s_per_object > slope.high_s_per_object:
        gap = cost_s_per_object - slope.high_s_per_object
    else:
        gap = 0.0
    ratio = cost_s_per_object / slope.median_s_per_object if slope.median_s_per_object > 0 else None
    return Agreement(cost_s_per_object, ratio, gap == 0.0, gap)
