"""Steps in a series of commits: where the cost per iteration changed, and by how much.

The model is asv's (asv/step_detect.py, after Friedrich et al. 2008, "Complexity penalized
M-estimation"): the series is piecewise constant plus noise, and the fit minimises

    sum over segments, sum over its points i:  w_i (y_i - mu_segment)^2   +   penalty x steps

exactly, by dynamic programming over the points (O(N^2); a history holds tens to a few hundred
commits). Two things differ from asv, because this harness knows its noise instead of guessing
it from the curve:

- the weights are 1 / v_i, v_i the point's variance: its own rounds' spread, floored by what
  identical code shows (the A/A copy measured in the same rounds), so a commit measured in few
  rounds cannot claim to be more exact than the machine is;
- the residual is then in units of that noise (chi-square), and the penalty is a Schwarz-type
  criterion for a known variance (Yao 1988, "Estimating the number of change-points via
  Schwarz' criterion"): PENALTY_PER_LN_N ln N + PENALTY_FLOOR per step, the floor at the 95%
  point of one chi-square degree of freedom so that a series of three commits is not split by
  one chance difference. With a noise figure estimated from few rounds the penalty grows by
  (t / z)^2. The constants were chosen by simulation (identical-code series of 3 to 60 commits
  and 3 or 5 rounds: a false step in 0.5-3% of them); tests/test_history_steps.py measures it.

A step the fit keeps is then judged as the gate judges a change: its size (the later segment's
mean less the earlier's, in log space) with a 95% interval from the segments' weights; it is
reported only when that interval excludes zero and the size exceeds the systematic offset
identical code showed (the A/A copy's own mean difference). Values are log ratios to an anchor
(the range's first commit, measured in every round), so a step of 0.02 is about +2%.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench.stats.robust import t975

# The penalty per step (see the module's docstring).
PENALTY_PER_LN_N = 2.0
PENALTY_FLOOR = 4.0
Z95 = 1.959964


@dataclass(frozen=True)
class Point:
    """One commit's figure: y (log ratio to the anchor) and its variance."""

    y: float
    var: float


@dataclass(frozen=True)
class Segment:
    start: int  # first point's index
    end: int  # one past the last
    mean: float
    var: float  # of the mean (1 / sum of weights)


@dataclass(frozen=True)
class Step:
    index: int  # the first point of the later segment: the commit that moved it
    size: float  # later mean - earlier mean (log space)
    low: float  # 95% interval of the size
    high: float

    @property
    def pct(self) -> float:
        return math.expm1(self.size) * 100

    @property
    def pct_low(self) -> float:
        return math.expm1(self.low) * 100

    @property
    def pct_high(self) -> float:
        return math.expm1(self.high) * 100


@dataclass(frozen=True)
class Fit:
    segments: tuple[Segment, ...]
    steps: tuple[Step, ...]  # the steps kept (significant, beyond the A/A offset)
    candidates: tuple[Step, ...]  # every boundary the penalised fit chose
    penalty: float


def penalty_for(n: int) -> float:
    return PENALTY_PER_LN_N * math.log(max(n, 2)) + PENALTY_FLOOR


def floored(variances: Sequence[float], floor: float) -> list[float]:
    """Each point's variance, at least `floor` (what identical code shows per point)."""
    return [max(v, floor, 1e-18) for v in variances]


def _segment(points: Sequence[Point], start: int, end: int) -> Segment:
    w = [1.0 / max(p.var, 1e-18) for p in points[start:end]]
    total = sum(w)
    mean = sum(wi * p.y for wi, p in zip(w, points[start:end], strict=True)) / total
    return Segment(start, end, mean, 1.0 / total)


def solve(points: Sequence[Point], penalty: float) -> list[Segment]:
    """The exact minimiser of the penalised weighted least squares (optimal partitioning)."""
    n = len(points)
    if n == 0:
        return []
    # prefix sums of w, w*y, w*y^2: a segment's cost is S(wy^2) - S(wy)^2 / S(w)
    sw, swy, swyy = [0.0], [0.0], [0.0]
    for p in points:
        w = 1.0 / max(p.var, 1e-18)
        sw.append(sw[-1] + w)
        swy.append(swy[-1] + w * p.y)
        swyy.append(swyy[-1] + w * p.y * p.y)

    def cost(i: int, j: int) -> float:
        w = sw[j] - sw[i]
        wy = swy[j] - swy[i]
        return max(0.0, swyy[j] - swyy[i] - wy * wy / w)

    best = [0.0] + [math.inf] * n
    last = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):
            c = best[i] + cost(i, j) + (penalty if i > 0 else 0.0)
            if c < best[j]:
                best[j], last[j] = c, i
    bounds = []
    j = n
    while j > 0:
        bounds.append((last[j], j))
        j = last[j]
    return [_segment(points, i, j) for i, j in reversed(bounds)]


