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

from bench.config import Adaptive, SuiteOptions

NAME = "step"
ORDER = 20
KIND = "step"
# Under --budget: a family is a scenario case (every strategy and pattern of it), measured to
# the precision of the baseline's cost per iteration net of control (the scenario verdict).
ADAPTIVE = Adaptive("net_cost", within=("pattern",))
BUDGET_SHARE = 2.0  # the verdict's suite: twice a plain suite's share of the budget


@dataclass(frozen=True, kw_only=True)
class Options(SuiteOptions):
    SUITE: ClassVar[str] = "step"
    KEYS: ClassVar[dict[str, str]] = {
        "steps_per_value": "steps_per_value",
        "count_steps": "count_steps",
    }
    QUICK: ClassVar[dict[str, Any]] = {
        "workers": 1,
        "values": 8,
        "steps_per_value": 20,
        "count_steps": 40,
    }
    REPETITION: ClassVar[frozenset[str]] = frozenset(
        {"workers", "values", "steps_per_value", "count_steps"}
    )

    # The headline suite and the noisiest (many schedulers share the caches): more processes
    # and values than the other suites, for stable paired ratios.
    workers: int = 4
    values: int = 12
    steps_per_value: int = 50
    # Lookups and states created per iteration are counted over this many untimed iterations.
    count_steps: int = 100
