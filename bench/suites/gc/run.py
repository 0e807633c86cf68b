"""The gc suite's measuring half (bench.suites.spec): each strategy alone in a process, stepping
the scenarios over a background heap with the collector enabled and frozen, timing full
collections, and (worker 0) the memory one request keeps alive. On the CPU a worker per
repetition forks one child per strategy (torch imported once, not once per strategy); on a GPU
each strategy gets a worker process of its own."""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
import random
import sys
import tempfile
from array import array
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.base.gcprobe import (
    GcProbe,
    apply_gc_mode,
    build_background_heap,
    full_collection_ns,
    gc_paused,
    per_item_cost,
    tracked_objects,
)
from bench.base.names import BenchName
from bench.base.storage import read_json, write_json
from bench.base.timing import StepClock, now_ns, resolve_device, time_loop_ns
from bench.config.runconfig import RunConfig
from bench.core.callsites import patterns_for
from bench.core.scheduler import make_scheduler, warmup_steps
from bench.measure.context import SuiteOutput, WorkerContext, failure_text, phase
from bench.measure.steps import StepRecorder
from bench.runformat.schema import GcCounts, StepSeries
from bench.suites.gc import GC_PATTERN, KIND, GcExtras, HeapFigures, MemoryFigures, extras_of
from bench.suites.spec import Job
from strategies import load_external, resolve_run
from strategies._contract import REVIEW_DESIGN

if TYPE_CHECKING:
    from bench.core.scenarios import Scenario
    from strategies import Strategy

# Full collections timed per process, case and mode: 3 give a median robust to one outlier
# (each takes ~0.1-0.2 s over the default heap, times every strategy, scenario and mode).
FULL_COLLECTIONS = 3


def _make_into(kept: list[Any], make: Any, k: int) -> list[Any]:
    kept[:] = make(k)
    return kept


def _memory(ctx: WorkerContext, out: SuiteOutput) -> None:

    n = ctx.config.suite(KIND).memory_sample_requests
    ids = array("q", (1, 2, 3, 4))  # one shared prompt: bytes net of a bare request anyway
    plain = ctx.config.requests.make(None)

    def make_bare(k: int) -> list[Any]:
        return [plain(f"m{i}", ids, 1) for i in range(k)]

    # The first measurement in a process counts a few one-time objects (-0.07 to -0.23 tracked
    # objects per request measured here); a throwaway one absorbs them.
    per_item_cost(make_bare, n)
    bare_bytes, bare_objects = per_item_cost(make_bare, n)
    for s in ctx.strategies:
        try:
            cls = ctx.config.requests.make(s)

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
        extras_of(out.extras).memory[s.name] = MemoryFigures(
            req_bytes, req_objects, bare_bytes, bare_objects
        )
        for metric, value, unit in (
            ("request_bytes", req_bytes, "byte"),
            ("tracked_objects_per_request", req_objects, "integer"),
        ):
            name = BenchName.of("memory", s.name, metric=metric)
            out.add(name, value, warmup=False, loops=n, unit=unit)


def _with_state(ctx: WorkerContext, s: Strategy, k: int, tag: str) -> list[Any]:
    """k of the strategy's requests, each holding its (empty) state."""
    cls = ctx.config.requests.make(s)
    ids = array("q", (1, 2, 3, 4))
    reqs = [cls(f"{tag}{i}", ids, 1) for i in range(k)]
    for r in reqs:
        s.get(r)
    return reqs


def _live_pauses(ctx: WorkerContext, out: SuiteOutput, s: Strategy) -> None:
    """The pause of a full collection with L of the strategy's requests alive over the
    background heap (median of FULL_COLLECTIONS), collector enabled and frozen (the heap frozen
    before the requests are built, as after a server's warm-up): gc_live/<s>/live=L/gc=<mode>."""

    opts = ctx.config.suite(KIND)
    for mode in ("enabled", "frozen"):
        if mode not in opts.modes:
            continue
        gc.collect()
        if mode == "frozen":
            gc.freeze()
        try:
            for live in opts.live_sizes:
                reqs = _with_state(ctx, s, live, "l")
                name = BenchName.of("gc_live", s.name, live=live, gc=mode)
                gc.collect()
                # what that collection traverses: every tracked object (gc.get_objects leaves
                # the frozen ones out)
                extras_of(out.extras).gc_live_objects[str(name)] = tracked_objects()
                for _ in range(FULL_COLLECTIONS):
                    out.add(
                        name, full_collection_ns() / 1e9, warmup=False, loops=1,
                        unit="second", gc_mode=mode,
                    )  # fmt: skip
                for r in reqs:
                    s.release(r)
                del reqs
        finally:
            gc.unfreeze()


# Requests whose death is timed per strategy (one batch: a few ms).
DEATHS = 2_000


