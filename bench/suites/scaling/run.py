"""The scaling suite's measuring half (bench.suites.spec): one scenario at each size, every
strategy interleaved, the collector frozen after warm-up."""

from __future__ import annotations

from bench.config.runconfig import RunConfig
from bench.measure.context import SuiteOutput, WorkerContext
from bench.measure.steps import measure_cases
from bench.suites.scaling import KIND
from bench.suites.spec import Job


def run(ctx: WorkerContext) -> SuiteOutput:
    out = SuiteOutput()
    cfg = ctx.config
    opts = cfg.suite(KIND)
    measure_cases(
        ctx,
        out,
        kind=KIND,
        cases=opts.cases(cfg),
        patterns=(opts.pattern,),
        steps_per_value=opts.steps_per_value,
        keep_steps=False,
        count_steps=0,
        # The fit is about the cost per batch request. Collector pauses here would scale with
        # everything alive in this process (every strategy's scheduler, B requests each, each
        # with a tensor) and land on whichever strategy's value triggers them: frozen after
        # warm-up, as engines do; what collections cost is the gc suite's measurement.
        gc_mode="frozen",
    )
    return out


def plan(config: RunConfig) -> list[Job]:
    return [Job(w, config) for w in range(config.suite(KIND).workers)]
