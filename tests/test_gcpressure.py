"""GC pressure: the allocation model the gc suite's schedulers run, the collector's arms, and the
verdict's arithmetic on numbers known by construction."""

from __future__ import annotations

import gc

import pytest

from bench.base.gcprobe import (
    RAISED_THRESHOLD,
    apply_gc_mode,
    background_heap,
    build_background_heap,
    tracked_objects,
)
from bench.base.names import BenchName
from bench.core import scenarios
from bench.core.hostpool import HostPool, host_hidden
from bench.core.scheduler import make_scheduler, warmup_steps
from bench.runformat.schema import GcCounts
from bench.suites.gc import MemoryFigures
from bench.suites.gc import view_pressure as gcpressure
from strategies import load_builtin


def _sched(preset: str, *, gc_model: bool, **changes: object):  # type: ignore[no-untyped-def]
    base = scenarios.get(preset)
    small = {"decode_batch": 16} if base.loop == "decode" else {"chunked_prefill_size": 2048}
    scenario = base.with_changes({**small, "outputs": "sharegpt", **changes})
    return make_scheduler(
        load_builtin("control"),
        scenario,
        HostPool(scenario.pool_rows),
        seed=1,
        hidden=host_hidden(scenario.chunk_tokens),
        gc_model=gc_model,
    )


def test_the_allocation_model_keeps_what_it_says() -> None:
    sched = _sched(
        "decode-dspark",
        gc_model=True,
        request_objects_per_iteration=2,
        server_objects_per_request=3,
        server_objects_capacity=50,
    )
    sched.run(warmup_steps(sched.scenario) + 60)
    assert sched._transient is None  # an iteration's own objects are gone when it ends
    assert 0 < len(sched._server) <= 50  # the radix cache keeps at most its capacity
    assert all(len(t.held) % 2 == 0 and t.held for t in sched.running)  # 2 per iteration lived
    plain = _sched("decode-dspark", gc_model=False, request_objects_per_iteration=2)
    plain.run(20)
    assert not plain._server
    assert all(not t.held for t in plain.running)  # the step suite's schedulers keep none


def test_transient_objects_start_young_collections() -> None:
    """~3 objects per batch request alive at once cross CPython's 700 within one iteration."""
    heavy = _sched("decode-dspark", gc_model=True, decode_batch=256)
    heavy.run(warmup_steps(heavy.scenario))
    gc.collect()
    before = gc.get_stats()[0]["collections"]
    heavy.run(20)
    assert gc.get_stats()[0]["collections"] - before >= 10


def test_the_arms() -> None:
    try:
        apply_gc_mode("raised")
        assert gc.get_threshold() == RAISED_THRESHOLD
        apply_gc_mode("frozen")
        assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_freeze_count() > 0
        with pytest.raises(ValueError, match="unknown GC mode"):
            apply_gc_mode("off")
    finally:
        gc.unfreeze()
        gc.set_threshold(700, 10, 10)


def test_the_background_heap_is_built_to_a_count_of_the_whole_process() -> None:
    """SGLang's 1.08M is the scheduler's whole long-lived generation, imports included: the
    heap is built until the process tracks the target, not the target on top of what it has."""
    gc.collect()
    target = tracked_objects() + 60_000
    heap = background_heap(target)
    gc.collect()
    assert abs(tracked_objects() - target) <= 6  # within one unit of the target
    built = build_background_heap(target + 30_000)
    assert built.before_tracked_objects == pytest.approx(target, abs=6)
    assert built.reached_tracked_objects == pytest.approx(target + 30_000, abs=6)
    assert built.tracked_objects_per_unit == pytest.approx(6.0, abs=0.01)  # the tuple counts
    assert len(built.objects) == pytest.approx(30_000 / 6, abs=2)
    # a process already past the target gets no heap, and says what it holds
    small = build_background_heap(1_000)
    assert small.objects == []
    assert small.reached_tracked_objects > 1_000
    del heap, built


def _memory(state_objects: float) -> MemoryFigures:
    return MemoryFigures(
        request_bytes=1000.0,
        request_tracked_objects=15.0 + state_objects,
        bare_request_bytes=900.0,
        bare_request_tracked_objects=15.0,
    )


def test_the_extra_pause_is_objects_times_live_times_the_cost_per_object() -> None:
    live_name = {s: str(BenchName.of("gc_live", s, live=1500, gc="enabled")) for s in "ab"}
    medians = {live_name["a"]: 0.300, live_name["b"]: 0.200}  # seconds
    objects = {live_name["a"]: 1_500_000, live_name["b"]: 1_000_000}  # 200 ns per object both
    (ea, eb) = gcpressure.extras(
        {"a": _memory(2.0), "b": _memory(0.0)}, medians, objects, (1500,), modes=("enabled",)
    )
    assert ea.extra_s == pytest.approx(2 * 1500 * 200e-9)  # 0.6 ms
    assert (ea.low_s, ea.high_s) == pytest.approx((ea.extra_s, ea.extra_s))
    assert ea.share == pytest.approx(0.6e-3 / 0.300)
    assert eb.extra_s == 0.0


def test_a_state_that_removes_tracked_objects_has_a_negative_extra_pause() -> None:
    """Negative is a result: a head that moves lists into a slots container shortens the
    collection, and must not read +0."""
    name = str(BenchName.of("gc_live", "a", live=1500, gc="enabled"))
    (e,) = gcpressure.extras(
        {"a": _memory(-2.0)}, {name: 0.2}, {name: 1_000_000}, (1500,), modes=("enabled",)
    )
    assert e.objects_per_request == -2.0
    assert e.extra_s == pytest.approx(-2 * 1500 * 200e-9)  # -0.6 ms
    assert e.low_s <= e.extra_s <= e.high_s


def test_collections_say_when_a_full_one_would_come() -> None:
    counts = GcCounts(
        collections=[90, 9, 0],
        pause_ns=[1_000_000, 2_000_000, 0],
        max_pause_ns=300_000,
        steps=100,
        gen2_at_start=[1_000_000],
        gen2_at_end=[1_000_500],
        gen2_steps=[100],
    )
    c = gcpressure.collections(counts)
    assert c is not None
    assert c.per_kstep == (900.0, 90.0, 0.0)
    assert c.pause_ms_per_kstep == pytest.approx(30.0)
    assert c.not_exercised(2)
    assert not c.not_exercised(0)
    # a quarter of 1M long-lived objects at 5 new ones per iteration
    assert c.full_every_steps == pytest.approx(50_000)


def test_no_collection_reads_not_exercised_never_equal() -> None:
    from bench.suites.gc.view import _not_exercised

    none = gcpressure.collections(
        GcCounts(steps=300, gen2_at_start=[100], gen2_at_end=[100], gen2_steps=[300])
    )
    text = _not_exercised(none, "raised")
    assert "no young collection in 300 iterations" in text
    assert "did not grow" in text
    assert _not_exercised(none, "frozen").endswith("the long-lived objects are frozen")
