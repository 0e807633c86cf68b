"""lookup: nanoseconds per get (hit, miss/create), peek (hit, miss), update of the ten fields
and reset, with 1e3, 1e4 and 1e5 live requests holding state in the strategy.

Names: lookup/<strategy>/<op>/live=<n>. Values are seconds per operation; each value is one or
more timed passes over the live requests (calibrated so a value takes at least
lookup_min_value_ns). Creation of requests is never timed: get_miss times `get` over a batch
of requests built just before, and releases them just after, untimed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from bench.config import LOOKUP_OPS
from bench.gcprobe import gc_paused
from bench.suites.common import Subject, SuiteOutput, WorkerContext, failure_text, interleave
from bench.timing import time_loop_ns
from bench.workload import make_request_class
from strategies import Strategy
from strategies._contract import FIELD_DEFAULTS

# update writes all ten fields: the defaults, with two scalars changed so writes are real.
_TEN_FIELDS: dict[str, object] = {**FIELD_DEFAULTS, "current_start": 0, "current_row_len": 1}


class Population:
    """`n` live requests of one strategy, each holding its state, plus request factories."""

    def __init__(
        self, strategy: Strategy, n: int, miss_batch: int, max_pass: int, rng: random.Random
    ) -> None:
        self.strategy = strategy
        self.cls = make_request_class(strategy)
        self._ids = [1, 2, 3, 4]
        self._serial = 0
        self.live = self.fresh(n)
        for req in self.live:
            strategy.get(req)
        self.never_stated = self.fresh(min(n, miss_batch))  # peek_miss: never get() on these
        self.miss_batch = min(n, miss_batch)
        # Timed passes visit a seeded random sample of the live requests, in random order:
        # the table still holds all n (its size is what is being varied), while a pass over
        # 1e5 requests of a slow strategy does not take seconds.
        self.sample = rng.sample(self.live, min(n, max_pass))

    def fresh(self, n: int) -> list[Any]:
        cls, ids, start = self.cls, self._ids, self._serial
        self._serial += n
        return [cls(f"lk-{i}", ids, 1) for i in range(start, start + n)]

    def close(self) -> None:
        for req in self.live:
            self.strategy.release(req)
        self.live = []
        self.sample = []
        self.never_stated = []


def _passes(run_pass: Callable[[], None], min_ns: int) -> int:
    """How many passes make one value last at least min_ns (pyperf-style loop calibration)."""
    t = time_loop_ns(lambda _n: run_pass(), 1)
    return max(1, -(-min_ns // max(t, 1)))


def _timed_passes(run_pass: Callable[[], None], passes: int) -> int:
    def loop(n: int) -> None:
        for _ in range(n):
            run_pass()

    return time_loop_ns(loop, passes)


def make_subject(ctx: WorkerContext, pop: Population, op: str, n: int) -> Subject:
    s = pop.strategy
    get, peek, update, reset = s.get, s.peek, s.update, s.reset
    name = f"lookup/{s.name}/op={op}/live={n}"
    min_ns = ctx.config.lookup_min_value_ns

    if op == "get_miss":

        def measure_miss() -> float:
            batch = pop.fresh(pop.miss_batch)

            def one_pass() -> None:
                for r in batch:
                    get(r)

            ns = _timed_passes(one_pass, 1)
            for r in batch:
                s.release(r)
            return ns / len(batch) / 1e9

        return Subject(name=name, strategy=s.name, measure=measure_miss, loops=pop.miss_batch)

    if op == "peek_miss":
        targets = pop.never_stated
    else:
        targets = pop.sample

    def pass_get() -> None:
        for r in targets:
            get(r)

    def pass_peek() -> None:
        for r in targets:
            peek(r)

    def pass_update() -> None:
        fields = _TEN_FIELDS
        for r in targets:
            update(r, **fields)

    def pass_reset() -> None:
        for r in targets:
            reset(r)

    run_pass = {
        "get_hit": pass_get,
        "peek_hit": pass_peek,
        "peek_miss": pass_peek,
        "update": pass_update,
        "reset": pass_reset,
    }[op]
    passes = _passes(run_pass, min_ns)
    ops_per_value = passes * len(targets)

    def measure() -> float:
        return _timed_passes(run_pass, passes) / ops_per_value / 1e9

    return Subject(name=name, strategy=s.name, measure=measure, loops=ops_per_value)


def _build(ctx: WorkerContext, out: SuiteOutput, n: int) -> tuple[list[Population], list[Subject]]:
    populations: list[Population] = []
    subjects: list[Subject] = []
    for s in ctx.strategies:
        if s.name in out.failures:
            continue
        try:
            pop = Population(
                s,
                n,
                ctx.config.lookup_miss_batch,
                ctx.config.lookup_max_pass,
                random.Random(ctx.config.seed + n),
            )
            populations.append(pop)
            subjects += [make_subject(ctx, pop, op, n) for op in LOOKUP_OPS]
        except Exception as exc:
            out.failures[s.name] = f"lookup/{s.name} setup at live={n}: {failure_text(exc)}"
    return populations, subjects


def run(ctx: WorkerContext) -> SuiteOutput:
    out = SuiteOutput()
    sizes = ctx.config.lookup_sizes
    for i, n in enumerate(sizes):
        with gc_paused():
            populations, subjects = _build(ctx, out, n)
        interleave(
            ctx,
            out,
            subjects,
            label=f"lookup live={n}",
            progress_base=i / len(sizes),
            progress_span=1 / len(sizes),
        )
        with gc_paused():
            for pop in populations:
                pop.close()
            del populations, subjects
    return out
