"""The gate's verdict for people: a terminal table and the markdown a CI step summary shows."""

from __future__ import annotations

from typing import Any

from bench.gate.judge import Judgement
from bench.report.placement import placement_markdown
from bench.report.text import fmt_value


def _fmt(value: float, mode: str) -> str:
    return f"{value:,.0f} instr" if mode == "instructions" else fmt_value(value, "second")


def _change(j: Judgement, mode: str) -> str:
    if mode == "instructions":
        return f"{j.change_pct:+.2f}%"
    return f"{j.change_pct:+.2f}% [{(j.ci_low - 1) * 100:+.1f}, {(j.ci_high - 1) * 100:+.1f}]"


def _per_iteration(j: Judgement) -> str:
    """'+12.3 µs [+8.0, +16.1]' for a step benchmark in wall-clock mode, else ''."""
    if j.change_s is None or j.change_s_low is None or j.change_s_high is None:
        return ""
    return (
        f"{j.change_s * 1e6:+,.1f} µs [{j.change_s_low * 1e6:+,.1f}, {j.change_s_high * 1e6:+,.1f}]"
    )


def _share(j: Judgement) -> str:
    share = j.share_of_forward
    if share is None or j.forward_s is None:
        return ""
    return f"{share * 100:+.4f}% of {j.forward_s * 1e3:,.0f} ms"


def _bound(j: Judgement) -> str:
    if j.bound_s is not None:
        return f"{j.bound_s * 1e6:,.1f} µs"
    return f"{j.bound_pct:.1f}%"


def render_terminal(judgements: list[Judgement], mode: str, status: str) -> str:
    w = max([40, *(len(j.benchmark) for j in judgements)])
    head = (
        f"{'benchmark':<{w}} {'baseline':>16} {'candidate':>16} {'change [95% CI]':>26} "
        f"{'per iteration [95% CI]':>28} {'A/A':>6} {'bound':>10}  verdict"
    )
    lines = [head, "-" * len(head)]
    for j in judgements:
        verdict = j.verdict.upper() if j.verdict == "regression" else j.verdict
        lines.append(
            f"{j.benchmark:<{w}} {_fmt(j.base, mode):>16} {_fmt(j.candidate, mode):>16}"
            f" {_change(j, mode):>26} {_per_iteration(j):>28} {j.noise_pct:5.1f}% "
            f"{_bound(j):>10}  {verdict}"
        )
    lines.append(verdict_line(judgements, mode, status).replace("**", ""))
    return "\n".join(lines)


def verdict_line(judgements: list[Judgement], mode: str, status: str) -> str:
    """The one line a PR reader sees first: pass, which benchmark regressed by how much."""
    if status != "regression":
        better = sum(j.verdict == "improvement" for j in judgements)
        extra = f"; {better} faster" if better else ""
        return (
            f"**reqstate-bench gate: PASS** ({mode} mode): {len(judgements)} benchmarks, none "
            f"slower beyond its bound{extra}."
        )
    # Step benchmarks first (a scheduler iteration is what a maintainer decides on; in wall
    # mode the largest share of the forward leads), then the others, by relative change.
    worst = sorted(
        (j for j in judgements if j.verdict == "regression"),
        key=lambda j: (
            not j.benchmark.startswith(("step/", "real/")),
            -(j.share_of_forward or 0.0),
            -j.change_pct,
        ),
    )
    head = worst[0]
    more = f", and {len(worst) - 1} more" if len(worst) > 1 else ""
    per_iter = _per_iteration(head)
    units = f", {per_iter} per iteration, {_share(head)}" if per_iter else ""
    return (
        f"**reqstate-bench gate: REGRESSION** ({mode} mode): `{head.benchmark}` "
        f"{head.change_pct:+.2f}%{units} (bound {_bound(head)}){more}."
    )


def where_markdown(where: list[dict[str, Any]]) -> list[str]:
    """Instruction mode: per benchmark, the functions whose instructions per iteration moved
    most between the two sides (bench.gate.attribution)."""
    out = ["**Where the change is** (callgrind, per scheduler iteration or lookup pass):", ""]
    for entry in where:
        out += [
            f"`{entry['benchmark']}` ({entry['note']}):",
            "",
            "| function | kind | baseline | candidate | change |",
            "|---|---|---:|---:|---:|",
        ]
        for f in entry["functions"]:
            out.append(
                f"| `{f['name']}` | {'Python, inclusive' if f['python'] else 'C, self'} "
                f"| {f['base']:,.0f} | {f['head']:,.0f} | {f['head'] - f['base']:+,.0f} |"
            )
        out.append("")
    return out


