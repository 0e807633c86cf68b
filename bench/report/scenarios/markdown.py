"""The scenario view in summary.md (the PR's "Speed Tests and Profiling" text)."""

from __future__ import annotations

from collections.abc import Sequence

from bench.report.load import RunData
from bench.report.placement import placement_markdown
from bench.report.scenarios import prose
from bench.report.scenarios.html import REQUEST_HEAD, request_cells
from bench.report.scenarios.model import request_rows
from bench.report.text import esc_md, md_table
from bench.stats.cases import NET_STATISTIC_WORDS, REVIEW, Case

QUEUE_SHORT = {
    "inflight": "inflight",
    "decode_batch": "decode batch",
    "prefill_batch": "prefill batch",
}


def scenario_markdown(run: RunData, all_cases: Sequence[Case]) -> list[str]:
    if not all_cases:
        return []
    out = [
        f"**Per scenario** (cost per iteration net of `control`, collections run between iterations, {NET_STATISTIC_WORDS} [95% CI]; share of the stated forward):",
        "",
    ]
    rows = []
    designs: list[tuple[str, str]] = [(t, "as_written") for t in run.targets] or [
        (run.baseline, "per_field"),
        (run.baseline, "cached"),
        REVIEW,
        ("declared", "cached"),
    ]
    for case in all_cases:
        for who in designs:
            c = case.cost(*who)
            if c is None or c.net is None:
                continue
            q = case.queues
            queues = ", ".join(f"{QUEUE_SHORT[n]} {q[n].mean:,.1f}" for n in QUEUE_SHORT if n in q)
            rows.append(
                [
                    esc_md(case.title),
                    f"`{c.strategy}` {esc_md(c.pattern)}",
                    esc_md(prose.net_text(c)),
                    esc_md(prose.versus_baseline(run, case, c)),
                    esc_md(prose.pct(c.share(c.net.median))),
                    esc_md(
                        "" if c.lookups is None else f"{c.lookups:,.1f} / {c.created or 0:,.2f}"
                    ),
                    esc_md(queues),
                ]
            )
    if rows:
        out += [
            md_table(
                [
                    "scenario",
                    "design",
                    "net µs / iteration",
                    "vs baseline, paired",
                    "share of forward",
                    "lookups / created per iteration",
                    "mean queues",
                ],
                rows,
            ),
            "",
        ]
    for case in prose.headline_cases(all_cases):
        out += [f"- {esc_md(prose.verdict_paragraph(run, case))}"]
    out += [f"- {esc_md(s)}" for s in prose.sweep_sentences(run, all_cases)]
    out.append("")
    if run.targets:
        out += request_markdown(run)
        out += target_markdown(run)
    return out


def target_markdown(run: RunData) -> list[str]:
    """The revisions measured: path, full hash, where the state lives, what is not modelled."""
    out = ["**Revisions** (`--target`):", ""]
    for name, meta in run.targets.items():
        commit = meta.get("commit") or "working tree"
        where = (
            f"group {meta['group']} ({meta.get('fields', '?')} fields): {meta.get('home', '')}"
            if "group" in meta
            else f"{meta.get('home', '')}; forward batch: {meta.get('forward_batch', '')}"
        )
        out.append(
            f"- `{name}`: {esc_md(str(meta.get('path', '')))} at {esc_md(str(commit))}; "
            f"{esc_md(where)}"
        )
        for note in meta.get("not_modelled") or []:
            out.append(
                f"  - not modelled at {esc_md(str(meta.get('short', name)))}: {esc_md(str(note))}"
            )
    placed = [(name, meta.get("placement")) for name, meta in run.targets.items()]
    return [*out, "", *placement_markdown(placed)]


def request_markdown(run: RunData) -> list[str]:
    rows = request_rows(run)
    if not rows:
        return []
    body = [[f"`{r.strategy}`", *(esc_md(x) for x in request_cells(r))] for r in rows]
    return [
        "**The request class** (as built by the workers):",
        "",
        md_table(list(REQUEST_HEAD), body),
        "",
    ]
