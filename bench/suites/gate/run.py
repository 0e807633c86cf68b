"""The gate's worker suite, its measuring half: the gated step and lookup benchmarks of this
tree's strategies, interleaved in one worker (bench/suites/gate/__init__.py declares it)."""

from __future__ import annotations

import dataclasses
import random
from typing import TYPE_CHECKING

from bench.base.gcprobe import GcProbe, gc_paused
from bench.base.names import BenchName
from bench.config.runconfig import RunConfig
from bench.measure.context import SuiteOutput, interleave
from bench.measure.lookups import Population, build_populations, lookup_subject
from bench.measure.steps import build_recorders, close_all, step_subjects
from bench.suites.gate import GATE_REGIME, LOOKUP, STEP
from bench.suites.spec import Job

if TYPE_CHECKING:
    from bench.measure.context import Subject, SuiteOutput, WorkerContext
    from strategies import Strategy


def run(ctx: WorkerContext) -> SuiteOutput:

    out = SuiteOutput()
    cfg = ctx.config
    step, lookup = cfg.suite(STEP), cfg.suite(LOOKUP)  # the gated benchmarks' own options
    ctx = dataclasses.replace(ctx, strategies=build_order(ctx.strategies, ctx.worker_index))
    gate = cfg.extra.get("gate", {})
    ops = tuple(gate.get("lookup_ops", ("get_hit",)))
    live = int(gate.get("lookup_live", 10_000))
    with GcProbe() as probe:
        recorders = {}
        for scenario, extra_params in cfg.cases():  # the gated scenarios, no sweep
            recorders.update(
                build_recorders(
                    ctx,
                    out,
                    kind=STEP,
                    scenario=scenario,
                    extra_params=extra_params,
                    patterns=cfg.patterns,
                    probe=probe,
                    keep_steps=False,
                )
            )
        subjects: list[Subject] = step_subjects(recorders, step.steps_per_value)
        populations: list[Population] = []
        if ops:
            with gc_paused():
                populations = build_populations(
                    ctx.strategies,
                    live,
                    regime=GATE_REGIME,
                    miss_batch=lookup.miss_batch,
                    max_pass=lookup.max_pass,
                    rng=random.Random(cfg.seed),
                    requests=cfg.requests,
                )
            for pop in populations:
                subjects += [
                    lookup_subject(
                        pop,
                        op,
                        BenchName.of(
                            LOOKUP, pop.strategy.name, op=op, live=live, regime=GATE_REGIME
                        ),
                        lookup.min_value_ns,
                    )
                    for op in ops
                ]
        interleave(ctx, out, subjects, label="gate")
    close_all(recorders)
    for pop in populations:
        pop.close()
    return out


def build_order(strategies: list[Strategy], worker_index: int) -> list[Strategy]:
    """The order the sides are built in, in the worker of round `worker_index`: a seeded
    shuffle, rotated by the round, so that over any n consecutive rounds each of n sides is
    built at every position once (where a population lies in the heap is part of what a step
    or a lookup costs). A shuffle drawn anew each round did not balance: over a gate's 6 rounds
    it built the base last in 4 and first in 2, and in A/A gates of one revision the base's
    lookups read 2.7-8.7% faster than the head's in 9 gates of 9 (2026-12-07); one CI run
    flagged such an A/A at +6.82%."""
    order = list(strategies)
    random.Random(0).shuffle(order)
    k = worker_index % len(order) if order else 0
    return order[k:] + order[:k]


def plan(config: RunConfig) -> list[Job]:
    return [Job(0, config)]  # the gate starts its workers itself, one per side and round
