"""Robust statistics for benchmark values: medians, IQR, bootstrap CIs, Mann-Whitney U,
Wilcoxon signed-rank, least-squares fits.

No scipy dependency: inputs are tens to thousands of values. Bootstraps resample with numpy
(one array operation per CI: a report computes hundreds of them).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# A result whose IQR exceeds this share of its median is flagged noisy (the harness's rule).
NOISY_IQR_FRACTION = 0.10
# Resamples for bootstrap CIs: 2,000 keeps the 2.5%/97.5% quantiles stable to ~1% of the width.
BOOTSTRAP_RESAMPLES = 2000
# Two-sided significance level for verdicts.
ALPHA = 0.05


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile, q in [0, 1]."""
    if not values:
        raise ValueError("quantile of no values")
    data = sorted(values)
    pos = q * (len(data) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def iqr(values: Sequence[float]) -> float:
    return quantile(values, 0.75) - quantile(values, 0.25)


def is_noisy(values: Sequence[float]) -> bool:
    m = median(values)
    return m > 0 and iqr(values) / m > NOISY_IQR_FRACTION


# Student's t, two-sided 95%: the 0.975 quantile for 1-30 degrees of freedom.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: int) -> float:
    """Student's t 0.975 quantile (beyond 30 degrees of freedom, z + (z^3 + z) / 4df)."""
    if df < 1:
        raise ValueError("t quantile needs at least one degree of freedom")
    return _T975[df - 1] if df <= len(_T975) else 1.959964 + 2.372 / df


def mean_t_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high): the 95% Student t interval of the mean, for a few replicates (worker
    processes) each of which is itself a precise figure; NaN bounds for one value."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, math.nan, math.nan
    half = t975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return mean, mean - half, mean + half


def _resampled_medians(values: Sequence[float], rng: Any) -> Any:
    """Medians of BOOTSTRAP_RESAMPLES resamples of values (numpy: one array operation)."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    picks = rng.integers(0, data.size, (BOOTSTRAP_RESAMPLES, data.size))
    return np.median(data[picks], axis=1)


def bootstrap_median_ci(
    values: Sequence[float], *, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile-bootstrap CI of the median."""
    import numpy as np

    meds = _resampled_medians(values, np.random.default_rng(seed))
    tail = (1 - level) / 2
    lo, hi = np.quantile(meds, [tail, 1 - tail])
    return float(lo), float(hi)


