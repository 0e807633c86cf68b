"""step: scheduler step latency per strategy x access pattern, interleaved.

Names: step/<strategy>/pattern=<per_field|cached>. A value is the mean host time of
`steps_per_value` scheduler iterations (pyperf loops = steps). Every measured step's own latency
is kept too (host, and device time from CUDA events on a GPU), with the number of collections
that ran during it, so the report can show p50/p99/p99.9/max, steps per second and which spikes
were GC. Per strategy the report also gives per_field / cached (the review's question).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.config import RunConfig
from bench.runformat import StepSeries
from bench.suites.spec import FamilySpec, FigureSpec, Job, with_values

if TYPE_CHECKING:
    from bench.report.headline import Metric
    from bench.report.load import RunData, SuiteData
    from bench.report.markup import Html
    from bench.suites.measure import SuiteOutput, WorkerContext

NAME = "step"
TITLE = "Scheduler step"
NOTE = "Median time of one synthetic scheduler step, per access pattern."
ORDER = 20

KIND = "step"


def run(ctx: WorkerContext) -> SuiteOutput:
    from bench.suites.measure import SuiteOutput, measure_schedulers

    out = SuiteOutput()
    cfg = ctx.config
    recorders = measure_schedulers(
        ctx,
        out,
        kind=KIND,
        patterns=cfg.patterns,
        live_requests=cfg.live_requests,
        steps_per_value=cfg.steps_per_value,
        keep_steps=True,
        label="step",
    )
    for name, rec in recorders.items():
        out.extras.steps[str(name)] = rec.kept
    return out


def plan(config: RunConfig) -> list[Job]:
    # The headline suite and the noisiest: its own process count and values per process.
    return [Job(w, with_values(config, config.step_values)) for w in range(config.step_workers)]


# -- read side --------------------------------------------------------------------------------


def _pattern_ratios(data: SuiteData) -> dict[str, Any]:
    from bench.stats.derive import param_ratios

    return param_ratios(data.values, kind=KIND, key="pattern", num="per_field", den="cached")


def terminal_extra(data: SuiteData) -> list[str]:
    lines = []
    if data.percentiles:
        lines.append(
            "\n   per-step latency        p50        p99      p99.9        max   steps/s  spikes(gc)"
        )
        for name, p in data.percentiles.items():
            lines.append(
                f"   {name:<30} {p.p50_ns / 1e6:7.3f}ms {p.p99_ns / 1e6:7.3f}ms"
                f" {p.p999_ns / 1e6:7.3f}ms {p.max_ns / 1e6:7.3f}ms {p.steps_per_s:9.0f}"
                f"  {p.spikes}({p.spikes_with_gc})"
            )
    ratios = _pattern_ratios(data)
    if ratios:
        lines.append("\n   per_field / cached step latency")
        for label, c in sorted(ratios.items()):
            sig = "*" if c.significant else " "
            strategy = label.split("/")[1]
            lines.append(f"   {strategy:<12} {c.ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}] {sig}")
    return lines


def report_extra(data: SuiteData) -> list[Html]:
    from bench.report.markup import num, table, tag, td
    from bench.report.text import fmt, fmt_p, fmt_ratio

    out = []
    if data.percentiles:
        rows = [
            (
                name,
                num(fmt(p.p50_ns / 1e9)),
                num(fmt(p.p99_ns / 1e9)),
                num(fmt(p.p999_ns / 1e9)),
                num(fmt(p.max_ns / 1e9)),
                num(f"{p.steps_per_s:,.0f}"),
                num(f"{p.spikes} ({p.spikes_with_gc})"),
                num(p.steps),
            )
            for name, p in data.percentiles.items()
        ]
        head = ("benchmark", "p50", "p99", "p99.9", "max", "steps/s", "spikes (with GC)", "steps")
        out += [tag("h3", "Per-step latency"), table(head, rows)]
    ratios = _pattern_ratios(data)
    if ratios:
        ratio_rows = [
            (
                td(tag("code", label.split("/")[1])),
                num(fmt_ratio(c.ratio, c.ci_low, c.ci_high)),
                num(fmt_p(c.p_value)),
                "yes" if c.significant else "no",
            )
            for label, c in sorted(ratios.items())
        ]
        out += [
            tag("h3", "per_field / cached step time (same strategy)"),
            table(("strategy", "ratio [95% CI]", "p", "significant"), ratio_rows),
        ]
    return out


def cdf_figure(run: RunData, st: dict[str, Any]) -> Any:
    import matplotlib.pyplot as plt

    from bench.names import BenchName
    from bench.report.plots import label, legend, plain_log_ticks

    data = run.suite("step")
    if data is None:
        return None
    series = {BenchName.parse(n): s for n, s in data.extras.steps.items() if s.host_ns}
    patterns = sorted({b["pattern"] for b in series if "pattern" in b})
    if not patterns:
        return None
    fig, axes = plt.subplots(
        1, len(patterns), figsize=(5.2 * len(patterns) + 2, 4.2), sharey=True, layout="constrained"
    )
    axes_list = list(axes) if len(patterns) > 1 else [axes]
    names: list[str] = []
    for ax, pattern in zip(axes_list, patterns, strict=True):
        for strategy in st:
            bench = BenchName.of(KIND, strategy, pattern=pattern)
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
            p = data.percentiles.get(str(bench))
            if p is not None:
                ax.plot(
                    [p.p99_ns / 1e3],
                    [0.99],
                    marker=st[strategy].marker,
                    color=st[strategy].color,
                    markersize=6,
                    linestyle="none",
                )
        ax.axhline(0.99, color="grey", linewidth=0.6, linestyle=":")
        ax.set_xscale("log")
        plain_log_ticks(ax.xaxis)
        ax.set_xlabel("step latency (µs, host)")
        ax.set_title(f"pattern={label(pattern)}  (marker: p99)")
    axes_list[0].set_ylabel("fraction of steps ≤ x")
    legend(fig, names, st, run.baseline)
    fig.suptitle("Per-step latency distribution")
    return fig


def _p99_metric(run: RunData, pattern: str) -> Metric | None:
    from bench.names import BenchName
    from bench.report.headline import Cell, Metric
    from bench.stats import quantile_ratio_ci

    data = run.suite("step")
    if data is None:
        return None
    metric = Metric(
        key=f"p99_{pattern}",
        title=f"p99 step ({pattern})",
        unit="second",
        words=("faster", "slower"),
        note="99th percentile of per-step host latency; CI: bootstrap over recorded steps",
    )
    base_name = str(BenchName.of(KIND, run.baseline, pattern=pattern))
    base = data.percentiles.get(base_name)
    base_raw = [float(v) for v in data.extras.steps.get(base_name, _EMPTY).host_ns]
    for name, p in data.percentiles.items():
        bench = BenchName.parse(name)
        if bench.kind != KIND or bench.params != (("pattern", pattern),):
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
    from bench.report.headline import summary_metric

    patterns = [str(p) for p in run.config.get("patterns", ("per_field", "cached"))]
    metrics = [
        summary_metric(
            run,
            "step",
            KIND,
            key=f"step_{pattern}",
            title=f"step ({pattern})",
            note="median scheduler step time, paired per round against the baseline",
            pattern=pattern,
        )
        for pattern in patterns
    ]
    metrics.append(_p99_metric(run, patterns[0] if patterns else "per_field"))
    return [m for m in metrics if m is not None]


_EMPTY = StepSeries()  # read-only stand-in for a benchmark without per-step data

FIGURES = (FigureSpec("step_latency_cdf", "Per-step latency distribution", cdf_figure),)
FAMILIES = (
    FamilySpec(
        "step",
        "scheduler step time",
        KIND,
        axis="pattern",
        axis_label="access pattern",
        axis_config="patterns",
        featured=True,
    ),
)
