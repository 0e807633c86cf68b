"""The gc suite's verdict on numbers known by construction: the extra pause labelled as the
model it is, checked against the measured pause's slope, an A/A floor that can fail (the
measured pauses, not the counts), and signed figures for a state that removes objects."""

from __future__ import annotations

import re

import pytest

from bench import suites
from bench.base.names import BenchName
from bench.report.load import SuiteData
from bench.suites.gc import GcExtras, HeapFigures, MemoryFigures
from bench.suites.gc import view as gcview
from bench.suites.gc import view_checks as gcchecks

BARE_OBJECTS = 15.0
HEAP_OBJECTS = 1_000_000  # tracked objects a collection traverses besides the requests
COST_S = 100e-9  # what the measured pause grows by per tracked object (the slope)
PROCESS_OFFSET_S = (0.0, 0.020, 0.045)  # one worker process slower than another, at every size


def _memory(state_objects: float) -> MemoryFigures:
    return MemoryFigures(
        request_bytes=1000.0 + 50 * state_objects,
        request_tracked_objects=BARE_OBJECTS + state_objects,
        bare_request_bytes=1000.0,
        bare_request_tracked_objects=BARE_OBJECTS,
    )


def _suite(
    state_objects: dict[str, float],
    *,
    fixed_s: float,
    twin_factor: float = 1.0,
    live_sizes: tuple[int, ...] = (1_500, 4_096),
    offsets_s: tuple[float, ...] = PROCESS_OFFSET_S,
) -> SuiteData:
    """A gc suite whose full pause is fixed_s + COST_S x the objects traversed (+ a per-process
    offset the two sizes share), measured in three processes per strategy; pr652.aa's pauses
    are pr652's times twin_factor."""
    config = suites.default_config().with_suite("gc", live_sizes=live_sizes)
    runs: dict[str, list[list[float]]] = {}
    objects: dict[str, int] = {}
    for strategy, n in state_objects.items():
        for live in live_sizes:
            name = str(BenchName.of("gc_live", strategy, live=live, gc="enabled"))
            traversed = HEAP_OBJECTS + int(live * (BARE_OBJECTS + n))
            objects[name] = traversed
            pause = fixed_s + COST_S * traversed
            factor = twin_factor if strategy.endswith(".aa") else 1.0
            runs[name] = [
                [(pause + off) * factor * (1 + d) for d in (-1e-4, 0.0, 1e-4)] for off in offsets_s
            ]
    extras = GcExtras(
        memory={s: _memory(n) for s, n in state_objects.items()}, gc_live_objects=objects
    )
    return SuiteData(
        "gc",
        "done",
        suites.get("gc"),
        "pr652",
        config,
        runs=runs,
        units=dict.fromkeys(runs, "second"),
        extras=extras,
    )


def _text(data: SuiteData, names: list[str]) -> str:
    return " ".join(
        gcview.verdict_sentences(data)
        + gcview.summary_lines(data, names)
        + gcview.summary_verdict(data, names)
    )


def test_the_extra_pause_is_labelled_modelled_wherever_it_is_printed() -> None:
    data = _suite({"pr652": 2.0, "pr652.aa": 2.0, "control": 0.0}, fixed_s=0.0)
    verdict = " ".join(gcview.verdict_sentences(data))
    assert "Modelled extra pause" in verdict
    assert "the interval is that cost's spread only" in verdict
    (gc_line, _memory_line) = gcview.summary_lines(data, ["pr652", "control"])
    assert "modelled ms added to a measured full collection" in gc_line
    (sentence,) = gcview.summary_verdict(data, ["pr652", "control"])
    assert "ms modelled" in sentence
    html = " ".join(str(x) for x in gcview.report_extra(data))
    assert "modelled extra pause ms [95% CI of the per-object cost]" in html
    assert "(modelled)" in html


