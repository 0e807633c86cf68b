"""Run configuration: one frozen dataclass, validated once, passed to worker processes as JSON.

`RunConfig` holds what every suite shares (strategies, scenarios, repetition, the request class)
and, in `options`, one frozen options object per suite, declared by the suite itself
(`Options` in bench/suites/<name>/__init__.py, a subclass of `SuiteOptions` below). This module
knows no suite: the suite registry composes the default configuration
(`bench.suites.default_config()`) and decodes one (`bench.suites.config_from_json()`).

On disk and between processes the configuration is one flat JSON object: the shared fields, then
every suite option under its flat key (`lookup_sizes`, `step_workers`, `steps_per_value`, ...).
The keys are the ones this harness has always written, so run folders of earlier versions read
back and gates speak to older base trees unchanged (bench/gate/protocol.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar

from bench.base.timing import resolve_device
from bench.core import reqmodel, scenarios
from bench.core.callsites import PATTERNS
from bench.core.reqmodel import DEFAULT_MODEL
from bench.core.scenarios import DEFAULT_SET as DEFAULT_SCENARIOS
from bench.core.scenarios import Scenario
from bench.core.sglang_req import SglangMissing, import_sglang
from bench.core.workload import RequestSource
from strategies import resolve_run

if TYPE_CHECKING:
    import torch

    from strategies import Strategy

# Shared keys that set how much is measured, not what: a gate's base tree that lacks one
# measures the same thing without it (bench/gate/protocol.py). Suite options add their own
# (SuiteOptions.REPETITION); RunConfig.repetition_keys() has them all.
REPETITION_KEYS = frozenset(
    {
        "suites",
        "strategies",
        "external",
        "baseline",
        "workers",
        "warmup_values",
        "values",
        "budget_s",
        "precision_pct",
        "only_families",
    }
)
# Keys whose default is not what a tree without the key measured: that value, per key. A gate
# compares with such a base only when the candidate asks for this value. (A new key whose
# default keeps the old behaviour needs no entry.)
ABSENT_MEANS: dict[str, Any] = {
    "aa_twins": 0,
    "lookup_miss_batches": 1,
    "step_warm_measured_ms": 0,
}


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


# The memory regimes a step figure may be timed in (bench.measure.regime says what each is).
STEP_REGIMES: tuple[str, ...] = ("warm", "cold")


@dataclass(frozen=True)
class Adaptive:
    """How a suite's measurement adapts under a budget (bench.orchestration.adaptive): which quantity of a
    family must reach the run's precision, and which benchmark parameters vary within a
    family (a further round measures whole families: the unit a worker can build alone).

    quantity  "net_cost": the baseline's cost per iteration net of the reference strategy;
              "ratio": every strategy's ratio to the baseline (the family is as precise as its
              least precise ratio)
    precision_pct  the half-width its families are measured to when the run names none
              (RunConfig.precision_pct None: no --precision, no --quick)
    further_values  the values a further round's process takes (None: the policy's own,
              bench.orchestration.adaptive.FURTHER_VALUES, or the plan's if more)
    """

    quantity: str
    within: tuple[str, ...]
    precision_pct: float = 15.0
    further_values: int | None = None

    QUANTITIES = ("net_cost", "ratio")


def _option(name: str) -> str:
    return name.replace("_", "-")


@dataclass(frozen=True, kw_only=True)
class SuiteOptions:
    """A suite's own options. A subclass declares its fields (each a positive int unless
    named in POSITIVE_EXEMPT) and, as class variables:

        SUITE        the suite's NAME (prefix of the flat keys)
        KEYS         field -> flat key where it is not f"{SUITE}_{field}"
        QUICK        field -> value in the quick run (--quick)
        IN_QUICK     whether the quick set runs the suite (--suite still selects it)
        REPETITION   fields that set how much is measured, not what

    `workers` is the worker processes the suite plans; a suite with a `values` field takes that
    many measured values per worker instead of the run's `values`. --workers and --values set
    them in every suite that has them.
    """

    SUITE: ClassVar[str] = ""
    KEYS: ClassVar[Mapping[str, str]] = {}
    QUICK: ClassVar[Mapping[str, Any]] = {}
    IN_QUICK: ClassVar[bool] = True
    REPETITION: ClassVar[frozenset[str]] = frozenset({"workers"})
    POSITIVE_EXEMPT: ClassVar[tuple[str, ...]] = ()

    workers: int = 1

    @classmethod
    def flat_key(cls, name: str) -> str:
        return cls.KEYS.get(name, f"{cls.SUITE}_{name}")

    @classmethod
    def flat_keys(cls) -> dict[str, str]:
        """field -> flat key, every field."""
        return {f.name: cls.flat_key(f.name) for f in fields(cls)}

    def to_flat(self) -> dict[str, Any]:
        return {self.flat_key(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_flat(cls, raw: Mapping[str, Any]) -> SuiteOptions:
        args: dict[str, Any] = {}
        for name, key in cls.flat_keys().items():
            if key in raw:
                value = raw[key]
                args[name] = tuple(value) if isinstance(value, list) else value
        return cls(**args)

    def quick(self) -> SuiteOptions:
        return replace(self, **self.QUICK)

    def measured_values(self, config: RunConfig) -> int:
        """Measured values per worker: this suite's own `values`, else the run's."""
        own = getattr(self, "values", None)
        return config.values if own is None else int(own)

    def cases(self, config: RunConfig) -> list[tuple[Scenario, dict[str, str]]]:
        """Scheduler cases this suite measures beyond the run's own (RunConfig.cases())."""
        return []

    def validate(self, config: RunConfig) -> None:
        """ValueError (one line) for an impossible setting; the base checks positive ints."""
        check_positive_ints(
            self,
            exempt=self.POSITIVE_EXEMPT,
            label=lambda name: _option(self.flat_key(name)),
        )
        if self.measured_values(config) < 3:
            raise ValueError(f"{_option(self.flat_key('values'))} must be at least 3")


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything a run needs; `quick()` gives the CI-sized variant. Build one with
    bench.suites.default_config(): RunConfig() alone has no suite options."""

    suites: tuple[str, ...] = ()
    strategies: tuple[str, ...] | None = None  # None: every registered strategy
    external: tuple[str, ...] = ()
    baseline: str = "pr652"  # the code under review: ratios are "x times the PR as written"
    # A/A twins of the baseline measured in every suite (<baseline>.aa, .aa2, ...): verbatim
    # copies whose difference from the baseline is the run's noise floor (0: none, --no-aa)
    aa_twins: int = 1
    device: str = "auto"
    seed: int = 0
    # pyperf-style repetition: fresh worker processes, each with warm-up and measured values
    # (a suite's own options say how many processes it plans, and may override the values).
    workers: int = 3
    warmup_values: int = 1
    values: int = 6
    # Adaptive measurement (bench.orchestration.adaptive): the suites' wall-clock budget in seconds (None:
    # the fixed plan, each suite its `workers` processes; with a budget those are the minimum)
    # and the 95% CI half-width each family's reported quantity is measured to, in percent of
    # it (None: each suite's own, Adaptive.precision_pct). Further rounds are further worker
    # processes measuring only the families short of it.
    budget_s: float | None = None
    precision_pct: float | None = None
    # The families one worker process measures (set by the adaptive runner for its further
    # rounds; a family is a benchmark's parameters but the suite's ADAPTIVE.within); empty: all.
    only_families: tuple[str, ...] = ()
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
    extra: dict[str, Any] = field(default_factory=dict)
    # Every suite's options, by suite name (not a flat key: to_json flattens them).
    options: Mapping[str, SuiteOptions] = field(default_factory=dict)

    # -- the suites' options ------------------------------------------------------------------

    def suite(self, name: str) -> Any:
        """One suite's options (KeyError naming the suites known)."""
        try:
            return self.options[name]
        except KeyError:
            raise KeyError(
                f"no options for suite {name!r}; known: {', '.join(self.options)}"
            ) from None

    def with_suite(self, name: str, **changes: Any) -> RunConfig:
        return replace(self, options={**self.options, name: replace(self.suite(name), **changes)})

    def for_every_suite(self, **changes: Any) -> RunConfig:
        """The same change in every suite's options that has the field (--workers, --values)."""
        names = {f.name for o in self.options.values() for f in fields(o)}
        unknown = set(changes) - names
        if unknown:
            raise ValueError(f"no suite has the option {sorted(unknown)[0]!r}")
        return replace(
            self,
            options={
                k: replace(o, **{c: v for c, v in changes.items() if hasattr(o, c)})
                for k, o in self.options.items()
            },
        )

    def quick(self) -> RunConfig:
        """The small CI-sized set: the suites IN_QUICK, each with its QUICK options."""
        quick = replace(
            self,
            suites=tuple(s for s in self.suites if self.options[s].IN_QUICK) or self.suites,
            workers=1,
            values=8,
            scenarios=("prefill-dspark", "decode-dspark"),
            options={k: o.quick() for k, o in self.options.items()},
        )
        return quick

    # -- what a run measures ------------------------------------------------------------------

    @property
    def sweep(self) -> tuple[str, tuple[Any, ...]] | None:
        return (self.sweep_key, self.sweep_values) if self.sweep_key else None

    @property
    def requests(self) -> RequestSource:
        return RequestSource(model=self.request_model, real=self.request_class == "sglang")

    def measures(self, family: str) -> bool:
        """Whether this configuration's workers measure a family (only_families)."""
        return not self.only_families or family in self.only_families

    def cases(self) -> list[tuple[Scenario, dict[str, str]]]:
        """Every scheduler case of the step and gc suites: (scenario, extra name params)."""
        return scenarios.resolve(self.scenarios, self.scenario_overrides, self.sweep)

    def subjects(self) -> tuple[torch.device, list[Strategy]]:
        """The device and the strategies this run measures (the baseline's A/A twins
        included): the runner records them and every worker resolves them the same way."""

        strategies = resolve_run(
            self.strategies, external=self.external, baseline=self.baseline, twins=self.aa_twins
        )
        return resolve_device(self.device), strategies

    def all_cases(self) -> list[tuple[Scenario, dict[str, str]]]:
        """The run's cases and every suite's own (the scaling suite's sizes)."""
        out = list(self.cases())
        for name in self.suites:
            if name in self.options:
                out += self.options[name].cases(self)
        return out

    def validate(self) -> None:
        """Raise ValueError with a one-line message for any impossible setting."""
        unknown = [s for s in self.suites if s not in self.options]
        if unknown or not self.suites:
            raise ValueError(
                f"unknown suite {unknown[0] if unknown else '(none)'!r}; choose from "
                f"{', '.join(self.options)}"
            )
        check_positive_ints(self, exempt=("seed", "warmup_values", "aa_twins"), label=_option)
        if self.warmup_values < 0:
            raise ValueError("warmup-values must be >= 0")
        if self.values < 3:
            raise ValueError("values must be at least 3 (medians and CIs need a sample)")
        if self.budget_s is not None and not (
            isinstance(self.budget_s, (int, float)) and self.budget_s > 0
        ):
            raise ValueError(f"budget must be a positive duration, got {self.budget_s!r}")
        if self.precision_pct is not None and (
            not isinstance(self.precision_pct, (int, float)) or not 0 < self.precision_pct <= 100
        ):
            raise ValueError(f"precision must be in (0, 100] percent, got {self.precision_pct!r}")
        if not self.scenarios:
            raise ValueError("no scenario selected; see python -m bench scenarios")
        self.cases()  # unknown scenarios, overrides and sweeps, and impossible combinations

        if not isinstance(self.aa_twins, int) or not 0 <= self.aa_twins <= 3:
            raise ValueError(f"aa_twins must be 0 to 3, got {self.aa_twins}")
        if self.request_class not in ("model", "sglang"):
            raise ValueError(
                f"unknown request class {self.request_class!r}; choose model or sglang"
            )
        if self.request_class == "sglang":
            try:
                import_sglang()
            except SglangMissing as exc:
                raise ValueError(str(exc)) from None
        reqmodel.load(self.request_model)  # unknown models: one line naming the known ones
        for p in self.patterns:
            if p not in PATTERNS:
                raise ValueError(f"unknown access pattern {p!r}; choose from {', '.join(PATTERNS)}")
        for name in self.suites:
            self.options[name].validate(self)

    # -- on disk ------------------------------------------------------------------------------

    def repetition_keys(self) -> frozenset[str]:
        """Every flat key that sets how much is measured, not what (the gate's protocol)."""
        keys = set(REPETITION_KEYS)
        for o in self.options.values():
            keys.update(o.flat_key(f) for f in o.REPETITION)
        return frozenset(keys)

    def flat(self) -> dict[str, Any]:
        """The flat form: shared fields, then every suite option under its flat key."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "options"}
        for o in self.options.values():
            out.update(o.to_flat())
        return json.loads(json.dumps(out))  # tuples as lists, as on disk

    def value(self, key: str) -> Any:
        """One configuration value by its flat key (a report's axis order names one)."""
        return self.flat().get(key)

    def to_json(self) -> str:
        return json.dumps(self.flat(), sort_keys=True)

    @classmethod
    def from_flat(
        cls,
        raw: Mapping[str, Any],
        option_types: Mapping[str, type[SuiteOptions]],
        *,
        strict: bool = True,
    ) -> RunConfig:
        """From the flat form. strict: an unknown key is a ValueError naming it (a run folder
        written by another version is read with strict=False: unknown keys are ignored)."""
        known = {f.name for f in fields(cls)} - {"options"}
        owned = {k for t in option_types.values() for k in t.flat_keys().values()}
        unknown = sorted(set(raw) - known - owned)
        if unknown and strict:
            raise ValueError(f"unknown configuration key {unknown[0]!r}")
        args: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in raw.items() if k in known
        }
        options = {name: t.from_flat(raw) for name, t in option_types.items()}
        return cls(**args, options=options)

    @classmethod
    def from_json(
        cls, text: str, option_types: Mapping[str, type[SuiteOptions]], *, strict: bool = True
    ) -> RunConfig:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("a configuration is a JSON object of configuration keys")
        return cls.from_flat(raw, option_types, strict=strict)

    def as_dict(self) -> dict[str, Any]:
        return self.flat()
