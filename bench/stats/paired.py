"""The one statistic real mode's run, gate and history judge a change by.

A round is the unit of replication: its processes (one per side, started together, measuring
their iterations in turns) share the machine's same seconds. Within a round the figure of a side
is its mean cost per iteration over every measured iteration, and the round's change is the
ratio of the two sides' means (equivalently, of their paired sums). A mean, not a median of
per-iteration ratios: a scheduler's iterations are of several kinds (decode, extend, mixed) at
different costs, and the median of ratios weighs each kind by how often it occurs, not by what
it costs, so a +5% of the mean iteration read +3.8% or +8.3% depending on which kind it lay in
(tests/test_paired_statistic.py rebuilds that case).

Over rounds: the mean of the rounds' log ratios with a Student t interval (rounds - 1 degrees of
freedom), and in seconds the mean of the rounds' differences with its own t interval. A change is
significant when its interval excludes zero (two-sided, 5%). `min_detectable` is the smallest
change such a test catches 80% of the time with the spread the job showed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench.stats.robust import t975

ALPHA = 0.05
POWER = 0.80


def round_ratio(num: Sequence[float], den: Sequence[float]) -> float:
    """One round's change: the ratio of the two sides' mean cost per iteration."""
    if not num or not den:
        raise ValueError("a side of the round has no values")
    return (sum(num) / len(num)) / (sum(den) / len(den))


def round_difference(num: Sequence[float], den: Sequence[float]) -> float:
    """One round's change in the values' units: the difference of the two sides' means."""
    if not num or not den:
        raise ValueError("a side of the round has no values")
    return sum(num) / len(num) - sum(den) / len(den)


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-12:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with `df` degrees of freedom."""
    if df < 1:
        raise ValueError("a t test needs at least one degree of freedom")
    if math.isinf(t):
        return 0.0
    return _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile (p in (0.5, 1)), by bisection on the distribution function."""
    target = 2.0 * (1.0 - p)  # the two-sided tail that quantile leaves
    lo, hi = 0.0, 1.0
    while t_two_sided_p(hi, df) > target:
        hi *= 2.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        if t_two_sided_p(mid, df) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


@dataclass(frozen=True)
class OverRounds:
    """The rounds' mean with its 95% t interval and two-sided p (NaN bounds with one round)."""

    mean: float
    low: float
    high: float
    p_value: float
    sd: float
    rounds: int

    @property
    def significant(self) -> bool:
        return self.rounds > 1 and not self.low <= 0.0 <= self.high


def over_rounds(xs: Sequence[float]) -> OverRounds:
    n = len(xs)
    if n == 0:
        raise ValueError("no rounds")
    mean = sum(xs) / n
    if n < 2:
        return OverRounds(mean, math.nan, math.nan, 1.0, math.nan, n)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    se = sd / math.sqrt(n)
    if se == 0.0:
        return OverRounds(mean, mean, mean, 0.0 if mean else 1.0, 0.0, n)
    half = t975(n - 1) * se
    return OverRounds(mean, mean - half, mean + half, t_two_sided_p(mean / se, n - 1), sd, n)


def min_detectable(sd: float, rounds: int, power: float = POWER) -> float:
    """The smallest true change (the units of `sd`, a spread of one round's figure) that a
    two-sided 5% t test over `rounds` rounds flags with probability `power`."""
    if rounds < 2 or math.isnan(sd):
        return math.inf
    df = rounds - 1
    return (t975(df) + t_quantile(power, df)) * sd / math.sqrt(rounds)


@dataclass(frozen=True)
class PairedChange:
    """A change over rounds: ratio (exp of the mean log ratio) with its interval and p, the
    same in the values' units, and the minimum detectable change in percent."""

    ratio: float
    ratio_low: float
    ratio_high: float
    p_value: float
    significant: bool
    difference: float
    difference_low: float
    difference_high: float
    min_detectable_pct: float
    rounds: int

    @property
    def pct(self) -> float:
        return (self.ratio - 1) * 100


def paired_change(
    num_rounds: Sequence[Sequence[float]], den_rounds: Sequence[Sequence[float]]
) -> PairedChange:
    """`num_rounds[k]` and `den_rounds[k]`: round k's values of each side."""
    if len(num_rounds) != len(den_rounds) or not num_rounds:
        raise ValueError(f"{len(num_rounds)} and {len(den_rounds)} rounds cannot be paired")
    logs = over_rounds(
        [math.log(round_ratio(n, d)) for n, d in zip(num_rounds, den_rounds, strict=True)]
    )
    diffs = over_rounds(
        [round_difference(n, d) for n, d in zip(num_rounds, den_rounds, strict=True)]
    )
    mdc = math.expm1(min_detectable(logs.sd, logs.rounds)) * 100
    return PairedChange(
        math.exp(logs.mean),
        math.exp(logs.low),
        math.exp(logs.high),
        logs.p_value,
        logs.significant,
        diffs.mean,
        diffs.low,
        diffs.high,
        mdc,
        logs.rounds,
    )
