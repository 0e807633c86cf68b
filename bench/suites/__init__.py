"""The suites: every module here that defines NAME and run() is one (bench.suites.spec says
what else it may define), plus the gate's worker suite (bench.gate.suite), which `--suite` does
not offer.

    specs()          every suite, in run/report order
    public_names()   what `python -m bench run --suite` accepts
    get(name)        one suite's spec (UsageError naming the known ones otherwise)

Adding a suite is adding one module (and its tests): the runner, the worker, the terminal
table, the loader and the report take it from here.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

from bench.errors import UsageError
from bench.suites.spec import SuiteSpec

# Suites that live with the subsystem they serve rather than in this folder.
_ELSEWHERE = ("bench.gate.suite",)
# Modules here that are shared by the suites, not suites.
_HELPERS = frozenset({"measure", "spec"})


@functools.cache
def specs() -> tuple[SuiteSpec, ...]:
    found: dict[str, SuiteSpec] = {}
    modules = [f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__)]
    for module_name in [*modules, *_ELSEWHERE]:
        if module_name.rsplit(".", 1)[1] in _HELPERS:
            continue
        spec = SuiteSpec.from_module(importlib.import_module(module_name))
        if spec.name in found:
            raise TypeError(f"two suites named {spec.name!r}")
        found[spec.name] = spec
    return tuple(sorted(found.values(), key=lambda s: (s.order, s.name)))


def public_names() -> tuple[str, ...]:
    return tuple(s.name for s in specs() if s.public)


def get(name: str) -> SuiteSpec:
    for s in specs():
        if s.name == name:
            return s
    raise UsageError(f"unknown suite {name!r}; choose from {', '.join(public_names())}")


__all__ = ["SuiteSpec", "get", "public_names", "specs"]