def _step(a: Segment, b: Segment, quantile: float) -> Step:
    size = b.mean - a.mean
    half = quantile * math.sqrt(a.var + b.var)
    return Step(b.start, size, size - half, size + half)


def detect(
    points: Sequence[Point],
    *,
    offset: float = 0.0,
    penalty: float | None = None,
    df: int | None = None,
    offset_at: tuple[int, ...] | None = None,
) -> Fit:
    """Steps in `points` (in commit order). `offset`: the systematic difference identical code
    showed (log space, the A/A copy's); a step must be larger to count. `df`: the degrees of
    freedom the variances were estimated with (None: known); the interval then takes Student's
    t quantile and the penalty grows by (t / z)^2, so that a noise figure read from a few
    rounds of a few commits cannot make a step out of its own underestimate."""
    quantile = Z95 if df is None else t975(max(df, 1))
    pen = penalty_for(len(points)) * (quantile / Z95) ** 2 if penalty is None else penalty
    segments = solve(points, pen)
    candidates = [_step(a, b, quantile) for a, b in itertools.pairwise(segments)]
    kept = [
        s
        for s in candidates
        if not s.low <= 0.0 <= s.high
        and (abs(s.size) > abs(offset) or (offset_at is not None and s.index not in offset_at))
    ]
    return Fit(tuple(segments), tuple(kept), tuple(candidates), pen)


Z80 = 0.841621  # the standard normal's 0.80 quantile
CHI2_95 = 3.841459  # one degree of freedom


def min_detectable(points: Sequence[Point], penalty: float, offset: float = 0.0) -> float:
    """The smallest step (log space) at a boundary in the middle of this series that the fit
    finds 80% of the time: the boundary's cost reduction, (size / sd)^2 with sd the spread of
    the difference of the two halves' weighted means, must clear the penalty, so the size must
    reach (sqrt(penalty) + z_0.80) sd; and, where an offset applies, that offset plus z_0.80 sd.
    tests/test_history_steps.py checks the 80% by simulation."""
    n = len(points)
    if n < 2:
        return math.inf
    half = n // 2
    sd = math.sqrt(
        1.0 / sum(1.0 / p.var for p in points[:half])
        + 1.0 / sum(1.0 / p.var for p in points[half:])
    )
    return max((math.sqrt(penalty) + Z80) * sd, abs(offset) + Z80 * sd)


def location(points: Sequence[Point], fit: Fit, step: Step) -> tuple[int, int]:
    """The boundaries (indices into points) the data cannot tell from the fitted one: moving
    the step between its neighbouring segments' outer ends, those whose fit costs less than
    one chi-square degree of freedom's 95% point more than the best."""
    before = next(s for s in fit.segments if s.end == step.index)
    after = next(s for s in fit.segments if s.start == step.index)
    lo, hi = before.start, after.end

    def cost(i: int, j: int) -> float:
        seg = _segment(points, i, j)
        return sum((p.y - seg.mean) ** 2 / max(p.var, 1e-18) for p in points[i:j])

    costs = {j: cost(lo, j) + cost(j, hi) for j in range(lo + 1, hi)}
    best = min(costs.values())
    near = [j for j, c in costs.items() if c - best <= CHI2_95]
    return min(near), max(near)


def resolution(points: Sequence[Point]) -> float:
    """The smallest step (log space) a 95% interval could tell from zero at a boundary in the
    middle of this series: Z95 x sqrt(var of each half's weighted mean)."""
    n = len(points)
    if n < 2:
        return math.inf
    half = n // 2
    a = 1.0 / sum(1.0 / p.var for p in points[:half])
    b = 1.0 / sum(1.0 / p.var for p in points[half:])
    return Z95 * math.sqrt(a + b)