def test_the_model_is_checked_against_the_measured_slope() -> None:
    # pause = 50 ms + 100 ns per object (+ the process's offset): the pooled cost (pause over
    # objects, ~168 ns) is an average with the fixed part in it, not what a further object adds
    off = _suite({"pr652": 2.0, "pr652.aa": 2.0, "control": 0.0}, fixed_s=0.050)
    slope = gcchecks.slopes(off)["enabled"]
    assert (slope.low_live, slope.high_live) == (1_500, 4_096)
    assert slope.processes == 9  # three strategies, three processes each
    assert slope.median_s_per_object == pytest.approx(COST_S, rel=1e-3)
    assert slope.low_s_per_object <= COST_S <= slope.high_s_per_object
    verdict = " ".join(gcview.verdict_sentences(off))
    assert "the measured full pause grows 100.0 ns" in verdict
    pooled = (0.050 + PROCESS_OFFSET_S[1]) / (HEAP_OBJECTS + 1_500 * 17) + COST_S  # pr652's
    found = re.search(r"at 1,500 \(([\d.]+) ns\) does not agree: ([\d.]+)x the slope", verdict)
    assert found is not None, verdict
    assert float(found[1]) == pytest.approx(pooled * 1e9, abs=0.1)
    assert float(found[2]) == pytest.approx(pooled / COST_S, abs=0.01)
    # no fixed part and no process slower than another: the average is the slope, and the
    # check says so
    on = _suite(
        {"pr652": 2.0, "pr652.aa": 2.0, "control": 0.0}, fixed_s=0.0, offsets_s=(0.0, 0.0, 0.0)
    )
    verdict = " ".join(gcview.verdict_sentences(on))
    assert "at 1,500 (100.0 ns) agrees (within the slope's interval)" in verdict
    assert "at 4,096 (100.0 ns) agrees" in verdict
    assert "interval includes zero" not in verdict
    (gc_line, _m) = gcview.summary_lines(on, ["pr652", "control"])
    assert "check: the measured pause's slope from 1,500 to 4,096 live 100.0 ns/object" in gc_line
    assert "the pooled 100.0 ns agrees" in gc_line


def test_the_slope_takes_the_measured_sizes_nearest_and_says_which() -> None:
    data = _suite({"pr652": 2.0, "control": 0.0}, fixed_s=0.0, live_sizes=(1_000, 2_000, 8_000))
    slope = gcchecks.slopes(data)["enabled"]
    assert (slope.low_live, slope.high_live) == (1_000, 2_000)
    assert slope.substituted
    verdict = " ".join(gcview.verdict_sentences(data))
    assert (
        "from 1,000 to 2,000 live requests (the measured sizes nearest 1,500 and 4,096" in verdict
    )


def test_the_aa_floor_is_the_measured_pause_which_can_fail() -> None:
    # identical code: the counted objects agree exactly; the measured pauses differ by 10%
    data = _suite({"pr652": 2.0, "pr652.aa": 2.0, "control": 0.0}, fixed_s=0.0, twin_factor=1.1)
    verdict = " ".join(gcview.verdict_sentences(data))
    assert "A/A floor (measured full pauses): pr652.aa differs from pr652 by up to 10.0%" in verdict
    assert "Counted, not a floor" in verdict
    assert "0.0% in the extra pause" not in verdict  # the count-based figure is no floor
    assert gcchecks.measured_floor(data, "pr652", ["pr652.aa"], "enabled")[0] == pytest.approx(10.0)


def test_a_state_that_removes_tracked_objects_reads_negative_everywhere() -> None:
    # a head that moves two lists into a slots container: two fewer objects than a bare request
    data = _suite({"pr652": 2.0, "slots_head": -2.0, "control": 0.0}, fixed_s=0.0, offsets_s=(0.0,))
    (e,) = [x for x in gcview.pressure(data) if x.strategy == "slots_head" and x.live == 1_500]
    assert e.objects_per_request == -2.0
    assert e.extra_s == pytest.approx(-2.0 * 1_500 * COST_S, rel=1e-3)
    assert e.low_s <= e.extra_s <= e.high_s
    (gc_line, memory_line) = gcview.summary_lines(data, ["pr652", "slots_head"])
    assert "slots_head -2.00" in gc_line
    assert "slots_head -0.30 [" in gc_line  # ms: -2 x 1,500 x 100 ns
    assert "+0.30" in gc_line  # pr652, signed the same way
    assert "slots_head -100 bytes (-2.00 tracked objects)" in memory_line
    (sentence,) = gcview.summary_verdict(data, ["slots_head", "pr652"])
    assert sentence.startswith("Its state adds -2.00 GC-tracked objects per request")
    assert "-0.30 ms modelled" in sentence
    html = " ".join(str(x) for x in gcview.report_extra(data))
    assert "-0.300 [" in html


def test_the_heap_shown_is_the_count_reached_in_the_process() -> None:
    data = _suite({"pr652": 2.0, "control": 0.0}, fixed_s=0.0)
    heaps = gcview.extras_of(data.extras).heaps
    heaps["101"] = HeapFigures(1_080_000, 165_460, 1_079_995)
    heaps["102"] = HeapFigures(1_080_000, 165_470, 1_079_994)
    words = (
        "background heap built up to 1,080,000 tracked objects in the process: "
        "1,079,994-1,079,995 reached (165,460-165,470 of them the process's own"
    )
    assert words.capitalize() in " ".join(gcview.verdict_sentences(data))
    short = "heap: 1,079,994-1,079,995 tracked objects in the process (target 1,080,000)"
    assert short in gcview.summary_lines(data, ["pr652", "control"])[0]
    heaps.clear()
    heaps["103"] = HeapFigures(2_000, 180_000, 180_000)  # the process was past the target
    assert "no background heap built: the process already tracked 180,000 objects" in (
        gcchecks.heap_words(data)
    )
