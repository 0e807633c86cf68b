"""The machine's other load per round (bench.base.cpuload) and what a worker does with a loaded
round (bench.measure.context.RoundGuard): measure it again, keep it flagged once the re-measures
are spent, and report it per family."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from bench.base import cpuload
from bench.base.cpuload import LOADED_CORES, CpuTimes, RoundLoad, load_between, read_cpu_times
from bench.base.names import BenchName
from bench.config.runconfig import RunConfig
from bench.measure import context
from bench.measure.context import Subject, SuiteOutput, WorkerContext, interleave, remeasures
from bench.orchestration.adaptive import load_fields
from bench.report.precision import load_words, under_load
from bench.runformat.schema import FamilyRecord, LoadSeries


def _times(busy: float, steal: float, own: float, at_s: float) -> CpuTimes:
    return CpuTimes(busy_s=busy, steal_s=steal, own_s=own, at_ns=int(at_s * 1e9))


def test_others_are_the_machine_busy_time_less_the_process_own() -> None:
    # 1 s of wall: the machine was busy 1.7 s (all CPUs), 0.9 s of it this process's own
    load = load_between(_times(10.0, 1.0, 5.0, 100.0), _times(11.7, 1.2, 5.9, 101.0))
    assert load.others_cores == pytest.approx(0.8)
    assert load.steal_cores == pytest.approx(0.2)
    assert load.metered
    assert load.loaded
    quiet = load_between(_times(10.0, 1.0, 5.0, 100.0), _times(11.01, 1.0, 6.0, 101.0))
    assert quiet.others_cores == pytest.approx(0.01)
    assert not quiet.loaded


def test_a_round_too_short_for_the_tick_counters_is_not_judged() -> None:
    short = load_between(_times(0.0, 0.0, 0.0, 0.0), _times(0.05, 0.0, 0.0, 0.1))
    assert short.others_cores == pytest.approx(0.5)
    assert not short.metered
    assert not short.loaded
    assert not load_between(None, _times(1.0, 0.0, 0.0, 1.0)).metered


@pytest.mark.skipif(read_cpu_times() is None or (os.cpu_count() or 1) < 2, reason="/proc/stat")
def test_a_process_spinning_on_another_core_is_seen() -> None:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # the interpreter is up and spinning
        meter = cpuload.LoadMeter()
        meter.start()
        time.sleep(1.0)
        load = meter.stop()
    finally:
        hog.kill()
        hog.wait()
    assert load.metered
    assert load.cores >= 0.6  # one core, less what the scheduler gave others
    assert load.loaded


class _ScriptedMeter:
    """Loads read in order, one per round."""

    def __init__(self, loads: list[float]) -> None:
        self.loads = loads

    def start(self) -> None:
        pass

    def stop(self) -> RoundLoad:
        cores = self.loads.pop(0) if self.loads else 0.0
        return RoundLoad(1.0, cores, 0.0, metered=True)


def _run_rounds(
    monkeypatch: pytest.MonkeyPatch, loads: list[float], values: int, warmups: int | None = None
) -> SuiteOutput:
    scripted = _ScriptedMeter(loads)
    monkeypatch.setattr(context, "LoadMeter", lambda: scripted)
    cfg = replace(RunConfig(), values=values, warmup_values=1)
    ctx = WorkerContext(cfg, 0, None, [], random.Random(0))  # type: ignore[arg-type]
    ctx.progress = lambda fraction, label: None  # type: ignore[method-assign]
    taken = iter(range(1000))
    subjects = [
        Subject(name=BenchName.of("lookup", s, live="10", regime="warm", op="get"),
                measure=lambda warmup: float(next(taken)))
        for s in ("a", "b")
    ]  # fmt: skip
    out = SuiteOutput()
    interleave(ctx, out, subjects, label="t", family="live=10/regime=warm", warmups=warmups)
    return out


def test_a_suite_can_take_no_warm_up_round() -> None:
    """The lookup suite's cold cells: every value follows its own eviction, so no round is
    recorded as a warm-up (the run's warmup_values is 1)."""
    with pytest.MonkeyPatch.context() as mp:
        out = _run_rounds(mp, [], values=3, warmups=0)
    for entry in out.benchmarks.values():
        assert len(entry["values"]) == 3
        assert not entry["warmups"]


def test_a_loaded_round_is_measured_again_not_pooled(monkeypatch: pytest.MonkeyPatch) -> None:
    # warm-up (never judged), then a quiet round, a loaded one, quiet ones
    out = _run_rounds(monkeypatch, [0.9, 0.0, 0.9, 0.0, 0.0, 0.0], values=4)
    series = out.extras.loads["live=10/regime=warm"]
    assert series.remeasured == 1
    assert series.rounds == 4
    assert series.loaded_rounds == 0
    for entry in out.benchmarks.values():
        assert len(entry["values"]) == 4  # as many values as asked, the loaded round's dropped
        assert len(entry["warmups"]) == 1


def test_under_a_lasting_load_rounds_are_kept_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run_rounds(monkeypatch, [0.0] + [1.0] * 50, values=4)
    series = out.extras.loads["live=10/regime=warm"]
    assert series.remeasured == remeasures(4) == 2
    assert series.loaded_rounds == 4  # every kept round was loaded: flagged, not hidden
    record = FamilyRecord(1, "q", 1.0, 5.0, 15.0, "fixed plan", **load_fields(series))
    assert under_load(record)
    assert record.load_max_cores == pytest.approx(1.0)
    words = load_words(record)
    assert "4 round(s) kept under load" in words
    assert "2 measured again" in words
    assert LOADED_CORES <= 1.0


def test_load_series_merge_over_processes() -> None:
    a = LoadSeries([0.1], [0.0], [False], remeasured=1)
    a.extend(LoadSeries([0.5, 0.0], [0.2, 0.0], [True, False], remeasured=2))
    assert a.rounds == 3
    assert a.loaded_rounds == 1
    assert a.remeasured == 3
    assert a.max_cores == pytest.approx(0.7)
    assert a.check() is None
    assert LoadSeries([0.1], [], [False]).check() is not None


def test_a_rounds_own_child_processes_are_not_the_machines_other_load() -> None:
    """Real mode's rounds run in driver processes: metered without their CPU, every round read
    as loaded by its own drivers."""
    import subprocess
    import sys

    from bench.base.cpuload import LoadMeter

    spin = "import time\nt=time.process_time()\nwhile time.process_time()-t<0.8: pass"
    mine, plain = LoadMeter(children=True), LoadMeter()
    mine.start()
    plain.start()
    subprocess.run([sys.executable, "-c", spin], check=True)
    got, naive = mine.stop(), plain.stop()
    assert naive.others_cores > got.others_cores + 0.4
