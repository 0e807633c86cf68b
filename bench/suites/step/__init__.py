"""step: scheduler iteration latency per scenario x strategy x access pattern, interleaved.

Names: step/<strategy>/scenario=<preset>/pattern=<per_field|cached|as_written>[/<swept
key>=<value>]. A value is the mean host time of `steps_per_value` scheduler iterations (pyperf
loops = steps). Every measured iteration's own latency is kept (host, and device time from CUDA
events on a GPU) with the number of collections during it, and the queue lengths after it (once
per scenario case: every strategy replays the same stream); worker 0 also counts, untimed, the
state lookups and creations per iteration, and every worker times building each strategy's
request. The report derives p50/p99/p99.9/max, per_field / cached per strategy, queue
statistics, and each strategy's cost net of `control` as a share of the scenario's forward time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from bench.config.cliargs import SuiteFlag
from bench.config.runconfig import STEP_REGIMES, Adaptive, RunConfig, SuiteOptions
from bench.core.scenarios import Scenario

NAME = "step"
ORDER = 20
KIND = "step"
# Under --budget: a family is a scenario case (every strategy and pattern of it), measured to
# the precision of the baseline's cost per iteration net of control (the scenario verdict):
# +-10% unless the run names one (the precision the README promises for a default run).
ADAPTIVE = Adaptive("net_cost", within=("pattern",), precision_pct=10.0)
FLAGS = (
    SuiteFlag(
        "--history",
        "history_steps",
        "untimed interleaved iterations before timing (-1: the scenario's, 0: none)",
        type=int,
        metavar="N",
    ),
)
BUDGET_SHARE = 3.0  # the verdict's suite (both memory regimes of every scenario): the largest share


@dataclass(frozen=True, kw_only=True)
class Options(SuiteOptions):
    SUITE: ClassVar[str] = "step"
    KEYS: ClassVar[dict[str, str]] = {
        "steps_per_value": "steps_per_value",
        "count_steps": "count_steps",
        "regimes": "step_regimes",
        "cold_sweep_mb": "cold_sweep_mb",
        "history_steps": "step_history_steps",
    }
    # The quick set measures in cache only: its verdict is the in-cache figure, and the evicted
    # cases' sweeps (one before every timed iteration) were most of its time.
    QUICK: ClassVar[dict[str, Any]] = {
        "workers": 5,
        "values": 3,
        "steps_per_value": 10,
        "count_steps": 5,
        "time_requests": False,
        "regimes": ("warm",),
        "warm_value_factor": 1,
        "warm_measured_ms": 0,
    }
    REPETITION: ClassVar[frozenset[str]] = frozenset(
        {
            "workers",
            "values",
            "steps_per_value",
            "count_steps",
            "time_requests",
            "warm_value_factor",
            "warm_measured_ms",
            "warm_max_factor",
        }
    )

    # The headline suite. Its plan: 5 processes of 3 values of 10 iterations per scheduler (the
    # minimum: no interval is printed from fewer processes, bench.stats.derive.MIN_PROCESSES;
    # under --budget further processes measure the scenarios short of --precision). The interval
    # is over processes (a process's layout moves all its values); a process's figure is as
    # noisy as its iterations, so a warm case, whose iterations are cheap, takes more values
    # (warm_value_factor).
    workers: int = 5
    values: int = 3
    steps_per_value: int = 10
    # A warm case takes this many times the run's values: its iterations cost no sweep (a
    # worker's warm cases took 6.6 s of its 31, the evicted ones 22.6 s here), and its interval
    # rested on the iterations' own noise as much as on the processes': within a process,
    # decode-dspark's net cost varied by 8.0 µs between four fresh builds of its case, about
    # what a value's standard error is (7.9 µs), against 10.6 µs between processes
    # (docs/REGIMES.md, "Where a step interval's width comes from").
    warm_value_factor: int = 2
    # ... and more, until each scheduler's measured iterations last warm_measured_ms (at most
    # warm_max_factor times the values above; 0: off). A value is 10 iterations whatever they
    # cost, so prefill-no-dspark's values lasted 1.7 ms against prefill-sharegpt's 21, and its
    # interval read +-16-21% where sharegpt's read +-6-7% (docs/REGIMES.md, "Values sized
    # to what an iteration costs").
    warm_measured_ms: int = 90
    warm_max_factor: int = 3
    # Lookups and states created per iteration are counted over this many untimed iterations
    # (exact: the same stream gives the same counts; 10 cover several arrival cycles: a request
    # lives 2-3 prefill iterations; 20 took 12 of the step suite's 141 s, 50 took 22 of 127 s).
    count_steps: int = 10
    # Time the request class's construction (the report's request table; ~3.5 s of a quick
    # run's 60 here, so the quick set leaves it out).
    time_requests: bool = True
    # The memory regimes every step figure is taken in (bench.measure.regime): warm, the
    # requests just read (the scheduler's own passes over the batch); cold, a cache sweep
    # before each iteration. A cold case is its own case (`regime=cold` in its names) and
    # measures the headline designs only: the baseline, its A/A twins, control and revisions.
    regimes: tuple[str, ...] = ("warm", "cold")
    # The cold regime's sweep in MiB (0: the size `bench run` measured this machine to need,
    # bench.measure.sweep_probe; never the last-level cache the kernel reports).
    cold_sweep_mb: int = 0
    # Untimed iterations, interleaved over every scheduler of a case, before any is timed: -1,
    # the scenario's (bench.core.scheduler.history_steps: a decode batch built in one go is
    # replaced in them); 0, none (a fresh dense batch, as before the steady layout).
    history_steps: int = -1

    POSITIVE_EXEMPT: ClassVar[tuple[str, ...]] = (
        "cold_sweep_mb",
        "history_steps",
        "warm_measured_ms",
    )

    def cases(self, config: RunConfig) -> list[tuple[Scenario, dict[str, str]]]:
        """The run's cases again in the cold regime (when it is measured)."""
        if "cold" not in self.regimes:
            return []
        return [(sc, {**extra, "regime": "cold"}) for sc, extra in config.cases()]

    def validate(self, config: RunConfig) -> None:
        super().validate(config)
        bad = [r for r in self.regimes if r not in STEP_REGIMES] or (
            ["(none)"] if not self.regimes else []
        )
        if not isinstance(self.warm_measured_ms, int) or self.warm_measured_ms < 0:
            raise ValueError(f"step_warm_measured_ms: {self.warm_measured_ms!r}; 0 (off) or more")
        if self.history_steps < -1:
            raise ValueError(f"step history: {self.history_steps}; -1 (the scenario's), 0 or more")
        if bad or "warm" not in self.regimes:
            raise ValueError(
                f"step_regimes: {bad[0] if bad else 'warm missing'}; warm and optionally cold"
            )
