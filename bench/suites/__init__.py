"""The suites: every package here is one (bench/suites/spec.py says what it declares); the
gate's worker suite (bench/suites/gate/) is one too, which `--suite` does not offer.

    specs()              every suite, in report order
    run_order(names)     the order a run measures them in: fixed plans first
    public_names()       what `python -m bench run --suite` accepts
    get(name)            one suite's spec (UsageError naming the known ones otherwise)
    option_types()       each suite's options class, by suite
    default_config()     the run configuration with every suite's default options
    config_from_json()   a configuration back from its flat JSON

Adding a suite is adding one package (and its tests): its options join the configuration, the
runner plans its workers, the worker runs it, and the report, terminal table and verdict read it
through its view (bench/report/viewspec.py reads the view modules).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bench.base.errors import UsageError

if TYPE_CHECKING:
    from bench.config.runconfig import RunConfig, SuiteOptions
    from bench.suites.spec import SuiteSpec


@functools.cache
def specs() -> tuple[SuiteSpec, ...]:
    from bench.suites.spec import SuiteSpec  # lazy: tests/test_layers.py LIGHT_IMPORTERS

    found: dict[str, SuiteSpec] = {}
    packages = [f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__) if m.ispkg]
    for module_name in packages:
        spec = SuiteSpec.from_package(importlib.import_module(module_name))
        if spec.name in found:
            raise TypeError(f"two suites named {spec.name!r}")
        found[spec.name] = spec
    return tuple(sorted(found.values(), key=lambda s: (s.order, s.name)))


def run_order(names: Iterable[str]) -> list[str]:
    """The order a run measures `names` in: the suites on a fixed plan first (no further
    rounds: their cost is what this machine makes it), then the adaptive ones, which share
    what is left of the budget (bench.orchestration.adaptive), each group in report order.
    With the fixed plans last, a budget reserved their time from a share, and on a slower hour
    they overran it: the gc suite took 60.3 s against its 54.2 and the scaling suite 15.6 s
    against 2.1, and that run lasted 353 s against the 6 minutes promised (2026-12-06)."""
    wanted = list(names)
    ranked = {s.name: (s.adaptive is not None, i) for i, s in enumerate(specs())}
    return sorted(wanted, key=lambda n: ranked.get(n, (True, len(ranked))))


def public_names() -> tuple[str, ...]:
    return tuple(s.name for s in specs() if s.public)


def get(name: str) -> SuiteSpec:
    for s in specs():
        if s.name == name:
            return s
    raise UsageError(f"unknown suite {name!r}; choose from {', '.join(public_names())}")


def option_types() -> dict[str, type[SuiteOptions]]:
    return {s.name: s.options for s in specs() if s.options is not None}


def default_config(**changes: Any) -> RunConfig:
    """Every public suite, each with its default options; `changes` to the shared fields."""
    from bench.config.runconfig import RunConfig  # lazy: tests/test_layers.py LIGHT_IMPORTERS

    config = RunConfig(suites=public_names(), options={n: t() for n, t in option_types().items()})
    return replace(config, **changes) if changes else config


def config_from_json(text: str, *, strict: bool = True) -> RunConfig:
    """A configuration from its flat JSON (strict=False: a run folder of another version, whose
    unknown keys are ignored)."""
    from bench.config.runconfig import RunConfig  # lazy: tests/test_layers.py LIGHT_IMPORTERS

    return RunConfig.from_json(text, option_types(), strict=strict)


__all__ = [
    "config_from_json",
    "default_config",
    "get",
    "option_types",
    "public_names",
    "specs",
]
