"""Scheduler steps in a worker: step recorders over synthetic schedulers (one per strategy and
access pattern, sharing a pool), the scenario cases measured in interleaved rounds, the state
operations counted untimed, and the request class's own figures (construction time, dict size).
"""

from __future__ import annotations

import functools
import gc
import math
import statistics
import sys
from array import array
from collections.abc import Callable
from gc import is_tracked as gc_is_tracked
from typing import Any

from bench.base.gcprobe import (
    DEFERRED,
    GcProbe,
    apply_gc_mode,
    collect_due,
    gc_paused,
    per_item_cost,
)
from bench.base.names import BenchName, CaseKey
from bench.base.timing import StepClock, time_loop_ns
from bench.config.runconfig import RunConfig
from bench.core.callsites import patterns_for
from bench.core.counting import count_ops
from bench.core.groupsites import blocks, program_of
from bench.core.scenarios import Scenario
from bench.core.scheduler import (
    SchedulerLoop,
    history_steps,
    make_hidden,
    make_scheduler,
    run_history,
    warmup_steps,
)
from bench.measure.context import (
    RoundGuard,
    Subject,
    SuiteOutput,
    WorkerContext,
    failure_text,
    family_phase,
    phase,
    remeasures,
)
from bench.measure.regime import CacheSweep, prepare_hook, sweep_bytes
from bench.runformat.schema import QueueSeries, RequestFigures, StepSeries
from strategies import Strategy


