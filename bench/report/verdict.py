"""The verdict, computed from the data: strategies ranked per headline metric under every
condition measured (lookup size, access pattern, live requests, GC mode), which differences
against the baseline are significant, and where the ranking changes between conditions.

A swap in order between two conditions is reported as *clear* only when, in both conditions,
the two strategies' 95% CIs do not overlap; other swaps are within noise and are counted, not
named one by one.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from bench.analysis import Summary
from bench.report.headline import lookup_sizes
from bench.report.load import RunData
from bench.report.text import fmt

# Strategies that are measuring references, not candidates: `control` stores nothing (the
# harness's own cost). They are ranked and shown, but never named the winner.
REFERENCE_STRATEGIES = frozenset({"control"})
# How many clear swaps a change statement names before summarising the rest as a count.
MAX_NAMED_SWAPS = 6


@dataclass(frozen=True)
class Entry:
    strategy: str
    value: float
    unit: str
    low: float | None = None  # 95% CI of the value, when there is one
    high: float | None = None
    ratio: float | None = None  # against the baseline
    verdict: str = ""  # faster / slower / same vs the baseline; "" when no test applies
    reference: bool = False

    @property
    def significant(self) -> bool:
        return self.verdict in ("faster", "slower")


@dataclass(frozen=True)
class Ranking:
    condition: str
    entries: list[Entry]  # best (lowest) first

    def candidates(self) -> list[Entry]:
        return [e for e in self.entries if not e.reference] or self.entries

    def leader(self) -> Entry | None:
        candidates = self.candidates()
        return candidates[0] if candidates else None

    def tied_leaders(self) -> list[Entry]:
        """Every candidate with exactly the best value (all zero GC pauses, equal sizes)."""
        lead = self.leader()
        return [e for e in self.candidates() if lead is not None and e.value == lead.value]

    def with_verdict(self, verdict: str) -> list[str]:
        return [e.strategy for e in self.entries if e.verdict == verdict]


@dataclass(frozen=True)
class Change:
    before: str  # condition labels
    after: str
    leaders: tuple[str, str] | None  # set when the best candidate differs
    swaps: int  # pairs whose order reverses
    clear: list[tuple[str, str]]  # (a, b): a ahead in `before`, b ahead in `after`, both clear


@dataclass(frozen=True)
class Family:
    key: str
    title: str
    axis: str  # what varies between rankings: "lookup size", "access pattern", ...
    has_test: bool  # whether entries carry significance against the baseline
    rankings: list[Ranking] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    @property
    def stable(self) -> bool:
        return len(self.rankings) > 1 and not any(c.swaps for c in self.changes)


@dataclass(frozen=True)
class Verdict:
    baseline: str
    families: list[Family]

    def family(self, key: str) -> Family | None:
        return next((f for f in self.families if f.key == key), None)


def _entry(s: Summary) -> Entry:
    return Entry(
        strategy=s.strategy,
        value=s.median,
        unit=s.unit,
        low=s.ci_low if s.n > 1 else None,
        high=s.ci_high if s.n > 1 else None,
        ratio=s.ratio,
        verdict=s.verdict or "",
        reference=s.strategy in REFERENCE_STRATEGIES,
    )


def rank(entries: Iterable[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: (e.value, e.strategy))


def _clearly_before(a: Entry, b: Entry) -> bool:
    return a.high is not None and b.low is not None and a.high < b.low


def compare_rankings(before: Ranking, after: Ranking) -> Change:
    pos_b = {e.strategy: (i, e) for i, e in enumerate(before.entries)}
    pos_a = {e.strategy: (i, e) for i, e in enumerate(after.entries)}
    common = [e.strategy for e in before.entries if e.strategy in pos_a]
    swaps = 0
    clear: list[tuple[str, str]] = []
    for x, y in itertools.combinations(common, 2):  # x ahead of y in `before`
        (_, bx), (_, by) = pos_b[x], pos_b[y]
        (_, ax), (_, ay) = pos_a[x], pos_a[y]
        if not (bx.value < by.value and ay.value < ax.value):
            continue
        swaps += 1
        if _clearly_before(bx, by) and _clearly_before(ay, ax):
            clear.append((x, y))
    lb, la = before.tied_leaders(), after.tied_leaders()
    leaders = None
    if lb and la and not {e.strategy for e in lb} & {e.strategy for e in la}:
        leaders = (lb[0].strategy, la[0].strategy)
    return Change(before.condition, after.condition, leaders, swaps, clear)


def _family(
    key: str, title: str, axis: str, rankings: list[Ranking], has_test: bool = True
) -> Family:
    rankings = [r for r in rankings if r.entries]
    changes = [compare_rankings(a, b) for a, b in itertools.pairwise(rankings)]
    return Family(key, title, axis, has_test, rankings, changes)


def _summary_rankings(
    summaries: list[Summary], scenario: str, conditions: list[tuple[str, str]]
) -> list[Ranking]:
    """One ranking per (label, params) condition."""
    out = []
    for label, params in conditions:
        rows = [_entry(s) for s in summaries if s.scenario == scenario and s.params == params]
        out.append(Ranking(label, rank(rows)))
    return out


def _lookup_families(run: RunData) -> list[Family]:
    data = run.suite("lookup")
    if data is None:
        return []
    ops = sorted(
        {p.split("=", 1)[1] for s in data.summaries for p in s.params.split("/") if "op=" in p},
        key=lambda op: (op != "get_hit", op),
    )
    families = []
    for op in ops:
        conditions = [(f"live={n:,}", f"op={op}/live={n}") for n in lookup_sizes(run, op)]
        rankings = _summary_rankings(data.summaries, "lookup", conditions)
        families.append(_family(f"lookup_{op}", f"lookup {op} per op", "lookup size", rankings))
    return families


def _step_family(run: RunData) -> Family | None:
    data = run.suite("step")
    if data is None:
        return None
    patterns = sorted({s.params for s in data.summaries if s.scenario == "step"})
    order = [f"pattern={p}" for p in run.config.get("patterns", ())]
    patterns.sort(key=lambda p: (order.index(p) if p in order else len(order), p))
    conditions = [(p.removeprefix("pattern="), p) for p in patterns]
    rankings = _summary_rankings(data.summaries, "step", conditions)
    return _family("step", "scheduler step time", "access pattern", rankings)


def _scaling_family(run: RunData) -> Family | None:
    data = run.suite("scaling")
    if data is None:
        return None
    sizes = sorted(
        {
            int(s.params[5:])
            for s in data.summaries
            if s.params[:5] == "live=" and s.params[5:].isdigit()
        }
    )
    conditions = [(f"live={n:,}", f"live={n}") for n in sizes]
    rankings = _summary_rankings(data.summaries, "scaling", conditions)
    return _family("scaling", "scaling: step time", "live requests", rankings)


def _gc_families(run: RunData) -> list[Family]:
    data = run.suite("gc")
    if data is None:
        return []
    out = []
    modes = sorted({s.params for s in data.summaries if s.scenario == "gc"})
    conditions = [(m.removeprefix("gc="), m) for m in modes]
    out.append(
        _family(
            "gc_step",
            "step time with a background heap",
            "GC mode",
            _summary_rankings(data.summaries, "gc", conditions),
        )
    )
    full_modes = sorted({s.params for s in data.summaries if s.scenario == "gc_full"})
    if full_modes:
        out.append(
            _family(
                "gc_full",
                "full collection pause",
                "GC mode",
                _summary_rankings(
                    data.summaries, "gc_full", [(m.removeprefix("gc="), m) for m in full_modes]
                ),
            )
        )
    rates = data.extra.get("gc_rates", {})
    pause_rankings = []
    for mode, per_bench in rates.items():
        entries = [
            Entry(
                strategy=name.split("/")[1],
                value=float(r.get("pause_ms_per_kstep", 0.0)) / 1e3,
                unit="second",
                reference=name.split("/")[1] in REFERENCE_STRATEGIES,
            )
            for name, r in per_bench.items()
            if "/" in name
        ]
        pause_rankings.append(Ranking(mode, rank(entries)))
    out.append(
        _family("gc_pause", "GC pause per 1,000 steps", "GC mode", pause_rankings, has_test=False)
    )
    for metric, title in (
        ("metric=request_bytes", "bytes per request"),
        ("metric=tracked_objects_per_request", "GC-tracked objects per request"),
    ):
        rows = [_entry(s) for s in data.summaries if s.scenario == "memory" and s.params == metric]
        key = "memory_" + metric.removeprefix("metric=")
        out.append(_family(key, title, "", [Ranking("", rank(rows))], has_test=False))
    return out


def compute(run: RunData) -> Verdict:
    families: list[Family | None] = [
        *_lookup_families(run),
        _step_family(run),
        _scaling_family(run),
        *_gc_families(run),
    ]
    return Verdict(run.baseline, [f for f in families if f is not None and f.rankings])


def describe_change(family: Family, change: Change) -> str:
    """One plain-text sentence about a ranking change (escaped by the renderer)."""
    head = f"{change.before} → {change.after}: "
    if not change.swaps:
        return head + "same order."
    parts = []
    if change.leaders:
        parts.append(f"best candidate changes from {change.leaders[0]} to {change.leaders[1]}")
    parts.append(f"{change.swaps} pair(s) swap order")
    if change.clear:
        named = ", ".join(f"{a}/{b}" for a, b in change.clear[:MAX_NAMED_SWAPS])
        more = len(change.clear) - MAX_NAMED_SWAPS
        parts.append(
            f"clear (non-overlapping CIs): {named}" + (f" and {more} more" if more > 0 else "")
        )
    elif family.has_test:
        parts.append("all within overlapping CIs (noise)")
    return head + "; ".join(parts) + "."


def describe_family(family: Family, baseline: str) -> list[str]:
    """Plain-text sentences: leader per condition, significance vs baseline, changes."""
    lines = []
    for r in family.rankings:
        lead = r.leader()
        if lead is None:
            continue
        where = f" at {r.condition}" if r.condition else ""
        tied = r.tied_leaders()
        value = fmt(lead.value, lead.unit)
        if len(tied) == len(r.candidates()) > 1:
            sentence = f"All strategies equal{where} ({value})"
        elif len(tied) > 1:
            sentence = f"Tied best{where}: {', '.join(e.strategy for e in tied)} ({value})"
        else:
            sentence = f"Best{where}: {lead.strategy} ({value})"
        if family.has_test:
            faster, slower = r.with_verdict("faster"), r.with_verdict("slower")
            sig = []
            if faster:
                sig.append(f"significantly faster than {baseline}: {', '.join(faster)}")
            if slower:
                sig.append(f"significantly slower: {', '.join(slower)}")
            sentence += "; " + (
                "; ".join(sig) if sig else f"no significant difference vs {baseline}"
            )
        lines.append(sentence + ".")
    if len(family.rankings) == 1 and family.axis:
        lines.append(f"Only one {family.axis} measured: no condition to compare.")
    if family.stable:
        lines.append(f"The order is the same at every {family.axis} measured.")
    else:
        lines.extend(describe_change(family, c) for c in family.changes if c.swaps)
    return lines
