"""The scenario view's words: numbers as text, the verdict paragraph a reviewer pastes, the
sentences across a sweep, the terminal's cost lines. Every saving stated is the paired
per-round difference with its interval, called significant only where that interval excludes
zero."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from bench.report.load import RunData, SuiteData
from bench.report.scenarios.model import STEPS, cases
from bench.stats.cases import (
    MATERIAL_SHARE,
    NET_STATISTIC,
    NET_STATISTIC_WORDS,
    REFERENCE,
    REVIEW,
    Case,
    Cost,
    change_sources,
    difference,
    negated,
)
from bench.stats.derive import NetCost, net_of


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def pct(share: float) -> str:
    if share != share:  # nan
        return "n/a"
    if abs(share) >= 0.001:
        return f"{share * 100:.2f}%"
    return f"{share * 100:.4f}%"


def net_text(c: Cost) -> str:
    if c.net is None:
        return "n/a"
    return f"{us(c.net.median)} [{c.net.ci_low * 1e6:,.1f}, {c.net.ci_high * 1e6:,.1f}]"


def net_difference(run: RunData, a: Cost, b: Cost) -> NetCost | None:
    """a minus b per round (paired), in seconds."""
    data = run.suite(STEPS)
    return None if data is None else difference(data.net_rounds, a.bench, b.bench)


def interval_us(diff: NetCost) -> str:
    """A paired difference with its interval: '25.2 µs [18.1, 31.0]'."""
    return f"{us(diff.median)} [{diff.ci_low * 1e6:,.1f}, {diff.ci_high * 1e6:,.1f}]"


def _difference_words(diff: NetCost | None) -> str:
    """'significant' only where the paired interval of the difference excludes zero."""
    if diff is None:
        return "no paired values"
    return "significant" if diff.significant else "within noise: its interval includes zero"


def _target_sentences(run: RunData, case: Case, base: Cost) -> list[str]:
    """Each other revision against the baseline revision, in the units a reviewer decides with."""
    out = []
    for name, meta in run.targets.items():
        if name == run.baseline:
            continue
        c = case.cost(name, run.pattern_of(name))
        if c is None or c.net is None:
            continue
        diff = net_difference(run, c, base)
        text = f"At {name} ({meta.get('layout', 'revision')}), as written, it costs {net_text(c)}"
        if diff is not None:
            word = "more" if diff.median > 0 else "less"
            share = (
                f"{pct(c.share(diff.median))} [{pct(c.share(diff.ci_low))}, "
                f"{pct(c.share(diff.ci_high))}] of the forward"
            )
            text += (
                f": {us(abs(diff.median))} {word} per iteration than {run.baseline}, paired per "
                f"round {interval_us(diff)} ({share}; {_difference_words(diff)})"
            )
        if c.lookups is not None and base.lookups is not None:
            text += (
                f"; state lookups per iteration {base.lookups:,.1f} → {c.lookups:,.1f}, states "
                f"created {base.created or 0:,.2f} → {c.created or 0:,.2f}"
            )
        sources = where_from(run, case, meta, c)
        if sources:
            text += f"; where: {sources}"
        out.append(text + ".")
    return out


def where_from(run: RunData, case: Case, meta: dict[str, Any], c: Cost) -> str:
    """The functions a state group's change comes from: their accesses per iteration at the
    baseline revision and at this one (static counts x how often the scheduler runs them)."""
    base_meta = run.targets.get(run.baseline, {})
    if c.events is None or "program" not in meta:
        return ""
    moved = change_sources(
        base_meta,
        meta,
        str(case.values.get("loop", "")),
        c.events,
        float(case.values.get("branch_share", 1.0)),
    )
    return ", ".join(
        f"{f.rsplit('.', 1)[-1]} {a:,.0f} → {b:,.0f} attribute loads and lookups per iteration"
        for f, a, b in moved
    )


REGIME_WORDS = {
    "warm": "with the requests in cache (their memory read just before each iteration, as the "
    "scheduler's own passes over the batch leave it)",
    "cold": "with them evicted (a cache sweep larger than the last-level cache before each "
    "iteration)",
}


def versus_baseline(run: RunData, case: Case, c: Cost) -> str:
    """A design's cost against the baseline design of the same case, paired per round: the
    difference with its interval, and "same" where the interval includes zero (two designs
    that execute the same lookups, pr652 per_field and cached on a decode node, read the same
    here even when their medians differ)."""
    base = case.cost(run.baseline, run.pattern_of(run.baseline))
    if base is not None and c.bench == base.bench:
        return "baseline"
    if base is None or run.is_reference(c.strategy):
        return ""
    diff = net_difference(run, c, base)
    if diff is None:
        return ""
    sign = "+" if diff.median >= 0 else "-"
    text = f"{sign}{us(abs(diff.median))} [{diff.ci_low * 1e6:,.1f}, {diff.ci_high * 1e6:,.1f}]"
    return text + ("" if diff.significant else " (same)")


def regime_sentence(run: RunData, case: Case, all_cases: Sequence[Case]) -> str:
    """Both ends of the memory regime in one sentence, for a warm case whose cold twin was
    measured: the baseline's net cost (or, for revisions, the change between them) in each."""
    cold = case.in_regime(all_cases, "cold")
    if case.regime != "warm" or cold is None:
        return ""
    pattern = run.pattern_of(run.baseline)
    ends = []
    for c in (case, cold):
        base = c.cost(run.baseline, pattern)
        if base is None or base.net is None:
            return ""
        others = [t for t in run.targets if t != run.baseline]
        if others:
            other = c.cost(others[0], run.pattern_of(others[0]))
            diff = net_difference(run, other, base) if other is not None else None
            if diff is None:
                return ""
            ends.append(f"{interval_us(diff)} ({pct(base.share(diff.median))} of a forward)")
        else:
            ends.append(f"{net_text(base)} ({pct(base.share(base.net.median))} of a forward)")
    what = (
        f"the change from {run.baseline}"
        if run.targets and len(run.targets) > 1
        else f"{run.baseline} as written"
        if run.is_target(run.baseline)
        else f"the PR as written ({run.baseline}, {pattern})"
    )
    return (
        f"Memory regime: {what} costs {ends[0]} per iteration {REGIME_WORDS['warm']}, and "
        f"{ends[1]} {REGIME_WORDS['cold']}."
    )