class StepRecorder:
    """Times one scheduler's steps, one at a time (step) or k in a row (measure); keeps the
    per-step data of measured values (warm-up values are timed but not kept) when keep_steps is
    set, and the queue lengths after each measured step when keep_queues is set. The transfer
    worker's share of an iteration (worker_tick) runs outside the timed step."""

    def __init__(
        self,
        scheduler: SchedulerLoop,
        clock: StepClock,
        probe: GcProbe,
        *,
        keep_steps: bool,
        keep_queues: bool = False,
        prepare: Callable[[], None] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.clock = clock
        self.probe = probe
        self.prepare = prepare  # the memory regime, set untimed (bench.measure.regime)
        self.keep_steps = keep_steps
        self.keep_queues = keep_queues
        self.kept = StepSeries()
        self.queues = QueueSeries()
        self._value = StepSeries()  # the steps of the value being taken
        self._value_queues = QueueSeries()  # and the queue lengths after them

    def step(self, *, warmup: bool) -> None:
        """One timed iteration, added to the value being taken."""
        sched, probe, value = self.scheduler, self.probe, self._value
        if self.prepare is not None:
            self.prepare()
        before = probe.total_collections
        self.clock.start()
        sched.step()
        h, d = self.clock.stop()
        sched.worker_tick()
        value.host_ns.append(h)
        value.device_ns.append(d)
        value.gc.append(probe.total_collections - before)
        if self.keep_queues and not warmup:
            for queue, length in sched.queue_sample().items():
                self._value_queues.lengths.setdefault(queue, []).append(length)

    def value_s(self, *, warmup: bool) -> float:
        """The value taken since the last one: mean seconds per iteration."""
        value, self._value = self._value, StepSeries()
        queues, self._value_queues = self._value_queues, QueueSeries()
        if not warmup:
            if self.keep_steps:
                self.kept.extend(value)
            self.queues.extend(queues)
        return sum(value.host_ns) / len(value.host_ns) / 1e9

    def discard(self) -> None:
        """Forget the value being taken (a round measured again: bench.measure.context.RoundGuard)."""
        self._value = StepSeries()
        self._value_queues = QueueSeries()

    def measure(self, k: int, *, warmup: bool) -> float:
        """k iterations in a row: one value."""
        for _ in range(k):
            self.step(warmup=warmup)
        return self.value_s(warmup=warmup)


def interleave_steps(
    ctx: WorkerContext,
    out: SuiteOutput,
    recorders: dict[BenchName, StepRecorder],
    steps: int,
    *,
    label: str,
    family: str | None = None,
    gc_mode: str = "enabled",
    progress_base: float = 0.0,
    progress_span: float = 1.0,
    values: int | None = None,
    warmups: int | None = None,
    min_measured_s: float = 0.0,
    max_value_factor: int = 1,
) -> None:
    """Round-robin by iteration: a value of every scheduler is `steps` iterations, and each
    iteration position runs one iteration of every scheduler in a fresh shuffled order. The
    iterations compared are taken milliseconds apart, so drift on a shared machine hits every
    strategy alike (it moved whole blocks here: pr652 minus control over 20-iteration blocks
    varied with a standard deviation of 230 us per round in prefill-dspark, 56 us interleaved by
    iteration); and each iteration runs after the other schedulers' work, as a real scheduler's
    runs after a forward, with its data out of the core's nearest caches. gc_mode DEFERRED:
    automatic collection is off while iterations run and the young collections it would have
    started run between iteration positions, untimed (gcprobe.collect_due): with twenty
    schedulers in one heap a collection otherwise landed in 82% of prefill-sharegpt's iteration
    positions, in one strategy's iteration at random. A round measured under load is measured
    again (bench.measure.context.RoundGuard, keyed by `family`, else the label). A strategy that
    raises is dropped with the error recorded; the others go on. values: the measured values
    of each scheduler (None: the run's); warmups: the warm-up rounds before them (None: the
    run's). min_measured_s: after the warm-up rounds, the values are raised until a
    scheduler's measured iterations last about that long (its median over the schedulers), at
    most max_value_factor times (calibrated_values)."""
    cfg = ctx.config
    values = cfg.values if values is None else values
    warmups = cfg.warmup_values if warmups is None else warmups
    rounds = warmups + values
    live = dict(recorders)
    deferred = gc_mode == DEFERRED
    if deferred:
        gc.disable()
    guard = RoundGuard(out, family or label, values)
    try:
        r = 0
        while r < rounds:
            warmup = r < warmups
            guard.start()
            for _ in range(steps):
                order = list(live)
                ctx.rng.shuffle(order)
                for name in order:
                    if name not in live:
                        continue
                    try:
                        live[name].step(warmup=warmup)
                    except Exception as exc:
                        out.failures[name.strategy] = f"{name}: {failure_text(exc)}"
                        live = {n: rec for n, rec in live.items() if n.strategy != name.strategy}
                if deferred:
                    collect_due()
            if not guard.keep(warmup=warmup):
                for rec in live.values():
                    rec.discard()
                ctx.progress(progress_base + progress_span * r / rounds, guard.note(label))
                continue
            taken = _take_values(out, live, steps, warmup=warmup, gc_mode=gc_mode)
            if warmup and r == warmups - 1 and min_measured_s > 0:
                values = calibrated_values(taken, steps, values, min_measured_s, max_value_factor)
                rounds = warmups + values
                guard.left = remeasures(values)
            r += 1
            ctx.progress(progress_base + progress_span * r / rounds, f"{label} round {r}/{rounds}")
    finally:
        if deferred:
            gc.enable()


def calibrated_values(
    taken: list[float], steps: int, values: int, min_measured_s: float, max_factor: int
) -> int:
    """The values a case takes so that a scheduler's measured iterations last min_measured_s,
    from its schedulers' warm-up values (seconds per iteration; their median): at least
    `values`, at most max_factor times it (pyperf sizes a value to a duration the same way; a
    case whose iterations are cheap is otherwise measured for a fraction of what others are)."""
    per_iteration_s = statistics.median(taken) if taken else 0.0
    if per_iteration_s <= 0:
        return values
    wanted = math.ceil(min_measured_s / (steps * per_iteration_s))
    return max(values, min(wanted, values * max(1, max_factor)))


def _take_values(
    out: SuiteOutput,
    live: dict[BenchName, StepRecorder],
    steps: int,
    *,
    warmup: bool,
    gc_mode: str,
) -> list[float]:
    taken = []
    for name, rec in live.items():
        value = rec.value_s(warmup=warmup)
        taken.append(value)
        out.add(name, value, warmup=warmup, loops=steps, unit="second", gc_mode=gc_mode)
    return taken


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
    regime: str | None = None,
    only: Callable[[Strategy, str], bool] | None = None,
    sweep_mb: int = 0,
    history: int = 0,
) -> dict[BenchName, StepRecorder]:
    """One scheduler per strategy x pattern for one scenario case (the strategies `only`
    keeps), all sharing one pool tensor and hidden buffer, each warmed up (untimed) to steady
    queues, then all of them run `history` more iterations interleaved (-1: the scenario's,
    bench.core.scheduler.history_steps) so their heap is a long-running server's, each timed in
    `regime` (bench.measure.regime; None: as it comes). `only` keeps a (strategy, pattern) pair
    (None: every one). The first keeps queues."""
    pool = ctx.make_pool(scenario)
    sweep = CacheSweep(sweep_bytes(sweep_mb)) if regime == "cold" else None
    clock = StepClock(ctx.device)
    recorders: dict[BenchName, StepRecorder] = {}
    hidden = make_hidden(scenario, pool) if scenario.loop == "prefill" else None
    # the loops of every replayed state group, the same for every strategy (control included)
    layout = blocks(
        [p for p in (program_of(s.program) for s in ctx.strategies) if p], scenario.loop
    )
    # One pause over every scheduler's build and the shared history, one collection after:
    # a collection per scheduler walked the whole growing heap each time (14% of a step
    # worker's time here, py-spy, 2026-12-03), and the first timed value still finds the
    # setup's garbage collected.
    with gc_paused():
        for s in ctx.strategies:
            if s.name in out.failures:
                continue
            for pattern in patterns_for(s, patterns, ctx.strategies):
                if only is not None and not only(s, pattern):
                    continue
                name = BenchName.of(
                    kind, s.name, scenario=scenario.name, pattern=pattern, **extra_params
                )
                try:
                    sched = make_scheduler(
                        s,
                        scenario,
                        pool,
                        pattern=pattern,
                        seed=ctx.config.seed,
                        hidden=hidden,
                        requests=ctx.config.requests,
                        group_layout=layout,
                    )
                    sched.run(warmup_steps(scenario))
                except Exception as exc:
                    out.failures[s.name] = f"{name} setup: {failure_text(exc)}"
                    break
                recorders[name] = StepRecorder(
                    sched,
                    clock,
                    probe,
                    keep_steps=keep_steps,
                    keep_queues=not recorders,
                    prepare=prepare_hook(regime, sched, sweep) if regime else None,
                )
        steps = history_steps(scenario) if history < 0 else history
        if steps and recorders:
            run_history([rec.scheduler for rec in recorders.values()], steps, ctx.rng)
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
    count_steps: int,
    gc_mode: str = "enabled",
    regimes: bool = False,
    cold_only: Callable[[Strategy, str], bool] | None = None,
    sweep_mb: int = 0,
    history: int = 0,
    warm_value_factor: int = 1,
    warm_measured_s: float = 0.0,
    warm_max_factor: int = 1,
) -> None:
    """Every scheduler case in turn: one scheduler per strategy x pattern, stepped in rounds of
    `steps_per_value` iterations interleaved iteration by iteration (interleave_steps), then
    closed. Per-step data, queue lengths
    and (count_steps > 0) state operations counted over that many iterations go to out.extras. gc_mode "frozen": everything
    alive after warm-up is frozen (gc.freeze()) while values are taken. regimes: each case is
    timed in the memory regime its `regime` parameter names (warm without one; a cold case
    measures the (strategy, pattern) pairs cold_only keeps, and a warm case takes
    warm_value_factor times the run's values)."""
    for i, (scenario, extra) in enumerate(cases):
        regime = extra.get("regime", "warm") if regimes else None
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
                        regime=regime,
                        only=cold_only if regime == "cold" else None,
                        sweep_mb=sweep_mb,
                        history=history,
                    )
                if gc_mode not in ("enabled", DEFERRED):
                    apply_gc_mode(gc_mode)
                try:
                    with phase(out, f"{kind}:measure"):
                        interleave_steps(
                            ctx,
                            out,
                            recorders,
                            steps_per_value,
                            label=f"{kind} {label}",
                            family=key.text,
                            gc_mode=gc_mode,
                            progress_base=i / len(cases),
                            progress_span=1 / len(cases),
                            **_regime_rounds(
                                ctx.config, regime, warm_value_factor, warm_measured_s,
                                warm_max_factor,
                            ),
                        )  # fmt: skip
                finally:
                    if gc_mode not in ("enabled", DEFERRED):
                        apply_gc_mode("enabled")
            close_all(recorders)
            for name, rec in recorders.items():
                if keep_steps:
                    out.extras.steps[str(name)] = rec.kept
                if rec.keep_queues:
                    out.extras.queues[name.case.text] = rec.queues
            if count_steps and regime != "cold":  # the same stream, the same counts as warm
                with phase(out, f"{kind}:count"):
                    _count(ctx, out, recorders, count_steps)


