"""gate: the wall-clock gate's worker: the gated step and lookup benchmarks, interleaved.

The configuration's `extra["gate"]` carries the GateConfig fields that matter here: which
strategies, patterns, lookup ops and size. Names are those of the step and lookup suites.
"""

from __future__ import annotations

from bench.gcprobe import GcProbe, gc_paused
from bench.suites.common import Subject, SuiteOutput, WorkerContext, interleave
from bench.suites.lookup import Population
from bench.suites.lookup import make_subject as lookup_subject
from bench.suites.step import build_recorders, close_all, subjects_for


def run(ctx: WorkerContext) -> SuiteOutput:
    import random

    out = SuiteOutput()
    cfg = ctx.config
    gate = cfg.extra.get("gate", {})
    ops = tuple(gate.get("lookup_ops", ("get_hit",)))
    live = int(gate.get("lookup_live", 10_000))
    with GcProbe() as probe:
        recorders = build_recorders(
            ctx,
            out,
            prefix="step",
            patterns=cfg.patterns,
            live_requests=cfg.live_requests,
            probe=probe,
        )
        subjects: list[Subject] = subjects_for(recorders, cfg.steps_per_value)
        populations = []
        if ops:
            with gc_paused():
                for s in ctx.strategies:
                    pop = Population(
                        s, live, cfg.lookup_miss_batch, cfg.lookup_max_pass, random.Random(cfg.seed)
                    )
                    populations.append(pop)
                    subjects += [lookup_subject(ctx, pop, op, live) for op in ops]
        interleave(ctx, out, subjects, label="gate")
    close_all(recorders)
    for pop in populations:
        pop.close()
    return out
