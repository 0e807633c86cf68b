"""What every suite's worker side shares: the worker context, one worker's output, and
interleaved rounds with failure isolation (a strategy that raises is dropped, the others go on).

Runs inside a worker process (bench.worker). Importing it is cheap and torch-free; torch comes
in when a pool or a clock is built.
"""

from __future__ import annotations

import contextlib
import random
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.base.cpuload import LoadMeter, RoundLoad
from bench.base.names import BenchName
from bench.base.timing import wall_s
from bench.config.runconfig import RunConfig
from bench.runformat.schema import LoadSeries, SuiteExtras, decode
from strategies import Strategy

if TYPE_CHECKING:
    import torch

    from bench.core.rowpool import RowPool
    from bench.core.scenarios import Scenario


@dataclass
class SuiteOutput:
    """One worker's results for one suite (what bench.worker writes as JSON)."""

    benchmarks: dict[str, dict[str, Any]] = field(default_factory=dict)
    extras: SuiteExtras = field(default_factory=SuiteExtras)
    failures: dict[str, str] = field(default_factory=dict)  # strategy -> error text

    def add(
        self,
        name: BenchName,
        value: float,
        *,
        warmup: bool,
        loops: int,
        unit: str,
        gc_mode: str = "enabled",
    ) -> None:
        entry = self.benchmarks.setdefault(
            str(name),
            {"values": [], "warmups": [], "loops": loops, "unit": unit, "gc_mode": gc_mode},
        )
        entry["warmups" if warmup else "values"].append(value)

    def merge(self, data: dict[str, Any], source: Path) -> None:
        """Fold in another process's output (to_dict(), read from source) over other
        benchmarks or strategies."""
        for name, entry in data["benchmarks"].items():
            mine = self.benchmarks.setdefault(name, {**entry, "values": [], "warmups": []})
            mine["values"].extend(entry["values"])
            mine["warmups"].extend(entry["warmups"])
        self.extras.merge(decode(type(self.extras), data["extra"], source, "child extras"))
        self.failures.update(data["failures"])

    def to_dict(self) -> dict[str, Any]:
        # "benchmarks" and "failures" are read by gates running this tree as their base: stable.
        return {
            "benchmarks": self.benchmarks,
            "extra": self.extras.to_json(),
            "failures": self.failures,
        }


@dataclass
class WorkerContext:
    config: RunConfig
    worker_index: int
    device: torch.device
    strategies: list[Strategy]
    rng: random.Random
    # this context's share of the worker's progress (a child measuring one of its strategies)
    progress_base: float = 0.0
    progress_span: float = 1.0

    def progress(self, fraction: float, label: str) -> None:
        """A progress line for the parent process (it computes the ETA)."""
        done = self.progress_base + self.progress_span * fraction
        print(f"@progress {done:.4f} {label}", file=sys.stderr, flush=True)

    def make_pool(self, scenario: Scenario) -> RowPool:
        """The scenario's row pool on this worker's device (rows from the scenario)."""
        from bench.core.rowpool import RowPool, check_fits, default_shape

        shape = default_shape(
            self.device,
            chunked_prefill_size=scenario.chunk_tokens,
            pool_rows=scenario.pool_rows,
        )
        check_fits(shape, self.device)
        return RowPool(shape, self.device)


@contextlib.contextmanager
def phase(out: SuiteOutput, name: str) -> Iterator[None]:
    """Adds the wall time of the block to out.extras.phases[name] (where a worker's time goes:
    building, measuring, counting; never inside a timed value)."""
    t0 = wall_s()
    try:
        yield
    finally:
        out.extras.phases[name] = out.extras.phases.get(name, 0.0) + wall_s() - t0


FAMILY_PHASE = "family:"


def family_phase(family: str) -> str:
    """The phase name of one family's whole measurement in a worker (bench.orchestration.adaptive predicts a
    further round's cost from it)."""
    return FAMILY_PHASE + family


