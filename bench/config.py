"""Run configuration: one frozen dataclass, validated once, passed to worker processes as JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from bench.core import scenarios
from bench.core.reqmodel import DEFAULT_MODEL
from bench.core.scenarios import DEFAULT_SET as DEFAULT_SCENARIOS
from bench.core.scenarios import Scenario
from bench.core.workload import RequestSource

# Keys that set how much is measured, not what: a gate's base tree that lacks one measures the
# same thing without it (bench/gate/protocol.py).
REPETITION_KEYS = frozenset(
    {
        "suites",
        "strategies",
        "external",
        "baseline",
        "workers",
        "lookup_workers",
        "step_workers",
        "gc_workers",
        "scaling_workers",
        "warmup_values",
        "values",
        "step_values",
        "steps_per_value",
        "gc_steps_per_value",
        "scaling_steps_per_value",
        "lookup_min_value_ns",
        "lookup_cold_lookups",
        "count_steps",
        "memory_sample_requests",
    }
)
# Keys whose default is not what a tree without the key measured: that value, per key. A gate
# compares with such a base only when the candidate asks for this value. (A new key whose
# default keeps the old behaviour needs no entry.)
ABSENT_MEANS: dict[str, Any] = {"aa_twins": 0}

# Upper bound on live requests in a lookup table: beyond ~1M the synthetic requests alone
# outgrow this machine.
MAX_LIVE_REQUESTS = 1 << 20


def check_positive_ints(
    obj: object, *, exempt: tuple[str, ...], label: Callable[[str], str]
) -> None:
    """Every `int` field of a dataclass, but the exempt ones, must be a positive integer."""
    for f in fields(obj):  # type: ignore[arg-type]
        if f.type != "int" or f.name in exempt:
            continue
        value = getattr(obj, f.name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{label(f.name)} must be a positive integer, got {value!r}")


def _option(name: str) -> str:
    return name.replace("_", "-")


def _every_public_suite() -> tuple[str, ...]:
    from bench.suites import public_names  # the registry imports suite modules, which import us

    return public_names()


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything a run needs; `quick()` gives the CI-sized variant."""

    suites: tuple[str, ...] = field(default_factory=_every_public_suite)
    strategies: tuple[str, ...] | None = None  # None: every registered strategy
    external: tuple[str, ...] = ()
    baseline: str = "pr652"  # the code under review: ratios are "x times the PR as written"
    # A/A twins of the baseline measured in every suite (<baseline>.aa, .aa2, ...): verbatim
    # copies whose difference from the baseline is the run's noise floor (0: none, --no-aa)
    aa_twins: int = 1
    device: str = "auto"
    seed: int = 0
    # pyperf-style repetition: fresh worker processes, each with warm-up and measured values.
    workers: int = 3
    warmup_values: int = 1
    values: int = 6
    # lookup suite: two worker processes (each 1e5 cell builds 9 x 1e5 requests per regime)
    lookup_workers: int = 2
    lookup_sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    lookup_min_value_ns: int = 5_000_000  # calibrate loops so one value takes at least 5 ms
    lookup_miss_batch: int = 2_000  # fresh requests per get_miss value (creation is untimed)
    lookup_max_pass: int = 10_000  # live requests one timed pass visits (a random sample)
    # memory regimes (bench.suites.measure.REGIMES): how populations lie and are visited
    lookup_regimes: tuple[str, ...] = ("warm", "cold")
    # a cold value: whole passes, each after an eviction (~20 ms here), until this many
    # lookups (a cold lookup costs ~0.2-1 us here, so a value lasts ~0.2-1 ms: one pass of the
    # 1e3 table, or 1e3 of a larger table's sample)
    lookup_cold_lookups: int = 1_000
    # scheduler scenarios (step, gc): presets of bench/core/scenarios.py, every parameter
    # overridable (--set key=value, recorded) and one of them sweepable (--sweep key=v1,v2)
    scenarios: tuple[str, ...] = DEFAULT_SCENARIOS
    scenario_overrides: dict[str, Any] = field(default_factory=dict)
    sweep_key: str | None = None
    sweep_values: tuple[Any, ...] = ()
    patterns: tuple[str, ...] = ("per_field", "cached")
    # The request class: a request model read from SGLang's schedule_batch.py (default: the
    # fork head the PR targets), or the installed sglang's own Req (request_class = "sglang").
    request_model: str = DEFAULT_MODEL
    request_class: str = "model"
    steps_per_value: int = 50
    # Lookups and states created per iteration are counted over this many untimed iterations.
    count_steps: int = 100
    # The step suite is the headline and the noisiest (many schedulers share the caches): more
    # processes and values than the other suites, for stable paired ratios.
    step_workers: int = 4
    step_values: int = 12
    # gc suite
    gc_modes: tuple[str, ...] = ("enabled", "frozen")
    background_objects: int = 500_000
    gc_steps_per_value: int = 100
    gc_workers: int = 1
    memory_sample_requests: int = 2_000
    # scaling suite: one scenario's step cost as its size parameter grows
    scaling_scenario: str = "decode-dspark"
    scaling_key: str = "decode_batch"
    scaling_sizes: tuple[int, ...] = (64, 256, 1024, 4096)
    scaling_steps_per_value: int = 10
    scaling_workers: int = 2
    scaling_pattern: str = "per_field"
    extra: dict[str, Any] = field(default_factory=dict)

    def quick(self) -> RunConfig:
        one_process: dict[str, Any] = dict.fromkeys(
            ("workers", "lookup_workers", "gc_workers", "scaling_workers", "step_workers"), 1
        )
        return replace(
            self,
            **one_process,
            step_values=8,
            values=8,
            lookup_sizes=(1_000,),
            lookup_min_value_ns=2_000_000,
            lookup_miss_batch=500,
            scenarios=("prefill-dspark", "decode-dspark"),
            steps_per_value=20,
            count_steps=40,
            gc_steps_per_value=40,
            background_objects=200_000,
            memory_sample_requests=500,
            scaling_sizes=(64, 256, 1024),
            scaling_steps_per_value=5,
        )

    @property
    def sweep(self) -> tuple[str, tuple[Any, ...]] | None:
        return (self.sweep_key, self.sweep_values) if self.sweep_key else None

    @property
    def requests(self) -> RequestSource:
        return RequestSource(model=self.request_model, real=self.request_class == "sglang")

    def cases(self) -> list[tuple[Scenario, dict[str, str]]]:
        """Every scheduler case of the step and gc suites: (scenario, extra name params)."""
        return scenarios.resolve(self.scenarios, self.scenario_overrides, self.sweep)

    def scaling_cases(self) -> list[tuple[Scenario, dict[str, str]]]:
        sizes = (self.scaling_key, tuple(self.scaling_sizes))
        return scenarios.resolve((self.scaling_scenario,), self.scenario_overrides, sizes)

    def validate(self) -> None:
        """Raise ValueError with a one-line message for any impossible setting."""
        known = _every_public_suite()
        unknown = [s for s in self.suites if s not in known]
        if unknown or not self.suites:
            raise ValueError(
                f"unknown suite {unknown[0] if unknown else '(none)'!r}; choose from {', '.join(known)}"
            )
        check_positive_ints(
            self, exempt=("seed", "warmup_values", "background_objects"), label=_option
        )
        if self.warmup_values < 0:
            raise ValueError("warmup-values must be >= 0")
        if self.values < 3:
            raise ValueError("values must be at least 3 (medians and CIs need a sample)")
        for n in self.lookup_sizes:
            if not isinstance(n, int) or not 16 <= n <= MAX_LIVE_REQUESTS:
                raise ValueError(
                    f"lookup sizes must be integers in [16, {MAX_LIVE_REQUESTS}], got {n}"
                )
        if self.background_objects < 0:
            raise ValueError("background-objects must be >= 0")
        if not self.scenarios:
            raise ValueError("no scenario selected; see python -m bench scenarios")
        self.cases()  # unknown scenarios, overrides and sweeps, and impossible combinations
        if (
            self.scaling_key not in scenarios.PARAMS
            or scenarios.PARAMS[self.scaling_key].kind is not int
        ):
            raise ValueError(
                f"scaling key {self.scaling_key!r} is not an integer scenario parameter"
            )
        self.scaling_cases()
        from bench.core import reqmodel
        from bench.core.callsites import PATTERNS
        from bench.gcprobe import GC_MODES
        from bench.suites.measure import REGIMES

        if not 0 <= self.aa_twins <= 3:
            raise ValueError(f"aa_twins must be 0 to 3, got {self.aa_twins}")
        if self.lookup_cold_lookups < 1:
            raise ValueError(f"lookup_cold_lookups must be >= 1, got {self.lookup_cold_lookups}")
        bad = [r for r in self.lookup_regimes if r not in REGIMES]
        if bad or not self.lookup_regimes:
            raise ValueError(
                f"unknown lookup regime {bad[0] if bad else '(none)'!r}; choose from {', '.join(REGIMES)}"
            )
        if self.request_class not in ("model", "sglang"):
            raise ValueError(
                f"unknown request class {self.request_class!r}; choose model or sglang"
            )
        if self.request_class == "sglang":
            from bench.core.sglang_req import SglangMissing, import_sglang

            try:
                import_sglang()
            except SglangMissing as exc:
                raise ValueError(str(exc)) from None
        reqmodel.load(self.request_model)  # unknown models: one line naming the known ones

        for p in (*self.patterns, self.scaling_pattern):
            if p not in PATTERNS:
                raise ValueError(f"unknown access pattern {p!r}; choose from {', '.join(PATTERNS)}")
        for m in self.gc_modes:
            if m not in GC_MODES:
                raise ValueError(f"unknown GC mode {m!r}; choose from {', '.join(GC_MODES)}")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RunConfig:
        raw = json.loads(text)
        known = {f.name for f in fields(cls)}
        args: dict[str, Any] = {}
        for k, v in raw.items():
            if k not in known:
                raise ValueError(f"unknown configuration key {k!r}")
            args[k] = tuple(v) if isinstance(v, list) else v
        return cls(**args)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
