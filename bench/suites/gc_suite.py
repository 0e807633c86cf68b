"""gc: GC pressure per strategy, with automatic GC enabled and with gc.freeze() after warm-up,
over a background heap of `background_objects` tracked objects (production heaps hold 1e5-1e6).

Names: gc/<strategy>/gc=<mode> (mean step latency under that GC mode; per_field pattern, the
PR's code), memory/<strategy>/request_bytes and memory/<strategy>/tracked_objects_per_request.
Extras: collections per generation, total and longest pause per 1,000 steps (gc.callbacks),
per-step latencies with a GC flag, and bytes/objects per request net of a bare request.
"""

from __future__ import annotations

import functools
import gc
from typing import Any

from bench.gcprobe import GcProbe, apply_gc_mode, background_heap, per_item_cost
from bench.suites.common import Subject, SuiteOutput, WorkerContext, failure_text, interleave
from bench.suites.step import build_recorders, close_all, step_extras, subjects_for
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
        if s.name in out.failures:
            continue
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


def _new_acc() -> dict[str, Any]:
    return {"collections": [0, 0, 0], "pause_ns": [0, 0, 0], "max_pause_ns": 0, "steps": 0}


def _run_mode(
    ctx: WorkerContext, out: SuiteOutput, mode: str, progress_base: float, span: float
) -> dict[str, Any]:
    """Interleaved scheduler steps of every strategy under one GC mode."""
    cfg = ctx.config
    steps = cfg.gc_steps_per_value
    heap = background_heap(cfg.background_objects)
    with GcProbe() as probe:
        recorders = build_recorders(
            ctx,
            out,
            prefix="gc",
            patterns=(GC_PATTERN,),
            live_requests=cfg.live_requests,
            probe=probe,
            name_suffix=f"/gc={mode}",
        )
        for rec in recorders.values():  # warm-up before freezing, as engines do
            rec.scheduler.run(steps)
        apply_gc_mode(mode)
        tracked_at_start = len(gc.get_objects())
        totals = {name: _new_acc() for name in recorders}
        last: dict[str, tuple[list[int], list[int], int]] = {}

        def measure(name: str) -> float:
            c0, p0 = list(probe.collections), list(probe.pause_ns)
            probe.max_pause_ns = 0
            value = recorders[name].measure(steps)
            last[name] = (
                [a - b for a, b in zip(probe.collections, c0, strict=True)],
                [a - b for a, b in zip(probe.pause_ns, p0, strict=True)],
                probe.max_pause_ns,
            )
            return value

        def keep(subject: Subject, warmup: bool) -> None:
            rec = recorders[subject.name]
            cols, pauses, longest = last.pop(subject.name)
            if warmup:
                rec.pending = {}
                return
            rec.commit()
            acc = totals[subject.name]
            acc["collections"] = [a + b for a, b in zip(acc["collections"], cols, strict=True)]
            acc["pause_ns"] = [a + b for a, b in zip(acc["pause_ns"], pauses, strict=True)]
            acc["max_pause_ns"] = max(acc["max_pause_ns"], longest)
            acc["steps"] += steps

        subjects = subjects_for(recorders, steps)
        for subj in subjects:
            subj.measure = functools.partial(measure, subj.name)
        interleave(
            ctx,
            out,
            subjects,
            label=f"gc={mode}",
            progress_base=progress_base,
            progress_span=span,
            after_value=keep,
        )
    result = {
        "tracked_objects_at_start": tracked_at_start,
        "background_objects": len(heap) * 2,
        "per_benchmark": totals,
        "steps": step_extras(recorders),
    }
    close_all(recorders)
    return result


def run(ctx: WorkerContext) -> SuiteOutput:
    out = SuiteOutput()
    cfg = ctx.config
    if ctx.worker_index == 0:
        out.extra["memory"] = _memory(ctx, out)
    ctx.progress(0.1, "gc: memory per request")
    out.extra["modes"] = {}
    n_modes = len(cfg.gc_modes)
    try:
        for i, mode in enumerate(cfg.gc_modes):
            out.extra["modes"][mode] = _run_mode(
                ctx, out, mode, 0.1 + 0.9 * i / n_modes, 0.9 / n_modes
            )
            gc.unfreeze()
            gc.enable()
            gc.collect()
    finally:
        gc.unfreeze()
        gc.enable()
    return out
