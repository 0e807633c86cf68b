"""The scaling suite's reading half (bench.suites.spec): marginal cost per request and its
log-log slope, the figure, verdict families."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.report.markup import num, table, tag, td
from bench.report.text import fmt
from bench.report.viewspec import FamilySpec, FigureSpec
from bench.stats.derive import scaling_fits
from bench.suites.scaling import KIND

if TYPE_CHECKING:
    from bench.config.runconfig import RunConfig
    from bench.report.load import RunData, SuiteData
    from bench.report.markup import Html
    from bench.stats.derive import Summary

TITLE = "Scaling with batch size"
NOTE = (
    "Step time of one scenario as its size parameter (the decode batch by default) grows, with "
    "the collector frozen after warm-up (its pauses are the gc suite's measurement)."
)


def _key(config: RunConfig) -> str:
    return str(config.suite(KIND).key)


def _fits(data: SuiteData) -> dict[str, Any]:

    return scaling_fits(data.values, kind=KIND, key=_key(data.config))


def terminal_rows(summaries: list[Summary]) -> list[Summary]:
    keys = {k for s in summaries for k, _v in s.bench.params if k not in ("scenario", "pattern")}
    if len(keys) != 1:
        return summaries
    (key,) = keys
    sizes = sorted({s.bench.int(key) for s in summaries})
    return [s for s in summaries if s.bench.get(key) == str(sizes[-1])]


def terminal_extra(data: SuiteData) -> list[str]:
    fits = _fits(data)
    if not fits:
        return []
    key = _key(data.config)
    lines = [f"\n   marginal step cost per {key} request (log-log slope vs {key})"]
    for strategy, f in fits.items():
        if f.marginal_ns_per_request is not None:
            slope = f.marginal_loglog_slope
            shape = f"slope {slope:+.3f} ({f.growth})" if slope is not None else ""
            lines.append(f"   {strategy:<12} {f.marginal_ns_per_request:8.1f} ns/req/step  {shape}")
    return lines


def report_extra(data: SuiteData) -> list[Html]:

    fits = _fits(data)
    if not fits:
        return []
    rows = []
    for strategy, f in sorted(fits.items()):
        slope = f.marginal_loglog_slope
        marginal = f.marginal_ns_per_request
        rows.append(
            (
                td(tag("code", strategy)),
                ", ".join(f"{n:,}" for n in f.sizes),
                num("" if marginal is None else f"{marginal:,.1f}"),
                num("" if f.fixed_step_ns is None else fmt(f.fixed_step_ns / 1e9)),
                num("" if slope is None else f"{slope:+.3f}"),
                f.growth or "",
            )
        )
    head = (
        "strategy",
        _key(data.config),
        "marginal ns / request / step",
        "fixed step",
        "log-log slope",
        "growth",
    )
    return [tag("h3", "Marginal cost per request"), table(head, rows)]


def figure(run: RunData, st: dict[str, Any]) -> Any:
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from bench.report.plots import label, plain_log_ticks

    data = run.suite("scaling")
    if data is None:
        return None
    fits = _fits(data)
    if not fits:
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12.5, 4.4), layout="constrained")
    handles = []
    for strategy in st:
        fit = fits.get(strategy)
        if fit is None:
            continue
        pts = [
            (n, t, r)
            for n, t, r in zip(fit.sizes, fit.step_s, fit.per_request_s, strict=False)
            if n > 0 and t > 0 and r > 0
        ]
        if not pts:
            continue
        s = st[strategy]
        xs = [p[0] for p in pts]
        ax1.plot(xs, [p[1] * 1e6 for p in pts], marker=s.marker, color=s.color, ls=s.linestyle)
        ax2.plot(xs, [p[2] * 1e9 for p in pts], marker=s.marker, color=s.color, ls=s.linestyle)
        text = strategy + (" (baseline)" if strategy == run.baseline else "")
        if fit.marginal_loglog_slope is not None:
            text += f": slope {fit.marginal_loglog_slope:+.2f}"
        elif fit.marginal_ns_per_request is not None:
            text += f": {fit.marginal_ns_per_request:+.0f} ns/req"
        handles.append(
            Line2D([], [], color=s.color, marker=s.marker, linestyle=s.linestyle, label=label(text))
        )
    if not handles:
        return None  # make_plots closes it
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_ticks(ax.xaxis)
        plain_log_ticks(ax.yaxis)
        ax.set_xlabel(label(_key(run.config)))
    ax1.set_ylabel("step time (µs, median)")
    ax2.set_ylabel("step time per request (ns)")
    fig.legend(
        handles=handles,
        loc="outside right upper",
        frameon=False,
        title="marginal cost: log-log slope\n(or ns/request with 2 sizes)",
    )
    pattern = label(run.config.suite(KIND).pattern)
    scenario = label(run.config.suite(KIND).scenario)
    fig.suptitle(
        f"Scaling: {scenario} step time against {label(_key(run.config))} (pattern={pattern})"
    )
    return fig


FIGURES = (FigureSpec("scaling", "Step time against batch size", figure),)
FAMILIES = (
    FamilySpec(
        "scaling",
        "scaling: step time",
        KIND,
        axis="@scaling_key",
        axis_label="batch size",
        featured=True,
    ),
)
