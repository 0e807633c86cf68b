"""The step suite's reading half (bench.suites.spec): per-step percentiles, per_field / cached
ratios, the latency distribution, headline columns and verdict families."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.base.names import BenchName, CaseKey
from bench.report.markup import num, table, tag, td
from bench.report.text import fmt, fmt_p, fmt_ratio
from bench.report.viewspec import FamilySpec, FigureSpec
from bench.runformat.schema import StepSeries
from bench.stats import quantile_ratio_ci, values_for_quantile
from bench.stats.cases import ordered_cases
from bench.stats.derive import param_ratios
from bench.stats.robust import TAIL_MIN_BEYOND
from bench.suites.step import KIND

if TYPE_CHECKING:
    from bench.config.runconfig import RunConfig
    from bench.report.headline import Metric
    from bench.report.load import RunData, SuiteData
    from bench.report.markup import Html

TITLE = "Scheduler step"
NOTE = "Median time of one synthetic scheduler step, per access pattern."


def _pattern_ratios(data: SuiteData) -> dict[str, Any]:
    """per_field / cached for every strategy and case, keyed by the name without the pattern."""

    return param_ratios(data.rounds, kind=KIND, key="pattern", num="per_field", den="cached")


def _who(label: str) -> str:
    """'step/pr652/scenario=decode-dspark' -> 'pr652 decode-dspark' (plus swept values)."""
    bench = BenchName.parse(label)
    return " ".join([bench.strategy, *(v for _k, v in bench.params)])


def terminal_extra(data: SuiteData) -> list[str]:
    from bench.report.scenarios.prose import cost_lines

    lines = cost_lines(data)
    ratios = _pattern_ratios(data)
    if ratios:
        lines.append("\n   per_field / cached step latency (same strategy and scenario)")
        for label, c in sorted(ratios.items()):
            sig = "*" if c.significant else " "
            lines.append(
                f"   {_who(label):<40} {c.ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}] {sig}"
            )
    return lines


def report_extra(data: SuiteData) -> list[Html]:

    out = []
    if data.percentiles:

        def tail(value_ns: float | None) -> Html:
            return num(_TOO_FEW if value_ns is None else fmt(value_ns / 1e9))

        rows = [
            (
                name,
                num(fmt(p.p50_ns / 1e9)),
                tail(p.p99_ns),
                tail(p.p999_ns),
                num(fmt(p.max_ns / 1e9)),
                num(f"{p.steps_per_s:,.0f}"),
                num(f"{p.spikes} ({p.spikes_with_gc})"),
                num(p.steps),
            )
            for name, p in data.percentiles.items()
        ]
        head = ("benchmark", "p50", "p99", "p99.9", "max", "steps/s", "spikes (with GC)", "steps")
        out += [
            tag("h3", "Per-step latency"),
            table(head, rows),
            tag("p", _tail_rule(), class_="note"),
        ]
    ratios = _pattern_ratios(data)
    if ratios:
        ratio_rows = [
            (
                td(tag("code", _who(label))),
                num(fmt_ratio(c.ratio, c.ci_low, c.ci_high)),
                num(fmt_p(c.p_value)),
                "yes" if c.significant else "no",
            )
            for label, c in sorted(ratios.items())
        ]
        out += [
            tag("h3", "per_field / cached step time (same strategy and scenario)"),
            table(("strategy and scenario", "ratio [95% CI]", "p", "significant"), ratio_rows),
        ]
    return out


def _cases(names: Any, config: RunConfig) -> list[CaseKey]:

    return ordered_cases((BenchName.parse(n).case for n in names), config.scenarios)


def cdf_figure(run: RunData, st: dict[str, Any]) -> Any:
    """Per scenario case, the distribution of per-step latency (the PR's per_field pattern)."""
    import matplotlib.pyplot as plt

    from bench.report.plots import label, legend, plain_log_ticks

    data = run.suite("step")
    if data is None:
        return None
    series = {n: s for n, s in data.extras.steps.items() if s.host_ns}
    cases = _cases(series, run.config)
    if not cases:
        return None
    cols = min(len(cases), 4)
    rows_n = -(-len(cases) // cols)
    fig, axes = plt.subplots(
        rows_n, cols, figsize=(4.6 * cols + 2, 3.8 * rows_n), squeeze=False, layout="constrained"
    )
    names: list[str] = []
    for ax, case in zip(axes.flat, cases, strict=False):
        for strategy in st:
            pattern = run.pattern_of(strategy)
            bench = str(BenchName.of(KIND, strategy, **case.as_params(), pattern=pattern))
            vals = sorted(v / 1e3 for v in series.get(bench, _EMPTY).host_ns if v > 0)
            if not vals:
                continue
            if strategy not in names:
                names.append(strategy)
            ys = [(i + 1) / len(vals) for i in range(len(vals))]
            ax.step(
                vals,
                ys,
                where="post",
                color=st[strategy].color,
                linestyle=st[strategy].linestyle,
                marker=st[strategy].marker,
                markevery=max(1, len(vals) // 5),
                markersize=4,
                linewidth=1.2,
            )
        ax.axhline(0.99, color="grey", linewidth=0.6, linestyle=":")
        ax.set_xscale("log")
        plain_log_ticks(ax.xaxis)
        ax.set_xlabel("iteration latency (µs, host)")
        ax.set_title(label(case.short))
    for ax in axes.flat[len(cases) :]:
        ax.set_visible(False)
    axes[0][0].set_ylabel("fraction of iterations ≤ x")
    legend(fig, names, st, run.baseline)
    fig.suptitle("Per-iteration latency per scenario (per_field; revisions as written)")
    return fig


def _p99_metric(run: RunData, case: CaseKey) -> Metric | None:
    from bench.report.headline import Cell, Metric

    data = run.suite("step")
    if data is None:
        return None
    short = case.short
    pattern = run.pattern_of(run.baseline)
    metric = Metric(
        key=f"p99_{short}",
        title=f"p99 iteration {short} ({pattern})",
        unit="second",
        words=("faster", "slower"),
        note="99th percentile of per-iteration host latency; CI: bootstrap over recorded steps",
    )
    base_name = str(BenchName.of(KIND, run.baseline, **case.as_params(), pattern=pattern))
    base = data.percentiles.get(base_name)
    if base is None or base.p99_ns is None:
        return None  # too few iterations for a p99 (_tail_rule): no ratio to show
    base_raw = [float(v) for v in data.extras.steps.get(base_name, _EMPTY).host_ns]
    for name, p in data.percentiles.items():
        bench = BenchName.parse(name)
        if bench.case != case or bench.get("pattern") != pattern or p.p99_ns is None:
            continue
        value = p.p99_ns / 1e9
        if bench.strategy == run.baseline or base is None or not base.p99_ns:
            metric.cells[bench.strategy] = Cell(value, baseline=bench.strategy == run.baseline)
            continue
        mine = [float(v) for v in data.extras.steps[name].host_ns]
        ratio = p.p99_ns / base.p99_ns
        if len(mine) >= 2 and len(base_raw) >= 2:
            lo, hi = quantile_ratio_ci(mine, base_raw, 0.99)
            metric.cells[bench.strategy] = Cell(value, ratio, lo, hi, significant=not lo <= 1 <= hi)
        else:
            metric.cells[bench.strategy] = Cell(value, ratio)
    return metric if metric.cells else None


def headline(run: RunData) -> list[Metric]:
    """One column per scenario case: the iteration time under the PR's per_field pattern."""
    from bench.report.headline import summary_metric

    data = run.suite("step")
    if data is None:
        return []
    cases = _cases(data.values, run.config)
    pattern = run.pattern_of(run.baseline)
    metrics = []
    for case in cases:
        short = case.short
        metrics.append(
            summary_metric(
                run,
                "step",
                KIND,
                key=f"step_{short}",
                title=f"iteration {short}",
                note=f"median scheduler iteration in {short} ({pattern}, the baseline's pattern), paired per round",
                **case.as_params(),
                pattern=pattern,
            )
        )
    if cases:
        metrics.append(_p99_metric(run, cases[0]))
    return [m for m in metrics if m is not None]


_EMPTY = StepSeries()  # read-only stand-in for a benchmark without per-step data
_TOO_FEW = "too few iterations"


def _tail_rule() -> str:

    return (
        f"A tail percentile is shown only where at least {TAIL_MIN_BEYOND} recorded iterations "
        f"lie beyond it: p99 from {values_for_quantile(0.99):,} iterations, p99.9 from "
        f"{values_for_quantile(0.999):,}; with fewer it is one of the few slowest iterations "
        f"and its interval says nothing ({_TOO_FEW})."
    )


def sweep_figure(run: RunData, st: dict[str, Any]) -> Any:
    from bench.report.scenarios.figure import sweep_figure as build

    return build(run, st)


FIGURES = (
    FigureSpec("step_latency_cdf", "Per-iteration latency distribution", cdf_figure),
    FigureSpec("sweep_cost", "Cost per iteration across the sweep", sweep_figure),
)
# Both families rank strategies per access pattern, one family per scenario case.
_BY_PATTERN: dict[str, Any] = {
    "axis": "pattern",
    "axis_label": "access pattern",
    "axis_config": "patterns",
    "group": "scenario",
    "group_config": "scenarios",
}
FAMILIES = (
    FamilySpec(
        "step_{group}",
        "scheduler iteration time, {group}",
        KIND,
        exclude=(("regime", "cold"),),
        featured=True,
        **_BY_PATTERN,
    ),
    FamilySpec(
        "step_{group}_cold",
        "scheduler iteration time, {group}, requests evicted (cold regime)",
        KIND,
        match=(("regime", "cold"),),
        **_BY_PATTERN,
    ),
)
