"""The A/A twin and the one verdict rule: deterministic data, no timing.

A row is "faster"/"slower" only when its hierarchical CI excludes 1 and its effect exceeds the
noise floor of its family (the twin's deviation, at least MIN_EFFECT)."""

from __future__ import annotations

import random

import pytest

from bench.base.names import twin_of
from bench.stats import robust
from bench.stats.classify import MIN_EFFECT, classify, legacy_classify
from bench.stats.derive import noise_floors, summarize
from bench.suites import default_config
from strategies import resolve, resolve_run, twin_name


def test_classify_needs_significance_and_relevance() -> None:
    assert classify(1.30, 1.25, 1.35, noise_floor=0.05).verdict == "slower"
    assert classify(0.70, 0.65, 0.75, noise_floor=None).verdict == "faster"
    same = classify(1.04, 1.02, 1.06, noise_floor=0.05)  # significant, within the floor
    assert same.verdict == "same"
    assert same.reason.startswith("significant but 4.0% is within the noise floor 5.0%")
    assert classify(1.30, 0.95, 1.60, noise_floor=0.0).reason == "the 95% CI includes 1"
    # the documented minimum holds when the twin happens to land right on the baseline
    assert classify(1.015, 1.01, 1.02, noise_floor=0.0).verdict == "same"
    assert classify(1.0 + MIN_EFFECT + 0.01, 1.02, 1.04, noise_floor=0.0).verdict == "slower"
    # the old rule flagged the within-noise case
    assert legacy_classify(1.04, 1.02, 1.06, 0.001) == "slower"


def _runs(
    center: float, processes: int = 3, rounds: int = 8, *, offsets: list[float] | None = None
) -> list[list[float]]:
    rng = random.Random(int(center * 1000))
    offsets = offsets or [0.0] * processes
    return [
        [center * (1 + offsets[p]) * (1 + rng.uniform(-0.002, 0.002)) for _ in range(rounds)]
        for p in range(processes)
    ]


def test_summaries_hold_each_family_to_its_twins_floor() -> None:
    name = "lookup/{}/op=get_hit/live=1000/regime=warm"
    runs = {
        name.format("pr652"): _runs(100.0),
        name.format("pr652.aa"): _runs(104.0),  # the twin strays 4% on this family
        name.format("declared"): _runs(103.0),  # 3%: significant, within the floor
        name.format("dynattr"): _runs(60.0),  # 40% faster: a finding
    }
    units = dict.fromkeys(runs, "second")
    by = {s.strategy: s for s in summarize(runs, units, baseline="pr652")}
    assert by["declared"].verdict == "same"
    assert by["declared"].legacy_verdict == "slower"  # what the old rule said
    assert by["declared"].noise_floor == pytest.approx(0.04, abs=0.002)
    assert "within the noise floor" in by["declared"].reason
    assert by["dynattr"].verdict == "faster"
    assert by["pr652.aa"].twin
    assert by["pr652.aa"].verdict == "same"
    assert "A/A twin" in by["pr652.aa"].reason
    floors = noise_floors(list(by.values()))
    assert list(floors.values()) == [pytest.approx(0.04, abs=0.002)]


def test_two_twins_are_held_to_each_other() -> None:
    name = "step/{}/scenario=decode-dspark/pattern=per_field"
    runs = {
        name.format("pr652"): _runs(1.0),
        name.format("pr652.aa"): _runs(1.03),
        name.format("pr652.aa2"): _runs(0.99),
    }
    by = {s.strategy: s for s in summarize(runs, dict.fromkeys(runs, "second"), baseline="pr652")}
    assert by["pr652.aa"].noise_floor == pytest.approx(0.01, abs=0.002)  # set by .aa2
    assert by["pr652.aa"].verdict == "slower"  # 3% beyond the other twin's 1% and the 2% minimum
    assert by["pr652.aa2"].verdict == "same"


def test_hierarchical_ci_respects_processes() -> None:
    # Four processes, each its own heap layout: three land 4-5% slow, one 6% fast, each tight
    # within itself. Treating the 32 values as independent makes +4% look certain; resampling
    # processes first says four processes cannot tell.
    base = _runs(1.0, processes=4)
    cand = _runs(1.0001, processes=4, offsets=[0.04, 0.05, 0.045, -0.06])
    flat = robust.compare([v for g in cand for v in g], [v for g in base for v in g], paired=True)
    hier = robust.hierarchical_compare(cand, base, paired=True)
    assert flat.ci_low > 1.0  # the old interval: "certainly slower"
    assert hier.ci_low <= 1.0 <= hier.ci_high
    assert not hier.significant
    assert (hier.ci_high - hier.ci_low) > 3 * (flat.ci_high - flat.ci_low)
    same = robust.hierarchical_compare(_runs(1.2), base, paired=False)
    assert same.ratio == pytest.approx(1.2, rel=0.01)
    assert same.significant


def test_a_twin_is_its_own_module_and_request_class() -> None:
    chosen = resolve_run(["pr652", "declared"], baseline="pr652", twins=1)
    names = [s.name for s in chosen]
    assert names == ["declared", "pr652", "pr652.aa"]
    original = next(s for s in chosen if s.name == "pr652")
    twin = next(s for s in chosen if s.name == "pr652.aa")
    assert twin.twin_of == "pr652"
    assert twin.module is not original.module
    assert twin.get is not original.get
    assert twin.source_sha256 == original.source_sha256  # verbatim
    from bench.core.workload import make_request_class

    req = make_request_class(twin)("r", [1], 1)
    twin.get(req)
    assert twin.live_states() == 1
    assert original.live_states() == 0  # the twin's table is its own
    assert twin_of(twin.name) == "pr652"
    assert twin_name("pr652", 1) == "pr652.aa2"
    assert [s.name for s in resolve(["pr652.aa2"])] == ["pr652.aa2"]


def test_no_aa_and_twin_count_are_configuration() -> None:
    assert default_config().aa_twins == 1
    chosen = resolve_run(None, baseline="pr652", twins=0)
    assert not any(s.twin_of for s in chosen)
    with pytest.raises(ValueError, match="aa_twins must be 0 to 3"):
        default_config(aa_twins=5).validate()


def test_a_noise_family_can_pool_cases() -> None:
    # gc: one process per strategy, so the GC mode is the family: the floor is the largest
    # twin deviation over its scenarios, whichever scenario a benchmark belongs to.
    name = "gc/{}/scenario={}/gc=enabled"
    runs = {}
    for scenario, twin_at, copy_at in (("a", 1.20, 1.15), ("b", 1.01, 1.15)):
        runs[name.format("pr652", scenario)] = _runs(1.0)
        runs[name.format("pr652.aa", scenario)] = _runs(twin_at)
        runs[name.format("copy", scenario)] = _runs(copy_at)
    units = dict.fromkeys(runs, "second")
    pooled = {
        s.name: s for s in summarize(runs, units, baseline="pr652", noise_keys={"gc": ("gc",)})
    }
    per_case = {s.name: s for s in summarize(runs, units, baseline="pr652")}
    b = name.format("copy", "b")
    assert pooled[b].noise_floor == pytest.approx(0.20, abs=0.01)
    assert pooled[b].verdict == "same"
    assert per_case[b].verdict == "slower"  # held to scenario b's 1% alone it would be flagged
