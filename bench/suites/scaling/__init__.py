"""scaling: one scenario's step cost as its size parameter grows, per strategy.

By default decode-dspark with decode_batch 64, 256, 1,024 (4,096 by scaling_sizes): the decode forward is where
the PR put an O(B) get-or-create scan. Names:
scaling/<strategy>/scenario=<s>/pattern=<p>/<scaling_key>=<n>; a value is the mean step time
at that size, taken with the cyclic collector frozen after warm-up (gc.freeze()). The report
divides by n for the cost per batch request and fits the marginal cost
per request and its log-log slope against n: a slope near 0 is a constant cost per request, a
clearly positive slope a cost that grows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bench.config.runconfig import RunConfig, SuiteOptions
from bench.core import scenarios
from bench.core.callsites import PATTERNS

if TYPE_CHECKING:
    from bench.core.scenarios import Scenario

NAME = "scaling"
ORDER = 40
KIND = "scaling"
BUDGET_SHARE = 0.12  # its plan's share, printed only: a fixed plan runs first (8-16 s here)


@dataclass(frozen=True, kw_only=True)
class Options(SuiteOptions):
    SUITE: ClassVar[str] = "scaling"
    # Not in the quick set: --quick --suite scaling runs it.
    IN_QUICK: ClassVar[bool] = False
    QUICK: ClassVar[dict[str, Any]] = {
        "workers": 1,
        "sizes": (64, 256, 1024),
        "steps_per_value": 5,
    }
    REPETITION: ClassVar[frozenset[str]] = frozenset({"workers", "steps_per_value"})

    workers: int = 2
    # one scenario's step cost as its size parameter grows: 64 to 1,024 spans 16x (4,096, the
    # stress-decode-max preset, would take most of the suite's time: docs/REGIMES.md; add it
    # with scaling_sizes)
    scenario: str = "decode-dspark"
    key: str = "decode_batch"
    sizes: tuple[int, ...] = (64, 256, 1024)
    steps_per_value: int = 10
    pattern: str = "per_field"

    def cases(self, config: RunConfig) -> list[tuple[Scenario, dict[str, str]]]:

        return scenarios.resolve(
            (self.scenario,), config.scenario_overrides, (self.key, tuple(self.sizes))
        )

    def validate(self, config: RunConfig) -> None:
        super().validate(config)

        param = scenarios.PARAMS.get(self.key)
        if param is None or param.kind is not int:
            raise ValueError(f"scaling key {self.key!r} is not an integer scenario parameter")
        self.cases(config)
        if self.pattern not in PATTERNS:
            raise ValueError(
                f"unknown access pattern {self.pattern!r}; choose from {', '.join(PATTERNS)}"
            )
