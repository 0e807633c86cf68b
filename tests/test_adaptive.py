"""Adaptive measurement: durations and percentages parsed, the collector-free round values, the
round policy's decisions on synthetic suite states (budget shares, furthest family first,
stopping reasons), the tail rule, and a family key that means the same to both halves."""

from __future__ import annotations

import argparse
from dataclasses import replace

import pytest

from bench import suites
from bench.base.names import BenchName, CaseKey
from bench.config.cliargs import duration_s, percent
from bench.orchestration.adaptive import (
    FURTHER_VALUES,
    AdaptivePolicy,
    Precision,
    half_width_pct,
    net_cost_precision,
    processes_needed,
    ratio_precision,
)
from bench.orchestration.runner import SuiteState
from bench.runformat.pyperf_io import BenchValues
from bench.runformat.schema import StepSeries, SuiteExtras
from bench.stats import supports_quantile, values_for_quantile
from bench.stats.cases import step_round_values
from bench.stats.derive import queue_stats, step_percentiles
from bench.stats.rounds import Rounds, rounds_of
from bench.suites.spec import Job


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("6m", 360.0), ("90s", 90.0), ("1h30m", 5400.0), ("300", 300.0), ("2.5m", 150.0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert duration_s(text) == seconds


@pytest.mark.parametrize("text", ["x", "0", "m", "-5", "", "6 minutes"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="duration"):
        duration_s(text)


def test_budget_off_and_percentages() -> None:
    assert duration_s("off") is None
    assert percent("15") == 15.0
    assert percent("7.5%") == 7.5
    for bad in ("0", "101", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            percent(bad)


def test_config_refuses_a_bad_budget_or_precision() -> None:
    config = suites.default_config()
    with pytest.raises(ValueError, match="budget"):
        replace(config, budget_s=-1.0).validate()
    with pytest.raises(ValueError, match="precision"):
        replace(config, precision_pct=0.0).validate()
    assert config.measures("anything")
    only = replace(config, only_families=("scenario=decode-dspark",))
    assert only.measures("scenario=decode-dspark")
    assert not only.measures("scenario=prefill-dspark")


def test_family_keys_are_what_the_workers_filter_on() -> None:
    """A step family is the scenario case (CaseKey text), a lookup family the live/regime cell:
    the run halves filter on exactly the text the policy derives from benchmark names."""
    step = BenchName.of(
        "step", "pr652", scenario="decode-dspark", pattern="cached", decode_batch=64
    )
    case = CaseKey.of("decode-dspark", decode_batch=64)
    assert step.family_text(suites.get("step").adaptive.within) == case.text  # type: ignore[union-attr]
    lookup = BenchName.of("lookup", "pr652", op="get_hit", live=1000, regime="cold")
    assert lookup.family_text(suites.get("lookup").adaptive.within) == "live=1000/regime=cold"  # type: ignore[union-attr]


# -- collector-free round values ---------------------------------------------------------------


def _name(strategy: str, scenario: str = "prefill-dspark") -> str:
    return str(BenchName.of("step", strategy, scenario=scenario, pattern="per_field"))


def test_round_values_drop_collection_steps_from_every_scheduler_of_the_case() -> None:
    k = 4  # steps per value, two rounds
    a, b, other = _name("pr652"), _name("control"), _name("pr652", "decode-dspark")
    steps = {
        a: StepSeries(
            [100, 100, 9_000, 100, 200, 200, 200, 200], [0] * 8, [0, 0, 1, 0, 0, 0, 0, 0]
        ),
        b: StepSeries([50, 50, 50, 50, 60, 60, 60, 60], [0] * 8, [0] * 8),
        other: StepSeries([10] * 8, [0] * 8, [1] * 8),  # every step collected: kept as measured
    }
    values = {
        n: [sum(s.host_ns[r * k : (r + 1) * k]) / k / 1e9 for r in range(2)]
        for n, s in steps.items()
    }
    values["lookup/pr652/op=get_hit/live=1000/regime=warm"] = [1.0, 2.0]
    out = step_round_values(rounds_of(values), steps, k, "step")
    # round 0: step 2 had a collection (in pr652): dropped from pr652 AND control
    assert out.flat(a) == [pytest.approx(100e-9), pytest.approx(200e-9)]
    assert out.flat(b) == [pytest.approx(50e-9), pytest.approx(60e-9)]
    assert values[a][0] == pytest.approx(2325e-9)  # what the raw value was
    assert out.flat(other) == values[other]
    assert out.flat("lookup/pr652/op=get_hit/live=1000/regime=warm") == [1.0, 2.0]


def test_round_values_mask_within_each_worker() -> None:
    """Worker 7 measured pr652 and control, worker 9 pr652 only (a further round): a collection
    in worker 9 masks nothing in worker 7, and each worker's series is its own segment."""
    a, b = _name("pr652"), _name("control")
    rounds = Rounds({a: [[1.0], [1.0]], b: [[1.0]]}, {a: [7, 9], b: [7]})
    steps = {
        a: StepSeries([10, 10, 30, 99], [0] * 4, [0, 0, 0, 1]),  # worker 7: 10, 10; 9: 30, 99
        b: StepSeries([5, 7], [0, 0], [0, 1]),
    }
    out = step_round_values(rounds, steps, 2, "step")
    assert out.runs[a] == [[pytest.approx(10e-9)], [pytest.approx(30e-9)]]
    assert out.runs[b] == [[pytest.approx(5e-9)]]


def test_rounds_pair_over_the_workers_both_have() -> None:
    rounds = Rounds(
        {"x": [[1.0, 2.0], [3.0, 4.0], [5.0]], "y": [[10.0, 20.0], [50.0, 60.0]]},
        {"x": [0, 1, 2], "y": [0, 2]},
    )
    assert rounds.paired("x", "y") == [[1.0, 2.0], [10.0, 20.0]]  # worker 2: lengths differ
    assert rounds.paired("x", "missing") is None
    assert Rounds({"x": [[1.0]], "y": [[2.0]]}).paired("x", "y") == [[1.0], [2.0]]  # by position


def test_round_values_leave_unpaired_cases_alone() -> None:
    a, b = _name("pr652"), _name("control")
    steps = {a: StepSeries([1, 1], [0, 0], [1, 0]), b: StepSeries([1], [0], [0])}
    values = {a: [1e-9, 1e-9], b: [1e-9]}
    out = step_round_values(rounds_of(values), steps, 1, "step")
    assert {n: out.flat(n) for n in out} == values


# -- precision of a family -----------------------------------------------------------------------


def test_half_width() -> None:
    assert half_width_pct(100.0, 90.0, 120.0) == pytest.approx(15.0)
    assert half_width_pct(-100.0, -120.0, -90.0) == pytest.approx(15.0)
    assert half_width_pct(0.0, -1.0, 1.0) is None


def test_net_cost_precision_is_the_baselines_paired_interval() -> None:
    base, ref = _name("pr652"), _name("control")
    tight = rounds_of({base: [150e-6 + i * 1e-7 for i in range(12)], ref: [50e-6] * 12})
    got = net_cost_precision(tight, baseline="pr652", pattern="per_field", within=("pattern",))
    p = got["scenario=prefill-dspark"]
    assert p.estimate == pytest.approx(100.55e-6, rel=1e-3)
    assert p.half_width_pct is not None
    assert p.half_width_pct < 1.0
    assert p.reached(15.0)
    wide = rounds_of({base: [50e-6, 150e-6, 250e-6, 20e-6], ref: [50e-6] * 4})
    w = net_cost_precision(wide, baseline="pr652", pattern="per_field", within=("pattern",))
    assert not w["scenario=prefill-dspark"].reached(15.0)
    few = rounds_of({base: [1e-6, 2e-6], ref: [0.5e-6, 0.5e-6]})  # two rounds: no interval yet
    f = net_cost_precision(few, baseline="pr652", pattern="per_field", within=("pattern",))
    assert f["scenario=prefill-dspark"].half_width_pct is None
    assert not f["scenario=prefill-dspark"].reached(100.0)


def test_ratio_precision_is_the_least_precise_ratio_and_ignores_the_reference() -> None:
    def lookup(s: str) -> str:
        return str(BenchName.of("lookup", s, op="get_hit", live=1000, regime="warm"))

    base = [[100.0 + i for i in range(6)], [101.0 + i for i in range(6)]]
    runs = {
        lookup("pr652"): base,
        lookup("declared"): [[v * 0.5 for v in g] for g in base],  # exact ratio: no width
        lookup("dynattr"): [[v * (0.5 if i % 2 else 1.5) for i, v in enumerate(g)] for g in base],
        lookup("control"): [[v * (0.1 if i % 2 else 5.0) for i, v in enumerate(g)] for g in base],
    }
    got = ratio_precision(Rounds(runs), baseline="pr652", within=("op",), paired=True)
    p = got["live=1000/regime=warm"]
    assert p.half_width_pct is not None
    assert p.half_width_pct > 15.0  # dynattr's, not declared's
    runs.pop(lookup("dynattr"))
    p2 = ratio_precision(Rounds(runs), baseline="pr652", within=("op",), paired=True)[
        "live=1000/regime=warm"
    ]
    assert p2.half_width_pct == pytest.approx(0.0)  # control's wild ratio does not count
    assert p2.estimate == pytest.approx(0.5)


# -- the round policy ------------------------------------------------------------------------------


def _state(
    config: object, values: dict[str, list[float]], *, wall: float, elapsed: float
) -> SuiteState:
    from bench.base.timing import wall_s

    state = SuiteState("step")
    state.jobs = [Job(0, config)]  # type: ignore[arg-type]
    state.worker_wall_s = [wall]
    state.started = wall_s() - elapsed
    for name, vals in values.items():
        state.merged[name] = [BenchValues(name, vals, [], 10, worker=0)]
    state.extras = SuiteExtras(
        phases={"family:scenario=prefill-dspark": 4.0, "family:scenario=decode-dspark": 2.0}
    )
    return state


def _values(spread_prefill: float, spread_decode: float) -> dict[str, list[float]]:
    out = {}
    for scen, spread in (("prefill-dspark", spread_prefill), ("decode-dspark", spread_decode)):
        out[_name("pr652", scen)] = [100e-6 + spread * (i % 3 - 1) for i in range(12)]
        out[_name("control", scen)] = [0.0] * 12
    return out


def test_policy_adds_a_round_for_the_family_short_of_its_target_only() -> None:
    config = replace(suites.default_config(), budget_s=100.0, precision_pct=15.0, suites=("step",))
    policy = AdaptivePolicy(config, ["step"])
    assert policy.begin("step") == pytest.approx(100.0, abs=0.5)
    state = _state(config, _values(0.0, 60e-6), wall=10.0, elapsed=10.0)
    jobs, label = policy.further(state)
    assert len(jobs) == 1
    assert jobs[0].worker_index == 1
    assert jobs[0].config.only_families == ("scenario=decode-dspark",)
    # whole families: every strategy and pattern, as in the plan (the cache regime depends on
    # how many schedulers are interleaved)
    assert jobs[0].config.strategies == config.strategies
    assert jobs[0].config.patterns == config.patterns
    assert jobs[0].config.values == max(FURTHER_VALUES, config.values)
    assert "decode-dspark" in label
    assert "±15%" in label
    records = policy.families(state)
    assert records["scenario=prefill-dspark"].stop == "precision"
    assert records["scenario=prefill-dspark"].rounds == 1
    assert records["scenario=decode-dspark"].stop == "budget"  # had it stopped here
    assert not records["scenario=decode-dspark"].reached


def test_a_round_the_budget_buys_for_one_family_goes_to_the_nearest_to_its_target() -> None:
    """prefill-dspark at +-40% needs ~15 more processes to reach +-10%, decode-dspark at +-12%
    about one: the round the share pays for goes to decode-dspark (furthest first, the policy
    until 2026-12-04, gave it to prefill-dspark)."""
    config = replace(suites.default_config(), budget_s=19.0, precision_pct=10.0, suites=("step",))
    policy = AdaptivePolicy(config, ["step"])
    policy.begin("step")
    state = _state(config, _values(80e-6, 24e-6), wall=10.0, elapsed=10.0)
    jobs, label = policy.further(state)
    assert [j.config.only_families for j in jobs] == [("scenario=decode-dspark",)]
    assert "prefill-dspark at ±40%" in label  # the label names the least precise
    assert policy.families(state)["scenario=prefill-dspark"].stop == "budget"


def test_a_further_round_costs_what_a_process_of_the_family_took_scaled_by_its_values() -> None:
    """Per process, not per value: a warm step case takes several times the run's values, so
    a per-value cost times the round's values read it at a fraction of what it took."""
    plan = replace(suites.default_config(), values=3, warmup_values=1, suites=("step",))
    state = _state(plan, _values(1e-6, 1e-6), wall=10.0, elapsed=10.0)
    state.merged = {n: bvs * 2 for n, bvs in state.merged.items()}  # two processes measured it
    further = replace(plan, values=6)
    own = suites.get("step").adaptive
    assert own is not None
    cost = AdaptivePolicy._round_cost_s(own, state, further)
    # prefill-dspark's phases: 4.0 s over two processes, a further one of 6 values (+1)
    # against the plan's 3 (+1)
    assert cost["scenario=prefill-dspark"] == pytest.approx(4.0 / 2 * 7 / 4)


def test_a_further_lookup_round_takes_the_plans_values_not_six() -> None:
    """A lookup cell's ratios move between processes, not within one: its further round is a
    cheap process of 3 values (the step suite's takes FURTHER_VALUES)."""
    config = replace(suites.default_config(), budget_s=100.0, suites=("lookup",))
    plan = replace(config, values=3)
    policy = AdaptivePolicy(config, ["lookup"])
    policy.begin("lookup")
    state = SuiteState("lookup")
    state.jobs = [Job(w, plan) for w in range(5)]  # type: ignore[arg-type]
    state.worker_wall_s = [2.0] * 5
    from bench.base.timing import wall_s

    state.started = wall_s() - 10.0
    for s in ("pr652", "slots", "control"):
        name = str(BenchName.of("lookup", s, op="peek_hit", live=1500, regime="cold"))
        state.merged[name] = [
            BenchValues(name, [1e-7 * (1 + (w % 2) * (s == "slots"))] * 3, [], 10, worker=w)
            for w in range(5)
        ]
    state.extras = SuiteExtras(phases={"family:live=1500/regime=cold": 5.0})
    jobs, _label = policy.further(state)
    assert [j.config.values for j in jobs] == [3]
    assert jobs[0].config.only_families == ("live=1500/regime=cold",)


def test_processes_needed() -> None:
    assert processes_needed(Precision("q", 1.0, 20.0), 5, 10.0) == pytest.approx(15.0)
    assert processes_needed(Precision("q", 1.0, 9.0), 5, 10.0) == 0.0
    assert processes_needed(Precision("q", None, None), 5, 10.0) == 0.0


def test_without_a_precision_each_suite_is_measured_to_its_own_target() -> None:
    """No --precision: a step family is measured to the step suite's +-10% (a family at +-12%
    is short of it); --precision 15 takes the same family as precise."""
    own = suites.get("step").adaptive
    assert own is not None
    assert own.precision_pct == 10.0
    spread = 24e-6  # values 100 us +- 24: a half-width of 12% of the net cost (trimmed mean)
    for given, short in ((None, True), (15.0, False)):
        config = replace(
            suites.default_config(), budget_s=100.0, precision_pct=given, suites=("step",)
        )
        policy = AdaptivePolicy(config, ["step"])
        policy.begin("step")
        state = _state(config, _values(0.0, spread), wall=10.0, elapsed=10.0)
        record = policy.families(state)["scenario=decode-dspark"]
        assert record.precision_pct is not None
        assert 10.0 < record.precision_pct < 15.0
        assert record.target_pct == (10.0 if given is None else given)
        jobs, _label = policy.further(state)
        assert bool(jobs) is short


def test_policy_stops_when_the_suites_share_is_spent() -> None:
    config = replace(
        suites.default_config(), budget_s=30.0, precision_pct=15.0, suites=("lookup", "step")
    )
    policy = AdaptivePolicy(config, ["lookup", "step"])
    share = policy.begin("lookup")
    weights = {s: suites.get(s).budget_share for s in ("lookup", "step")}  # BUDGET_SHARE
    assert share == pytest.approx(30.0 * weights["lookup"] / sum(weights.values()), abs=0.5)
    # the lookup suite overran: 25 s of 30 spent when the step suite starts
    policy = AdaptivePolicy(config, ["lookup", "step"], spent_s=25.0)
    assert policy.begin("step") == pytest.approx(5.0, abs=0.5)
    state = _state(config, _values(60e-6, 60e-6), wall=4.0, elapsed=4.0)
    jobs, _ = policy.further(state)
    assert jobs == []
    assert {r.stop for r in policy.families(state).values()} == {"budget"}


def test_the_fixed_plans_run_first_and_the_adaptive_suites_share_what_they_leave() -> None:
    """gc and scaling add no rounds: their cost is spent before the budget is divided, so a
    slow hour's gc suite takes its overrun from the adaptive suites' shares, not past the
    budget (it ran last until 2026-12-06, and one run lasted 353 s)."""
    assert suites.run_order(suites.public_names()) == ["gc", "scaling", "lookup", "step"]
    assert suites.run_order(["step", "lookup"]) == ["lookup", "step"]
    assert suites.run_order(["step", "gc"]) == ["gc", "step"]
    config = replace(suites.default_config(), budget_s=300.0)
    order = suites.run_order(config.suites)
    # the fixed plans took 70 s of 300: lookup and step share the other 230 by their weights
    policy = AdaptivePolicy(config, order, spent_s=70.0)
    weights = {s: suites.get(s).budget_share for s in ("lookup", "step")}
    assert policy.begin("lookup") == pytest.approx(
        230.0 * weights["lookup"] / sum(weights.values()), abs=0.5
    )


def test_policy_without_a_budget_records_the_fixed_plan() -> None:
    config = suites.default_config()  # budget_s None
    policy = AdaptivePolicy(config, ["step"])
    assert policy.begin("step") is None
    state = _state(config, _values(60e-6, 0.0), wall=5.0, elapsed=5.0)
    assert policy.further(state) == ([], "")
    assert {r.stop for r in policy.families(state).values()} == {"fixed plan"}


# -- tails -----------------------------------------------------------------------------------------


def test_a_tail_quantile_needs_ten_values_beyond_it() -> None:
    assert values_for_quantile(0.99) == 1000
    assert values_for_quantile(0.999) == 10000
    assert not supports_quantile(999, 0.99)
    assert supports_quantile(1000, 0.99)
    few = step_percentiles(StepSeries(list(range(160)), [0] * 160, [0] * 160))
    assert few is not None
    assert few.p99_ns is None
    assert few.p999_ns is None
    many = step_percentiles(StepSeries(list(range(2400)), [0] * 2400, [0] * 2400))
    assert many is not None
    assert many.p99_ns == pytest.approx(2399 * 0.99)
    assert many.p999_ns is None
    assert queue_stats({"inflight": [1] * 100})["inflight"].p99 is None
    assert queue_stats({"inflight": [1] * 1000})["inflight"].p99 == 1


# -- collections between iterations ----------------------------------------------------------------


def test_collect_due_runs_the_young_collection_automatic_gc_would_have() -> None:
    import gc

    from bench.base.gcprobe import collect_due

    was = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        assert collect_due() == -1  # nothing allocated since: nothing due
        keep = [[] for _ in range(gc.get_threshold()[0] + 10)]  # containers past threshold 0
        assert gc.get_count()[0] > gc.get_threshold()[0]
        assert collect_due() == 0
        assert gc.get_count()[0] < gc.get_threshold()[0]
        del keep
    finally:
        if was:
            gc.enable()


# -- drift within a process ----------------------------------------------------------------


def test_a_family_whose_processes_drift_is_not_taken_as_converged() -> None:
    """Both families reach the precision; decode-dspark's cost rises with the process's age
    (the transient a fresh cohort of requests gives), so it is not stopped for precision: the
    policy buys it a further round, and its record says it drifts."""
    config = replace(suites.default_config(), budget_s=100.0, precision_pct=40.0, suites=("step",))
    policy = AdaptivePolicy(config, ["step"])
    policy.begin("step")
    values = _values(0.0, 0.0)
    values[_name("pr652", "decode-dspark")] = [100e-6 * (1 + 0.05 * i) for i in range(12)]
    state = _state(config, values, wall=10.0, elapsed=10.0)
    records = policy.families(state)
    steady, rising = records["scenario=prefill-dspark"], records["scenario=decode-dspark"]
    assert steady.reached
    assert rising.reached  # precise enough by its interval alone
    assert steady.stop == "precision"
    assert not steady.drifting
    assert steady.drift_pct == pytest.approx(0.0, abs=0.01)
    assert rising.drifting
    assert rising.stop == "drift"
    assert rising.drift_pct is not None
    assert rising.drift_pct > 20  # its later six values cost ~27% more than its first six
    jobs, _label = policy.further(state)
    assert [j.config.only_families for j in jobs] == [("scenario=decode-dspark",)]
