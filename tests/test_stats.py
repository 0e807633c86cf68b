"""Statistics against reference values (SciPy's asymptotic tests, computed once offline)."""

from __future__ import annotations

import random

import pytest

from bench import stats


def test_quantiles_and_iqr() -> None:
    data = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert stats.median(data) == 3.0
    assert stats.quantile(data, 0.25) == 2.0
    assert stats.quantile(data, 0.9) == pytest.approx(4.6)
    assert stats.iqr(data) == 2.0
    assert stats.is_noisy([1.0, 1.5, 2.0])
    assert not stats.is_noisy([1.0, 1.01, 1.02])
    with pytest.raises(ValueError, match="no values"):
        stats.quantile([], 0.5)


def test_mann_whitney_matches_scipy_asymptotic() -> None:
    a = [1.0, 2.1, 2.9, 4.2, 5.0, 6.1]
    b = [3.05, 4.1, 5.2, 6.3, 7.0, 8.4, 9.1]
    assert stats.mann_whitney_p(a, b) == pytest.approx(0.05378408886239828, rel=1e-9)
    # with ties
    assert stats.mann_whitney_p([1, 1, 2, 2, 3], [2, 3, 3, 4, 4]) == pytest.approx(
        0.05241162867102868, rel=1e-9
    )


def test_wilcoxon_matches_scipy_approx() -> None:
    d = [0.5, -0.2, 1.1, 0.9, 0.3, 0.7, -0.1, 1.4, 0.8, 0.6]
    assert stats.wilcoxon_signed_rank_p(d) == pytest.approx(0.014432823938841816, rel=1e-9)
    assert stats.wilcoxon_signed_rank_p([0.0, 0.0]) == 1.0


def test_compare_detects_a_real_difference_and_not_a_null_one() -> None:
    rng = random.Random(5)
    base = [1.0 + rng.gauss(0, 0.02) for _ in range(30)]
    slower = [1.1 + rng.gauss(0, 0.02) for _ in range(30)]
    same = [1.0 + rng.gauss(0, 0.02) for _ in range(30)]
    c = stats.compare(slower, base)
    assert c.verdict == "slower"
    assert c.ci_low < 1.1 < c.ci_high or abs(c.ratio - 1.1) < 0.02
    assert stats.compare(same, base).verdict == "same"
    assert stats.compare(base, slower).verdict == "faster"


def test_paired_compare_sees_through_shared_drift() -> None:
    """Both sides drift together round by round: unpaired drowns, paired finds +3%."""
    rng = random.Random(9)
    drift = [1 + 0.5 * rng.random() for _ in range(20)]
    base = [d * (1 + rng.gauss(0, 0.002)) for d in drift]
    cand = [d * 1.03 * (1 + rng.gauss(0, 0.002)) for d in drift]
    assert stats.compare(cand, base).verdict == "same"
    paired = stats.compare(cand, base, paired=True)
    assert paired.verdict == "slower"
    assert paired.ci_low < 1.03 < paired.ci_high


def test_bootstrap_ci_brackets_the_median() -> None:
    data = [float(x) for x in range(1, 101)]
    lo, hi = stats.bootstrap_median_ci(data)
    assert lo < 50.5 < hi
    assert hi - lo < 30


def test_fits() -> None:
    slope, intercept = stats.linear_fit([1, 2, 3], [3, 5, 7])
    assert slope == pytest.approx(2.0)
    assert intercept == pytest.approx(1.0)
    assert stats.loglog_slope([1, 10, 100], [5, 50, 500]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="two distinct"):
        stats.linear_fit([1, 1], [2, 3])


def test_hierarchical_medians_with_groups_of_other_sizes() -> None:
    """Further rounds measure more values than the plan's processes: each drawn process
    contributes its own number of draws and the padding never reaches a median."""
    import numpy as np

    from bench.stats.robust import _hierarchical_medians

    same = _hierarchical_medians([[5.0, 5.0], [5.0] * 4], np.random.default_rng(1), 500)
    assert set(same.tolist()) == {5.0}
    # picks (a, a) give 1; any pick with b pools at least 4 threes against 2 ones: 3
    dist = _hierarchical_medians([[1.0, 1.0], [3.0] * 4], np.random.default_rng(2), 4000)
    assert set(dist.tolist()) <= {1.0, 3.0}
    assert 0.22 <= float(np.mean(dist == 1.0)) <= 0.28
