"""How many values a step case takes (bench.measure.steps): a warm case's raised to a measured
duration from its warm-up round, an evicted case's warm-up round taken as a value."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.config.runconfig import RunConfig
from bench.measure.steps import _regime_rounds, calibrated_values


@pytest.mark.parametrize(
    ("per_iteration_s", "values"),
    [
        (2e-3, 6),  # 6 values of 10 iterations last 120 ms already
        (1e-3, 12),  # twice as cheap: twice the values
        (1e-4, 24),  # far cheaper: capped at 4x
        (0.0, 6),  # nothing measured: the values asked
    ],
)
def test_a_cheap_case_takes_more_values_up_to_the_cap(per_iteration_s: float, values: int) -> None:
    taken = [per_iteration_s] * 5
    assert calibrated_values(taken, 10, 6, 0.12, 4) == values


def test_the_median_scheduler_sets_the_values() -> None:
    # one slow scheduler among cheap ones does not hold the cheap case to its values
    assert calibrated_values([1e-3, 1e-3, 1e-3, 5e-2], 10, 6, 0.12, 4) == 12
    assert calibrated_values([], 10, 6, 0.12, 4) == 6


def test_each_regime_s_rounds() -> None:
    cfg = replace(RunConfig(), values=3, warmup_values=1)
    assert _regime_rounds(cfg, "cold", 2, 0.12, 4) == {"values": 4, "warmups": 0}
    assert _regime_rounds(cfg, "warm", 2, 0.12, 4) == {
        "values": 6,
        "min_measured_s": 0.12,
        "max_value_factor": 4,
    }
    assert _regime_rounds(cfg, None, 2, 0.12, 4) == {}