def _regime_rounds(
    cfg: RunConfig, regime: str | None, factor: int, measured_s: float, max_factor: int
) -> dict[str, Any]:
    """interleave_steps' rounds for a case in `regime`. Warm: `factor` times the run's values,
    raised to `measured_s` of measured iterations (up to max_factor times that). Cold: the
    run's values, and its warm-up rounds taken as values: each cold iteration follows its own
    sweep, so no round carries another's cache into it (over 215 cold values of two runs
    here, 2026-12-04, the warm-up round read 1.007-1.009x its process's mean, p10-p90
    0.96-1.13, the values' own spread; warm rounds read 1.03-1.05x)."""
    if regime == "cold":
        return {"values": cfg.values + cfg.warmup_values, "warmups": 0}
    if regime == "warm":
        return {
            "values": cfg.values * factor,
            "min_measured_s": measured_s,
            "max_value_factor": max_factor,
        }
    return {}


def _count(
    ctx: WorkerContext, out: SuiteOutput, recorders: dict[BenchName, StepRecorder], steps: int
) -> None:
    """Lookups and creations per iteration: exact, untimed, one counted run per benchmark
    (one pause over them all, one collection after: as build_recorders)."""
    with gc_paused():
        for name, rec in recorders.items():
            s = rec.scheduler
            out.extras.counts[str(name)] = count_ops(
                s.strategy,
                s.scenario,
                pattern=s.pattern,
                seed=ctx.config.seed,
                steps=steps,
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


def _requests(cls: type, ids: array[int], k: int) -> list[Any]:
    return [cls(f"m{i}", ids, 1) for i in range(k)]


def _build_requests(cls: type, ids: array[int], made: list[Any], _loops: int) -> None:
    made.extend(cls(f"c{i}", ids, 1) for i in range(REQUEST_BATCH))


def measure_requests(ctx: WorkerContext, out: SuiteOutput) -> None:
    """Per strategy: its request class's attributes, dict bytes, tracked values, and the time
    to build one request (median over repetitions of a batch, collector paused)."""

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
            figures.bytes, figures.tracked_objects = per_item_cost(
                functools.partial(_requests, cls, ids), REQUEST_BATCH
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
