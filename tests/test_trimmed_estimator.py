"""The paired estimator: the 10%-trimmed mean of round differences and of log ratios, with a
hierarchical bootstrap over processes then rounds (bench.stats.robust)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from bench.stats import robust
from bench.stats.cases import NET_STATISTIC
from bench.stats.derive import paired_difference


def test_trimmed_mean_drops_a_tenth_from_each_end() -> None:
    values = [float(v) for v in range(1, 21)]  # 20 values: 2 dropped from each end
    assert robust.trimmed_mean(values) == pytest.approx(sum(range(3, 19)) / 16)
    assert robust.trimmed_mean([5.0]) == 5.0
    # one spoilt round of twelve moves it by little; it takes the mean with it
    rounds = [100.0] * 11 + [449.0]
    assert robust.trimmed_mean(rounds) == pytest.approx(100.0)
    assert sum(rounds) / len(rounds) > 129


def test_row_trimmed_means_leave_the_padding_out() -> None:
    rng = random.Random(3)
    rows = [[rng.gauss(0, 1) for _ in range(n)] for n in (7, 12, 20, 31)]
    width = max(len(r) for r in rows)
    table = np.full((len(rows), width), np.nan)
    for i, r in enumerate(rows):
        table[i, : len(r)] = r
    got = robust._rows_trimmed_mean(table)
    assert got == pytest.approx([robust.trimmed_mean(r) for r in rows])


def test_a_paired_ratio_is_the_geometric_trimmed_mean_of_the_rounds_ratios() -> None:
    base = [[1.0, 2.0, 4.0, 1.0, 2.0], [2.0, 2.0, 1.0, 4.0, 1.0]]
    factors = [[1.1, 0.9, 1.2, 1.0, 1.05], [0.95, 1.15, 1.0, 1.1, 0.9]]
    values = [
        [b * f for b, f in zip(bs, fs, strict=True)] for bs, fs in zip(base, factors, strict=True)
    ]
    cmp = robust.hierarchical_compare(values, base, paired=True)
    logs = [math.log(f) for fs in factors for f in fs]
    assert cmp.ratio == pytest.approx(math.exp(robust.trimmed_mean(logs)))
    assert cmp.ci_low <= cmp.ratio <= cmp.ci_high


def test_processes_in_two_modes_give_the_mean_a_narrower_interval_than_the_median() -> None:
    """A lookup's cold ratio read ~0.55 in two thirds of the processes and ~1.2 in the rest
    (layout): the median's resamples jump between the modes."""
    rng = random.Random(7)
    base = [[100.0 + rng.gauss(0, 1) for _ in range(3)] for _ in range(18)]
    modes = [1.2 if i % 3 == 0 else 0.55 for i in range(18)]
    values = [
        [b * m * (1 + rng.gauss(0, 0.02)) for b in bs] for bs, m in zip(base, modes, strict=True)
    ]
    cmp = robust.hierarchical_compare(values, base, paired=True)
    ratios = [
        [v / b for v, b in zip(vs, bs, strict=True)] for vs, bs in zip(values, base, strict=True)
    ]
    med_lo, med_hi = robust.hierarchical_median_ci(ratios)
    med = robust.median([r for g in ratios for r in g])
    assert (cmp.ci_high - cmp.ci_low) / cmp.ratio < 0.75 * (med_hi - med_lo) / med


def test_the_net_cost_is_the_trimmed_mean_of_the_round_differences() -> None:
    assert NET_STATISTIC == "trimmed"
    rng = random.Random(11)
    control = [[rng.uniform(300e-6, 400e-6) for _ in range(10)] for _ in range(5)]
    extra = [[rng.gauss(80e-6, 8e-6) for _ in range(10)] for _ in range(5)]
    extra[2][4] = 900e-6  # one spoilt round
    pr = [
        [c + e for c, e in zip(cs, es, strict=True)] for cs, es in zip(control, extra, strict=True)
    ]
    net = paired_difference(pr, control, NET_STATISTIC)
    flat = [e for es in extra for e in es]
    assert net.median == pytest.approx(robust.trimmed_mean(flat))
    assert 70e-6 < net.ci_low < net.median < net.ci_high < 90e-6
    assert net.processes == 5
