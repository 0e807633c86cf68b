"""What a suite says about itself. A suite is a package, bench/suites/<name>/, in two halves:

    __init__.py   the declaration, imported by both halves and the registry:
                    NAME, ORDER, KIND     required: identity, position, the benchmark kind
                    PUBLIC, PAIRED        optional: --suite offers it; strategies share rounds
                    ADAPTIVE              optional: a bench.config.runconfig.Adaptive; under --budget the
                                          runner adds rounds to families short of --precision
                    BUDGET_SHARE          optional: its weight in the run's budget (default 1)
                    FLAGS                 optional: its own `bench run` flags, each a
                                          bench.config.cliargs.SuiteFlag setting an option
                    EXTRAS                optional: the type of its raw extras, a subclass of
                                          bench.runformat.schema.SuiteExtras with its own
                                          fields (with merging() metadata)
                    Options               optional: its options (a bench.config.runconfig.SuiteOptions)
                    SHARED                optional: names of further constants both halves use
    run.py        the measuring half, imported by workers only:
                    run(ctx) -> SuiteOutput   required
                    plan(config) -> [Job]     optional (default: its `workers` processes, each
                                              measuring every strategy interleaved)
    view.py       the reading half, imported by the report only:
                    TITLE, NOTE               required: report heading, one sentence
                    NOISE_KEYS, TABLE_SPLIT, FIGURES, FAMILIES, and the hooks terminal_rows,
                    terminal_extra, report_extra, headline, extra_families: optional

A worker never imports a view (so matplotlib and the report stay out of the heap the gc suite
measures) and the report never imports a run module (so it never imports torch). An upper-case
name a declaration or a view does not know is refused, naming the closest valid one (asv's
trap: a misspelt FIGURE would otherwise be silently ignored).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from bench.base.spelling import unknown_name
from bench.config.cliargs import SuiteFlag
from bench.config.runconfig import Adaptive, RunConfig, SuiteOptions
from bench.runformat.schema import SuiteExtras


def _has(module: str) -> bool:
    """Whether a suite's package holds the module (the gate's suite has no reading half)."""
    return importlib.util.find_spec(module) is not None


class SuiteDeclarationError(TypeError):
    """A suite module breaks its declaration (a bug in the harness, or a misspelt name)."""


@dataclass(frozen=True)
class Job:
    """One worker process: its index (hash seed, rng stream) and its configuration."""

    worker_index: int
    config: RunConfig


def refuse_unknown_names(module: ModuleType, known: set[str], what: str) -> None:
    """SuiteDeclarationError naming an upper-case top-level name that is not `known`."""
    problem = unknown_name(module, known)
    if problem is not None:
        raise SuiteDeclarationError(f"{module.__name__}: {what}: {problem}")


# -- the two halves -----------------------------------------------------------------------------

DECLARATION_NAMES = {
    "NAME",
    "ORDER",
    "KIND",
    "PUBLIC",
    "PAIRED",
    "NOISE_KEYS",
    "SHARED",
    "ADAPTIVE",
    "BUDGET_SHARE",
    "FLAGS",
    "EXTRAS",
}


def _default_plan(options: SuiteOptions | None) -> Callable[[RunConfig], list[Job]]:
    def plan(config: RunConfig) -> list[Job]:
        workers = config.workers if options is None else config.suite(options.SUITE).workers
        return [Job(w, config) for w in range(workers)]

    return plan


@dataclass(frozen=True)
class SuiteSpec:
    """A suite: its declaration, and how to reach its two halves (imported on first use)."""

    name: str
    order: int
    kind: str
    package: str  # the declaring module
    run_module: str  # the measuring half
    view_module: str | None  # the reading half (None: never reported, the gate's suite)
    options: type[SuiteOptions] | None = None
    public: bool = True  # selectable with --suite (the gate's worker suite is not)
    # every strategy measured in the same worker processes, value i of each in the same round
    # (comparisons pair them); False when each strategy has processes of its own (gc)
    paired: bool = True
    # per kind, the parameters that make a noise family (default: all of them); the A/A twin's
    # deviation on a family is the floor its benchmarks are held to (bench/stats/classify.py)
    noise_keys: dict[str, tuple[str, ...]] | None = None
    adaptive: Adaptive | None = None  # further rounds under a budget (None: its plan only)
    budget_share: float = 1.0  # its weight in the run's budget
    flags: tuple[SuiteFlag, ...] = ()  # its own `bench run` flags (bench.config.cliargs)
    # the type of its raw extras (<suite>.extra.json): the shared records, or its own subclass
    extras: type[SuiteExtras] = SuiteExtras

    @classmethod
    def from_package(cls, module: ModuleType, *, run_module: str | None = None) -> SuiteSpec:
        """Read a suite's declaration; SuiteDeclarationError naming what is missing."""
        where = module.__name__
        missing = [n for n in ("NAME", "ORDER", "KIND") if not hasattr(module, n)]
        if missing:
            raise SuiteDeclarationError(
                f"{where}: suite declaration is missing {', '.join(missing)}"
            )
        shared = set(getattr(module, "SHARED", ()))
        refuse_unknown_names(module, DECLARATION_NAMES | shared, "suite declaration")
        options = getattr(module, "Options", None)
        if options is not None and not (
            isinstance(options, type) and issubclass(options, SuiteOptions)
        ):
            raise SuiteDeclarationError(
                f"{where}: Options must subclass bench.config.runconfig.SuiteOptions"
            )
        if options is not None and options.SUITE != module.NAME:
            raise SuiteDeclarationError(f"{where}: Options.SUITE must be {module.NAME!r}")
        adaptive = getattr(module, "ADAPTIVE", None)
        if adaptive is not None and not (
            isinstance(adaptive, Adaptive) and adaptive.quantity in Adaptive.QUANTITIES
        ):
            raise SuiteDeclarationError(
                f"{where}: ADAPTIVE must be a bench.config.runconfig.Adaptive with quantity one of "
                f"{', '.join(Adaptive.QUANTITIES)}"
            )
        flags = tuple(getattr(module, "FLAGS", ()))
        names = {f.name for f in dataclasses.fields(options)} if options is not None else set()
        for flag in flags:
            if not isinstance(flag, SuiteFlag) or flag.field not in names:
                raise SuiteDeclarationError(
                    f"{where}: FLAGS holds bench.config.cliargs.SuiteFlag, each setting a field "
                    f"of its Options (got {flag!r})"
                )
        extras = getattr(module, "EXTRAS", SuiteExtras)
        if not (isinstance(extras, type) and issubclass(extras, SuiteExtras)):
            raise SuiteDeclarationError(
                f"{where}: EXTRAS must subclass bench.runformat.schema.SuiteExtras"
            )
        is_package = hasattr(module, "__path__")
        return cls(
            name=module.NAME,
            order=module.ORDER,
            kind=module.KIND,
            package=where,
            run_module=run_module or (f"{where}.run" if is_package else where),
            view_module=f"{where}.view" if is_package and _has(f"{where}.view") else None,
            options=options,
            public=getattr(module, "PUBLIC", True),
            paired=getattr(module, "PAIRED", True),
            noise_keys=getattr(module, "NOISE_KEYS", None),
            adaptive=adaptive,
            budget_share=float(getattr(module, "BUDGET_SHARE", 1.0)),
            flags=flags,
            extras=extras,
        )

    # -- the measuring half ------------------------------------------------------------------

    def _runner(self) -> ModuleType:
        module = importlib.import_module(self.run_module)
        if not callable(getattr(module, "run", None)):
            raise SuiteDeclarationError(f"{self.run_module}: a suite's run module needs run(ctx)")
        return module

    def run(self, ctx: Any) -> Any:
        """One worker process's measurement: the run module's run(ctx) (a WorkerContext in, a
        SuiteOutput out; bench.measure.context)."""
        return self._runner().run(ctx)

    def plan(self, config: RunConfig) -> list[Job]:
        """The worker processes this suite needs: the run module's plan, or its `workers`
        processes each measuring every strategy interleaved."""
        module = self._runner()
        if callable(getattr(module, "plan", None)):
            jobs: list[Job] = module.plan(config)
            return jobs
        opts = config.options.get(self.name)
        return _default_plan(opts)(config)


def with_values(config: RunConfig, values: int) -> RunConfig:
    """A configuration whose worker takes `values` measured values per benchmark."""
    return replace(config, values=values)
