"""The lookup suite's declared memory regimes, its figures net of control, and the selfcheck's
bookkeeping (no timings asserted)."""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest

from bench.base.names import BenchName
from bench.measure import lookups as measure
from bench.measure.lookups import build_populations, lookup_subject
from bench.orchestration.selfcheck import SelfCheck
from bench.stats.derive import net_of, net_ratios
from bench.stats.rounds import rounds_of
from bench.suites.lookup import REGIMES
from strategies import resolve


def _pops(regime: str, monkeypatch: pytest.MonkeyPatch, n: int = 40) -> tuple[list[Any], list[Any]]:
    calls: list[tuple[str, int]] = []
    fresh = measure.Population.fresh

    def logged(self: measure.Population, k: int) -> list[Any]:
        calls.append((self.strategy.name, k))
        return fresh(self, k)

    monkeypatch.setattr(measure.Population, "fresh", logged)
    strategies = resolve(["weakkey", "declared"])
    pops = build_populations(
        strategies, n, regime=regime, miss_batch=8, max_pass=25, rng=random.Random(0)
    )
    return pops, calls


def test_warm_builds_each_population_whole_and_visits_a_window_in_allocation_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pops, calls = _pops("warm", monkeypatch)
    a, b = (p.strategy.name for p in pops)
    assert calls[:2] == [(a, 40), (b, 40)]
    for pop in pops:
        index = {id(r): i for i, r in enumerate(pop.live)}
        order = [index[id(r)] for r in pop.sample]
        assert order == list(range(order[0], order[0] + 25))  # a contiguous window
        pop.close()


def test_mixed_builds_whole_populations_and_visits_in_random_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pops, calls = _pops("mixed", monkeypatch)
    a, b = (p.strategy.name for p in pops)
    assert calls[:2] == [(a, 40), (b, 40)]
    for pop in pops:
        index = {id(r): i for i, r in enumerate(pop.live)}
        order = [index[id(r)] for r in pop.sample]
        assert order != sorted(order)
        pop.close()


def test_cold_interleaves_populations_and_visits_in_random_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pops, calls = _pops("cold", monkeypatch)
    a, b = (p.strategy.name for p in pops)
    assert calls[:4] == [(a, 1), (b, 1), (a, 1), (b, 1)]
    for pop in pops:
        index = {id(r): i for i, r in enumerate(pop.live)}
        order = [index[id(r)] for r in pop.sample]
        assert order != sorted(order)
        assert len(pop.live) == 40
        assert len(pop.never_stated) == 8
        pop.close()


def test_unknown_regime_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown lookup regime 'hot'"):
        build_populations([], 10, regime="hot", miss_batch=1, max_pass=1, rng=random.Random(0))
    assert REGIMES == ("warm", "cold", "mixed")


class CountingEvictor:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


def test_cold_values_evict_before_every_timed_pass() -> None:
    (s,) = resolve(["weakkey"])
    (pop,) = build_populations(
        [s], 50, regime="cold", miss_batch=5, max_pass=50, rng=random.Random(1)
    )
    evict = CountingEvictor()
    name = BenchName.of("lookup", s.name, op="get_hit", live=50, regime="cold")
    subject = lookup_subject(pop, "get_hit", name, 10**6, evict, cold_lookups=120)
    assert subject.loops == 150  # whole passes of 50 until >= 120 lookups
    assert subject.measure(False) > 0
    assert evict.calls == 3
    miss = lookup_subject(pop, "get_miss", name.with_params(op="get_miss"), 10**6, evict)
    miss.measure(False)
    assert evict.calls == 4
    pop.close()


def _values(**by_strategy: list[float]) -> dict[str, list[float]]:
    return {f"lookup/{s}/op=get_hit/live=100/regime=warm": v for s, v in by_strategy.items()}


def test_a_warm_get_miss_value_times_miss_batches_fresh_batches() -> None:
    (s,) = resolve(["weakkey"])
    (pop,) = build_populations(
        [s], 50, regime="warm", miss_batch=5, max_pass=50, rng=random.Random(1)
    )
    name = BenchName.of("lookup", s.name, op="get_miss", live=50, regime="warm")
    table = sys.modules[s.get.__module__]._states  # weakkey's WeakKeyDictionary
    made, held = pop._serial, len(table)
    subject = lookup_subject(pop, "get_miss", name, 10**6, miss_batches=3)
    assert subject.loops == 15
    assert subject.measure(False) > 0
    assert pop._serial - made == 15  # three fresh batches of five, none reused
    assert len(table) == held  # each batch released after its pass
    pop.close()


def test_net_of_control_and_net_ratio_are_paired_per_round() -> None:
    values = _values(
        control=[10.0, 20.0, 10.0],
        pr652=[110.0, 120.0, 110.0],  # own cost 100 every round
        declared=[35.0, 45.0, 35.0],  # own cost 25 every round
    )
    net = net_of(rounds_of(values), reference="control", kind="lookup")
    assert net["lookup/declared/op=get_hit/live=100/regime=warm"].median == pytest.approx(25.0)
    ratios = net_ratios(rounds_of(values), reference="control", baseline="pr652", kind="lookup")
    r = ratios["lookup/declared/op=get_hit/live=100/regime=warm"]
    assert r.ratio == pytest.approx(0.25)
    assert r.significant
    assert "lookup/pr652/op=get_hit/live=100/regime=warm" not in ratios  # the baseline itself


def test_net_ratio_is_left_out_when_the_baseline_costs_nothing() -> None:
    values = _values(control=[10.0, 10.0], pr652=[10.0, 9.0], declared=[30.0, 30.0])
    assert net_ratios(rounds_of(values), reference="control", baseline="pr652", kind="lookup") == {}


def test_selfcheck_agreement_and_round_trip() -> None:
    check = SelfCheck(
        live=1000,
        request_model="fork-c96e68b62b",
        timeit_ns={"weakkey": 150.0, "declared": 45.0, "dynattr": 70.0},
        suite_ns={"weakkey": 160.0, "declared": 30.0},
        run="r",
        tolerance=0.1,
    )
    assert check.agreement("weakkey") == pytest.approx(150 / 160)
    assert check.agrees("weakkey") is True
    assert check.agrees("declared") is False  # 1.5
    assert check.agrees("dynattr") is None  # no suite figure
    text = "\n".join(check.lines())
    assert "declared" in text
    assert "disagrees" in text
    assert "1 of 2 within" in text
    assert SelfCheck.from_json(check.to_json()) == check
    with pytest.raises(ValueError, match="selfcheck"):
        SelfCheck.from_json({"live": 1})
