"""How precisely each family of an adaptive run was measured (bench.orchestration.adaptive): the rounds it
got, the 95% CI half-width its reported quantity reached, and why measuring stopped; as terminal
lines, an HTML table and one markdown sentence."""

from __future__ import annotations

from bench.report.load import RunData, SuiteData
from bench.report.markup import Html, num, table, tag
from bench.runformat.schema import FamilyRecord
from bench.stats.drift import DRIFT_PCT

STOP_WORDS = {
    "precision": "reached the target",
    "drift": "reached the target over processes whose values drift: not taken as converged",
    "budget": "the suite's share of the budget ran out",
    "round cap": "the round cap",
    "fixed plan": "the fixed plan (no budget)",
}


def _reached(f: FamilyRecord) -> str:
    return "not computable" if f.precision_pct is None else f"±{f.precision_pct:.1f}%"


def _drift(f: FamilyRecord) -> str:
    """The later values against the earlier within its processes (bench.stats.drift)."""
    if f.drift_pct is None:
        return "-"
    text = f"{f.drift_pct:+.1f}%"
    if f.drift_low_pct is not None and f.drift_high_pct is not None:
        text += f" [{f.drift_low_pct:+.1f}, {f.drift_high_pct:+.1f}]"
    return text + (" DRIFTS" if f.drifting else "")


def terminal_lines(data: SuiteData) -> list[str]:
    if not data.families:
        return []
    budget = f", budget share {data.budget_s:,.0f} s" if data.budget_s is not None else ""
    out = [f"   precision per family (target ±{_target(data):g}%{budget})"]
    for name, f in data.families.items():
        out.append(
            f"   {name:<44} {f.rounds:>3} round(s)  {_reached(f):>16}  stopped: {f.stop}"
            + (f"  drift {_drift(f)}" if f.drifting else "")
        )
    return out


def html_table(data: SuiteData) -> list[Html]:
    if not data.families:
        return []
    rows = [
        (
            tag("code", name),
            num(f.rounds),
            num(_reached(f)),
            num(f"±{f.target_pct:g}%"),
            num(_drift(f)),
            STOP_WORDS.get(f.stop, f.stop),
        )
        for name, f in data.families.items()
    ]
    quantity = next(iter(data.families.values())).quantity
    budget = (
        f" The suite's share of the run's budget: {data.budget_s:,.0f} s."
        if data.budget_s is not None
        else ""
    )
    return [
        tag("h3", "Precision per family"),
        tag(
            "p",
            f"Each family's reported quantity ({quantity}) and the 95% CI half-width it reached, "
            "in percent of it; a round is one worker process measuring the family. Drift: within "
            "each process, the second half of its values against the first (median of the "
            "paired ratios, 95% interval over processes then values); DRIFTS where the interval "
            f"excludes 0 and the figure exceeds ±{DRIFT_PCT:g}%: the processes sampled a "
            "transient, and more "
            "rounds do not make the figure a steady state's." + budget,
            class_="note",
        ),
        table(("family", "rounds", "reached", "target", "drift", "stopped by"), rows),
    ]


def _target(data: SuiteData) -> float:
    return next(iter(data.families.values())).target_pct


def markdown_sentence(run: RunData) -> str | None:
    """'Precision: ...' over every adaptive suite, or None when no family was recorded."""
    short: list[str] = []
    total = 0
    target = None
    for data in run.suites.values():
        for name, f in data.families.items():
            total += 1
            target = f.target_pct
            if not f.reached:
                short.append(f"{data.name} {name} {_reached(f)} ({f.stop})")
            elif f.drifting:
                short.append(f"{data.name} {name} {_reached(f)} but drifting {_drift(f)}")
    if not total or target is None:
        return None
    if not short:
        return f"Precision: every one of {total} families within ±{target:g}% (95% CI half-width)."
    return (
        f"Precision: {total - len(short)} of {total} families within ±{target:g}%; short of it: "
        + "; ".join(short)
        + "."
    )
