"""A history's report: the curve (one line per preset, the steps marked, each point's commit on
hover), the steps with their sizes, every commit's figure, and a summary.md section of at most
MAX_SUMMARY_LINES lines for a PR or an issue. Written into the history's folder."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.base.storage import write_atomic
from bench.history.series import CommitPoint, Curve, FoundStep
from bench.report.markup import Html, h, num, page, pre, section, table, tag, td
from bench.report.text import esc_md
from bench.stats.robust import t975

MAX_SUMMARY_LINES = 15
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
REPORT = "report.html"
SUMMARY = "summary.md"


@dataclass(frozen=True)
class HistoryView:
    """What the report shows: per preset its curve, and the history's settings."""

    title: str  # "sglang 546965fc72..857910bd35"
    how: str  # which commits, in words
    rounds: int
    curves: Mapping[str, Curve]
    forward_ms: Mapping[str, float]
    costs: Mapping[str, Any]  # seconds per commit, environments built
    # line -> sha -> what moved at that step: functions' time (py-spy), then calls per iteration
    calls: Mapping[str, Mapping[str, list[str]]] = field(default_factory=dict)
    modes: Mapping[str, str] = field(default_factory=dict)  # line -> real | replay

    def calls_at(self, line: str, s: FoundStep) -> list[str]:
        return list(self.calls.get(line, {}).get(s.commit.sha, []))


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:+.2f}%"


def step_text(s: FoundStep) -> str:
    st = s.step
    share = (
        f", {s.share_of_forward * 100:.3f}% of a forward" if s.share_of_forward is not None else ""
    )
    phases = "; ".join(
        f"{p.phase} {p.us:+,.1f} µs [{p.low:+,.1f}, {p.high:+,.1f}]" for p in s.phases
    )
    return (
        f"{s.commit.short} ({s.commit.subject[:60]}), {location_text(s)}: "
        f"{st.pct:+.2f}% [{st.pct_low:+.2f}, "
        f"{st.pct_high:+.2f}], {s.us:+,.1f} µs per iteration [{s.us_low:+,.1f}, "
        f"{s.us_high:+,.1f}]{share}"
        + (f"; phases moved: {phases}" if phases else "")
        + (f"; {s.phases_note}" if s.phases_note else "")
    )


def location_text(s: FoundStep) -> str:
    """Where the data place a step: after one commit, at or before another, and how many
    selected commits in between were not measured."""
    after = s.earliest_before or s.before
    latest = s.latest or s.commit
    gap = f" ({s.not_measured} commit(s) not measured)" if s.not_measured else ""
    return f"after {after.short}, at or before {latest.short}{gap}"


def _noise_text(curve: Curve) -> str:
    offset = math.expm1(curve.aa_offset) * 100
    applied = "a step must exceed it" if curve.offset_applies else "within noise, not applied"
    return (
        f"smallest step found 80% of the time ±{curve.resolution_pct:.2f}% (mid-range; computed "
        "from the noise, not timed), "
        f"A/A offset {offset:+.2f}% ({applied})"
    )


