"""The drift test of a family's values within each worker process (bench.stats.drift): steady
processes pass, processes whose cost rises with their age are flagged, noise alone is not."""

from __future__ import annotations

import random

import pytest

from bench.stats.drift import DRIFT_PCT, family_drift, halves_ratio, rank_trend


def test_halves_and_rank_trend_of_one_process() -> None:
    assert halves_ratio([1.0, 1.0, 2.0, 2.0]) == pytest.approx(2.0)
    assert halves_ratio([1.0, 5.0, 1.0]) is None  # too few values for two halves of two
    assert rank_trend([1, 2, 3, 4, 5]) == pytest.approx(1.0)
    assert rank_trend([5, 4, 3, 2, 1]) == pytest.approx(-1.0)
    assert rank_trend([1, 2]) is None


def test_a_rising_family_drifts_and_a_noisy_steady_one_does_not() -> None:
    rng = random.Random(3)
    # 4 processes of 16 values: the decode scan's cost from ~20 to ~80 µs, as a fresh dense
    # cohort of requests is replaced; against the same noise around a steady 50 µs
    rising = [[20 + 4 * i + rng.gauss(0, 3) for i in range(16)] for _ in range(4)]
    steady = [[50 + rng.gauss(0, 6) for _ in range(16)] for _ in range(4)]
    up = family_drift(rising)
    flat = family_drift(steady)
    assert up is not None
    assert flat is not None
    assert up.drifting
    assert up.pct > 50
    assert up.rank_trend > 0.9
    assert not flat.drifting
    assert abs(flat.pct) < DRIFT_PCT or flat.ratio_low <= 1.0 <= flat.ratio_high
    assert "later values" in up.words()


def test_a_small_trend_inside_the_tolerance_is_not_drift() -> None:
    # +2% from the first half to the second, measured precisely: real, but a steady state's
    # tolerance (DRIFT_PCT) allows it
    slight = [[100 + 0.25 * i for i in range(16)] for _ in range(3)]
    d = family_drift(slight)
    assert d is not None
    assert 0 < d.pct < DRIFT_PCT
    assert not d.drifting


def test_too_few_values_give_no_verdict() -> None:
    assert family_drift([[1.0, 2.0, 3.0]]) is None
    assert family_drift([]) is None


def test_the_precision_table_names_a_drifting_family() -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    from bench.report.precision import html_table, terminal_lines
    from bench.runformat.schema import FamilyRecord

    rec = FamilyRecord(
        rounds=3,
        quantity="q",
        estimate=1.0,
        precision_pct=9.0,
        target_pct=15.0,
        stop="drift",
        drift_pct=27.0,
        drift_low_pct=21.0,
        drift_high_pct=33.0,
        drifting=True,
    )
    data = cast(Any, SimpleNamespace(families={"scenario=decode-dspark": rec}, budget_s=100.0))
    html = "".join(html_table(data))
    assert "+27.0% [+21.0, +33.0] DRIFTS" in html
    assert "not taken as converged" in html
    assert any("drift +27.0%" in line for line in terminal_lines(data))


def test_processes_drifting_in_opposite_directions_are_flagged() -> None:
    """60% of the processes rising, 40% falling: the pooled median saw no drift (0 of 60)."""
    rng = random.Random(8)
    flagged = 0
    for _ in range(60):
        procs = []
        for k in range(10):
            sign = 1 if k < 6 else -1
            procs.append([1.0 * (1 + sign * 0.3 * i / 40) * rng.gauss(1, 0.02) for i in range(40)])
        d = family_drift(procs)
        assert d is not None
        flagged += d.drifting
    assert flagged >= 57


def test_net_cost_processes_at_or_below_zero_are_counted_as_left_out() -> None:
    procs = [[1.0, 1.1, 0.9, 1.0], [0.5, -0.1, 0.4, 0.5], [1.0, 1.0, 1.1, 0.9]]
    d = family_drift(procs)
    assert d is not None
    assert d.left_out == 1
    assert "1 left out" in d.words()
