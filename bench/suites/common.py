"""What every suite shares: the worker context, interleaved rounds, failure isolation."""

from __future__ import annotations

import random
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from bench.config import RunConfig
from bench.rowpool import PoolShape, RowPool, check_fits, default_shape
from bench.scheduler import SchedulerParams
from strategies import Strategy


@dataclass
class SuiteOutput:
    """One worker's results for one suite (JSON-serialisable)."""

    benchmarks: dict[str, dict[str, Any]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)  # strategy -> error text

    def add(self, name: str, value: float, *, warmup: bool, loops: int, unit: str) -> None:
        entry = self.benchmarks.setdefault(
            name, {"values": [], "warmups": [], "loops": loops, "unit": unit}
        )
        entry["warmups" if warmup else "values"].append(value)

    def to_dict(self) -> dict[str, Any]:
        return {"benchmarks": self.benchmarks, "extra": self.extra, "failures": self.failures}


@dataclass
class WorkerContext:
    config: RunConfig
    worker_index: int
    device: torch.device
    strategies: list[Strategy]
    rng: random.Random

    def progress(self, fraction: float, label: str) -> None:
        """A progress line for the parent process (it computes the ETA)."""
        print(f"@progress {fraction:.4f} {label}", file=sys.stderr, flush=True)

    def pool_shape(self) -> PoolShape:
        cfg = self.config
        shape = default_shape(
            self.device, chunked_prefill_size=cfg.chunked_prefill_size, pool_rows=cfg.pool_rows
        )
        check_fits(shape, self.device)
        return shape

    def make_pool(self) -> RowPool:
        return RowPool(self.pool_shape(), self.device)

    def scheduler_params(
        self, *, pattern: str, live_requests: int | None = None
    ) -> SchedulerParams:
        cfg = self.config
        return SchedulerParams(
            live_requests=live_requests or cfg.live_requests,
            chunked_prefill_size=cfg.chunked_prefill_size,
            pd_fraction=cfg.pd_fraction,
            streaming=cfg.streaming,
            pattern=pattern,
            seed=cfg.seed,
        )


def failure_text(exc: BaseException) -> str:
    """One line for the report, the innermost frame for the curious."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


@dataclass
class Subject:
    """One interleaved unit: a benchmark name, its strategy, and how to take one value."""

    name: str
    strategy: str
    measure: Callable[[], float]
    loops: int = 1
    unit: str = "second"


def interleave(
    ctx: WorkerContext,
    out: SuiteOutput,
    subjects: list[Subject],
    *,
    label: str,
    progress_base: float = 0.0,
    progress_span: float = 1.0,
    after_value: Callable[[Subject, bool], None] | None = None,
) -> None:
    """Round-robin: every round takes one value of every subject, in a fresh shuffled order,
    so drift on a shared machine hits all strategies alike. A subject whose strategy raises is
    dropped, with the error recorded; the others go on."""
    cfg = ctx.config
    rounds = cfg.warmup_values + cfg.values
    for r in range(rounds):
        warmup = r < cfg.warmup_values
        order = [s for s in subjects if s.strategy not in out.failures]
        ctx.rng.shuffle(order)
        for subject in order:
            if subject.strategy in out.failures:
                continue
            try:
                value = subject.measure()
            except Exception as exc:
                out.failures[subject.strategy] = f"{subject.name}: {failure_text(exc)}"
                continue
            out.add(subject.name, value, warmup=warmup, loops=subject.loops, unit=subject.unit)
            if after_value is not None:
                after_value(subject, warmup)
        ctx.progress(
            progress_base + progress_span * (r + 1) / rounds, f"{label} round {r + 1}/{rounds}"
        )
