"""Counting state operations: lookups and creations per scheduler iteration, per call site.

A counted copy of a strategy wraps get and peek; a get that finds no state (peek says None)
creates one. The scheduler runs untimed on a host pool, so the counts are exact and cost
nothing in the timed runs. Every strategy replays the same stream, so the counts differ
between strategies only where their semantics do (fat_req never creates; control's call sites
touch nothing).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any

from bench.core.groupsites import FREQUENCIES
from bench.core.hostpool import HostPool, host_hidden
from bench.core.scenarios import Scenario
from bench.core.scheduler import make_scheduler, warmup_steps
from bench.core.workload import RequestSource
from strategies import Strategy, load_builtin


@dataclass
class OpCounts:
    """State operations over untimed, counted iterations of one benchmark's scheduler."""

    iterations: int = 0
    lookups: int = 0  # get and peek calls made by the call sites
    created: int = 0  # get calls that found no state and created one
    by_site: dict[str, int] = field(default_factory=dict)  # lookups per call site
    # A state group's replayed accesses (bench.core.groupsites): the requests each event list
    # held, summed over the iterations (batch, new, finished, chunks, inflight)
    events: dict[str, int] = field(default_factory=dict)

    def add(self, other: OpCounts) -> None:
        self.iterations += other.iterations
        self.lookups += other.lookups
        self.created += other.created
        for site, n in other.by_site.items():
            self.by_site[site] = self.by_site.get(site, 0) + n
        for event, n in other.events.items():
            self.events[event] = self.events.get(event, 0) + n


def counted(strategy: Strategy, counts: OpCounts) -> Strategy:
    """The strategy with get/peek that count into `counts` (by the calling call site)."""
    get, peek = strategy.get, strategy.peek
    by_site = counts.by_site

    def counting_get(req: Any) -> Any:
        counts.lookups += 1
        site = sys._getframe(1).f_code.co_name
        by_site[site] = by_site.get(site, 0) + 1
        if peek(req) is None:
            counts.created += 1
        return get(req)

    def counting_peek(req: Any) -> Any:
        counts.lookups += 1
        site = sys._getframe(1).f_code.co_name
        by_site[site] = by_site.get(site, 0) + 1
        return peek(req)

    return dataclasses.replace(strategy, get=counting_get, peek=counting_peek)


def count_ops(
    strategy: Strategy,
    scenario: Scenario,
    *,
    pattern: str,
    seed: int,
    steps: int,
    requests: RequestSource | None = None,
    group_layout: tuple[tuple[str, bool], ...] | None = None,
) -> OpCounts:
    """Lookups and creations over `steps` iterations after the scenario's warm-up."""
    warm = OpCounts()
    sched = make_scheduler(
        counted(strategy, warm),
        scenario,
        HostPool(scenario.pool_rows),
        pattern=pattern,
        seed=seed,
        hidden=host_hidden(scenario.chunk_tokens),
        requests=requests,
        counting=True,
        group_layout=group_layout,
    )
    events: dict[str, int] = {}
    group = sched.group
    if group is not None:

        def counting_group(*lists: Any) -> None:
            for key, reqs in zip(_EVENTS, lists[:5], strict=True):
                events[key] = events.get(key, 0) + len(reqs)
            group(*lists)

        sched.group = counting_group
    sched.run(warmup_steps(scenario))
    before = dataclasses.replace(warm, by_site=dict(warm.by_site))
    events.clear()
    sched.run(steps)
    sched.close()
    by_site = {k: v - before.by_site.get(k, 0) for k, v in warm.by_site.items()}
    return OpCounts(
        iterations=steps,
        lookups=warm.lookups - before.lookups,
        created=warm.created - before.created,
        by_site={k: v for k, v in by_site.items() if v},
        events=dict(events),
    )


# The event lists a group program iterates over, in its arguments' order.
_EVENTS = ("batch", "new", "finished", "chunks", "inflight")


def event_means(scenario: Scenario, *, seed: int, steps: int) -> dict[str, float]:
    """Requests per iteration in each event list a group program iterates over (batch, new,
    finished, chunks, inflight), means over `steps` untimed iterations after the warm-up."""

    layout = tuple((f, True) for f in FREQUENCIES)
    counts = count_ops(
        load_builtin("control"),
        scenario,
        pattern="per_field",
        seed=seed,
        steps=steps,
        group_layout=layout,
    )
    return {k: v / steps for k, v in counts.events.items()}
