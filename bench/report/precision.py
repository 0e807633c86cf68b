"""How precisely each family of an adaptive run was measured (bench.orchestration.adaptive): the rounds it
got, the 95% CI half-width its reported quantity reached, and why measuring stopped; as terminal
lines, an HTML table and one markdown sentence."""

from __future__ import annotations

from bench.base.cpuload import LOADED_CORES
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


def load_words(f: FamilyRecord) -> str:
    """The machine's other load while the family was measured (bench.base.cpuload)."""
    if f.load_max_cores is None and not f.remeasured_rounds:
        return "-"
    parts = []
    if f.loaded_rounds:
        parts.append(f"{f.loaded_rounds} round(s) kept under load")
    if f.remeasured_rounds:
        parts.append(f"{f.remeasured_rounds} measured again")
    if f.load_max_cores is not None:
        parts.append(f"others up to {f.load_max_cores:.2f} cores")
    return ", ".join(parts)


def under_load(f: FamilyRecord) -> bool:
    return bool(f.loaded_rounds or f.remeasured_rounds)


def terminal_lines(data: SuiteData) -> list[str]:
    if not data.families:
        return []
    budget = f", budget share {data.budget_s:,.0f} s" if data.budget_s is not None else ""
    out = [f"   precision per family (target ±{_target(data):g}%{budget})"]
    for name, f in data.families.items():
        out.append(
            f"   {name:<44} {f.rounds:>3} round(s)  {_reached(f):>16}  stopped: {f.stop}"
            + (f"  drift {_drift(f)}" if f.drifting else "")
            + (f"  LOADED: {load_words(f)}" if under_load(f) else "")
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
            load_words(f),
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
            "rounds do not make the figure a steady state's. Load: what other processes took "
            "during the family's rounds (the machine's busy time in /proc/stat less the worker's "
            f"own, in cores); a round where they took {LOADED_CORES:g} cores or more was "
            "measured again, and kept, counted here, only once a worker's re-measures were spent."
            + budget,
            class_="note",
        ),
        table(("family", "rounds", "reached", "target", "drift", "load", "stopped by"), rows),
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
    loaded = load_sentence(run)
    if not short:
        return (
            f"Precision: every one of {total} families within ±{target:g}% (95% CI half-width)."
            + (f" {loaded}" if loaded else "")
        )
    return (
        f"Precision: {total - len(short)} of {total} families within ±{target:g}%; short of it: "
        + "; ".join(short)
        + "."
        + (f" {loaded}" if loaded else "")
    )


def load_sentence(run: RunData) -> str | None:
    """'Measured under load: ...' naming every family whose rounds other processes loaded, or
    None on a quiet machine (as pyperf warns that a result may be unstable)."""
    named = [
        f"{data.name} {name} ({load_words(f)})"
        for data in run.suites.values()
        for name, f in data.families.items()
        if under_load(f)
    ]
    if not named:
        return None
    return (
        "Measured under load (other processes took the CPU while these were measured; loaded "
        "rounds were measured again): " + "; ".join(named) + "."
    )
