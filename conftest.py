"""Shared pytest fixtures: `strategy` is parametrised from the registry, so the conformance
tests and the pytest-benchmark quick suite run over exactly the strategies `bench list` shows."""

from __future__ import annotations

import pytest

from strategies import Strategy, discover

ALL_STRATEGIES: list[Strategy] = discover()


@pytest.fixture(params=ALL_STRATEGIES, ids=[s.name for s in ALL_STRATEGIES])
def strategy(request: pytest.FixtureRequest) -> Strategy:
    return request.param
