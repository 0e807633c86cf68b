"""pytest-benchmark suite of the lookup operations, one parametrised test per strategy.

`make bench-pytest` runs it with benchmarking on; `make test` runs each body once with
benchmarking disabled (pyproject's --benchmark-disable), as a correctness check. Groups are
named like the pyperf benchmarks: lookup/<strategy>/op=<op>/live=<n>/regime=warm (requests
built in one go and visited in allocation order, repeatedly: the warm regime), grouped by
operation.
"""

from __future__ import annotations

import gc
from array import array
from collections.abc import Iterator
from typing import Any

import pytest

from bench.base.names import BenchName
from bench.core.workload import make_request_class
from strategies import Strategy

LIVE = 1000
TEN = {
    "meta": None,
    "src_indices": None,
    "dst_indices": None,
    "written": None,
    "capture_layer_ids": None,
    "current_src_indices": None,
    "current_start": 1,
    "current_row_len": 2,
    "current_is_last": False,
    "owner_direct_sent": False,
}


@pytest.fixture
def live(strategy: Strategy) -> Iterator[list[Any]]:
    cls = make_request_class(strategy)
    reqs = [cls(f"pb{i}", array("q", (1,)), 1) for i in range(LIVE)]
    for r in reqs:
        strategy.get(r)
    yield reqs
    for r in reqs:
        strategy.release(r)
    reqs.clear()  # pr652 keeps its entries until the requests are collected
    del r
    gc.collect()
    assert strategy.live_states() == 0


def _name(benchmark: Any, strategy: Strategy, op: str) -> None:
    name = BenchName.of("lookup", strategy.name, op=op, live=LIVE, regime="warm")
    benchmark.group = name.condition
    benchmark.name = str(name)


def test_get_hit(benchmark: Any, strategy: Strategy, live: list[Any]) -> None:
    _name(benchmark, strategy, "get_hit")
    get = strategy.get

    def run() -> object:
        for r in live:
            state = get(r)
        return state

    state = benchmark(run)
    if strategy.holds_state:
        assert state is strategy.get(live[-1])


def test_peek_hit(benchmark: Any, strategy: Strategy, live: list[Any]) -> None:
    _name(benchmark, strategy, "peek_hit")
    peek = strategy.peek

    def run() -> list[object]:
        return [peek(r) for r in live]

    found = benchmark(run)
    assert all(f is not None for f in found) == strategy.holds_state


def test_update(benchmark: Any, strategy: Strategy, live: list[Any]) -> None:
    _name(benchmark, strategy, "update")
    update = strategy.update

    def run() -> None:
        for r in live:
            update(r, **TEN)

    benchmark(run)
    if strategy.holds_state:
        assert strategy.get(live[0]).current_row_len == 2


def test_reset(benchmark: Any, strategy: Strategy, live: list[Any]) -> None:
    _name(benchmark, strategy, "reset")
    for r in live:
        strategy.update(r, current_row_len=5)
    reset = strategy.reset

    def run() -> None:
        for r in live:
            reset(r)

    benchmark(run)
    if strategy.holds_state:
        assert strategy.get(live[0]).current_row_len == 0
