"""Garbage-collector observation: pauses via gc.callbacks, tracked objects, bytes per request."""

from __future__ import annotations

import contextlib
import functools
import gc
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bench.timing import now_ns

GC_MODES: tuple[str, ...] = ("enabled", "frozen")


@dataclass
class GcProbe:
    """Counts collections per generation and their pause time while installed."""

    collections: list[int] = field(default_factory=lambda: [0, 0, 0])
    pause_ns: list[int] = field(default_factory=lambda: [0, 0, 0])
    max_pause_ns: int = 0
    _start_ns: int = 0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start_ns = now_ns()
            return
        pause = now_ns() - self._start_ns
        gen = int(info.get("generation", 2))
        self.collections[gen] += 1
        self.pause_ns[gen] += pause
        self.max_pause_ns = max(self.max_pause_ns, pause)

    def __enter__(self) -> GcProbe:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    @property
    def total_collections(self) -> int:
        return sum(self.collections)

    @property
    def total_pause_ns(self) -> int:
        return sum(self.pause_ns)


@contextlib.contextmanager
def gc_paused(*, collect: bool = True) -> Iterator[None]:
    """Setup only (never timed): building 1e5+ requests with automatic GC on runs full
    collections over a growing heap and takes ~4x longer. Collects on the way out (unless
    collect=False: the caller times with GC off anyway), so the first timed value does not pay
    for the setup's garbage."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        if collect:
            gc.collect()


def background_heap(n_objects: int) -> list[Any]:
    """About n GC-tracked objects shaped like a server's long-lived heap (configs, caches)."""
    heap: list[Any] = []
    for i in range(n_objects // 2):
        heap.append({"id": i, "tags": [i]})  # a dict and a list: 2 tracked objects
    return heap


def apply_gc_mode(mode: str) -> None:
    """'enabled': default automatic GC. 'frozen': everything alive now moves to the permanent
    generation (gc.freeze()), as engines do after warm-up."""
    if mode not in GC_MODES:
        raise ValueError(f"unknown GC mode {mode!r}; choose from {', '.join(GC_MODES)}")
    gc.enable()
    gc.unfreeze()
    gc.collect()
    if mode == "frozen":
        gc.freeze()


# The step suite's collector: automatic collection off while iterations are timed, and the
# collections it would have started run between iteration positions, untimed (collect_due).
DEFERRED = "deferred"


def collect_due() -> int:
    """With automatic collection off: run the young collection CPython would have started by now
    (generation 0 or 1, by the same counts and thresholds), untimed. Returns the generation
    collected, or -1. Full collections are left out: CPython starts one only when the objects
    promoted since the last exceed a quarter of the long-lived ones, a count Python cannot
    read, and the gc suite measures them."""
    count, threshold = gc.get_count(), gc.get_threshold()
    for gen in (1, 0):
        if threshold[gen] and count[gen] > threshold[gen]:
            gc.collect(gen)
            return gen
    return -1


def tracked_objects() -> int:
    return len(gc.get_objects())


def per_item_cost(make: Callable[[int], list[Any]], n: int) -> tuple[float, float]:
    """(bytes, tracked objects) per item that make(n) keeps alive, measured by difference."""
    gc.collect()
    objects_before = tracked_objects()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        keep = make(n)
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    gc.collect()
    objects = tracked_objects() - objects_before
    del keep
    return (after - before) / n, objects / n


def _build_into(made: list[Any], make_one: Callable[[int], Any], n: int, _loops: int) -> None:
    made.extend(make_one(i) for i in range(n))


@dataclass(frozen=True)
class Footprint:
    """What building one request costs in memory, measured by difference over many."""

    attributes: int  # keys of its instance dict
    blocks: float  # memory blocks allocated and kept (the request, its dict, nested objects)
    tracked: float  # objects the cyclic GC tracks, per request
    bytes: float  # bytes allocated and kept, per request (tracemalloc)
    construct_ns: float  # time to build one (median of repetitions, collector paused)


# Requests built per footprint measurement, and timed repetitions of the construction.
FOOTPRINT_REQUESTS = 2_000
FOOTPRINT_REPEATS = 5


def footprint(make_one: Callable[[int], Any], n: int = FOOTPRINT_REQUESTS) -> Footprint:
    """make_one(i) builds request i; its attributes, blocks, tracked objects and bytes kept per
    request, and the construction time."""
    import statistics
    import sys

    from bench.timing import time_loop_ns

    sample = make_one(0)
    attributes = len(vars(sample)) if hasattr(sample, "__dict__") else 0
    del sample
    per_item_cost(lambda k: [make_one(i) for i in range(k)], 50)  # one-time objects absorbed
    gc.collect()
    blocks_before = sys.getallocatedblocks()
    keep = [make_one(i) for i in range(n)]
    blocks = (sys.getallocatedblocks() - blocks_before - 1) / n  # the list itself: one block
    del keep
    bytes_, tracked = per_item_cost(lambda k: [make_one(i) for i in range(k)], n)
    times = []
    with gc_paused():
        for _ in range(FOOTPRINT_REPEATS):
            made: list[Any] = []
            ns = time_loop_ns(functools.partial(_build_into, made, make_one, n), 1)
            times.append(ns / n)
            del made
    return Footprint(attributes, blocks, tracked, bytes_, statistics.median(times))
