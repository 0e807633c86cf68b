"""Which phase a real-mode difference names (bench.real.report.largest_phase) and which methods
the driver times (bench.real.driver.phases): corrected for picking one of several, resolved
through the MRO, and refused where the sides timed different methods."""

from __future__ import annotations

import random
import sys
import types
from typing import Any

import pytest

from bench.real import report
from bench.real.driver import phases as ph
from bench.real.driver.phases import PHASES


def _cell(name: str, rng: random.Random, shift: dict[str, float], wrapped: list[str]) -> Any:
    cell = report.Cell(name, "p")
    for _ in range(6):
        figs = {"iteration": 1e-3 * rng.gauss(1, 0.01)}
        for p in PHASES:
            figs[p] = 1e-4 * rng.gauss(1, 0.05) + shift.get(p, 0.0)
            figs[f"decode_{p}"] = figs[p]
        cell.outputs.append({"_figures": figs, "_values": {}, "phases_wrapped": wrapped})
    return cell


def test_no_phase_is_named_under_no_change_but_5_percent_of_the_time() -> None:
    """Picked from eight phases with each one's own 95% interval, one was named ~34% of the
    time when nothing had changed."""
    rng = random.Random(1)
    named = 0
    for _ in range(300):
        a, b = _cell("a", rng, {}, ["X.f (schedule)"]), _cell("b", rng, {}, ["X.f (schedule)"])
        named += isinstance(report.largest_phase(a, b), tuple)
    assert named / 300 <= 0.08
    moved = report.largest_phase(_cell("a", rng, {}, []), _cell("b", rng, {"prepare": 3e-5}, []))
    assert isinstance(moved, tuple)
    assert moved[0] == "decode_prepare"


def test_sides_that_timed_different_methods_are_not_compared() -> None:
    rng = random.Random(2)
    a = _cell("a", rng, {}, ["Scheduler.run_batch (forward)"])
    b = _cell("b", rng, {"prepare": 3e-5}, ["Scheduler.run_batch (forward)", "S.p (prepare)"])
    said = report.largest_phase(a, b)
    assert isinstance(said, str)
    assert "S.p (prepare)" in said


def test_an_inherited_method_is_timed_where_it_is_defined(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = types.ModuleType("reqstate_fake_sched")

    class Mixin:
        def step(self) -> int:
            return 7

    class Sched(Mixin):
        pass

    mod.Mixin, mod.Sched = Mixin, Sched  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "reqstate_fake_sched", mod)
    monkeypatch.setattr(ph, "TARGETS", {"schedule": (("reqstate_fake_sched", "Sched.step"),)})
    phases = ph.Phases()
    phases.install()
    assert phases.wrapped == ["Sched.step (schedule) [defined in Mixin]"]
    assert Sched().step() == 7
    assert phases.ns["schedule"] > 0
