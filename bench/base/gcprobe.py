"""Garbage-collector observation: pauses via gc.callbacks, tracked objects, bytes per request."""

from __future__ import annotations

import contextlib
import functools
import gc
import statistics
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bench.base.timing import now_ns, time_loop_ns

# enabled: CPython's default thresholds, as a spawned SGLang scheduler runs them (its
# --gc-threshold is applied in the main process only: entrypoints/engine.py:1750-1751 at
# sgl-project/sglang d55f1c28e2, whose children are spawned, engine.py:1747); frozen: everything
# alive after warm-up frozen, SGLang's default since PR #34999 (the HTTP server posts /freeze_gc
# after its warm-up request, http_server.py:2357-2399); raised: the young threshold raised, as
# --gc-threshold would if it reached the scheduler.
GC_MODES: tuple[str, ...] = ("enabled", "frozen", "raised")
# The raised arm's thresholds: CPython's (700, 10, 10) with the youngest raised 16x, the factor
# HabanaAI/vllm-fork PR #832 settled on for vLLM's scheduler; an assumption (SGLang's
# --gc-threshold has no default, server_args.py:1252 at d55f1c28e2).
RAISED_THRESHOLD: tuple[int, int, int] = (11_200, 10, 10)


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


class _TensorWrapper:
    """Stand-in for a torch.Tensor's Python wrapper (the heap holds many: model weights'
    parameters, cached tensors): one tracked object, no instance dict until written."""

    __slots__ = ("data", "grad")

    def __init__(self) -> None:
        self.data = None
        self.grad = None


class _Small:
    """A small plain object with an instance dict (configs, handles, futures)."""

    def __init__(self, i: int) -> None:
        self.i = i
        self.name = None


def _unit(i: int) -> tuple[Any, ...]:
    """One background unit: a dict with a list in it, a small object, a list, a tensor wrapper,
    and the tuple holding them (tracked too: a collection untracks only tuples of untracked
    items)."""
    return ({"id": i, "tags": [i]}, _Small(i), [i, i], _TensorWrapper())


# The first pass of a build: units that measure what one unit adds to the tracked objects, at
# most this many and at most 1/16 of what is missing (a unit adds well under 16).
_UNIT_SAMPLE = 2_000
# Later passes build this share of what is still missing at the measured rate, so the count
# approaches the target from below; the last builds the rest.
_PASS_SHARE = 0.98


@dataclass
class BackgroundHeap:
    """A background heap and what building it reached: tracked objects in the whole process
    (its imports, torch, the harness and the heap) before and after."""

    objects: list[Any]
    target_tracked_objects: int
    before_tracked_objects: int
    reached_tracked_objects: int
    tracked_objects_per_unit: float  # measured over the units built (6.0 on CPython 3.11)


def build_background_heap(target_tracked_objects: int) -> BackgroundHeap:
    """A heap shaped like a long-lived server's (dicts with lists in them, small objects, lists,
    tensors' Python wrappers, in equal numbers), built until the process as a whole tracks about
    `target_tracked_objects` objects: SGLang's figure is a scheduler's whole long-lived
    generation, imports included, so what the process holds already counts. Reached within one
    unit below the target (a unit's objects are counted as it is built, not assumed); a process
    that already tracks more gets no heap (an empty list). 1.08M in all builds in ~1.2 s here
    (three counts and a collection; ~0.9M objects built beside torch's ~165k), and one full
    collection at that size took 240-280 ms on 2 shared cores (the old 1.46M: 300-400 ms)."""
    objects: list[Any] = []
    gc.collect()
    before = have = tracked_objects()
    per_unit = 0.0
    for share in (None, _PASS_SHARE, 1.0):
        if share == 1.0:  # the last counts after a collection, as the caller's will leave it
            gc.collect()
            have = tracked_objects()
        missing = target_tracked_objects - have
        if share is None:
            units = min(_UNIT_SAMPLE, missing // 16)
        else:
            units = int(missing // per_unit * share) if per_unit > 0 else 0
        if units <= 0:
            break
        start = len(objects)
        objects.extend(_unit(i) for i in range(start, start + units))
        # building leaves no garbage (the generator goes by reference counting) and the tuples
        # stay tracked: counting needs no collection here
        have = tracked_objects()
        per_unit = (have - before) / len(objects)
    return BackgroundHeap(objects, target_tracked_objects, before, tracked_objects(), per_unit)


def background_heap(target_tracked_objects: int) -> list[Any]:
    """build_background_heap's objects: the process then tracks about that many objects."""
    return build_background_heap(target_tracked_objects).objects


_DEFAULT_THRESHOLD = gc.get_threshold()


def apply_gc_mode(
    mode: str, raised: tuple[int, ...] = RAISED_THRESHOLD, *, collect: bool = True
) -> None:
    """'enabled': default automatic GC. 'frozen': everything alive now moves to the permanent
    generation (gc.freeze()), as engines do after warm-up. 'raised': automatic GC with the
    `raised` thresholds. A full collection starts each mode from a clean heap; collect=False
    skips it where the caller's next step collects anyway (restoring 'enabled' between two
    modes: in a gc-suite worker over its background heap those back-to-back full collections
    were a third of the suite's time)."""
    if mode not in GC_MODES:
        raise ValueError(f"unknown GC mode {mode!r}; choose from {', '.join(GC_MODES)}")
    gc.enable()
    gc.unfreeze()
    gc.set_threshold(*(raised if mode == "raised" else _DEFAULT_THRESHOLD))
    if collect or mode == "frozen":
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


def full_collection_ns() -> int:
    """One full collection, timed (the caller decides what is alive)."""
    start = now_ns()
    gc.collect()
    return now_ns() - start
