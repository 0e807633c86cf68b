"""A suite's reading half as the report sees it (bench/suites/spec.py describes the package):
the view module's names read into a SuiteView, its families and figures, and the registry of
views. Read side only: nothing here is imported by a worker.

    TITLE, NOTE               required: report heading, one sentence
    NOISE_KEYS, TABLE_SPLIT, FIGURES, FAMILIES, and the hooks terminal_rows, terminal_extra,
    report_extra, headline, extra_families: optional

An upper-case name a view does not know is refused, naming the closest valid one.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench import suites
from bench.suites.spec import SuiteDeclarationError, SuiteSpec, refuse_unknown_names

if TYPE_CHECKING:
    from bench.report.load import RunData, SuiteData
    from bench.report.markup import Html
    from bench.report.model import Family, Metric
    from bench.stats.derive import Summary


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
    axis_config: str | None = None  # a run-configuration key giving the axis's order
    group: str | None = None
    group_config: str | None = None  # a run-configuration key giving the groups' order
    match: tuple[tuple[str, str], ...] = ()  # only benchmarks with these parameters
    exclude: tuple[tuple[str, str], ...] = ()  # and none with any of these
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


def _no_lines(_data: Any, _names: Any) -> list[Any]:
    return []


VIEW_NAMES = {"TITLE", "NOTE", "TABLE_SPLIT", "FIGURES", "FAMILIES"}
VIEW_HOOKS = (
    "terminal_rows",
    "terminal_extra",
    "report_extra",
    "headline",
    "extra_families",
    "summary_lines",
    "summary_verdict",
)


@dataclass(frozen=True)
class SuiteView:
    """The reading half: how the report, the terminal table and the verdict show a suite."""

    name: str
    title: str  # report section heading
    note: str  # one sentence under it: what a value is
    paired: bool = True
    # a parameter (or several) giving one report table per value (per combination)
    table_split: str | tuple[str, ...] | None = None
    terminal_rows: Callable[[list[Summary]], list[Summary]] = _no_rows
    terminal_extra: Callable[[SuiteData], list[str]] = _nothing
    report_extra: Callable[[SuiteData], list[Html]] = _nothing
    figures: tuple[FigureSpec, ...] = ()
    headline: Callable[[RunData], list[Metric]] = _nothing
    families: tuple[FamilySpec, ...] = ()
    extra_families: Callable[[RunData], list[Family]] = _nothing
    # lines for the PR section (bench.report.pr): a suite's figures for the given strategies
    # (baseline, candidate) in a maintainer's units, one line each
    summary_lines: Callable[[SuiteData, list[str]], list[str]] = _no_lines
    # at most one sentence of the PR section's verdict, for the same strategies
    summary_verdict: Callable[[SuiteData, list[str]], list[str]] = _no_lines


def _read_view(spec: SuiteSpec) -> SuiteView:
    """A suite's view module read into a SuiteView (SuiteDeclarationError naming the gap)."""
    if spec.view_module is None:
        return SuiteView(spec.name, spec.name, "", paired=spec.paired)
    module = importlib.import_module(spec.view_module)
    refuse_unknown_names(module, VIEW_NAMES, "suite view")
    missing = [n for n in ("TITLE", "NOTE") if not hasattr(module, n)]
    if missing:
        raise SuiteDeclarationError(
            f"{spec.view_module}: suite view is missing {', '.join(missing)}"
        )
    fields: dict[str, Any] = {
        n.lower(): getattr(module, n) for n in VIEW_NAMES if hasattr(module, n)
    }
    hooks = {h: getattr(module, h) for h in VIEW_HOOKS if callable(getattr(module, h, None))}
    return SuiteView(name=spec.name, paired=spec.paired, **fields, **hooks)


@functools.cache
def view(name: str) -> SuiteView | None:
    """A suite's reading half, or None for a suite this version does not know."""
    spec = next((s for s in suites.specs() if s.name == name), None)
    return None if spec is None else _read_view(spec)


def views() -> tuple[SuiteView, ...]:
    """Every reported suite's reading half, in report order."""
    return tuple(_read_view(s) for s in suites.specs() if s.view_module is not None)
