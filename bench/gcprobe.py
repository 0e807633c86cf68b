"""Garbage-collector observation: pauses via gc.callbacks, tracked objects, bytes per request."""

from __future__ import annotations

import contextlib
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
