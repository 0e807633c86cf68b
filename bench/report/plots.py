"""The report's figures, rendered once to PNG (embedded in the HTML) and SVG (kept beside it).

Okabe-Ito colours, plus a marker and a hatch per strategy, so every series stays distinct in
grey scale and for colour-blind readers; the baseline is always black. A figure whose data is
missing is skipped, never drawn empty. Every figure is closed after rendering.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display, no GUI toolkit, same output everywhere

import matplotlib.pyplot as plt
from matplotlib import ticker
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from bench.base.storage import write_atomic
from bench.report import overview, viewspec
from bench.report.load import RunData

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
    alt: str = ""  # what it shows, in words, where the title is not enough


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


def plain_log_ticks(axis: Any) -> None:
    """Log axis ticks as plain numbers (40, 100, 2000) rather than 4x10^1."""
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5)))


def label(text: object) -> str:
    """Text for matplotlib: '$' would start mathtext."""
    return str(text).replace("$", r"\$")


def legend(fig: Figure, names: list[str], st: dict[str, Style], baseline: str) -> None:
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


def yerr(median: float, low: float, high: float, scale: float) -> tuple[float, float]:
    return max(0.0, (median - low) * scale), max(0.0, (high - median) * scale)


def errorbars(
    ax: Any,
    points: list[tuple[float, float, float, float]],
    style: Style,
    scale: float,
    **kwargs: Any,
) -> None:
    """One series of medians with their 95% CIs: points are (x, median, ci_low, ci_high) in
    the value's own unit, drawn times `scale`; nothing is drawn for no points."""
    if not points:
        return
    errs = [yerr(m, lo, hi, scale) for _x, m, lo, hi in points]
    ax.errorbar(
        [x for x, *_ in points],
        [m * scale for _x, m, _lo, _hi in points],
        yerr=[[e[0] for e in errs], [e[1] for e in errs]],
        color=style.color,
        marker=style.marker,
        markersize=4,
        capsize=2,
        **kwargs,
    )


def _render(fig: Figure) -> tuple[bytes, bytes]:
    png, svg = io.BytesIO(), io.BytesIO()
    fig.savefig(png, format="png", metadata={"Software": None})
    fig.savefig(svg, format="svg", metadata={"Date": None})
    return png.getvalue(), svg.getvalue()


def make_plots(run: RunData) -> list[Plot]:
    """Every figure the run has data for (each suite's spec lists its figures)."""
    st = styles(run.strategy_names(), run.baseline)
    out = []
    with plt.rc_context():  # restores the caller's rcParams on exit
        cast(Any, plt.rcParams).update(_RC)
        before = set(plt.get_fignums())
        try:
            first = overview.build(run)
            if first is not None:
                png, svg = _render(first)
                out.append(
                    Plot(overview.NAME, "summary", overview.TITLE, png, svg, overview.alt_text(run))
                )
        finally:
            for num in set(plt.get_fignums()) - before:
                plt.close(num)
        for spec in viewspec.views():
            if run.suite(spec.name) is None:
                continue
            for figure in spec.figures:
                before = set(plt.get_fignums())
                try:
                    fig = figure.build(run, st)
                    if fig is None:
                        continue
                    png, svg = _render(fig)
                finally:  # close what this figure opened, even when building it failed
                    for num in set(plt.get_fignums()) - before:
                        plt.close(num)
                out.append(Plot(figure.name, spec.name, figure.title, png, svg))
    return out


def write_plots(plots: list[Plot], out_dir: Path) -> list[Path]:
    """Write every plot as PNG and SVG; remove this module's figures that have no data now
    (a re-rendered report never shows a stale plot)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    made = {p.name for p in plots}
    for name in ("overview", *(f.name for view in viewspec.views() for f in view.figures)):
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