def group_markdown(group: dict[str, Any]) -> list[str]:
    """A state group's change: its home on each side, the request each side builds, and per
    scenario the functions the change comes from (static loads and lookups per iteration)."""
    out = [
        f"**State group `{group.get('group')}`**: {group.get('base_home')} → "
        f"{group.get('head_home')}.",
        "",
        "| request (built here) | attributes | bytes | GC-tracked objects | construction µs |",
        "|---|---:|---:|---:|---:|",
    ]
    for side, fp in (group.get("requests") or {}).items():
        out.append(
            f"| {side} | {fp['attributes']} | {fp['bytes']:,.0f} | {fp['tracked']:,.1f} "
            f"| {fp['construct_ns'] / 1e3:,.2f} |"
        )
    out += [
        "",
        "Where the change comes from (attribute loads and lookups per iteration, static):",
        "",
    ]
    for scenario, moved in (group.get("where") or {}).items():
        text = ", ".join(f"`{f}` {a:,.0f} → {b:,.0f}" for f, a, b in moved) or "no function moved"
        out.append(f"- {scenario}: {text}")
    placement = group.get("placement") or {}
    sides = [(side, placement.get(side)) for side in ("base", "head")]
    lines = placement_markdown(sides)
    return out + (["", *lines[:-1]] if lines else [])


def error_markdown(message: str, mode: str) -> str:
    """What gate.md holds when the gate could not judge (exit 2)."""
    return f"**reqstate-bench gate: ERROR** ({mode} mode): {message}\n"


REAL_COLUMNS = (
    "baseline and candidate: median over rounds of each side's mean iteration (its two "
    "processes'); change: the mean over rounds of the log of the per-round ratio of the "
    "candidate processes' mean iteration to the baseline processes' (moments apart, over the "
    "same iterations of the same request stream), with its 95% Student t interval over rounds, "
    "which is what is judged; per iteration: the mean over rounds of the per-round difference "
    "of those means, in µs with its t interval, and as a share of the preset's forward time; "
    "A/A: how far the A/A contrast (the two copies against the two first processes) moved in "
    "this job; bound: in µs where a threshold in those units is set, else in percent"
)


def render_markdown(
    judgements: list[Judgement], mode: str, status: str, meta: dict[str, Any]
) -> str:
    icon = {"pass": "pass", "regression": "**REGRESSION**", "improvement": "improvement"}
    if mode == "instructions":
        columns = (
            "baseline and candidate: callgrind instructions of the gated iterations, median "
            "over heap layouts; change: candidate / baseline, judged only when every candidate "
            "layout lies beyond every baseline layout; A/A: how far identical code moves "
            "between layouts, (max - min) / median over the candidate's and its copy's layouts"
        )
        head = "| benchmark | baseline | candidate | change | A/A | bound | verdict |"
    else:
        columns = (
            "baseline and candidate: median over rounds of each worker process's median (for "
            "scale); change: median over rounds of the per-round ratio candidate / baseline "
            "(both measured moments apart over the same steps) with its 95% CI, which is what "
            "is judged and can differ from the ratio of the two medians when rounds drift; A/A: "
            "how far an identical copy of the candidate strays in this job"
        )
        columns += (
            "; per iteration: median over rounds of the per-round paired difference candidate "
            "minus baseline, in µs per scheduler iteration with its 95% CI, and as a share of "
            "the scenario's forward time (step benchmarks); bound: in µs where a threshold in "
            "those units is set (threshold_us, threshold_share_pct), else in percent"
        )
        head = (
            "| benchmark | baseline | candidate | change [95% CI] | per iteration [95% CI] "
            "| share of forward | A/A | bound | verdict |"
        )
    if meta.get("real"):
        columns = REAL_COLUMNS
    wall = mode != "instructions"
    lines = [
        verdict_line(judgements, mode, status),
        "",
        f"baseline `{meta.get('base', '?')}` vs candidate `{meta.get('candidate', '?')}`. "
        "A benchmark fails when its slowdown is significant and above its bound "
        "(the larger of the threshold and the A/A deviation).",
        "",
        head,
        "|---|---:|---:|---:|---:|---:|---:|---:|---|"
        if wall
        else "|---|---:|---:|---:|---:|---:|---|",
    ]
    for j in judgements:
        units = f" | {_per_iteration(j)} | {_share(j)}" if wall else ""
        lines.append(
            f"| `{j.benchmark}` | {_fmt(j.base, mode)} | {_fmt(j.candidate, mode)} "
            f"| {_change(j, mode)}{units} | {j.noise_pct:.1f}% | {_bound(j)} | {icon[j.verdict]} |"
        )
    lines += ["", f"Columns: {columns}."]
    where = meta.get("where") or []
    if where:
        lines += ["", *where_markdown(where)]
    if meta.get("group"):
        lines += ["", *group_markdown(meta["group"])]
    for note in meta.get("not_gated") or []:
        lines += ["", f"Not gated: {note}."]
    notes = meta.get("base_notes") or []
    if notes:
        lines += ["", "Across trees: " + "; ".join(str(n) for n in notes) + "."]
    return "\n".join(lines) + "\n"