def _death_cost(ctx: WorkerContext, out: SuiteOutput, s: Strategy) -> None:
    """What a request's end costs: the strategy's release and the request's last reference
    dropped (a WeakKeyDictionary's callback removes its entry then), ns per request, collector
    paused: death/<s>/metric=ns_per_request."""

    with gc_paused():
        reqs = _with_state(ctx, s, DEATHS, "d")
        start = now_ns()
        for r in reqs:
            s.release(r)
        reqs.clear()  # the last references: weakref callbacks, deallocation
        elapsed = now_ns() - start
    name = BenchName.of("death", s.name, metric="ns_per_request")
    out.add(name, elapsed / DEATHS / 1e9, warmup=False, loops=DEATHS, unit="second")


def _full_collection_s() -> float:

    return time_loop_ns(lambda _n: gc.collect(), 1) / 1e9


def _run_case(
    ctx: WorkerContext,
    out: SuiteOutput,
    s: Strategy,
    case: tuple[Scenario, dict[str, str]],
    modes: tuple[str, ...],
    *,
    full: bool,
) -> None:
    """One scheduler of the case, warmed up once, then measured in every GC mode in turn (the
    collector's state is set anew for each); full: also a full collection's pause with its live
    population, per mode (the headline designs)."""

    cfg = ctx.config
    scenario, extra = case
    steps = cfg.suite(KIND).steps_per_value
    pool = ctx.make_pool(scenario)
    (pattern,) = patterns_for(s, (GC_PATTERN,))
    with GcProbe() as probe:
        with phase(out, "gc:build"):
            # no collection on the way out: the first mode's apply_gc_mode collects before any
            # value (two back-to-back full collections of the background heap per case were
            # ~5 s of the suite's 55 here, py-spy, 2026-12-04)
            with gc_paused(collect=False):
                sched = make_scheduler(
                    s, scenario, pool, pattern=pattern, seed=cfg.seed, gc_model=True
                )
            rec = StepRecorder(sched, StepClock(ctx.device), probe, keep_steps=True)
            sched.run(warmup_steps(scenario) + steps)  # warm-up before freezing, as engines do
        for mode in modes:
            name = BenchName.of("gc", s.name, scenario=scenario.name, gc=mode, **extra)
            counts = GcCounts()
            apply_gc_mode(mode, cfg.suite(KIND).raised_threshold)
            counts.tracked_objects_at_start.append(len(gc.get_objects()))
            counts.gen2_at_start.append(len(gc.get_objects(generation=2)))
            measured = 0
            with phase(out, "gc:measure"):
                for r in range(cfg.warmup_values + cfg.values):
                    warmup = r < cfg.warmup_values
                    c0, p0 = list(probe.collections), list(probe.pause_ns)
                    probe.max_pause_ns = 0
                    value = rec.measure(steps, warmup=warmup)
                    out.add(name, value, warmup=warmup, loops=steps, unit="second", gc_mode=mode)
                    measured += steps
                    if warmup:
                        continue
                    counts.add(
                        GcCounts(
                            collections=[b - a for a, b in zip(c0, probe.collections, strict=True)],
                            pause_ns=[b - a for a, b in zip(p0, probe.pause_ns, strict=True)],
                            max_pause_ns=probe.max_pause_ns,
                            steps=steps,
                        )
                    )
            counts.gen2_at_end.append(len(gc.get_objects(generation=2)))
            counts.gen2_steps.append(measured)
            if full and mode != "raised":  # a full collection's pause is the same whenever
                full_name = BenchName.of(
                    "gc_full", s.name, scenario=scenario.name, gc=mode, **extra
                )
                with phase(out, "gc:full"):
                    for _ in range(FULL_COLLECTIONS):
                        value = _full_collection_s()
                        out.add(
                            full_name, value, warmup=False, loops=1, unit="second", gc_mode=mode
                        )
            out.extras.gc[str(name)] = counts
            out.extras.steps[str(name)] = rec.kept
            rec.kept = StepSeries()
            apply_gc_mode("enabled", collect=False)  # the next mode's (or scheduler's) collects
    sched.close()
    gc.unfreeze()


def headline(config: RunConfig, s: Strategy) -> bool:
    """The designs whose full-collection pauses are timed (each costs several collections of
    the whole heap): the baseline and its twins, control, the review's suggestion and any
    revision. Every strategy's tracked objects are counted; its extra pause follows from them."""
    return (
        s.name in (config.baseline, REVIEW_DESIGN[0])
        or s.twin_of == config.baseline
        or not s.holds_state
        or s.is_target
    )


# The background heap, built once per worker process and inherited by the children it forks
# (copy-on-write: a child's first collection makes the pages it touches its own, untimed).
_HEAP: list[Any] = []


