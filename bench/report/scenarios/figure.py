"""The sweep figure: each design's cost net of control against the swept value."""

from __future__ import annotations

from typing import Any

from bench.report.load import RunData
from bench.report.plots import errorbars, label
from bench.report.scenarios.model import cases
from bench.report.verdict import axis_values


def sweep_figure(run: RunData, st: dict[str, Any]) -> Any:
    """With a sweep: each design's cost net of control against the swept value, one panel per
    scenario (colour: strategy; line: access pattern)."""
    key = run.config.sweep_key
    all_cases = [c for c in cases(run) if c.regime == "warm"] if key else []
    if not key or len(all_cases) < 2:
        return None
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    names = list(dict.fromkeys(c.name for c in all_cases))
    values = axis_values(c.key.as_params().get(str(key), "") for c in all_cases)
    fig, axes = plt.subplots(
        1, len(names), figsize=(5.4 * len(names) + 2, 4.4), squeeze=False, layout="constrained"
    )
    for ax, name in zip(axes[0], names, strict=True):
        mine = {c.key.as_params().get(str(key), ""): c for c in all_cases if c.name == name}
        for strategy in st:
            if run.is_reference(strategy):
                continue
            for pattern, style in (("per_field", "-"), ("cached", "--")):
                points: list[tuple[float, float, float, float]] = []
                for i, v in enumerate(values):
                    c = mine[v].cost(strategy, pattern) if v in mine else None
                    if c is not None and c.net is not None:
                        points.append((i, c.net.median, c.net.ci_low, c.net.ci_high))
                errorbars(ax, points, st[strategy], 1e6, linestyle=style, linewidth=1.1)
        ax.set_xticks(range(len(values)), [label(v) for v in values])
        ax.set_xlabel(label(key))
        ax.set_title(label(name))
        ax.axhline(0, color="grey", linewidth=0.6)
    axes[0][0].set_ylabel("µs per iteration net of control (median, 95% CI)")
    handles = [
        Line2D([], [], color=st[n].color, marker=st[n].marker, label=label(n))
        for n in st
        if not run.is_reference(n)
    ]
    handles += [
        Line2D([], [], color="grey", linestyle="-", label="per_field"),
        Line2D([], [], color="grey", linestyle="--", label="cached"),
    ]
    fig.legend(handles=handles, loc="outside right upper", frameon=False)
    fig.suptitle(f"Cost per iteration against {label(key)}")
    return fig
