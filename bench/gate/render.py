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
    head = f"{'benchmark':<40} {'baseline':>16} {'candidate':>16} {'change [95% CI]':>26} {'bound':>7}  verdict"
    lines = [head, "-" * len(head)]
    for j in judgements:
        verdict = j.verdict.upper() if j.verdict == "regression" else j.verdict
        lines.append(
            f"{j.benchmark:<40} {_fmt(j.base, mode):>16} {_fmt(j.candidate, mode):>16}"
            f" {_change(j, mode):>26} {j.bound_pct:6.1f}%  {verdict}"
        )
    lines.append(f"gate: {status.upper()} ({mode} mode)")
    return "\n".join(lines)


def render_markdown(
    judgements: list[Judgement], mode: str, status: str, meta: dict[str, Any]
) -> str:
    icon = {"pass": "pass", "regression": "**REGRESSION**", "improvement": "improvement"}
    lines = [
        f"### reqstate-bench gate: {'**FAIL**' if status == 'regression' else 'pass'} ({mode} mode)",
        "",
        f"baseline `{meta.get('base', '?')}` vs candidate `{meta.get('candidate', '?')}`; "
        "a benchmark fails when its slowdown is significant and above the bound "
        "(max of threshold and A/A noise).",
        "",
        "| benchmark | baseline | candidate | change [95% CI] | bound | verdict |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for j in judgements:
        lines.append(
            f"| `{j.benchmark}` | {_fmt(j.base, mode)} | {_fmt(j.candidate, mode)} "
            f"| {_change(j, mode)} | {j.bound_pct:.1f}% | {icon[j.verdict]} |"
        )
    return "\n".join(lines) + "\n"
