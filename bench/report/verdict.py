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

from bench.base.names import twin_of
from bench.report import viewspec
from bench.report.load import RunData
from bench.report.model import Change, Entry, Family, Ranking, Verdict
from bench.report.text import fmt
from bench.report.viewspec import FamilySpec
from bench.stats.derive import Summary

# How many clear swaps a change statement names before summarising the rest as a count.
MAX_NAMED_SWAPS = 6


def summary_entry(s: Summary, run: RunData) -> Entry:
    return Entry(
        strategy=s.strategy,
        value=s.median,
        unit=s.unit,
        low=s.ci_low if s.n > 1 else None,
        high=s.ci_high if s.n > 1 else None,
        ratio=s.ratio,
        verdict=s.verdict or "",
        reference=run.is_reference(s.strategy),
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


def make_family(
    key: str,
    title: str,
    axis: str,
    rankings: list[Ranking],
    *,
    has_test: bool = True,
    featured: bool = False,
) -> Family:
    # A/A twins are the noise floor, not candidates: never ranked, never "best".
    rankings = [
        Ranking(r.condition, [e for e in r.entries if twin_of(e.strategy) is None])
        for r in rankings
    ]
    rankings = [r for r in rankings if r.entries]
    changes = [compare_rankings(a, b) for a, b in itertools.pairwise(rankings)]
    return Family(key, title, axis, has_test, featured, rankings, changes)


def _sort_key(value: str) -> tuple[int, float, str]:
    try:
        return 0, float(value), value
    except ValueError:
        return 1, 0.0, value


def axis_values(values: Iterable[str], preferred: Iterable[str] = ()) -> list[str]:
    """Numbers ascending; names in the run configuration's order, then alphabetically."""
    found = set(values)
    order = [v for v in preferred if v in found]
    return order + sorted(found - set(order), key=_sort_key)


def axis_label(axis: str, value: str) -> str:
    """live=1,000 for numbers; the bare value (per_field, enabled) for names."""
    return f"{axis}={int(value):,}" if value.isdigit() else value


def _families_of(spec: FamilySpec, run: RunData, summaries: list[Summary]) -> list[Family]:
    rows = [
        s
        for s in summaries
        if s.kind == spec.kind
        and s.bench.matches(**dict(spec.match))
        and not any(s.bench.get(k) == v for k, v in spec.exclude)
    ]
    groups: list[str | None] = [None]
    if spec.group is not None:
        found = [g for g in (s.bench.get(spec.group) for s in rows) if g is not None]
        featured = spec.featured if isinstance(spec.featured, tuple) else ()
        preferred = [*featured, *(str(v) for v in run.config.value(spec.group_config or "") or ())]
        groups = list(axis_values(found, preferred))
    axis = spec.axis
    if axis is not None and axis.startswith("@"):  # the parameter a config key names
        axis = str(run.config.value(axis[1:]) or "")
    out = []
    for group in groups:
        mine = [s for s in rows if group is None or s.bench.get(spec.group or "") == group]
        rankings = []
        if axis is None:
            rankings.append(Ranking("", rank(summary_entry(s, run) for s in mine)))
        else:
            preferred = [str(v) for v in run.config.value(spec.axis_config or "") or ()]
            present = [v for v in (s.bench.get(axis) for s in mine) if v is not None]
            for value in axis_values(present, preferred):
                chosen = [s for s in mine if s.bench.get(axis) == value]
                entries = rank(summary_entry(s, run) for s in chosen)
                rankings.append(Ranking(axis_label(axis, value), entries))
        is_featured = spec.featured if isinstance(spec.featured, bool) else group in spec.featured
        fill = {"group": group or ""}
        out.append(
            make_family(
                spec.key.format(**fill),
                spec.title.format(**fill),
                spec.axis_label,
                rankings,
                has_test=spec.has_test,
                featured=is_featured,
            )
        )
    return out


def compute(run: RunData) -> Verdict:
    families: list[Family] = []
    for spec in viewspec.views():
        data = run.suite(spec.name)
        if data is None:
            continue
        for fam in spec.families:
            families += _families_of(fam, run, data.summaries)
        families += spec.extra_families(run)
    return Verdict(run.baseline, [f for f in families if f.rankings])


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
                sig.append(f"faster than {baseline} beyond noise: {', '.join(faster)}")
            if slower:
                sig.append(f"slower beyond noise: {', '.join(slower)}")
            sentence += "; " + (
                "; ".join(sig) if sig else f"no difference vs {baseline} beyond noise"
            )
        lines.append(sentence + ".")
    if len(family.rankings) == 1 and family.axis:
        lines.append(f"Only one {family.axis} measured: no condition to compare.")
    if family.stable:
        lines.append(f"The order is the same at every {family.axis} measured.")
    else:
        lines.extend(describe_change(family, c) for c in family.changes if c.swaps)
    return lines
