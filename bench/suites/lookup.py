"""lookup: seconds per get (hit, miss/create), peek (hit, miss), update of the ten fields and
reset, with 1e3, 1e4 and 1e5 live requests holding state in the strategy.

Names: lookup/<strategy>/op=<op>/live=<n>. Each value is one or more timed passes over the live
requests (calibrated so a value takes at least lookup_min_value_ns). Creation of requests is
never timed: get_miss times `get` over a batch of requests built just before, and releases them
just after, untimed.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from bench.suites.spec import FamilySpec, FigureSpec

if TYPE_CHECKING:
    from bench.report.headline import Metric
    from bench.report.load import RunData
    from bench.stats.derive import Summary
    from bench.suites.measure import Population, Subject, SuiteOutput, WorkerContext

NAME = "lookup"
TITLE = "Lookup: one state operation on a live request"
NOTE = "Time per operation; each table is one live-table size."
ORDER = 10
TABLE_SPLIT = "live"  # one report table per live-table size

KIND = "lookup"
OPS: tuple[str, ...] = ("get_hit", "get_miss", "peek_hit", "peek_miss", "update", "reset")
# The terminal shows one live size (~150 rows otherwise); the report shows them all.
TERMINAL_LIVE = 10_000


def _build(ctx: WorkerContext, out: SuiteOutput, n: int) -> tuple[list[Population], list[Subject]]:
    from bench.names import BenchName
    from bench.suites.measure import Population, failure_text, lookup_subject

    populations: list[Population] = []
    subjects: list[Subject] = []
    cfg = ctx.config
    for s in ctx.strategies:
        if s.name in out.failures:
            continue
        try:
            pop = Population(
                s, n, cfg.lookup_miss_batch, cfg.lookup_max_pass, random.Random(cfg.seed + n)
            )
            populations.append(pop)
            subjects += [
                lookup_subject(
                    pop, op, BenchName.of(KIND, s.name, op=op, live=n), cfg.lookup_min_value_ns
                )
                for op in OPS
            ]
        except Exception as exc:
            out.failures[s.name] = f"lookup/{s.name} setup at live={n}: {failure_text(exc)}"
    return populations, subjects


def run(ctx: WorkerContext) -> SuiteOutput:
    from bench.gcprobe import gc_paused
    from bench.suites.measure import SuiteOutput, interleave

    out = SuiteOutput()
    sizes = ctx.config.lookup_sizes
    for i, n in enumerate(sizes):
        with gc_paused():
            populations, subjects = _build(ctx, out, n)
        interleave(
            ctx,
            out,
            subjects,
            label=f"lookup live={n}",
            progress_base=i / len(sizes),
            progress_span=1 / len(sizes),
        )
        with gc_paused():
            for pop in populations:
                pop.close()
            del populations, subjects
    return out


# -- read side --------------------------------------------------------------------------------


def sizes(summaries: list[Summary], op: str = "get_hit") -> list[int]:
    return sorted({s.bench.int("live") for s in summaries if s.bench.get("op") == op})


def terminal_rows(summaries: list[Summary]) -> list[Summary]:
    found = sorted({s.bench.int("live") for s in summaries if "live" in s.bench})
    if not found:
        return summaries
    pick = TERMINAL_LIVE if TERMINAL_LIVE in found else found[-1]
    return [s for s in summaries if s.bench.get("live") == str(pick)]


def figure(run: RunData, st: dict[str, Any]) -> Any:
    import matplotlib.pyplot as plt

    from bench.report.plots import label, legend, plain_log_ticks, yerr
    from bench.report.verdict import axis_values

    data = run.suite("lookup")
    if data is None:
        return None
    live = sizes(data.summaries)
    if not live:
        return None
    ops = axis_values((s.bench.get("op") or "" for s in data.summaries), ("get_hit",))
    names = [n for n in st if any(s.strategy == n for s in data.summaries)]
    fig, axes = plt.subplots(
        1, len(live), figsize=(4.5 * len(live) + 2, 4.2), sharey=True, layout="constrained"
    )
    axes_list = list(axes) if len(live) > 1 else [axes]
    rows = {(s.strategy, s.bench.get("op"), s.bench.get("live")): s for s in data.summaries}
    width = 0.8 / max(1, len(names))
    for ax, n in zip(axes_list, live, strict=True):
        for j, strategy in enumerate(names):
            xs, ys, lo, hi = [], [], [], []
            for i, op in enumerate(ops):
                s = rows.get((strategy, op, str(n)))
                if s is None or s.median <= 0:
                    continue
                xs.append(i - 0.4 + width * (j + 0.5))
                ys.append(s.median * 1e9)
                e = yerr(s.median, s.ci_low, s.ci_high, 1e9)
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
        plain_log_ticks(ax.yaxis)
        ax.set_title(f"live={n:,}")
    axes_list[0].set_ylabel("ns per op (median, 95% CI)")
    legend(fig, names, st, run.baseline)
    fig.suptitle("Lookup cost per operation")
    return fig


def headline(run: RunData) -> list[Metric]:
    from bench.report.headline import summary_metric

    data = run.suite("lookup")
    live = sizes(data.summaries) if data is not None else []
    if not live:
        return []
    metric = summary_metric(
        run,
        "lookup",
        KIND,
        key="get_hit",
        title=f"get_hit per op (live={live[-1]:,})",
        note="state lookup of a live request at the largest table size measured",
        op="get_hit",
        live=live[-1],
    )
    return [metric] if metric is not None else []


FIGURES = (FigureSpec("lookup_ns_per_op", "Lookup cost per operation", figure),)
FAMILIES = (
    FamilySpec(
        "lookup_{group}",
        "lookup {group} per op",
        KIND,
        axis="live",
        axis_label="lookup size",
        group="op",
        featured=("get_hit",),
    ),
)
