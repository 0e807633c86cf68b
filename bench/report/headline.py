"""The headline table: one row per strategy, one column per metric a reviewer asks about,
each cell a ratio against the baseline strategy with its 95% CI and significance.

The metrics come from the suites (each spec's `headline` hook, in suite order); the helpers
here build the usual kinds of column: a summary's paired comparison, or a plain ratio of single
aggregates (shown without a test).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench import suites
from bench.report.load import RunData
from bench.stats.derive import Summary


@dataclass(frozen=True)
class Cell:
    value: float  # in `unit` (seconds for times, as bench.report.text.fmt expects)
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    significant: bool | None = None  # a finding under classify(); None: no test here
    noisy: bool = False
    baseline: bool = False
    reason: str = ""  # classify()'s reason, shown on hover / as a footnote


@dataclass(frozen=True)
class Metric:
    key: str
    title: str
    unit: str
    words: tuple[str, str]  # (lower than baseline, higher than baseline)
    note: str
    cells: dict[str, Cell] = field(default_factory=dict)

    def word(self, cell: Cell) -> str:
        """faster/slower/same, or '' where no test applies."""
        if cell.baseline or cell.ratio is None or cell.significant is None:
            return ""
        if not cell.significant:
            return "same"
        return self.words[0] if cell.ratio < 1 else self.words[1]


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
    for spec in suites.specs():
        if run.suite(spec.name) is not None:
            out += spec.headline(run)
    return out
