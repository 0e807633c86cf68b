"""The lookup suite's reading half (bench.suites.spec): tables per size and regime, the figures
net of control, the figure, headline columns and verdict families."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.report.markup import num, table, tag, td
from bench.report.text import fmt
from bench.report.viewspec import FamilySpec, FigureSpec
from bench.stats.derive import net_of, net_ratios
from bench.suites.lookup import KIND, OPS, REFERENCE, REGIMES

if TYPE_CHECKING:
    from bench.report.headline import Metric
    from bench.report.load import RunData, SuiteData
    from bench.report.markup import Html
    from bench.stats.derive import Summary

TITLE = "Lookup: one state operation on a live request"
NOTE = (
    "Time per operation; one table per live-table size and memory regime. "
    "warm: one strategy's requests built together and visited in allocation order (what a "
    "timeit-style microbenchmark sees). cold: all strategies' requests interleaved in the heap, "
    "visited in random order after the CPU caches are evicted (what a scheduler sees when it "
    "touches a request again after a forward)."
)
TABLE_SPLIT = ("live", "regime")  # one report table per live-table size and regime
# The terminal shows one live size (~300 rows otherwise); the report shows them all.
_TERMINAL_LIVE = 10_000


def sizes(summaries: list[Summary], op: str = "get_hit") -> list[int]:
    return sorted({s.bench.int("live") for s in summaries if s.bench.get("op") == op})


def regimes(summaries: list[Summary]) -> list[str]:
    from bench.report.verdict import axis_values

    found = (s.bench.get("regime") for s in summaries)
    return axis_values((r for r in found if r is not None), REGIMES)


def terminal_rows(summaries: list[Summary]) -> list[Summary]:
    found = sorted({s.bench.int("live") for s in summaries if "live" in s.bench})
    if not found:
        return summaries
    pick = _TERMINAL_LIVE if _TERMINAL_LIVE in found else found[-1]
    return [s for s in summaries if s.bench.get("live") == str(pick)]


def _net(data: SuiteData) -> tuple[dict[str, Any], dict[str, Any]]:

    net = net_of(data.rounds, reference=REFERENCE, kind=KIND)
    ratios = net_ratios(data.rounds, reference=REFERENCE, baseline=data.baseline, kind=KIND)
    return net, ratios


def terminal_extra(data: SuiteData) -> list[str]:
    """get_hit net of control at the terminal's live size: the strategies' own cost."""

    net, ratios = _net(data)
    rows = [s for s in terminal_rows(data.summaries) if s.bench.get("op") == "get_hit"]
    rows = [s for s in rows if s.name in net or s.strategy == data.baseline]
    if not rows or not net:
        return []
    lines = [
        f"\n   get_hit net of {REFERENCE} (the loop and a call): own cost, x {data.baseline}'s"
    ]
    for s in sorted(rows, key=lambda r: (r.bench.get("regime") or "", r.strategy)):
        c = net.get(s.name)
        if c is None:
            continue
        r = ratios.get(s.name)
        ratio = "baseline" if s.strategy == data.baseline else "" if r is None else f"{r.ratio:.2f}"
        sig = "*" if r is not None and r.significant else " "
        lines.append(
            f"   {s.strategy:<22} {s.bench.get('regime') or '':<6} {fmt(c.median, s.unit):>10}"
            f"  {ratio:>8} {sig}"
        )
    return lines


def report_extra(data: SuiteData) -> list[Html]:
    """Net of control: per live size and regime, each strategy's own cost per op and its ratio
    to the baseline's own cost (both paired per round)."""

    net, ratios = _net(data)
    if not net:
        return []
    summaries = data.summaries
    ops = [op for op in OPS if any(s.bench.get("op") == op for s in summaries)]
    strategies = sorted(
        {s.strategy for s in summaries if s.strategy != REFERENCE},
        key=lambda n: (n != data.baseline, n),
    )
    out: list[Html] = [
        tag("h3", f"Net of {REFERENCE}"),
        tag(
            "p",
            f"Each figure minus {REFERENCE}'s of the same round (the loop and a call: what the "
            f"harness itself costs), median over rounds; in brackets, that own cost against "
            f"{data.baseline}'s own cost. A blank: no paired {REFERENCE} value.",
            class_="note",
        ),
    ]
    for n in sizes(summaries, ops[0] if ops else "get_hit"):
        for regime in regimes(summaries):
            body = []
            for strategy in strategies:
                cells: list[object] = [td(tag("code", strategy))]
                for op in ops:
                    key = f"{KIND}/{strategy}/op={op}/live={n}/regime={regime}"
                    c = net.get(key)
                    r = ratios.get(key)
                    text = "" if c is None else fmt(c.median, "second")
                    if r is not None:
                        text += f" ({r.ratio:.2f}x)"
                    cells.append(num(text))
                body.append(cells)
            out += [tag("h4", f"live={n:,} regime={regime}"), table(("strategy", *ops), body)]
    return out


