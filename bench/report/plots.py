"""The report's figures, rendered once to PNG (embedded in the HTML) and SVG (kept beside it).

Okabe-Ito colours, plus a marker and a hatch per strategy, so every series stays distinct in
grey scale and for colour-blind readers; the baseline is always black. A figure whose data is
missing is skipped, never drawn empty. Every figure is closed after rendering.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display, no GUI toolkit, same output everywhere

import matplotlib.pyplot as plt
from matplotlib import ticker
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from bench.report.headline import lookup_sizes
from bench.report.load import RunData
from bench.results import write_atomic

# Okabe & Ito (2008), without black, which is kept for the baseline.
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442")
BASELINE_COLOR = "#000000"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p")
LineStyle = Literal["-", "--", ":", "-."]
LINESTYLES: tuple[LineStyle, ...] = ("-", "--", ":", "-.")
HATCHES = ("", "//", "\\\\", "xx", "..", "oo", "--", "++", "||", "**", "OO", "//..")
GC_MODE_HATCH = {"enabled": "", "frozen": "///", "disabled": "xxx"}
_RC: dict[str, Any] = {
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "svg.hashsalt": "reqstate-bench",  # deterministic SVG ids
    "hatch.linewidth": 0.8,
}


@dataclass(frozen=True)
class Style:
    color: str
    marker: str
    hatch: str
    linestyle: LineStyle


@dataclass(frozen=True)
class Plot:
    name: str  # file stem under plots/
    suite: str  # the report section it belongs to
    title: str
    png: bytes
    svg: bytes


def styles(strategies: list[str], baseline: str) -> dict[str, Style]:
    out = {}
    others = [s for s in strategies if s != baseline]
    for i, s in enumerate(others):
        cycle = i // len(OKABE_ITO)  # colours repeat after seven: change the line style too
        out[s] = Style(
            OKABE_ITO[i % len(OKABE_ITO)],
            MARKERS[i % len(MARKERS)],
            HATCHES[i % len(HATCHES)],
            LINESTYLES[cycle % len(LINESTYLES)],
        )
    out[baseline] = Style(BASELINE_COLOR, MARKERS[-1], "", "-")
    return out


def _plain_log_ticks(axis: Any) -> None:
    """Log axis ticks as plain numbers (40, 100, 2000) rather than 4x10^1."""
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5)))


def label(text: object) -> str:
    """Text for matplotlib: '$' would start mathtext."""
    return str(text).replace("$", r"\$")


def _legend(fig: Figure, names: list[str], st: dict[str, Style], baseline: str) -> None:
    handles = [
        Line2D(
            [],
            [],
            color=st[n].color,
            marker=st[n].marker,
            linestyle=st[n].linestyle,
            label=label(n + (" (baseline)" if n == baseline else "")),
        )
        for n in names
    ]
    fig.legend(handles=handles, loc="outside right upper", frameon=False)


def _yerr(median: float, low: float, high: float, scale: float) -> tuple[float, float]:
    return max(0.0, (median - low) * scale), max(0.0, (high - median) * scale)


def lookup_figure(run: RunData, st: dict[str, Style]) -> Figure | None:
    data = run.suite("lookup")
    sizes = lookup_sizes(run)
    if data is None or not sizes:
        return None
    ops = sorted(
        {p[3:] for s in data.summaries for p in s.params.split("/") if p.startswith("op=")},
        key=lambda op: (op != "get_hit", op),
    )
    names = [n for n in st if any(s.strategy == n for s in data.summaries)]
    fig, axes = plt.subplots(
        1, len(sizes), figsize=(4.5 * len(sizes) + 2, 4.2), sharey=True, layout="constrained"
    )
    axes_list = list(axes) if len(sizes) > 1 else [axes]
    rows = data.by_name()
    width = 0.8 / max(1, len(names))
    for ax, n in zip(axes_list, sizes, strict=True):
        for j, strategy in enumerate(names):
            xs, ys, lo, hi = [], [], [], []
            for i, op in enumerate(ops):
                s = rows.get(f"lookup/{strategy}/op={op}/live={n}")
                if s is None or s.median <= 0:
                    continue
                xs.append(i - 0.4 + width * (j + 0.5))
                ys.append(s.median * 1e9)
                e = _yerr(s.median, s.ci_low, s.ci_high, 1e9)
                lo.append(e[0])
                hi.append(e[1])
            if xs:
                ax.errorbar(
                    xs,
                    ys,
                    yerr=[lo, hi],
                    fmt=st[strategy].marker,
                    color=st[strategy].color,
                    markersize=4,
                    capsize=2,
                    elinewidth=0.8,
                    linestyle="none",
                )
        ax.set_xticks(range(len(ops)), [label(op) for op in ops], rotation=30)
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
        ax.set_title(f"live={n:,}")
    axes_list[0].set_ylabel("ns per op (median, 95% CI)")
    _legend(fig, names, st, run.baseline)
    fig.suptitle("Lookup cost per operation")
    return fig


def step_cdf_figure(run: RunData, st: dict[str, Style]) -> Figure | None:
    data = run.suite("step")
    raw = data.extra.get("step_host_ns", {}) if data else {}
    pct = data.extra.get("percentiles", {}) if data else {}
    patterns = sorted({n.rsplit("pattern=", 1)[1] for n in raw if "pattern=" in n})
    if not patterns:
        return None
    fig, axes = plt.subplots(
        1, len(patterns), figsize=(5.2 * len(patterns) + 2, 4.2), sharey=True, layout="constrained"
    )
    axes_list = list(axes) if len(patterns) > 1 else [axes]
    names: list[str] = []
    for ax, pattern in zip(axes_list, patterns, strict=True):
        for strategy in st:
            name = f"step/{strategy}/pattern={pattern}"
            vals = sorted(v / 1e3 for v in raw.get(name, []) if v > 0)
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
            p99 = pct.get(name, {}).get("p99_ns")
            if p99:
                ax.plot(
                    [p99 / 1e3],
                    [0.99],
                    marker=st[strategy].marker,
                    color=st[strategy].color,
                    markersize=6,
                    linestyle="none",
                )
        ax.axhline(0.99, color="grey", linewidth=0.6, linestyle=":")
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis)
        ax.set_xlabel("step latency (µs, host)")
        ax.set_title(f"pattern={label(pattern)}  (marker: p99)")
    axes_list[0].set_ylabel("fraction of steps ≤ x")
    _legend(fig, names, st, run.baseline)
    fig.suptitle("Per-step latency distribution")
    return fig


def scaling_figure(run: RunData, st: dict[str, Style]) -> Figure | None:
    data = run.suite("scaling")
    if data is None or not data.extra.get("fits"):
        return None
    fits = data.extra["fits"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12.5, 4.4), layout="constrained")
    handles = []
    for strategy in st:
        fit = fits.get(strategy)
        if not fit:
            continue
        pts = [
            (n, t, r)
            for n, t, r in zip(fit["sizes"], fit["step_s"], fit["per_request_s"], strict=False)
            if n > 0 and t > 0 and r > 0
        ]
        if not pts:
            continue
        s = st[strategy]
        xs = [p[0] for p in pts]
        ax1.plot(xs, [p[1] * 1e6 for p in pts], marker=s.marker, color=s.color, ls=s.linestyle)
        ax2.plot(xs, [p[2] * 1e9 for p in pts], marker=s.marker, color=s.color, ls=s.linestyle)
        slope = fit.get("marginal_loglog_slope")
        marginal = fit.get("marginal_ns_per_request")
        text = strategy + (" (baseline)" if strategy == run.baseline else "")
        if slope is not None:
            text += f": slope {slope:+.2f}"
        elif marginal is not None:
            text += f": {marginal:+.0f} ns/req"
        handles.append(
            Line2D([], [], color=s.color, marker=s.marker, linestyle=s.linestyle, label=label(text))
        )
    if not handles:
        return None  # make_plots closes it
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax.xaxis)
        _plain_log_ticks(ax.yaxis)
        ax.set_xlabel("live requests")
    ax1.set_ylabel("step time (µs, median)")
    ax2.set_ylabel("step time per live request (ns)")
    fig.legend(
        handles=handles,
        loc="outside right upper",
        frameon=False,
        title="marginal cost: log-log slope\n(or ns/request with 2 sizes)",
    )
    fig.suptitle(f"Scaling with live requests (pattern={label(data.extra.get('pattern', '?'))})")
    return fig


def gc_figure(run: RunData, st: dict[str, Style]) -> Figure | None:
    """Collections and pause per 1,000 steps (gc.callbacks) and the full-collection pause,
    each per strategy with the GC modes side by side (hatch = mode)."""
    data = run.suite("gc")
    if data is None:
        return None
    rates: dict[str, Any] = data.extra.get("gc_rates", {})
    full = {s.name: s for s in data.summaries if s.scenario == "gc_full"}
    modes = list(rates) or sorted({s.params.removeprefix("gc=") for s in full.values()})
    names = [
        n
        for n in st
        if any(f"gc/{n}/gc={m}" in rates.get(m, {}) or f"gc_full/{n}/gc={m}" in full for m in modes)
    ]
    if not names or not modes:
        return None
    panels = 3 if full else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels + 1.5, 4.4), layout="constrained")
    width = 0.8 / len(modes)
    for j, mode in enumerate(modes):
        hatch = GC_MODE_HATCH.get(mode, HATCHES[(j + 1) % len(HATCHES)])
        for i, strategy in enumerate(names):
            x = i - 0.4 + width * (j + 0.5)
            common = {"color": st[strategy].color, "edgecolor": "#333333", "hatch": hatch}
            r = rates.get(mode, {}).get(f"gc/{strategy}/gc={mode}")
            if r is not None:
                axes[0].bar(x, sum(r.get("collections_per_kstep", [])), width, **common)
                axes[1].bar(x, r.get("pause_ms_per_kstep", 0.0), width, **common)
            s = full.get(f"gc_full/{strategy}/gc={mode}")
            if s is not None and panels == 3:
                err = _yerr(s.median, s.ci_low, s.ci_high, 1e3)
                axes[2].bar(
                    x, s.median * 1e3, width, yerr=[[err[0]], [err[1]]], capsize=2, **common
                )
    labels = (
        "collections per 1,000 steps (all generations)",
        "GC pause per 1,000 steps (ms)",
        "full gc.collect() pause (ms, median, 95% CI)",
    )
    for ax, ylabel in zip(axes, labels, strict=False):
        ax.set_xticks(range(len(names)), [label(n) for n in names], rotation=30)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        if not any(p.get_height() > 0 for p in ax.patches):
            ax.set_ylim(0, 1)
            ax.text(0.5, 0.5, "none measured", transform=ax.transAxes, ha="center")
    handles = [
        Patch(facecolor="#bbbbbb", edgecolor="#333333", hatch=GC_MODE_HATCH.get(m, ""), label=m)
        for m in modes
    ]
    fig.legend(handles=handles, loc="outside right upper", frameon=False, title="GC mode")
    fig.suptitle("Garbage collection per strategy: enabled vs frozen")
    return fig


def memory_figure(run: RunData, st: dict[str, Style]) -> Figure | None:
    data = run.suite("gc")
    memory: dict[str, Any] = data.extra.get("memory", {}) if data else {}
    names = [n for n in st if isinstance(memory.get(n), dict)]
    if not names:
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12.5, 4.2), layout="constrained")
    for ax, key, bare_key, ylabel in (
        (ax1, "request_bytes", "bare_request_bytes", "bytes per request (state included)"),
        (ax2, "request_tracked_objects", "bare_request_objects", "GC-tracked objects per request"),
    ):
        for i, n in enumerate(names):
            bars = ax.bar(
                i,
                memory[n].get(key, 0.0),
                0.7,
                color=st[n].color,
                edgecolor="#333333",
                hatch=st[n].hatch,
            )
            ax.bar_label(bars, fmt="{:,.0f}" if key == "request_bytes" else "{:,.2f}", fontsize=7)
        bare = memory.get(bare_key)
        if isinstance(bare, (int, float)):
            ax.axhline(bare, color="grey", linestyle="--", linewidth=1, label="bare request")
            ax.legend(loc="lower right", fontsize=8)
        ax.set_xticks(range(len(names)), [label(n) for n in names], rotation=30)
        ax.set_ylabel(ylabel)
    fig.suptitle("Memory per request")
    return fig


FIGURES: tuple[tuple[str, str, str, Callable[[RunData, dict[str, Style]], Figure | None]], ...] = (
    ("lookup_ns_per_op", "lookup", "Lookup cost per operation", lookup_figure),
    ("step_latency_cdf", "step", "Per-step latency distribution", step_cdf_figure),
    ("scaling", "scaling", "Scaling with live requests", scaling_figure),
    ("gc_collections_pause", "gc", "GC collections and pause time", gc_figure),
    ("memory_per_request", "gc", "Bytes and tracked objects per request", memory_figure),
)


def _render(fig: Figure) -> tuple[bytes, bytes]:
    png, svg = io.BytesIO(), io.BytesIO()
    fig.savefig(png, format="png", metadata={"Software": None})
    fig.savefig(svg, format="svg", metadata={"Date": None})
    return png.getvalue(), svg.getvalue()


def make_plots(run: RunData) -> list[Plot]:
    """Every figure the run has data for."""
    st = styles(run.strategy_names(), run.baseline)
    out = []
    with plt.rc_context():  # restores the caller's rcParams on exit
        cast(Any, plt.rcParams).update(_RC)
        for name, suite, title, build in FIGURES:
            before = set(plt.get_fignums())
            try:
                fig = build(run, st)
                if fig is None:
                    continue
                png, svg = _render(fig)
            finally:  # close what this figure opened, even when building it failed
                for num in set(plt.get_fignums()) - before:
                    plt.close(num)
            out.append(Plot(name, suite, title, png, svg))
    return out


def write_plots(plots: list[Plot], out_dir: Path) -> list[Path]:
    """Write every plot as PNG and SVG; remove this module's figures that have no data now
    (a re-rendered report never shows a stale plot)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    made = {p.name for p in plots}
    for name, *_ in FIGURES:
        if name not in made:
            for ext in ("png", "svg"):
                (out_dir / f"{name}.{ext}").unlink(missing_ok=True)
    paths = []
    for p in plots:
        for ext, data in (("png", p.png), ("svg", p.svg)):
            path = out_dir / f"{p.name}.{ext}"
            write_atomic(path, data)
            paths.append(path)
    return paths