def summary_markdown(view: HistoryView) -> str:
    measured = max((len(c.points) - 1 for c in view.curves.values()), default=0)
    what = []
    if "real" in view.modes.values() or not view.modes:
        what.append("each commit's own Scheduler on the CPU with a stand-in model")
    if "replay" in view.modes.values():
        what.append("replay lines: the state group's code at each commit in the harness's loop")
    lines = [
        f"**Scheduler cost per commit**, {esc_md(view.title)}: {measured} commits after the anchor "
        f"({esc_md(view.how)}), {view.rounds} rounds each, every round in lockstep with the "
        f"anchor and its A/A copy; {'; '.join(what)}.",
        "",
    ]
    budget = MAX_SUMMARY_LINES - len(lines) - 2
    for preset, curve in view.curves.items():
        if curve.fit is None:
            lines.append(f"- {preset}: too few commits measured for a curve")
            continue
        if not curve.steps:
            lines.append(f"- {preset}: no step beyond the noise; {_noise_text(curve)}")
            continue
        lines.append(f"- {preset}: {len(curve.steps)} step(s); {_noise_text(curve)}")
        for s in curve.steps:
            lines.append(f"  - {esc_md(step_text(s))}")
            calls = view.calls_at(preset, s)
            if calls:
                lines.append(f"    - moved: {esc_md('; '.join(calls[:3]))}")
    if len(lines) > budget:
        cut = len(lines) - budget + 1
        lines = [*lines[: budget - 1], f"- … {cut} more line(s) in report.html"]
    missing = {c.commit.sha for curve in view.curves.values() for c in curve.unmeasured}
    if missing:
        lines.append(f"- not measured: {len(missing)} commit(s) (report.html says why)")
    cost = view.costs
    if cost.get("per_commit_s"):
        lines.append(
            f"- cost: {cost['per_commit_s']:.0f} s per commit with its environment cached"
            + (f", {cost['built_s']:.0f} s more where one was built" if cost.get("built_s") else "")
        )
    return "\n".join(lines[:MAX_SUMMARY_LINES]) + "\n"


def terminal(view: HistoryView) -> str:
    out = [f"history {view.title}: {view.how}, {view.rounds} rounds"]
    for preset, curve in view.curves.items():
        out.append(f"{preset}: {_noise_text(curve) if curve.fit else 'too few commits'}")
        for p in curve.points:
            out.append(
                f"  {p.commit.short} {p.pct:+7.2f}% ±{_half_pct(p):.2f}  {p.us:10,.1f} µs  "
                f"{p.commit.subject[:50]}"
            )
        for p in curve.unmeasured:
            out.append(f"  {p.commit.short}  not measured: {p.failed or 'no rounds yet'}")
        for s in curve.steps:
            out.append(f"  STEP {step_text(s)}")
            out += [f"    moved: {c}" for c in view.calls_at(preset, s)]
        if curve.fit is not None and not curve.steps:
            out.append("  no step beyond the noise")
    return "\n".join(out)


def _half_pct(p: CommitPoint) -> float:
    """The 95% half-width of a commit's change: Student's t over its rounds (z read a 5-round
    commit's interval 24% too narrow); one round's variance is the pooled floor, z."""
    if p.var != p.var:
        return math.nan
    q = t975(p.rounds - 1) if p.rounds > 1 else 1.959964
    return math.expm1(q * math.sqrt(p.var)) * 100