def figure(run: RunData, st: dict[str, Any]) -> Any:
    import matplotlib.pyplot as plt

    from bench.report.plots import errorbars, label, legend, plain_log_ticks
    from bench.report.verdict import axis_values

    data = run.suite("lookup")
    if data is None:
        return None
    live = sizes(data.summaries)
    found_regimes = regimes(data.summaries)
    if not live or not found_regimes:
        return None
    ops = axis_values((s.bench.get("op") or "" for s in data.summaries), ("get_hit",))
    names = [n for n in st if any(s.strategy == n for s in data.summaries)]
    fig, grid = plt.subplots(
        len(found_regimes),
        len(live),
        figsize=(4.5 * len(live) + 2, 3.8 * len(found_regimes) + 0.6),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    rows = {
        (s.strategy, s.bench.get("op"), s.bench.get("live"), s.bench.get("regime")): s
        for s in data.summaries
    }
    width = 0.8 / max(1, len(names))
    for row, regime in enumerate(found_regimes):
        for col, n in enumerate(live):
            ax = grid[row][col]
            for j, strategy in enumerate(names):
                points = [
                    (i - 0.4 + width * (j + 0.5), s.median, s.ci_low, s.ci_high)
                    for i, op in enumerate(ops)
                    if (s := rows.get((strategy, op, str(n), regime))) is not None and s.median > 0
                ]
                errorbars(ax, points, st[strategy], 1e9, elinewidth=0.8, linestyle="none")
            ax.set_xticks(range(len(ops)), [label(op) for op in ops], rotation=30)
            ax.set_yscale("log")
            plain_log_ticks(ax.yaxis)
            ax.set_title(f"{regime}, live={n:,}")
        grid[row][0].set_ylabel("ns per op (median, 95% CI)")
    legend(fig, names, st, run.baseline)
    fig.suptitle("Lookup cost per operation, by memory regime")
    return fig


def headline(run: RunData) -> list[Metric]:
    from bench.report.headline import summary_metric

    data = run.suite("lookup")
    if data is None:
        return []
    live = sizes(data.summaries)
    if not live:
        return []
    metrics = []
    for regime in regimes(data.summaries):
        metric = summary_metric(
            run,
            "lookup",
            KIND,
            key=f"get_hit_{regime}",
            title=f"get_hit per op ({regime}, live={live[-1]:,})",
            note=f"state lookup of a live request at the largest table size, {regime} regime",
            op="get_hit",
            live=live[-1],
            regime=regime,
        )
        if metric is not None:
            metrics.append(metric)
    return metrics


FIGURES = (FigureSpec("lookup_ns_per_op", "Lookup cost per operation", figure),)
FAMILIES = tuple(
    FamilySpec(
        f"lookup_{{group}}{'' if regime == 'warm' else '_' + regime}",
        f"lookup {{group}} per op ({regime})",
        KIND,
        axis="live",
        axis_label="lookup size",
        group="op",
        match=(("regime", regime),),
        featured=("get_hit",),
    )
    for regime in ("warm", "cold", "mixed")
)
