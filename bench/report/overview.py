"""The report's first figure: what each design costs per scheduler iteration in each scenario,
in cache and evicted, with its interval and the baseline marked (the PR table, drawn).

One panel per scenario, one row per design (the reference strategy and A/A twins left out),
the cost net of control with its 95% interval: a filled marker in cache, a hollow one evicted
(measured for the headline designs only). The baseline is black, first, and its in-cache cost a
dashed line across the panel, so a design left of the line is cheaper than the PR as written.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from bench.report.load import RunData
from bench.report.scenarios.model import cases
from bench.stats.cases import NET_STATISTIC_WORDS, REFERENCE, Case, Cost

NAME = "overview"
TITLE = "Cost per scheduler iteration of each design in each scenario"
# Inches at the report's 110 dpi: 1,300 px wide, and at most ~360 px tall, so that it sits in
# a 1400x900 browser window below the header, with the table and the verdict under it.
WIDTH_IN = 11.8
ROW_IN = 0.15
BASE_IN = 0.85
MAX_HEIGHT_IN = 3.3


def _designs(run: RunData, shown: list[Case]) -> list[str]:
    """The designs drawn, the baseline first, then by their mean in-cache cost."""
    names = {
        c.strategy
        for case in shown
        for c in case.costs
        if c.strategy != REFERENCE and not run.is_twin(c.strategy) and c.net is not None
    }
    cost: dict[str, list[float]] = {n: [] for n in names}
    for case in shown:
        for n in names:
            c = case.cost(n, run.pattern_of(n))
            if c is not None and c.net is not None:
                cost[n].append(c.net.median)
    rest = sorted(
        (n for n in names if n != run.baseline),
        key=lambda n: sum(cost[n]) / len(cost[n]) if cost[n] else float("inf"),
    )
    return ([run.baseline] if run.baseline in names else []) + rest


def _point(cost: Cost | None) -> tuple[float, float, float] | None:
    if cost is None or cost.net is None:
        return None
    return cost.net.median * 1e6, cost.net.ci_low * 1e6, cost.net.ci_high * 1e6


def panels(run: RunData) -> list[tuple[Case, Case | None]]:
    """Each scenario's in-cache case beside its evicted one (None where not measured)."""
    every = cases(run)
    return [(c, c.in_regime(every, "cold")) for c in every if c.regime == "warm"]


def alt_text(run: RunData) -> str:
    """What the figure shows, in words, for a reader who cannot see it."""
    shown = panels(run)
    parts = []
    for warm, cold in shown:
        base = _point(warm.cost(run.baseline, run.pattern_of(run.baseline)))
        evicted = _point(cold.cost(run.baseline, run.pattern_of(run.baseline))) if cold else None
        text = f"{warm.title}: the baseline {run.baseline} "
        text += f"{base[0]:.1f} µs in cache" if base else "not measured in cache"
        if evicted:
            text += f", {evicted[0]:.1f} µs evicted"
        parts.append(text)
    return (
        f"Cost per scheduler iteration net of control, µs, {NET_STATISTIC_WORDS} and 95% interval, of each "
        "design in each scenario: filled markers in cache, hollow evicted; the baseline black "
        "with a dashed line at its in-cache cost. " + "; ".join(parts) + "."
    )


def _panel(ax: Any, run: RunData, designs: list[str], warm: Case, cold: Case | None) -> None:
    for row, name in enumerate(designs):
        color = "#000000" if name == run.baseline else "#0072B2"
        for case, offset, face in ((warm, -0.15, color), (cold, 0.15, "white")):
            point = _point(case.cost(name, run.pattern_of(name))) if case else None
            if point is None:
                continue
            mid, low, high = point
            ax.errorbar(
                [mid],
                [row + offset],
                xerr=[[max(0.0, mid - low)], [max(0.0, high - mid)]],
                fmt="o",
                color=color,
                markerfacecolor=face,
                markersize=4,
                capsize=2,
                linewidth=1,
            )
    base = _point(warm.cost(run.baseline, run.pattern_of(run.baseline)))
    if base is not None:
        ax.axvline(base[0], color="#000000", linestyle="--", linewidth=0.8)
    ax.axvline(0.0, color="#999999", linewidth=0.6)
    ax.set_title(warm.title, fontsize=9)
    ax.set_xlabel("µs per iteration, net of control")


def build(run: RunData) -> Figure | None:
    """The figure, or None when the run has no scheduler case to draw."""
    shown = panels(run)
    designs = _designs(run, [c for pair in shown for c in pair if c is not None])
    if not shown or not designs:
        return None
    height = min(MAX_HEIGHT_IN, BASE_IN + ROW_IN * len(designs))
    fig, axes = plt.subplots(
        1, len(shown), figsize=(WIDTH_IN, height), sharey=True, squeeze=False, layout="constrained"
    )
    for ax, (warm, cold) in zip(axes[0], shown, strict=True):
        _panel(ax, run, designs, warm, cold)
    labels = [f"{n} (baseline)" if n == run.baseline else n for n in designs]
    axes[0][0].set_yticks(range(len(designs)), labels, fontsize=8)
    axes[0][0].invert_yaxis()  # the baseline on top (the axes share it: once)
    fig.suptitle(
        "Cost per iteration by design: ● in cache, ○ evicted, 95% intervals; dashed: the "
        "baseline in cache",
        fontsize=9,
    )
    return fig
