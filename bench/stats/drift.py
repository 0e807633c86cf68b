"""Whether a worker process's values of one family trend with the process's age.

A family's precision is over worker processes, each measuring a run of values in order. If the
cost rises (or falls) within a process, the process samples a transient, and where its values
fall in it is part of the spread; more processes narrow the interval around a figure that
belongs to no steady state. Per process, two measures of the trend:

    halves ratio   the median of the second half of its values over the median of the first
                   (1.0: steady; 1.30: the later values cost 30% more)
    rank trend     Spearman's rank correlation of its values against their order (-1..1)

Pooled over processes: value i of each second half over value i of its first half, the median of
those ratios with a hierarchical bootstrap interval (processes, then pairs). A family drifts when
that interval excludes 1 and its median is more than DRIFT_PCT away from it: the later values
differ from the earlier ones by more than noise, and by more than a steady state allows. The
pooled median cannot see processes that drift in opposite directions (60% rising and 40%
falling pool to no drift: 0 of 60 such families were flagged), so a family also drifts when
most of its processes drift on their own: their halves differ by more than DRIFT_PCT and by a
Mann-Whitney test at EACH_ALPHA. What the adaptive rounds do not take for converged, and what
the precision table reports. Processes with a value at or below zero (net costs) cannot give a
ratio; they are counted as left out, not dropped in silence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.stats import robust

# A family drifts when its processes' later values differ from their earlier ones by more than
# this (percent of the earlier): a third of the ±15% a default run holds families to, the
# within-process agreement docs/REGIMES.md asks of a steady state (±5%).
DRIFT_PCT = 5.0
# Values a process needs for its halves to be compared (two of each).
MIN_VALUES = 4
# A process drifts on its own when its halves differ at this level (two-sided Mann-Whitney).
EACH_ALPHA = 0.01


def halves_ratio(series: Sequence[float]) -> float | None:
    """The second half's median over the first half's (an odd middle value left out); None
    below MIN_VALUES values or for a first half whose median is not positive."""
    n = len(series)
    if n < MIN_VALUES:
        return None
    half = n // 2
    first, second = robust.median(series[:half]), robust.median(series[n - half :])
    return second / first if first > 0 else None


def rank_trend(series: Sequence[float]) -> float | None:
    """Spearman's rank correlation of the values against their order (ties by order): near 0
    for a steady process, near +1 when the cost rose with its age. None below MIN_VALUES."""
    n = len(series)
    if n < MIN_VALUES:
        return None
    order = sorted(range(n), key=lambda i: series[i])
    ranks = [0.0] * n
    for rank, i in enumerate(order):
        ranks[i] = float(rank)
    mean = (n - 1) / 2
    num = sum((i - mean) * (r - mean) for i, r in enumerate(ranks))
    den = sum((i - mean) ** 2 for i in range(n))
    return num / den if den else None


@dataclass(frozen=True)
class Drift:
    """A family's trend within its processes."""

    ratio: float  # median over processes of the halves ratio
    ratio_low: float  # its 95% bootstrap interval over processes
    ratio_high: float
    rank_trend: float  # median over processes of the rank trend
    processes: int
    each_drifting: int = 0  # processes that drift on their own, in either direction
    left_out: int = 0  # processes with a value <= 0 (no ratio)

    @property
    def pct(self) -> float:
        """The later values against the earlier, in percent (+30: 30% more)."""
        return 100.0 * (self.ratio - 1.0)

    @property
    def drifting(self) -> bool:
        excludes_one = self.ratio_low > 1.0 or self.ratio_high < 1.0
        pooled = excludes_one and abs(self.pct) > DRIFT_PCT
        return pooled or (self.processes >= 2 and 2 * self.each_drifting > self.processes)

    def words(self) -> str:
        return (
            f"later values {self.pct:+.1f}% [{100 * (self.ratio_low - 1):+.1f}, "
            f"{100 * (self.ratio_high - 1):+.1f}] against earlier over {self.processes} "
            f"process(es), rank trend {self.rank_trend:+.2f}; {self.each_drifting} drifting "
            "on their own" + (f"; {self.left_out} left out (a value <= 0)" if self.left_out else "")
        )


def family_drift(per_process: Sequence[Sequence[float]]) -> Drift | None:
    """The trend of a family's values within each process (values in the order measured),
    pooled over processes: value i of a process's second half over value i of its first, the
    median of those ratios with a hierarchical bootstrap interval (processes, then pairs within
    them: robust.hierarchical_compare, as every ratio the report gives). None where no process
    has MIN_VALUES values."""
    seconds, firsts, trends = [], [], []
    each = left_out = 0
    for s in per_process:
        if len(s) < MIN_VALUES:
            continue
        if min(s) <= 0:
            left_out += 1
            continue
        half = len(s) // 2
        first, second = list(s[:half]), list(s[len(s) - half :])
        firsts.append(first)
        seconds.append(second)
        trend = rank_trend(s)
        if trend is not None:
            trends.append(trend)
        ratio = halves_ratio(s)
        if (
            ratio is not None
            and abs(ratio - 1) * 100 > DRIFT_PCT
            and robust.mann_whitney_p(second, first) < EACH_ALPHA
        ):
            each += 1
    if not firsts:
        return None
    cmp = robust.hierarchical_compare(seconds, firsts, paired=True)
    return Drift(
        cmp.ratio, cmp.ci_low, cmp.ci_high, robust.median(trends), len(firsts), each, left_out
    )
