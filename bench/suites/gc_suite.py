"""gc: GC pressure per strategy, with automatic GC enabled and with gc.freeze() after warm-up,
over a background heap of `background_objects` tracked objects (production heaps hold 1e5-1e6).

A GC measurement needs the heap of one strategy alone, so unlike the other suites each worker
process holds ONE strategy (the runner starts one process per strategy per repetition, in a
shuffled order). Per process and GC mode:
  gc/<strategy>/gc=<mode>       mean scheduler step latency (per_field pattern, the PR's code)
  gc_full/<strategy>/gc=<mode>  pause of a full gc.collect() with the live population, the cost
                                production sees as 100-400 ms stalls (frozen objects are skipped)
and, once per strategy, memory/<strategy>/metric=request_bytes and tracked_objects_per_request
(tracemalloc and gc.get_objects, net of a bare request in the extras). Extras: collections per
generation, total and longest pause per 1,000 steps (gc.callbacks), per-step latencies with a
GC flag, tracked objects in the heap.
"""

from __future__ import annotations

import functools
import gc
from typing import Any

import torch

from bench.gcprobe import GcProbe, apply_gc_mode, background_heap, gc_paused, per_item_cost
from bench.scheduler import SyntheticScheduler
from bench.suites.common import SuiteOutput, WorkerContext, failure_text
from bench.suites.step import StepRecorder
from bench.timing import StepClock, time_loop_ns
from bench.workload import make_request_class
from strategies import Strategy

GC_PATTERN = "per_field"  # the PR's access pattern; GC pressure does not depend on it


def _make_into(kept: list[Any], make: Any, k: int) -> list[Any]:
    kept[:] = make(k)
    return kept


def _memory(ctx: WorkerContext, out: SuiteOutput) -> dict[str, Any]:
    n = ctx.config.memory_sample_requests
    ids = [1, 2, 3, 4]
    plain = make_request_class(None)
    bare_bytes, bare_objects = per_item_cost(
        lambda k: [plain(f"m{i}", ids, 1) for i in range(k)], n
    )
    result: dict[str, Any] = {
        "bare_request_bytes": bare_bytes,
        "bare_request_objects": bare_objects,
    }
    for s in ctx.strategies:
        try:
            cls = make_request_class(s)

            def make(k: int, cls: type = cls, s: Strategy = s) -> list[Any]:
                reqs = [cls(f"m{i}", ids, 1) for i in range(k)]
                for r in reqs:
                    s.get(r)  # the empty state the PR's get-or-create gives every request
                return reqs

            kept: list[Any] = []
            req_bytes, req_objects = per_item_cost(functools.partial(_make_into, kept, make), n)
            for r in kept:
                s.release(r)
            kept.clear()
        except Exception as exc:
            out.failures[s.name] = f"memory/{s.name}: {failure_text(exc)}"
            continue
        result[s.name] = {
            "request_bytes": req_bytes,
            "request_tracked_objects": req_objects,
            "state_bytes": req_bytes - bare_bytes,
            "state_tracked_objects": req_objects - bare_objects,
        }
        out.add(
            f"memory/{s.name}/metric=request_bytes", req_bytes, warmup=False, loops=n, unit="byte"
        )
        out.add(
            f"memory/{s.name}/metric=tracked_objects_per_request",
            req_objects,
            warmup=False,
            loops=n,
            unit="integer",
        )
    return result


# Full collections timed per process and mode: 5 gives a median robust to one outlier.
FULL_COLLECTIONS = 5


def _full_collection_s() -> float:
    return time_loop_ns(lambda _n: gc.collect(), 1) / 1e9


def _run_mode(ctx: WorkerContext, out: SuiteOutput, s: Strategy, mode: str) -> dict[str, Any]:
    cfg = ctx.config
    steps = cfg.gc_steps_per_value
    pool = ctx.make_pool()
    params = ctx.scheduler_params(pattern=GC_PATTERN)
    with gc_paused():
        sched = SyntheticScheduler(s, params, pool)
    with GcProbe() as probe:
        rec = StepRecorder(sched, StepClock(ctx.device), probe)
        sched.run(steps)  # warm-up before freezing, as engines do
        apply_gc_mode(mode)
        tracked = len(gc.get_objects())
        name = f"gc/{s.name}/gc={mode}"
        acc: dict[str, Any] = {
            "collections": [0, 0, 0],
            "pause_ns": [0, 0, 0],
            "max_pause_ns": 0,
            "steps": 0,
        }
        for r in range(cfg.warmup_values + cfg.values):
            warmup = r < cfg.warmup_values
            c0, p0 = list(probe.collections), list(probe.pause_ns)
            probe.max_pause_ns = 0
            value = rec.measure(steps)
            out.add(name, value, warmup=warmup, loops=steps, unit="second")
            if warmup:
                rec.pending = {}
                continue
            rec.commit()
            acc["collections"] = [
                a + b - c for a, b, c in zip(acc["collections"], probe.collections, c0, strict=True)
            ]
            acc["pause_ns"] = [
                a + b - c for a, b, c in zip(acc["pause_ns"], probe.pause_ns, p0, strict=True)
            ]
            acc["max_pause_ns"] = max(acc["max_pause_ns"], probe.max_pause_ns)
            acc["steps"] += steps
    for _ in range(FULL_COLLECTIONS):
        out.add(
            f"gc_full/{s.name}/gc={mode}",
            _full_collection_s(),
            warmup=False,
            loops=1,
            unit="second",
        )
    sched.close()
    gc.unfreeze()
    gc.enable()
    return {
        "tracked_objects_at_start": tracked,
        "per_benchmark": {name: acc},
        "steps": {name: {**rec.kept, "live_requests": params.live_requests}},
    }


def run(ctx: WorkerContext) -> SuiteOutput:
    out = SuiteOutput()
    cfg = ctx.config
    torch.set_num_threads(1)
    if ctx.worker_index == 0:
        out.extra["memory"] = _memory(ctx, out)
    out.extra["modes"] = {}
    for s in ctx.strategies:
        if s.name in out.failures:
            continue
        heap = background_heap(cfg.background_objects)
        try:
            for i, mode in enumerate(cfg.gc_modes):
                result = _run_mode(ctx, out, s, mode)
                merged = out.extra["modes"].setdefault(
                    mode, {"tracked_objects_at_start": [], "per_benchmark": {}, "steps": {}}
                )
                merged["tracked_objects_at_start"].append(result["tracked_objects_at_start"])
                merged["per_benchmark"].update(result["per_benchmark"])
                merged["steps"].update(result["steps"])
                ctx.progress((i + 1) / len(cfg.gc_modes), f"gc {s.name} gc={mode}")
        except Exception as exc:
            out.failures[s.name] = f"gc/{s.name}: {failure_text(exc)}"
        finally:
            gc.unfreeze()
            gc.enable()
        del heap
    return out
