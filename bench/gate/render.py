"""The gate's verdict for people: a terminal table and the markdown a CI step summary shows."""

from __future__ import annotations

from typing import Any

from bench.gate.judge import Judgement
from bench.report.text import fmt_value


def _fmt(value: float, mode: str) -> str:
    return f"{value:,.0f} instr" if mode == "instructions" else fmt_value(value, "second")


def _change(j: Judgement, mode: str) -> str:
    if mode == "instructions":
        return f"{j.change_pct:+.2f}%"
    return f"{j.change_pct:+.2f}% [{(j.ci_low - 1) * 100:+.1f}, {(j.ci_high - 1) * 100:+.1f}]"


def render_terminal(judgements: list[Judgement], mode: str, status: str) -> str:
    w = max([40, *(len(j.benchmark) for j in judgements)])
    head = (
        f"{'benchmark':<{w}} {'baseline':>16} {'candidate':>16} {'change [95% CI]':>26} "
        f"{'A/A':>6} {'bound':>6}  verdict"
    )
    lines = [head, "-" * len(head)]
    for j in judgements:
        verdict = j.verdict.upper() if j.verdict == "regression" else j.verdict
        lines.append(
            f"{j.benchmark:<{w}} {_fmt(j.base, mode):>16} {_fmt(j.candidate, mode):>16}"
            f" {_change(j, mode):>26} {j.noise_pct:5.1f}% {j.bound_pct:5.1f}%  {verdict}"
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
    worst = sorted(
        (j for j in judgements if j.verdict == "regression"),
        key=lambda j: j.change_pct,
        reverse=True,
    )
    head = worst[0]
    more = f", and {len(worst) - 1} more" if len(worst) > 1 else ""
    return (
        f"**reqstate-bench gate: REGRESSION** ({mode} mode): `{head.benchmark}` "
        f"{head.change_pct:+.2f}% (bound {head.bound_pct:.1f}%){more}."
    )


def error_markdown(message: str, mode: str) -> str:
    """What gate.md holds when the gate could not judge (exit 2)."""
    return f"**reqstate-bench gate: ERROR** ({mode} mode): {message}\n"


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
        head = "| benchmark | baseline | candidate | change [95% CI] | A/A | bound | verdict |"
    lines = [
        verdict_line(judgements, mode, status),
        "",
        f"baseline `{meta.get('base', '?')}` vs candidate `{meta.get('candidate', '?')}`. "
        "A benchmark fails when its slowdown is significant and above its bound "
        "(the larger of the threshold and the A/A deviation).",
        "",
        head,
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for j in judgements:
        lines.append(
            f"| `{j.benchmark}` | {_fmt(j.base, mode)} | {_fmt(j.candidate, mode)} "
            f"| {_change(j, mode)} | {j.noise_pct:.1f}% | {j.bound_pct:.1f}% | {icon[j.verdict]} |"
        )
    lines += ["", f"Columns: {columns}."]
    notes = meta.get("base_notes") or []
    if notes:
        lines += ["", "Across trees: " + "; ".join(str(n) for n in notes) + "."]
    return "\n".join(lines) + "\n"
