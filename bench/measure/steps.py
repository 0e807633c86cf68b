"""Scheduler steps in a worker: step recorders over synthetic schedulers (one per strategy and
access pattern, sharing a pool), the scenario cases measured in interleaved rounds, the state
operations counted untimed, and the request class's own figures (construction time, dict size).
"""

from __future__ import annotations

import dataclasses
import functools
from array import array
from gc import is_tracked as gc_is_tracked
from typing import Any

from bench.core.callsites import patterns_for
from bench.core.counting import count_ops
from bench.core.scenarios import Scenario
from bench.core.scheduler import SchedulerLoop, make_hidden, make_scheduler, warmup_steps
from bench.gcprobe import GcProbe, apply_gc_mode, gc_paused
from bench.measure.context import (
    Subject,
    SuiteOutput,
    WorkerContext,
    failure_text,
    family_phase,
    interleave,
    phase,
)
from bench.names import BenchName, CaseKey
from bench.runformat import QueueSeries, StepSeries
from bench.timing import StepClock


class StepRecorder:
    """Runs k steps of one scheduler, timing each; keeps the per-step data of measured values
    (warm-up values are timed but not kept) when keep_steps is set, and the queue lengths after
    each measured step when keep_queues is set. The transfer worker's share of an iteration
    (worker_tick) runs outside the timed step."""

    def __init__(
        self,
        scheduler: SchedulerLoop,
        clock: StepClock,
        probe: GcProbe,
        *,
        keep_steps: bool,
        keep_queues: bool = False,
    ) -> None:
        self.scheduler = scheduler
        self.clock = clock
        self.probe = probe
        self.keep_steps = keep_steps
        self.keep_queues = keep_queues
        self.kept = StepSeries()
        self.queues = QueueSeries()

    def measure(self, k: int, *, warmup: bool) -> float:
        sched, clock, probe = self.scheduler, self.clock, self.probe
        host, device, gcs = [], [], []
        samples = []
        for _ in range(k):
            before = probe.total_collections
            clock.start()
            sched.step()
            h, d = clock.stop()
            sched.worker_tick()
            host.append(h)
            device.append(d)
            gcs.append(probe.total_collections - before)
            if self.keep_queues and not warmup:
                samples.append(sched.queue_sample())
        if self.keep_steps and not warmup:
            self.kept.extend(StepSeries(host, device, gcs))
        for sample in samples:
            for queue, length in sample.items():
                self.queues.lengths.setdefault(queue, []).append(length)
        return sum(host) / k / 1e9


def build_recorders(
    ctx: WorkerContext,
    out: SuiteOutput,
    *,
    kind: str,
    scenario: Scenario,
    extra_params: dict[str, str],
    patterns: tuple[str, ...],
    probe: GcProbe,
    keep_steps: bool,
) -> dict[BenchName, StepRecorder]:
    """One scheduler per strategy x pattern for one scenario case, all sharing one pool tensor
    and hidden buffer, each warmed up (untimed) to steady state. The first keeps queues."""
    pool = ctx.make_pool(scenario)
    clock = StepClock(ctx.device)
    recorders: dict[BenchName, StepRecorder] = {}
    hidden = make_hidden(scenario, pool) if scenario.loop == "prefill" else None
    for s in ctx.strategies:
        if s.name in out.failures:
            continue
        for pattern in patterns_for(s, patterns, ctx.strategies):
            name = BenchName.of(
                kind, s.name, scenario=scenario.name, pattern=pattern, **extra_params
            )
            try:
                with gc_paused():
                    sched = make_scheduler(
                        s,
                        scenario,
                        pool,
                        pattern=pattern,
                        seed=ctx.config.seed,
                        hidden=hidden,
                        requests=ctx.config.requests,
                    )
                    sched.run(warmup_steps(scenario))
            except Exception as exc:
                out.failures[s.name] = f"{name} setup: {failure_text(exc)}"
                break
            recorders[name] = StepRecorder(
                sched, clock, probe, keep_steps=keep_steps, keep_queues=not recorders
            )
    return recorders


def step_subjects(recorders: dict[BenchName, StepRecorder], steps: int) -> list[Subject]:
    return [
        Subject(
            name=name,
            measure=lambda warmup, rec=rec: rec.measure(steps, warmup=warmup),  # type: ignore[misc]
            loops=steps,
        )
        for name, rec in recorders.items()
    ]


def close_all(recorders: dict[BenchName, StepRecorder]) -> None:
    for rec in recorders.values():
        rec.scheduler.close()


