"""The headline table: one row per strategy, one column per metric a reviewer asks about,
each cell a ratio against the baseline strategy with its 95% CI and significance.

The metrics come from the suites (each spec's `headline` hook, in suite order); the helpers
here build the usual kinds of column: a summary's paired comparison, or a plain ratio of single
aggregates (shown without a test).
"""

from __future__ import annotations

from bench.report import viewspec
from bench.report.load import RunData
from bench.report.model import Cell, Metric
from bench.stats.derive import Summary


def _from_summary(s: Summary, baseline: str) -> Cell:
    return Cell(
        value=s.median,
        ratio=s.ratio,
        ci_low=s.ratio_low,
        ci_high=s.ratio_high,
        significant=None if s.verdict is None else s.verdict in ("faster", "slower"),
        noisy=s.noisy,
        baseline=s.strategy == baseline,
        reason=s.reason,
    )


def summary_metric(
    run: RunData, suite: str, kind: str, *, key: str, title: str, note: str, **match: object
) -> Metric | None:
    """A column from the summaries of one kind whose parameters are exactly `match`."""
    data = run.suite(suite)
    if data is None:
        return None
    want = tuple((k, str(v)) for k, v in match.items())
    rows = [s for s in data.summaries if s.kind == kind and s.bench.params == want]
    if not rows:
        return None
    words = ("smaller", "larger") if rows[0].unit != "second" else ("faster", "slower")
    metric = Metric(key=key, title=title, unit=rows[0].unit, words=words, note=note)
    base = next((s for s in rows if s.strategy == run.baseline), None)
    for s in rows:
        cell = _from_summary(s, run.baseline)
        if s.n < 2 and base is not None and base.median and s.strategy != run.baseline:
            cell = Cell(value=s.median, ratio=s.median / base.median, baseline=False)
        metric.cells[s.strategy] = cell
    return metric


def aggregate_metric(
    run: RunData,
    values: dict[str, float],
    *,
    key: str,
    title: str,
    unit: str,
    words: tuple[str, str],
    note: str,
) -> Metric | None:
    """A column of single aggregates per strategy: plain ratios against the baseline, no test."""
    if not values:
        return None
    metric = Metric(key=key, title=title, unit=unit, words=words, note=note)
    base = values.get(run.baseline)
    for strategy, value in sorted(values.items()):
        is_base = strategy == run.baseline
        ratio = value / base if base and not is_base else None
        metric.cells[strategy] = Cell(value, ratio, baseline=is_base)
    return metric


def headline(run: RunData) -> list[Metric]:
    """The metrics present in this run, in suite order."""
    out: list[Metric] = []
    for view in viewspec.views():
        if run.suite(view.name) is not None:
            out += view.headline(run)
    return out