def bootstrap_mean_ci(
    values: Sequence[float], *, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile-bootstrap CI of the mean."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, (BOOTSTRAP_RESAMPLES, data.size))].mean(axis=1)
    tail = (1 - level) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return float(lo), float(hi)


def bootstrap_ratio_ci(
    num: Sequence[float], den: Sequence[float], *, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """CI of median(num)/median(den), resampling both sides independently."""
    import numpy as np

    rng = np.random.default_rng(seed)
    d = _resampled_medians(den, rng)
    n = _resampled_medians(num, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(d != 0, n / np.where(d != 0, d, 1.0), np.inf)
    tail = (1 - level) / 2
    lo, hi = np.quantile(ratios, [tail, 1 - tail])
    return float(lo), float(hi)


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U p-value (normal approximation with tie correction)."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney needs values on both sides")
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    ranks = [0.0] * len(pooled)
    tie_term = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        rank = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[k] = rank
        t = j - i + 1
        tie_term += t**3 - t
        i = j + 1
    r1 = sum(r for r, (_, side) in zip(ranks, pooled, strict=True) if side == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    mu = n1 * n2 / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return 1.0
    z = (abs(u1 - mu) - 0.5) / math.sqrt(var)  # continuity correction
    return max(0.0, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


@dataclass(frozen=True)
class Comparison:
    """How `value` compares with `baseline`: ratio of medians with CI and a verdict."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    significant: bool

    @property
    def verdict(self) -> str:
        if not self.significant:
            return "same"
        return "slower" if self.ratio > 1 else "faster"


def wilcoxon_signed_rank_p(diffs: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank p-value (normal approximation, zeros dropped, ties
    averaged): are paired differences centred on zero?"""
    nz = [d for d in diffs if d != 0]
    n = len(nz)
    if n == 0:
        return 1.0
    order = sorted(range(n), key=lambda i: abs(nz[i]))
    ranks = [0.0] * n
    tie_term = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and abs(nz[order[j + 1]]) == abs(nz[order[i]]):
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        t = j - i + 1
        tie_term += t**3 - t
        i = j + 1
    w_plus = sum(r for r, d in zip(ranks, nz, strict=True) if d > 0)
    mu = n * (n + 1) / 4
    var = n * (n + 1) * (2 * n + 1) / 24 - tie_term / 48
    if var <= 0:
        return 1.0
    z = (abs(w_plus - mu) - 0.5) / math.sqrt(var)
    return max(0.0, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


def compare(
    values: Sequence[float],
    baseline: Sequence[float],
    *,
    paired: bool = False,
    seed: int = 0,
    alpha: float = ALPHA,
) -> Comparison:
    """Ratio of `values` to `baseline` with a (1 - alpha) bootstrap CI and a significance test.

    paired=True when value i of both was taken in the same interleaved round (adjacent in time,
    over the same scheduler steps): the ratio is then the median of per-round ratios, its CI a
    bootstrap over rounds, and the test Wilcoxon's signed-rank on log ratios. This removes the
    drift and workload variation that both sides share. Unpaired: ratio of medians, independent
    bootstrap, Mann-Whitney U.
    """
    if paired and len(values) == len(baseline) and len(values) > 1:
        ratios = [v / b for v, b in zip(values, baseline, strict=True)]
        ratio = median(ratios)
        lo, hi = bootstrap_median_ci(ratios, seed=seed, level=1 - alpha)
        p = wilcoxon_signed_rank_p([math.log(r) for r in ratios])
    else:
        ratio = median(values) / median(baseline)
        lo, hi = bootstrap_ratio_ci(values, baseline, seed=seed, level=1 - alpha)
        p = mann_whitney_p(values, baseline)
    significant = p < alpha and not (lo <= 1.0 <= hi)
    return Comparison(ratio=ratio, ci_low=lo, ci_high=hi, p_value=p, significant=significant)


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares slope and intercept."""
    if len(xs) < 2:
        raise ValueError("a fit needs at least two points")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("a fit needs at least two distinct x values")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return slope, my - slope * mx


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Slope of log(y) against log(x): ~0 constant, ~1 linear growth."""
    return linear_fit([math.log(x) for x in xs], [math.log(y) for y in ys])[0]


# A tail quantile q is reported only where at least this many recorded values lie beyond it
# (n * (1 - q) >= 10: a p99 needs 1,000 iterations, a p99.9 10,000). Fewer, and the quantile is
# one of the few largest values: its bootstrap resamples the same handful, so the interval says
# nothing (a quick run's 160 steps gave p99 ratios like 1.013x [0.053, 18.380]).
TAIL_MIN_BEYOND = 10


def supports_quantile(n: int, q: float) -> bool:
    """Whether n recorded values support a quantile q (TAIL_MIN_BEYOND values beyond it)."""
    return n * (1.0 - q) >= TAIL_MIN_BEYOND - 1e-9


def values_for_quantile(q: float) -> int:
    """The fewest recorded values that support quantile q."""
    return math.ceil(TAIL_MIN_BEYOND / (1.0 - q) - 1e-9)


# Resamples for a quantile-ratio bootstrap: p99 of <= a few thousand steps; 1,000 keeps the CI
# ends to ~2%.
QUANTILE_RESAMPLES = 1000


def quantile_ratio_ci(
    values: Sequence[float],
    baseline: Sequence[float],
    q: float,
    *,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile-bootstrap CI of quantile(values, q) / quantile(baseline, q) (numpy: thousands
    of steps times a thousand resamples)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    a = np.asarray(values, dtype=float)
    b = np.asarray(baseline, dtype=float)
    qa = np.quantile(a[rng.integers(0, a.size, (QUANTILE_RESAMPLES, a.size))], q, axis=1)
    qb = np.quantile(b[rng.integers(0, b.size, (QUANTILE_RESAMPLES, b.size))], q, axis=1)
    ratios = qa / np.where(qb > 0, qb, np.nan)
    tail = (1 - level) / 2
    lo, hi = np.nanquantile(ratios, [tail, 1 - tail])
    return float(lo), float(hi)


# The share of rounds trimmed from each end by the paired estimators (trimmed_mean): a round
# spoilt by something outside the design (one round in twelve once read 449 us against 30-141 us
# for the others) moves a 10%-trimmed mean by little, while the mean of the middle 80% keeps
# ~95% of the mean's efficiency on well-behaved rounds, where the median keeps ~64%
# (docs/ARCHITECTURE.md, "The paired estimator").
TRIM_FRACTION = 0.10


def trimmed_mean(values: Sequence[float], fraction: float = TRIM_FRACTION) -> float:
    """The mean of the values left after floor(n * fraction) are dropped from each end."""
    if not values:
        raise ValueError("trimmed mean of no values")
    data = sorted(values)
    k = int(len(data) * fraction)
    kept = data[k : len(data) - k]
    return sum(kept) / len(kept)


def _rows_trimmed_mean(table: Any, fraction: float = TRIM_FRACTION) -> Any:
    """trimmed_mean of every row of a 2-D array whose NaNs are padding (left out)."""
    import numpy as np

    data = np.sort(table, axis=1)  # NaNs last
    n = np.sum(~np.isnan(data), axis=1)
    k = (n * fraction).astype(int)
    sums = np.concatenate(
        [np.zeros((data.shape[0], 1)), np.cumsum(np.nan_to_num(data), axis=1)], axis=1
    )
    rows = np.arange(data.shape[0])
    return (sums[rows, n - k] - sums[rows, k]) / (n - 2 * k)


def _hierarchical_draws(groups: Sequence[Sequence[float]], rng: Any, resamples: int) -> Any:
    """`resamples` two-level bootstrap samples, one a row: draw groups (worker processes) with
    replacement, then values (rounds) with replacement within each drawn group, pooled. Values
    of one process share its memory layout and hash seed, so the process, not the value, is
    the unit that is replicated. Groups of other sizes (further rounds measure more values
    than the plan's processes) are padded to the largest, each drawn group contributing its
    own size's draws and the padding NaN."""
    import numpy as np

    arrays = [np.asarray(g, dtype=float) for g in groups if len(g)]
    n_groups = len(arrays)
    pick = rng.integers(0, n_groups, (resamples, n_groups))
    if len({a.size for a in arrays}) == 1:  # the usual case: one array op for all resamples
        table = np.stack(arrays)
        size = table.shape[1]
        rows = rng.integers(0, size, (resamples, n_groups, size))
        return table[pick[:, :, None], rows].reshape(resamples, n_groups * size)
    sizes = np.array([a.size for a in arrays])
    width = int(sizes.max())
    table = np.full((n_groups, width), np.nan)
    for i, a in enumerate(arrays):
        table[i, : a.size] = a
    drawn_sizes = sizes[pick]  # (resamples, n_groups)
    rows = (rng.random((resamples, n_groups, width)) * drawn_sizes[:, :, None]).astype(int)
    drawn = table[pick[:, :, None], rows]
    drawn[np.arange(width)[None, None, :] >= drawn_sizes[:, :, None]] = np.nan
    return drawn.reshape(resamples, n_groups * width)


def _hierarchical_medians(groups: Sequence[Sequence[float]], rng: Any, resamples: int) -> Any:
    """Medians of `resamples` two-level bootstrap samples (_hierarchical_draws)."""
    import numpy as np

    return np.nanmedian(_hierarchical_draws(groups, rng, resamples), axis=1)


def hierarchical_trimmed_ci(
    groups: Sequence[Sequence[float]], *, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """CI of the trimmed mean (trimmed_mean) of values grouped by worker process (processes,
    then values)."""
    import numpy as np

    draws = _hierarchical_draws(groups, np.random.default_rng(seed), BOOTSTRAP_RESAMPLES)
    dist = _rows_trimmed_mean(draws)
    tail = (1 - level) / 2
    lo, hi = np.quantile(dist, [tail, 1 - tail])
    return float(lo), float(hi)


def hierarchical_compare(
    values: Sequence[Sequence[float]],
    baseline: Sequence[Sequence[float]],
    *,
    paired: bool,
    seed: int = 0,
    alpha: float = ALPHA,
) -> Comparison:
    """values / baseline, with a hierarchical bootstrap CI (processes, then rounds within them)
    and a test on the same units (the bootstrap's two-sided p for a ratio of 1).

    `values` and `baseline` are per worker process lists. paired=True when both were measured
    in the same processes, value i of each in the same round (the suite interleaves them): the
    ratio is the geometric trimmed mean of per-round ratios (exp of the trimmed mean of their
    logs, as real mode's paired statistic is the mean log ratio), resampled by process then
    round. Where processes disagree (a lookup's cold ratio read 0.45-0.6 in some processes and
    1.1-1.8 in others, by layout), a median jumps between the modes and its interval spans
    both; the mean weighs them by how often they occur. Unpaired: each side is resampled on
    its own and the ratio is of the medians."""
    import numpy as np

    rng = np.random.default_rng(seed)
    same_shape = len(values) == len(baseline) and all(
        len(v) == len(b) for v, b in zip(values, baseline, strict=True)
    )
    if paired and same_shape:
        ratios = [
            [v / b for v, b in zip(vs, bs, strict=True)]
            for vs, bs in zip(values, baseline, strict=True)
        ]
        if all(v > 0 for g in values for v in g) and all(b > 0 for g in baseline for b in g):
            logs = [[math.log(r) for r in group] for group in ratios]
            point = math.exp(trimmed_mean([x for group in logs for x in group]))
            draws = _hierarchical_draws(logs, rng, BOOTSTRAP_RESAMPLES)
            dist = np.exp(_rows_trimmed_mean(draws))
        else:  # a value at or below zero has no log ratio: the median of the ratios
            point = median([r for group in ratios for r in group])
            dist = _hierarchical_medians(ratios, rng, BOOTSTRAP_RESAMPLES)
    else:
        point = median([v for g in values for v in g]) / median([b for g in baseline for b in g])
        num = _hierarchical_medians(values, rng, BOOTSTRAP_RESAMPLES)
        den = _hierarchical_medians(baseline, rng, BOOTSTRAP_RESAMPLES)
        dist = num / np.where(den > 0, den, np.nan)
    tail = alpha / 2
    lo, hi = (float(x) for x in np.nanquantile(dist, [tail, 1 - tail]))
    below = float(np.mean(dist <= 1.0))
    p = min(1.0, 2 * min(below, 1.0 - float(np.mean(dist < 1.0))))
    return Comparison(
        ratio=point, ci_low=lo, ci_high=hi, p_value=p, significant=not lo <= 1.0 <= hi
    )


def hierarchical_median_ci(
    groups: Sequence[Sequence[float]], *, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """CI of the median of values grouped by worker process (processes, then values)."""
    import numpy as np

    dist = _hierarchical_medians(groups, np.random.default_rng(seed), BOOTSTRAP_RESAMPLES)
    tail = (1 - level) / 2
    lo, hi = np.quantile(dist, [tail, 1 - tail])
    return float(lo), float(hi)
