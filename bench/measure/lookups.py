"""Lookup populations in a worker: live requests of one strategy each holding its state, laid
out and visited in a declared memory regime, and the timed lookup operations over them.
"""

from __future__ import annotations

import contextlib
import random
from array import array
from collections.abc import Callable
from typing import Any

from bench.base.names import BenchName
from bench.base.timing import time_loop_ns
from bench.core.workload import RequestSource
from bench.measure.context import Subject
from strategies import Strategy
from strategies._contract import FIELD_DEFAULTS

# update writes all ten fields: the defaults, with two scalars changed so writes are real.
TEN_FIELDS: dict[str, object] = {**FIELD_DEFAULTS, "current_start": 0, "current_row_len": 1}
# The regimes this module builds and visits (bench.suites.lookup declares what each means).
BUILT_REGIMES: tuple[str, ...] = ("warm", "cold", "mixed")


class Population:
    """`n` live requests of one strategy, each holding its state, plus request factories.

    The regime decides how the population lies and is visited (bench.suites.lookup.REGIMES):
      warm   built alone, in one go, and visited in allocation order
      cold   built interleaved with the other strategies' populations (build_populations),
             visited in random order, the caches evicted before every timed pass
      mixed  built whole (requests, then states), visited in random order, no eviction and no
             untimed first pass: the regime before regimes were declared
    """

    def __init__(
        self,
        strategy: Strategy,
        regime: str,
        miss_batch: int,
        requests: RequestSource | None = None,
    ) -> None:
        self.strategy = strategy
        self.regime = regime
        self.cls = (requests or RequestSource()).make(strategy)
        self._ids = array("q", [1, 2, 3, 4])
        self._serial = 0
        self.live: list[Any] = []
        self.sample: list[Any] = []
        self.never_stated: list[Any] = []
        self.miss_batch = miss_batch

    def add(self, n: int) -> None:
        """n more live requests, each with its state created right after it."""
        get = self.strategy.get
        for req in self.fresh(n):
            get(req)
            self.live.append(req)

    def finish(self, max_pass: int, rng: random.Random) -> None:
        """Choose what timed passes visit, at most max_pass live requests (the table still holds
        all n; a pass over 1e5 of a slow strategy would take seconds). warm: a contiguous window
        in allocation order (a strided sample of 1e5 puts every visited request on its own
        page: page walks whose cost depended on the run's huge-page luck, 255-658 ns for
        declared in three runs); cold and mixed: a seeded random sample in random order."""
        n = len(self.live)
        k = min(n, max_pass)
        if self.regime == "warm":
            start = rng.randrange(n - k + 1)
            self.sample = self.live[start : start + k]
        else:
            picked = rng.sample(range(n), k)
            self.sample = [self.live[i] for i in picked]
        self.miss_batch = min(n, self.miss_batch)
        self.never_stated = self.fresh(self.miss_batch)  # peek_miss: never get() on these

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


def build_populations(
    strategies: list[Strategy],
    n: int,
    *,
    regime: str,
    miss_batch: int,
    max_pass: int,
    rng: random.Random,
    requests: RequestSource | None = None,
) -> list[Population]:
    """warm: each population built whole, one after another, each state right after its
    request; cold: round-robin, request by request, so every strategy's requests lie among the
    others'; mixed (as before regimes were declared): each population's requests built whole,
    then their states."""
    if regime not in BUILT_REGIMES:
        raise ValueError(
            f"unknown lookup regime {regime!r}; choose from {', '.join(BUILT_REGIMES)}"
        )
    pops = [Population(s, regime, miss_batch, requests) for s in strategies]
    try:
        if regime == "warm":
            for pop in pops:
                pop.add(n)
        elif regime == "cold":
            for _ in range(n):
                for pop in pops:
                    pop.add(1)
        else:
            for pop in pops:
                reqs = pop.fresh(n)
                get = pop.strategy.get
                for req in reqs:
                    get(req)
                    pop.live.append(req)
        for pop in pops:
            pop.finish(max_pass, rng)
    except BaseException:
        for pop in pops:  # nothing a failed build made stays in a strategy's tables
            with contextlib.suppress(Exception):
                pop.close()
        raise
    return pops