def headline_cases(all_cases: Sequence[Case]) -> list[Case]:
    """The cases a verdict paragraph is written for: the warm ones (a cold case's figures go
    into its warm case's paragraph), and a cold case without its warm twin."""
    return [c for c in all_cases if c.regime == "warm" or c.in_regime(all_cases, "warm") is None]


def verdict_paragraph(run: RunData, case: Case) -> str:
    """One paragraph a reviewer can paste (plain text; renderers escape it). Every saving it
    states is the paired per-round difference with its interval, and is called significant
    only where that interval excludes zero."""
    source = case.sources.get("forward_ms", "")
    head = f"{case.title}: forward {case.forward_ms:,.0f} ms" + (f" ({source})" if source else "")
    tokens = case.queues.get("prefill_tokens")
    if tokens is not None and case.forward_used_ms < case.forward_ms * 0.999:
        head += (
            f"; {case.forward_used_ms:,.0f} ms for the {tokens.mean:,.0f} tokens prefilled per "
            "iteration on average (a cap kept chunks part-full), the forward every share below "
            "is of"
        )
    pattern = run.pattern_of(run.baseline)
    pr = case.cost(run.baseline, pattern)
    if pr is None or pr.net is None:
        return head + ": no cost net of control (control or the baseline was not measured)."
    who = (
        f"The baseline revision ({run.baseline}, as written)"
        if run.is_target(run.baseline)
        else f"The PR as written ({run.baseline}, {pattern})"
    )
    parts = [
        head + f". {who} costs {net_text(pr)} per iteration net of the harness, "
        f"{pct(pr.share(pr.net.median))} of a forward"
    ]
    if pr.lookups is not None:
        parts[-1] += (
            f", with {pr.lookups:,.1f} state lookups and {pr.created or 0:,.2f} states created per iteration"
        )
    parts[-1] += "."
    regime = regime_sentence(run, case, cases(run))
    if run.targets:
        return " ".join([*parts, *_target_sentences(run, case, pr), *([regime] if regime else [])])
    alternatives, best_saving = _alternative_sentences(run, case, pr)
    parts += alternatives
    if best_saving is not None and best_saving.significant and best_saving.median > 0:
        parts.append(_materiality_sentence(case, best_saving.median))
    if regime:
        parts.append(regime)
    return " ".join(parts)


