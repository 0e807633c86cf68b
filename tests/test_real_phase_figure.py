"""Real mode's phase chart (bench.real.report.phase_figure): its legend lies beside the axes,
so it covers no bar (inside the axes it covered the top of the tallest one)."""

from __future__ import annotations

import matplotlib.pyplot as plt

from bench.real.report import SHOWN_PHASES, phase_figure


def test_the_legend_covers_no_bar() -> None:
    rows = [[10.0 * (k + 1)] * len(SHOWN_PHASES) for k in range(4)]
    labels = [f"decode-b256\nrev{k}" for k in range(4)]
    fig = phase_figure(labels, rows)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        (ax,) = fig.axes
        legend = ax.get_legend().get_window_extent(renderer)
        axes = ax.get_window_extent(renderer)
        figure = fig.get_window_extent(renderer)
        assert legend.x0 >= axes.x1
        assert legend.x1 <= figure.x1  # and it is not cut off
        assert len(ax.get_legend().get_texts()) == len(SHOWN_PHASES)
    finally:
        plt.close(fig)
