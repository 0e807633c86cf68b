"""When a real scheduler's warm-up may end: its KV cache in one regime.

A server that has just started holds only its running requests' tokens; with a radix cache,
every finished request leaves its tokens in the tree until the pool is full, and from then on
the cache evicts to admit. Iterations measured while the pool still fills average two regimes
(none evicting, then some), so a regression in eviction is diluted by the first.

The warm-up runs its minimum, then ends at the first boundary where, over the last two windows
of `window` iterations:

- the pool's occupancy (1 - free / size) would move by less than `occupancy_tol` over the
  iterations still to measure, at the rate it moved between the two windows;
- the share of iterations that evicted differs between the two windows by no more than
  binomial noise (`z` standard errors of a difference of two shares, at least one iteration
  in a window).

A pool that never fills is steady once its occupancy stops moving; one that fills is steady
once it evicts at a steady rate. The warm-up gives up at `max_iterations` (or the caller's time
limit) and says so: the run is then marked unsteady, not hidden.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

WINDOW = 150  # iterations per window (the harness's choice: two windows decide)
OCCUPANCY_TOL = 0.01  # the occupancy change over the measured span allowed (1 point)
Z = 2.0  # standard errors a difference of eviction shares may reach


@dataclass(frozen=True)
class Verdict:
    steady: bool
    occupancy: float  # the last window's mean
    drift: float  # occupancy change projected over the measured span
    evicting: tuple[float, float]  # share of iterations that evicted, earlier and later window
    why: str


def judge(
    occupancy: Sequence[float],
    evicted: Sequence[bool],
    horizon: int,
    *,
    window: int = WINDOW,
    occupancy_tol: float = OCCUPANCY_TOL,
    z: float = Z,
) -> Verdict:
    """Whether the last 2 x `window` iterations are in one cache regime; `horizon`: the
    iterations still to measure."""
    if len(occupancy) < 2 * window or len(evicted) < 2 * window:
        return Verdict(False, math.nan, math.nan, (math.nan, math.nan), "too few iterations")
    a, b = occupancy[-2 * window : -window], occupancy[-window:]
    mean_a, mean_b = sum(a) / window, sum(b) / window
    drift = (mean_b - mean_a) / window * horizon
    ea = sum(bool(x) for x in evicted[-2 * window : -window]) / window
    eb = sum(bool(x) for x in evicted[-window:]) / window
    pooled = (ea + eb) / 2
    se = math.sqrt(max(pooled * (1 - pooled), 0.0) * 2 / window)
    bound = max(z * se, 1 / window)
    if abs(drift) > occupancy_tol:
        why = f"occupancy moving ({drift:+.1%} over the measured span)"
        return Verdict(False, mean_b, drift, (ea, eb), why)
    if abs(eb - ea) > bound:
        why = f"eviction share moving ({ea:.0%} -> {eb:.0%})"
        return Verdict(False, mean_b, drift, (ea, eb), why)
    return Verdict(True, mean_b, drift, (ea, eb), "steady")