def _alternative_sentences(run: RunData, case: Case, pr: Cost) -> tuple[list[str], NetCost | None]:
    """What the review's suggestion, the cheapest design and one lookup per call site would
    save against the baseline (paired per round), and the cheapest design's saving."""
    parts: list[str] = []
    candidates = [
        c
        for c in case.costs
        if c.net is not None and not run.is_reference(c.strategy) and not run.is_twin(c.strategy)
    ]
    best = min(candidates, key=lambda c: c.net.median if c.net else 0.0)
    review = case.cost(*REVIEW)
    best_saving: NetCost | None = None
    for label, alt in (("The review's suggestion", review), ("The cheapest design measured", best)):
        if alt is None or alt.net is None or alt.bench == pr.bench:
            continue
        if label.startswith("The cheapest") and review is not None and alt.bench == review.bench:
            continue
        diff = net_difference(run, pr, alt)
        if alt is best:
            best_saving = diff
        if diff is None:
            parts.append(f"{label} ({alt.strategy}, {alt.pattern}) costs {net_text(alt)}.")
            continue
        verb = "saves" if diff.median >= 0 else "costs"
        parts.append(
            f"{label} ({alt.strategy}, {alt.pattern}) costs {net_text(alt)}: switching {verb} "
            f"{interval_us(diff) if diff.median >= 0 else interval_us(negated(diff))} per "
            f"iteration, paired per round ({pct(pr.share(abs(diff.median)))} of the forward; "
            f"{_difference_words(diff)})."
        )
    cached = case.cost(run.baseline, "cached")
    if cached is not None and cached.bench != pr.bench:
        diff = net_difference(run, pr, cached)
        if diff is not None:
            effect = "saves" if diff.median >= 0 else "costs"
            shown = diff if diff.median >= 0 else negated(diff)
            parts.append(
                f"For {run.baseline}, looking the state up once per call site instead of once per "
                f"field {effect} {interval_us(shown)} per iteration ({_difference_words(diff)})."
            )
    return parts, best_saving


def _materiality_sentence(case: Case, saving: float) -> str:
    """Below which forward time the largest saving reaches the share scheduler wins merge at."""
    matters_below_ms = saving / MATERIAL_SHARE * 1e3
    where = (
        "so it matters here"
        if matters_below_ms >= case.forward_used_ms
        else "so at this forward time it does not"
    )
    return (
        f"The largest saving reaches {MATERIAL_SHARE:.0%} of a forward (the level at which "
        f"scheduler wins get merged) only for forwards shorter than {matters_below_ms:,.2f} ms, "
        f"{where}."
    )


def sweep_sentences(run: RunData, all_cases: Sequence[Case]) -> list[str]:
    """With a sweep: per scenario, where per_field vs cached becomes significant for the
    baseline, and where the cheapest design changes."""
    key = run.config.sweep_key
    if not key:
        return []
    out = []
    warm = [c for c in all_cases if c.regime == "warm"]
    for name in dict.fromkeys(c.name for c in warm):
        mine = [c for c in warm if c.name == name]
        if len(mine) < 2:
            continue
        sig_at = []
        leaders = []
        for c in mine:
            value = c.key.as_params().get(key, "?")
            pr = c.cost(run.baseline, run.pattern_of(run.baseline))
            cached = c.cost(run.baseline, "cached")
            if pr is not None and cached is not None:
                diff = net_difference(run, pr, cached)
                if diff is not None and diff.significant and diff.median > 0:
                    sig_at.append(value)
            candidates = [
                x
                for x in c.costs
                if x.net is not None
                and not run.is_reference(x.strategy)
                and not run.is_twin(x.strategy)
            ]
            if candidates:
                lead = min(candidates, key=lambda x: x.net.median if x.net else 0.0)
                leaders.append((value, f"{lead.strategy} ({lead.pattern})"))
        values = [c.key.as_params().get(key, "?") for c in mine]
        if sig_at:
            out.append(
                f"{name}: per_field vs cached matters for {run.baseline} (significant) at "
                f"{key} = {', '.join(sig_at)} of {', '.join(values)}."
            )
        else:
            out.append(f"{name}: per_field vs cached is within noise at every {key} measured.")
        changes = [
            f"{a[1]} at {a[0]} -> {b[1]} at {b[0]}"
            for a, b in itertools.pairwise(leaders)
            if a[1] != b[1]
        ]
        out.append(
            f"{name}: the cheapest design "
            + (
                "changes: " + "; ".join(changes)
                if changes
                else f"is {leaders[0][1]} at every {key}"
            )
            + "."
            if leaders
            else f"{name}: no costs net of control."
        )
    return out


def cost_lines(data: SuiteData) -> list[str]:
    """The terminal's per-scenario costs net of control (the step suite's extra lines)."""
    net = net_of(data.net_rounds, reference=REFERENCE, kind=STEPS, statistic=NET_STATISTIC)
    if not net:
        return []
    lines = [
        "\n   cost per iteration net of control (collections between iterations)   "
        f"{NET_STATISTIC_WORDS} [95% CI]"
    ]
    for name in sorted(net):
        c = net[name]
        lines.append(
            f"   {name:<58} {c.median * 1e6:9.1f} µs [{c.ci_low * 1e6:,.1f}, {c.ci_high * 1e6:,.1f}]"
        )
    return lines