def measure_cases(
    ctx: WorkerContext,
    out: SuiteOutput,
    *,
    kind: str,
    cases: list[tuple[Scenario, dict[str, str]]],
    patterns: tuple[str, ...],
    steps_per_value: int,
    keep_steps: bool,
    count: bool,
    gc_mode: str = "enabled",
) -> None:
    """Every scheduler case in turn: one scheduler per strategy x pattern, stepped in
    interleaved rounds of `steps_per_value` steps, then closed. Per-step data, queue lengths
    and (count=True) counted state operations go to out.extras. gc_mode "frozen": everything
    alive after warm-up is frozen (gc.freeze()) while values are taken."""
    for i, (scenario, extra) in enumerate(cases):
        key = CaseKey.of(scenario.name, **extra)
        label = key.short
        with phase(out, family_phase(key.text)):  # what an adaptive round of it costs
            with GcProbe() as probe:
                with phase(out, f"{kind}:build"):
                    recorders = build_recorders(
                        ctx,
                        out,
                        kind=kind,
                        scenario=scenario,
                        extra_params=extra,
                        patterns=patterns,
                        probe=probe,
                        keep_steps=keep_steps,
                    )
                subjects = step_subjects(recorders, steps_per_value)
                if gc_mode != "enabled":
                    apply_gc_mode(gc_mode)
                    subjects = [dataclasses.replace(x, gc_mode=gc_mode) for x in subjects]
                try:
                    with phase(out, f"{kind}:measure"):
                        interleave(
                            ctx,
                            out,
                            subjects,
                            label=f"{kind} {label}",
                            progress_base=i / len(cases),
                            progress_span=1 / len(cases),
                        )
                finally:
                    if gc_mode != "enabled":
                        apply_gc_mode("enabled")
            close_all(recorders)
            for name, rec in recorders.items():
                if keep_steps:
                    out.extras.steps[str(name)] = rec.kept
                if rec.keep_queues:
                    out.extras.queues[name.case.text] = rec.queues
            if count:
                with phase(out, f"{kind}:count"):
                    _count(ctx, out, recorders)


def _count(ctx: WorkerContext, out: SuiteOutput, recorders: dict[BenchName, StepRecorder]) -> None:
    """Lookups and creations per iteration: exact, untimed, one counted run per benchmark."""
    for name, rec in recorders.items():
        s = rec.scheduler
        with gc_paused():
            out.extras.counts[str(name)] = count_ops(
                s.strategy,
                s.scenario,
                pattern=s.pattern,
                seed=ctx.config.seed,
                steps=ctx.config.suite("step").count_steps,
                requests=ctx.config.requests,
            )


# -- the request class -------------------------------------------------------------------------

# Requests built per timed repetition, and repetitions: construction of a real Req takes a few
# microseconds, so a repetition lasts ~10 ms.
REQUEST_BATCH = 2_000
REQUEST_REPEATS = 5
# The prompt's token ids the requests are built with (a shared array('q'); the real constructor
# keeps a reference, it does not copy): bench_serving's random-1k mean is ~512 tokens.
REQUEST_PROMPT_TOKENS = 512


def _build_requests(cls: type, ids: array[int], made: list[Any], _loops: int) -> None:
    made.extend(cls(f"c{i}", ids, 1) for i in range(REQUEST_BATCH))


def measure_requests(ctx: WorkerContext, out: SuiteOutput) -> None:
    """Per strategy: its request class's attributes, dict bytes, tracked values, and the time
    to build one request (median over repetitions of a batch, collector paused)."""
    import sys

    from bench.runformat import RequestFigures
    from bench.timing import time_loop_ns

    ids = array("q", range(REQUEST_PROMPT_TOKENS))
    for s in ctx.strategies:
        if s.name in out.failures:
            continue
        try:
            cls = ctx.config.requests.make(s)
            one = cls("probe", ids, 1)
            values = vars(one).values()
            figures = RequestFigures(
                model=s.request_model.rsplit("/", 1)[-1]
                if s.request_model
                else ctx.config.requests.label,
                attributes=len(vars(one)),
                dict_bytes=sys.getsizeof(vars(one)),
                tracked_values=sum(1 for v in values if gc_is_tracked(v)),
            )
            with gc_paused():
                for _ in range(REQUEST_REPEATS):
                    made: list[Any] = []
                    build = functools.partial(_build_requests, cls, ids, made)
                    figures.construct_ns.append(time_loop_ns(build, 1) / REQUEST_BATCH)
                    del made
        except Exception as exc:
            out.failures[s.name] = f"request class of {s.name}: {failure_text(exc)}"
            continue
        out.extras.requests[s.name] = figures