def failure_text(exc: BaseException) -> str:
    """One line for the report, the innermost frame for the curious."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


@dataclass
class Subject:
    """One interleaved unit: a benchmark, its strategy, and how to take one value.
    `measure(warmup)` returns seconds per loop; warm-up values are recorded as pyperf warm-ups."""

    name: BenchName
    measure: Callable[[bool], float]
    loops: int = 1
    unit: str = "second"
    gc_mode: str = "enabled"  # the collector's state while measured (pyperf metadata)

    @property
    def strategy(self) -> str:
        return self.name.strategy


class RoundGuard:
    """Meters every measured round of one family (bench.base.cpuload) and decides whether it is
    kept: a round during which other processes took LOADED_CORES or more is dropped and measured
    again, at most remeasures(values) times per family in a worker; past that a loaded round is
    kept and recorded as loaded. What each kept round's load was goes to out.extras.loads. A
    whole round is dropped, every strategy's value of it, so the pairing stays and the load,
    which no strategy chooses, cannot favour one."""

    def __init__(self, out: SuiteOutput, family: str, values: int) -> None:
        self.series = out.extras.loads.setdefault(family, LoadSeries())
        self.left = remeasures(values)
        self.meter = LoadMeter()
        self.last = RoundLoad(0.0, 0.0, 0.0, metered=False)

    def start(self) -> None:
        self.meter.start()

    def keep(self, *, warmup: bool) -> bool:
        """After a round: whether its values are kept (warm-up rounds always are)."""
        self.last = load = self.meter.stop()
        if warmup:
            return True
        if load.loaded and self.left > 0:
            self.left -= 1
            self.series.remeasured += 1
            return False
        self.series.others_cores.append(round(load.others_cores, 3))
        self.series.steal_cores.append(round(load.steal_cores, 3))
        self.series.loaded.append(load.loaded)
        return True

    def note(self, label: str) -> str:
        """The progress line's words for a dropped round."""
        return f"{label}: round measured again (other processes took {self.last.cores:.2f} cores)"


def remeasures(values: int) -> int:
    """Loaded rounds a worker measures again per family: half its values, at least one (under a
    load that lasts, a family costs at most 1.5 times its plan, then keeps its loaded rounds
    flagged)."""
    return max(1, values // 2)


def interleave(
    ctx: WorkerContext,
    out: SuiteOutput,
    subjects: list[Subject],
    *,
    label: str,
    family: str | None = None,
    progress_base: float = 0.0,
    progress_span: float = 1.0,
    warmups: int | None = None,
) -> None:
    """Round-robin: every round takes one value of every subject, in a fresh shuffled order,
    so drift on a shared machine hits all strategies alike. A round measured under load is
    measured again (RoundGuard; `family` keys its record, the label without one). A subject
    whose strategy raises is dropped, with the error recorded; the others go on. warmups:
    the rounds recorded as warm-ups first (None: the run's warmup_values)."""
    cfg = ctx.config
    warmups = cfg.warmup_values if warmups is None else warmups
    rounds = warmups + cfg.values
    guard = RoundGuard(out, family or label, cfg.values)
    r = 0
    while r < rounds:
        warmup = r < warmups
        order = [s for s in subjects if s.strategy not in out.failures]
        ctx.rng.shuffle(order)
        taken: list[tuple[Subject, float]] = []
        guard.start()
        for subject in order:
            if subject.strategy in out.failures:
                continue
            try:
                taken.append((subject, subject.measure(warmup)))
            except Exception as exc:
                out.failures[subject.strategy] = f"{subject.name}: {failure_text(exc)}"
        if not guard.keep(warmup=warmup):
            ctx.progress(progress_base + progress_span * r / rounds, guard.note(label))
            continue
        for subject, value in taken:
            out.add(
                subject.name,
                value,
                warmup=warmup,
                loops=subject.loops,
                unit=subject.unit,
                gc_mode=subject.gc_mode,
            )
        r += 1
        ctx.progress(progress_base + progress_span * r / rounds, f"{label} round {r}/{rounds}")
