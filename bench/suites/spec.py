"""What a suite says about itself: one SuiteSpec per suite module.

A suite module is found the way strategies are: it defines module-level names, which the
registry (bench.suites) reads into a SuiteSpec and validates, naming the module and the missing
piece when one is absent.

    NAME, TITLE, NOTE, ORDER      required: identity, report heading, one sentence, position
    run(ctx) -> SuiteOutput       required: what one worker process measures
    plan(config) -> [Job]         optional: worker processes (default: config.workers, each
                                  measuring every strategy interleaved)
    PUBLIC, PAIRED, NOISE_KEYS, TABLE_SPLIT, FIGURES, FAMILIES, and the read-side hooks terminal_rows,
    terminal_extra, report_extra, headline, extra_families: optional (see SuiteSpec)

The runner, the worker, the terminal table, the loader and the report iterate specs; nothing
outside a suite's module branches on its name. A spec carries

  worker side   run(ctx) -> SuiteOutput, executed in a fresh worker process, and plan(config):
                which worker processes to start, each with which configuration
  read side     how its benchmarks are tabled (table_split), which rows the terminal shows,
                extra terminal lines and report blocks from its raw data, its figures, its
                headline metrics and its verdict families

Read-side hooks receive the loaded data (bench.report.load.SuiteData / RunData) and import the
report's helpers inside their bodies, so importing a suite module stays cheap and torch-free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any

from bench.config import RunConfig

if TYPE_CHECKING:
    from bench.report.headline import Metric
    from bench.report.load import RunData, SuiteData
    from bench.report.markup import Html
    from bench.report.verdict import Family
    from bench.stats.derive import Summary
    from bench.suites.measure import SuiteOutput, WorkerContext


@dataclass(frozen=True)
class Job:
    """One worker process: its index (hash seed, rng stream) and its configuration."""

    worker_index: int
    config: RunConfig


@dataclass(frozen=True)
class FamilySpec:
    """A verdict family: strategies ranked on the benchmarks of one kind, one ranking per value
    of `axis` (None: a single ranking). `group` splits the kind into several families, one per
    value (lookup: one per op); `{group}` in key and title is replaced by that value."""

    key: str
    title: str
    kind: str
    axis: str | None  # a parameter; "@key": the parameter the run configuration's key names
    axis_label: str = ""  # what varies between rankings, in words ("lookup size")
    axis_config: str | None = None  # a run-configuration list giving the axis's order
    group: str | None = None
    group_config: str | None = None  # a run-configuration list giving the groups' order
    match: tuple[tuple[str, str], ...] = ()  # only benchmarks with these parameters
    has_test: bool = True  # entries carry significance against the baseline
    # Open in the HTML report and summarised in summary.md (the PR text): all or none of the
    # family's groups (a bool), or the group values that are (a tuple).
    featured: bool | tuple[str, ...] = False


@dataclass(frozen=True)
class FigureSpec:
    """A report figure: `build(run, styles)` returns a matplotlib Figure, or None without data."""

    name: str  # file stem under plots/
    title: str
    build: Callable[[RunData, dict[str, Any]], Any]


def _no_rows(summaries: list[Summary]) -> list[Summary]:
    return summaries


def _nothing(_data: Any) -> list[Any]:
    return []


# Module-level functions a suite module may define, picked up by name (as asv finds `time_*`).
HOOKS = (
    "run",
    "plan",
    "terminal_rows",
    "terminal_extra",
    "report_extra",
    "headline",
    "extra_families",
)


# Module constants and the spec fields they fill.
REQUIRED = {"NAME": "name", "TITLE": "title", "NOTE": "note", "ORDER": "order"}
OPTIONAL = {
    "PUBLIC": "public",
    "PAIRED": "paired",
    "NOISE_KEYS": "noise_keys",
    "TABLE_SPLIT": "table_split",
    "FIGURES": "figures",
    "FAMILIES": "families",
}


def _default_plan(config: RunConfig) -> list[Job]:
    return [Job(w, config) for w in range(config.workers)]


@dataclass(frozen=True)
class SuiteSpec:
    name: str
    title: str  # report section heading
    note: str  # one sentence under it: what a value is
    order: int  # position in runs and reports
    run: Callable[[WorkerContext], SuiteOutput]
    plan: Callable[[RunConfig], list[Job]] = _default_plan  # config.workers, all strategies
    public: bool = True  # selectable with --suite (the gate's worker suite is not)
    # every strategy measured in the same worker processes, value i of each in the same round
    # (comparisons pair them); False when each strategy has processes of its own (gc)
    paired: bool = True
    # per kind, the parameters that make a noise family (default: all of them); the A/A twin's
    # deviation on a family is the floor its benchmarks are held to (bench/stats/classify.py)
    noise_keys: dict[str, tuple[str, ...]] | None = None
    # a parameter (or several) giving one report table per value (per combination)
    table_split: str | tuple[str, ...] | None = None
    terminal_rows: Callable[[list[Summary]], list[Summary]] = _no_rows
    terminal_extra: Callable[[SuiteData], list[str]] = _nothing
    report_extra: Callable[[SuiteData], list[Html]] = _nothing
    figures: tuple[FigureSpec, ...] = ()
    headline: Callable[[RunData], list[Metric]] = _nothing
    families: tuple[FamilySpec, ...] = ()
    extra_families: Callable[[RunData], list[Family]] = _nothing

    @classmethod
    def from_module(cls, module: ModuleType) -> SuiteSpec:
        """Read a suite module's names into a spec; TypeError naming what is missing."""
        where = module.__name__
        missing = [n for n in REQUIRED if not hasattr(module, n)]
        if not callable(getattr(module, "run", None)):
            missing.append("run()")
        if missing:
            raise TypeError(f"{where}: suite module is missing {', '.join(missing)}")
        fields: dict[str, Any] = {
            field_name: getattr(module, constant)
            for constant, field_name in {**REQUIRED, **OPTIONAL}.items()
            if hasattr(module, constant)
        }
        hooks = {h: getattr(module, h) for h in HOOKS if callable(getattr(module, h, None))}
        return cls(**fields, **hooks)


def with_values(config: RunConfig, values: int) -> RunConfig:
    """A configuration whose worker takes `values` measured values per benchmark."""
    return replace(config, values=values)