def _passes(run_pass: Callable[[], None], min_ns: int) -> int:
    """How many passes make one value last at least min_ns (pyperf-style loop calibration)."""
    t = time_loop_ns(lambda _n: run_pass(), 1)
    return max(1, -(-min_ns // max(t, 1)))


def _timed_passes(
    run_pass: Callable[[], None], passes: int, evict: Callable[[], None] | None
) -> int:
    """Nanoseconds of `passes` passes; with an evictor, each pass is timed alone after an
    (untimed) eviction."""
    if evict is None:

        def loop(n: int) -> None:
            for _ in range(n):
                run_pass()

        return time_loop_ns(loop, passes)
    total = 0
    for _ in range(passes):
        evict()
        total += time_loop_ns(lambda _n: run_pass(), 1)
    return total


def _miss_subject(
    pop: Population, name: BenchName, evict: Callable[[], None] | None, batches: int
) -> Subject:
    """get_miss: `get` over `batches` fresh batches a value, each built just before and
    released just after, untimed (evicted first with an evictor)."""
    s = pop.strategy
    get = s.get

    def one_batch() -> int:
        batch = pop.fresh(pop.miss_batch)

        def one_pass() -> None:
            for r in batch:
                get(r)

        ns = _timed_passes(one_pass, 1, evict)
        for r in batch:
            s.release(r)
        return ns

    def measure_miss(_warmup: bool) -> float:
        ns = sum(one_batch() for _ in range(batches))
        return ns / (batches * pop.miss_batch) / 1e9

    return Subject(
        name=name, measure=measure_miss, loops=batches * pop.miss_batch, gc_mode="disabled"
    )


def lookup_subject(
    pop: Population,
    op: str,
    name: BenchName,
    min_value_ns: int,
    evict: Callable[[], None] | None = None,
    cold_lookups: int = 1000,
    miss_batches: int = 1,
) -> Subject:
    """One lookup operation over a population: seconds per operation.

    get_miss times `get` over batches of requests, each built just before and released just
    after, untimed: miss_batches of them a value (warm, mixed), one (cold). The other ops time
    passes over the population's sample: calibrated to min_value_ns (warm, mixed), or (cold,
    with an evictor) whole passes, each after an eviction, until a value has looked up at
    least cold_lookups requests."""
    s = pop.strategy
    get, peek, update, reset = s.get, s.peek, s.update, s.reset

    if op == "get_miss":
        # warm: miss_batches a value; cold: one batch, after one eviction
        return _miss_subject(pop, name, evict, max(1, miss_batches) if evict is None else 1)

    targets = pop.never_stated if op == "peek_miss" else pop.sample

    def pass_get() -> None:
        for r in targets:
            get(r)

    def pass_peek() -> None:
        for r in targets:
            peek(r)

    def pass_update() -> None:
        fields = TEN_FIELDS
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
    # warm: an untimed pass first, so a value starts with the sample in cache whatever ran
    # before it (other subjects run between values; without it the first pass of each value
    # pays the misses: measured +27% on declared and x2 on dynattr at 1e3).
    prime = pop.regime == "warm"
    if prime:
        run_pass()
    if evict is None:
        passes = _passes(run_pass, min_value_ns)
    else:
        passes = max(1, -(-cold_lookups // max(1, len(targets))))
    ops_per_value = passes * len(targets)

    def measure(_warmup: bool) -> float:
        if prime:
            run_pass()
        return _timed_passes(run_pass, passes, evict) / ops_per_value / 1e9

    return Subject(name=name, measure=measure, loops=ops_per_value, gc_mode="disabled")