def svg_plot(curves: Mapping[str, Curve], order: Sequence[str]) -> Html:
    """Change from the anchor per commit (percent), one line per preset; hover a point for its
    commit, a dashed line for a step."""
    width, height, left, right, top, bottom = 900, 380, 60, 60, 20, 90
    index = {sha: i for i, sha in enumerate(order)}
    pts = [
        (index[p.commit.sha], p.pct, _half_pct(p))
        for c in curves.values()
        for p in c.points
        if p.commit.sha in index
    ]
    if not pts:
        return Html("")
    lo = min(y - e for _i, y, e in pts if e == e)
    hi = max(y + e for _i, y, e in pts if e == e)
    lo, hi = min(lo, -1.0), max(hi, 1.0)
    n = max(len(order) - 1, 1)

    def x(i: int) -> float:
        return left + (width - left - right) * i / n

    def y(v: float) -> float:
        return top + (height - top - bottom) * (hi - v) / (hi - lo)

    parts = [
        f'<line x1="{left}" y1="{y(0):.1f}" x2="{width - right}" y2="{y(0):.1f}" '
        'stroke="#999" stroke-width="1"/>',
        f'<text x="8" y="{y(hi):.1f}" font-size="11">{hi:+.1f}%</text>',
        f'<text x="8" y="{y(lo):.1f}" font-size="11">{lo:+.1f}%</text>',
        f'<text x="8" y="{y(0) + 4:.1f}" font-size="11">0% (anchor)</text>',
    ]
    every = max(1, math.ceil(len(order) / 40))  # a commit label each, up to 40 of them
    for i, sha in enumerate(order):
        if i % every == 0 or i == len(order) - 1:
            lx, ly = x(i), height - bottom + 12
            parts.append(
                f'<text x="{lx:.1f}" y="{ly:.1f}" font-size="9" font-family="monospace" '
                f'transform="rotate(60 {lx:.1f} {ly:.1f})">{h(sha[:10])}</text>'
            )
    for k, (preset, curve) in enumerate(curves.items()):
        color = COLORS[k % len(COLORS)]
        line = " ".join(
            f"{x(index[p.commit.sha]):.1f},{y(p.pct):.1f}"
            for p in curve.points
            if p.commit.sha in index
        )
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{line}"/>')
        for p in curve.points:
            if p.commit.sha not in index:
                continue
            cx, e = x(index[p.commit.sha]), _half_pct(p)
            title = h(
                f"{preset} {p.commit.short} {p.commit.subject[:80]}: {p.pct:+.2f}% ±{e:.2f} "
                f"({p.us:,.1f} µs per iteration, {p.rounds} rounds)"
            )
            parts.append(
                f'<line x1="{cx:.1f}" y1="{y(p.pct - e):.1f}" x2="{cx:.1f}" '
                f'y2="{y(p.pct + e):.1f}" stroke="{color}" stroke-opacity="0.5"/>'
                f'<circle cx="{cx:.1f}" cy="{y(p.pct):.1f}" r="4" fill="{color}">'
                f"<title>{title}</title></circle>"
            )
        for s in curve.steps:
            sx = x(index[s.commit.sha]) - (width - left - right) / n / 2
            title = h(f"{preset} step at {step_text(s)}")
            parts.append(
                f'<line x1="{sx:.1f}" y1="{top}" x2="{sx:.1f}" y2="{height - bottom}" '
                f'stroke="{color}" stroke-dasharray="5,4" stroke-width="2">'
                f"<title>{title}</title></line>"
            )
        parts.append(
            f'<text x="{width - right - 160}" y="{top + 14 * (k + 1)}" font-size="12" '
            f'fill="{color}">{h(preset)}</text>'
        )
    return Html(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="cost per commit">'
        + "".join(parts)
        + "</svg>"
    )


def report_html(view: HistoryView, order: Sequence[str]) -> str:
    parts = [
        tag(
            "header",
            tag("h1", f"Scheduler history: {view.title}"),
            tag("p", f"{view.how}; {view.rounds} rounds per commit, in lockstep with the anchor."),
        ),
        section("curve", "Change from the anchor per commit", svg_plot(view.curves, order)),
    ]
    for preset, curve in view.curves.items():
        rows = []
        for p in curve.points:
            rows.append(
                [tag("code", p.commit.short), p.commit.date[:10], p.commit.subject[:90],
                 num(str(p.rounds)), num(f"{p.pct:+.2f}% ±{_half_pct(p):.2f}"),
                 num(f"{p.us:,.1f}")]
            )  # fmt: skip
        for p in curve.unmeasured:
            rows.append(
                [tag("code", p.commit.short), p.commit.date[:10], p.commit.subject[:90],
                 num(str(p.rounds)), td(p.failed or "no rounds yet"), num("")]
            )  # fmt: skip
        steps = [
            [tag("code", s.commit.short), step_text(s), "; ".join(view.calls_at(preset, s))]
            for s in curve.steps
        ] or [["", "no step beyond the noise", ""]]
        parts.append(
            section(
                f"preset-{preset}",
                f"{preset}: {_noise_text(curve) if curve.fit else 'too few commits'}",
                table(["commit", "step", "time (py-spy) and calls per iteration moved"], steps),
                table(
                    ["commit", "date", "subject", "rounds", "change [95%]", "µs per iteration"],
                    rows,
                ),
            )
        )
    parts.append(section("pr", "Summary (summary.md)", pre(summary_markdown(view))))
    return page(f"reqstate-bench: history {view.title}", Html("".join(parts)))


def write(folder: Path, view: HistoryView, order: Sequence[str]) -> None:
    write_atomic(folder / SUMMARY, summary_markdown(view))
    write_atomic(folder / REPORT, report_html(view, order))