def _background(ctx: WorkerContext, out: SuiteOutput) -> list[Any]:
    """The background heap, built up to `background_objects` tracked objects in the whole
    process (what it reached recorded in out's extras, keyed by this process's id)."""

    if not _HEAP:
        with gc_paused():
            heap = build_background_heap(ctx.config.suite(KIND).background_objects)
        _HEAP.append(heap.objects)
        extras_of(out.extras).heaps[str(os.getpid())] = HeapFigures(
            heap.target_tracked_objects, heap.before_tracked_objects, heap.reached_tracked_objects
        )
    return _HEAP[0]


def _measure_strategies(ctx: WorkerContext, *, memory: bool = True) -> SuiteOutput:
    """Every strategy of the context in turn, each over the background heap (memory: and,
    in worker 0, the memory one request keeps alive, before the heap is built)."""
    import torch

    out = SuiteOutput(extras=GcExtras())
    cfg = ctx.config
    torch.set_num_threads(1)
    if memory and ctx.worker_index == 0:
        with phase(out, "gc:memory"):
            _memory(ctx, out)
    cases = cfg.suite(KIND).gc_cases(cfg)
    for s in ctx.strategies:
        if s.name in out.failures:
            continue
        with phase(out, "gc:heap"):
            _background(ctx, out)
        try:
            timed = headline(cfg, s)
            for i, case in enumerate(cases):
                _run_case(ctx, out, s, case, cfg.suite(KIND).modes, full=timed)
                ctx.progress((i + 1) / len(cases), f"gc {s.name} {case[0].name}")
            if timed:
                with phase(out, "gc:live"):
                    _live_pauses(ctx, out, s)
            with phase(out, "gc:death"):
                _death_cost(ctx, out, s)
        except Exception as exc:
            out.failures[s.name] = f"gc/{s.name}: {failure_text(exc)}"
        finally:
            gc.unfreeze()
            gc.enable()
    return out


def _forked(ctx: WorkerContext, strategy: Strategy, path: Path) -> int:
    """Measure one strategy in a child forked from this worker; its output as JSON at path.
    Returns the child's exit status (0: path written)."""
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 1
        try:
            # The parent's tracked objects become the child's own pages now, untimed, rather
            # than during the first collection measured (copy-on-write).
            gc.collect()
            child = dataclasses.replace(ctx, strategies=[strategy])
            write_json(path, _measure_strategies(child, memory=False).to_dict())
            status = 0
        except BaseException as exc:  # the parent reports it; the child must not unwind
            print(f"gc child {strategy.name}: {failure_text(exc)}", file=sys.stderr, flush=True)
        finally:
            sys.stderr.flush()
            os._exit(status)
    _, wait_status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(wait_status)


def run(ctx: WorkerContext) -> SuiteOutput:
    """One strategy: measured here. Several (the plan's `fork_strategies`): one child process
    forked per strategy, in a seeded shuffled order; the children share this worker's imports,
    hash seed and starting heap, so they differ only by the strategy."""
    if len(ctx.strategies) == 1:
        return _measure_strategies(ctx)
    order = list(ctx.strategies)
    ctx.rng.shuffle(order)
    out = SuiteOutput(extras=GcExtras())
    if ctx.worker_index == 0:
        with phase(out, "gc:memory"):
            _memory(ctx, out)  # every strategy, before the heap: its collections are cheap
    with phase(out, "gc:heap"):
        _background(ctx, out)  # once, before the children fork
    with tempfile.TemporaryDirectory(prefix=".gc-children-") as tmp:
        for i, s in enumerate(order):
            path = Path(tmp) / f"{i}.json"
            child_ctx = dataclasses.replace(
                ctx, progress_base=i / len(order), progress_span=1 / len(order)
            )
            status = _forked(child_ctx, s, path)
            if status != 0 or not path.exists():
                out.failures[s.name] = f"gc/{s.name}: child process exited with status {status}"
                continue
            out.merge(read_json(path), path)
    return out


def plan(config: RunConfig) -> list[Job]:
    """Per repetition, one process forking a child per strategy (fork_strategies, on the CPU),
    or one process per strategy, strategies in a seeded shuffled order."""

    opts = config.suite(KIND)
    if opts.fork_strategies and resolve_device(config.device).type == "cpu":
        return [Job(w, config) for w in range(opts.workers)]
    # CUDA cannot be used in a forked child of a process that touched it: a process each.
    chosen = resolve_run(
        config.strategies,
        external=config.external,
        baseline=config.baseline,
        twins=config.aa_twins,
    )
    twin_of = {s.name: s.twin_of for s in chosen}
    external_of = {load_external(spec).name: spec for spec in config.external}
    rng = random.Random(config.seed)
    jobs = []
    for w in range(opts.workers):
        order = [s.name for s in chosen]
        rng.shuffle(order)
        for name in order:
            source = twin_of[name] or name  # a twin's job loads its original's module too
            ext = (external_of[source],) if source in external_of else ()
            one = replace(config, strategies=(name,), external=ext, aa_twins=0)
            jobs.append(Job(w, one))
    return jobs
