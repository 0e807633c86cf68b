"""The step suite's measuring half (bench.suites.spec): every scenario case, one scheduler per
strategy and access pattern, stepped in interleaved rounds; the request class timed."""

from __future__ import annotations

import functools

from bench.base.gcprobe import DEFERRED
from bench.base.names import CaseKey
from bench.config.runconfig import RunConfig
from bench.measure.context import SuiteOutput, WorkerContext, phase
from bench.measure.steps import measure_cases, measure_requests
from bench.suites.spec import Job, with_values
from bench.suites.step import KIND
from strategies import Strategy
from strategies._contract import PR_PATTERN, REVIEW_DESIGN


def run(ctx: WorkerContext) -> SuiteOutput:
    out = SuiteOutput()
    cfg = ctx.config
    opts = cfg.suite(KIND)
    # worker 0 only, not in further adaptive rounds: a request class's construction varies
    # little between processes (the report shows its interval over repetitions)
    if opts.time_requests and not cfg.only_families and ctx.worker_index == 0:
        with phase(out, "step:requests"):
            measure_requests(ctx, out)  # construction time is a timing like any other
    cases = [*cfg.cases(), *opts.cases(cfg)]
    measure_cases(
        ctx,
        out,
        kind=KIND,
        cases=[c for c in cases if cfg.measures(CaseKey.of(c[0].name, **c[1]).text)],
        patterns=cfg.patterns,
        steps_per_value=opts.steps_per_value,
        keep_steps=True,
        count_steps=opts.count_steps if ctx.worker_index == 0 else 0,  # exact: one worker's
        gc_mode=DEFERRED,  # collections between iterations: the gc suite measures them
        regimes=True,
        cold_only=functools.partial(_headline, cfg.baseline, cfg.patterns),
        sweep_mb=opts.cold_sweep_mb,
        history=opts.history_steps,
        warm_value_factor=opts.warm_value_factor,
        warm_measured_s=opts.warm_measured_ms / 1e3,
        warm_max_factor=opts.warm_max_factor,
    )
    return out


def _headline(baseline: str, patterns: tuple[str, ...], s: Strategy, pattern: str) -> bool:
    """What a cold case measures, in the patterns the report's evicted figures read: the
    baseline and its twins in the PR's pattern (per_field), the review's suggestion in its own
    (dynattr, cached: the PR section's candidate), control (every net figure's reference) and
    the revisions of a --target run as written. A design's other pattern is measured in cache
    only: each cold iteration costs a sweep (16 ms of 256 MiB here), and those three schedulers
    were 3/8 of the evicted cases' time. A run without a design's pattern keeps all of its."""

    def kept(wanted: str) -> bool:
        return pattern == wanted or wanted not in patterns

    if s.is_target or not s.holds_state:
        return True
    if s.name == baseline or s.twin_of == baseline:
        return kept(PR_PATTERN)
    return s.name == REVIEW_DESIGN[0] and kept(REVIEW_DESIGN[1])


def plan(config: RunConfig) -> list[Job]:
    # The headline suite and the noisiest: its own process count and values per process.
    opts = config.suite(KIND)
    return [Job(w, with_values(config, opts.values)) for w in range(opts.workers)]
