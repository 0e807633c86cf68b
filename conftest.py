"""Shared pytest fixtures: `strategy` is parametrised from the registry, so the conformance
tests and the pytest-benchmark quick suite run over exactly the strategies `bench list` shows."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bench.base.cpucache import SWEEP_ENV
from strategies import Strategy, discover

# Every run a test starts sweeps 64 MiB before a cold case (unless its configuration says
# otherwise), whatever last-level cache the host reports: twice a 480 MiB one made the slow
# tests 2.2x slower. The regime's own test sizes the sweep from the LLC.
os.environ.setdefault(SWEEP_ENV, "64")

# pytest keeps a test module's rewritten assertions as bytecode unless the interpreter writes
# none (PYTHONDONTWRITEBYTECODE, set on this project's machines): then every test process rewrote
# every test module again, ~2.3 s of each phase's collection (2026-12-07). Bytecode is written
# while the test modules are collected, and the environment's setting is back before any test
# runs (a test that rewrites a module within one second at the same size could otherwise import
# stale bytecode); the processes the tests start keep the environment's setting throughout.
_ENV_NO_BYTECODE = sys.dont_write_bytecode
sys.dont_write_bytecode = False


def pytest_collection_finish(session: pytest.Session) -> None:
    sys.dont_write_bytecode = _ENV_NO_BYTECODE


ALL_STRATEGIES: list[Strategy] = discover()
# The built-in strategies' names: the one list tests compare against (derived, never pinned).
STRATEGY_NAMES: list[str] = [s.name for s in ALL_STRATEGIES]


def pytest_itemcollected(item: pytest.Item) -> None:
    """A test that needs a real measured run (the tiny_run fixture: ~1.5 minutes once) is slow:
    `make test` runs it, `make test-fast` does not; and one worker builds the run (pytest-xdist
    --dist loadgroup), not each of them. Marked as each item is collected: pytest-xdist reads the
    group marks in its own pytest_collection_modifyitems, which runs before a conftest's."""
    if "tiny_run" in getattr(item, "fixturenames", ()):
        item.add_marker(pytest.mark.slow)
        item.add_marker(pytest.mark.xdist_group("tiny_run"))


@pytest.fixture(params=ALL_STRATEGIES, ids=[s.name for s in ALL_STRATEGIES])
def strategy(request: pytest.FixtureRequest) -> Strategy:
    return request.param


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real `bench run` in the tiny configuration (every suite, every strategy plus the
    hostile external one), shared by the end-to-end, report and browser tests."""
    from tests.helpers import FIXTURES, run_cli

    out = tmp_path_factory.mktemp("reports")
    proc = run_cli(
        "run",
        "--config",
        str(FIXTURES / "tiny_config.json"),
        "--device",
        "cpu",
        "--no-report",
        "--output-dir",
        str(out),
        "--external",
        str(FIXTURES / "hostile_strategy.py"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ETA" in proc.stderr  # progress was shown
    assert "run folder:" in proc.stdout
    assert len(proc.stdout.splitlines()) <= 50, proc.stdout  # the terminal fits a screen
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


@pytest.fixture(scope="session")
def tiny_report(tiny_run: Path) -> list[Path]:
    """The tiny run's report.html and summary.md, written into it once (its plots and statistics
    are ~7 s here; the report and browser tests read the same pages)."""
    from bench.report import write_report

    return write_report(tiny_run)
