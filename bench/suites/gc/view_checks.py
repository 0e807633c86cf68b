"""The gc verdict's checks on its model, in words: the measured full pause's slope per tracked
object against the pooled per-object cost (bench.suites.gc.pause_slope), the A/A floor that can
fail (the twin's measured pauses, not its counts), and the background heap as built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.base.names import TWIN_RE, BenchName
from bench.suites.gc import extras_of
from bench.suites.gc import view_pressure as gcpressure
from bench.suites.gc.pause_slope import agreement, pause_slope

if TYPE_CHECKING:
    from bench.report.load import SuiteData


def _medians(data: SuiteData, kind: str) -> dict[str, float]:
    return {str(x.bench): x.median for x in data.summaries if x.kind == kind}


def _live_runs(data: SuiteData) -> dict[str, list[list[float]]]:
    """Every gc_live benchmark's values, per worker process."""
    return {n: r for n, r in data.runs.items() if BenchName.parse(n).kind == "gc_live"}


def slopes(data: SuiteData) -> dict[str, Any]:
    """Per GC mode, the measured full pause's slope per tracked object between the live sizes
    nearest 1,500 and 4,096 (bench.suites.gc.pause_slope)."""

    runs = _live_runs(data)
    live_objects = extras_of(data.extras).gc_live_objects
    out = {}
    for mode in ("enabled", "frozen"):
        slope = pause_slope(runs, live_objects, mode)
        if slope is not None:
            out[mode] = slope
    return out


def _ns(s_per_object: float) -> str:
    return f"{s_per_object * 1e9:,.1f}"


def _zero_words(slope: Any, *, inside: bool = False) -> str:
    """A caution when the slope's interval includes zero: agreeing with it then says little
    (inside: as a clause within parentheses already open)."""
    if not slope.low_s_per_object <= 0 <= slope.high_s_per_object:
        return ""
    words = "the slope's interval includes zero: the measured pauses cannot tell the cost from none"
    return f"; {words}" if inside else f" ({words})"


def _agreement_words(slope: Any, cost_s: float, *, short: bool = False) -> str:
    """Whether a pooled per-object cost agrees with the slope, or by how much it does not."""

    a = agreement(slope, cost_s)
    if a.within:
        return "agrees" if short else "agrees (within the slope's interval)"
    side = "above" if a.gap_s_per_object > 0 else "below"
    times = f"{a.ratio:,.2f}x the slope, " if a.ratio is not None else ""
    return (
        f"does not agree: {times}{_ns(abs(a.gap_s_per_object))} ns per object {side} its interval"
    )


def slope_sentence(
    data: SuiteData, mode: str, words: str, objects_per_request: float | None = None
) -> str:
    """The check on the model in one mode: the measured slope with its interval, and whether
    the pooled per-object cost at each of the two sizes agrees with it (objects_per_request:
    also the extra pause those objects would add at the slope, at the first live size)."""

    slope = slopes(data).get(mode)
    if slope is None:
        return ""
    medians = _medians(data, "gc_live")
    live_objects = extras_of(data.extras).gc_live_objects
    costs = []
    for live in (slope.low_live, slope.high_live):
        cost = gcpressure.per_object(medians, live_objects, live, mode)
        if cost is not None:
            costs.append(
                f"at {live:,} ({_ns(cost.median)} ns) {_agreement_words(slope, cost.median)}"
            )
    sizes = f"from {slope.low_live:,} to {slope.high_live:,} live requests"
    if slope.substituted:
        sizes += (
            f" (the measured sizes nearest {slope.wanted[0]:,} and {slope.wanted[1]:,}, which "
            "were not measured)"
        )
    at_slope = ""
    if objects_per_request is not None:
        live = data.config.suite("gc").live_sizes[0]
        k = objects_per_request * live * 1e3
        lo, hi = sorted((k * slope.low_s_per_object, k * slope.high_s_per_object))
        at_slope = (
            f"; at that slope the state's objects would add {k * slope.median_s_per_object:+,.3f}"
            f" ms [{lo:+,.3f}, {hi:+,.3f}] at {live:,} live requests"
        )
    text = (
        f"{words}, the measured full pause grows {_ns(slope.median_s_per_object)} ns "
        f"[{_ns(slope.low_s_per_object)}, {_ns(slope.high_s_per_object)}] per tracked object "
        f"{sizes} ({slope.processes} processes{at_slope}{_zero_words(slope, inside=True)}); "
        "the pooled per-object cost " + ("; ".join(costs) if costs else "was not measured")
    )
    return text


def twins_of(data: SuiteData, base: str) -> list[str]:
    names = set(extras_of(data.extras).memory) | {
        BenchName.parse(n).strategy for n in _live_runs(data)
    }
    return sorted(t for t in names if (m := TWIN_RE.match(t)) is not None and m["of"] == base)


def measured_floor(data: SuiteData, base: str, twins: list[str], mode: str) -> tuple[float, float]:
    """The A/A floor that can fail: the largest difference of the twins' MEASURED full pause
    (median, gc_live) from the baseline's over the live sizes in mode, as (percent, seconds);
    (0, 0) when none was measured."""
    medians = _medians(data, "gc_live")
    pct = seconds = 0.0
    for live in data.config.suite("gc").live_sizes:
        b = medians.get(str(BenchName.of("gc_live", base, live=live, gc=mode)))
        for t in twins:
            v = medians.get(str(BenchName.of("gc_live", t, live=live, gc=mode)))
            if b and v is not None and abs(v / b - 1) * 100 >= pct:
                pct, seconds = abs(v / b - 1) * 100, abs(v - b)
    return pct, seconds


def counted_aa(data: SuiteData, base: str, twins: list[str]) -> float | None:
    """The twins' largest difference (%) in counted tracked objects per request: exact counts
    of identical code, so 0 by construction (None: not counted)."""
    memory = extras_of(data.extras).memory
    if base not in memory or not memory[base].state_tracked_objects:
        return None
    found = [
        abs(memory[t].state_tracked_objects / memory[base].state_tracked_objects - 1) * 100
        for t in twins
        if t in memory
    ]
    return max(found) if found else None


def heap_words(data: SuiteData, *, short: bool = False) -> str:
    """The background heap as built: the target (tracked objects in the whole process) and
    what the worker processes reached (empty: not recorded, a run of an older harness)."""
    heaps = list(extras_of(data.extras).heaps.values())
    if not heaps:
        return ""
    reached = sorted(h.reached_tracked_objects for h in heaps)
    before = sorted(h.before_tracked_objects for h in heaps)
    target = heaps[0].target_tracked_objects
    if before[0] >= target:
        return (
            f"no background heap built: the process already tracked {before[0]:,} objects, "
            f"over the {target:,} asked (--background-objects counts the whole process)"
        )
    span = f"{reached[0]:,}" if reached[0] == reached[-1] else f"{reached[0]:,}-{reached[-1]:,}"
    own = f"{before[0]:,}" if before[0] == before[-1] else f"{before[0]:,}-{before[-1]:,}"
    if short:
        return f"heap: {span} tracked objects in the process (target {target:,})"
    return (
        f"background heap built up to {target:,} tracked objects in "
        f"the process: {span} reached ({own} of them the process's own before building: "
        f"imports, torch, the harness; {len(heaps)} processes)"
    )


def check_words(data: SuiteData, live: int) -> str:
    """The PR section's check on the model, unfrozen: the measured slope and whether the
    pooled per-object cost at `live` agrees with it (empty: no slope measured)."""

    slope = slopes(data).get("enabled")
    cost = gcpressure.per_object(
        _medians(data, "gc_live"), extras_of(data.extras).gc_live_objects, live, "enabled"
    )
    if slope is None or cost is None:
        return ""
    zero = "; includes 0" if slope.low_s_per_object <= 0 <= slope.high_s_per_object else ""
    return (
        f"check: the measured pause's slope from {slope.low_live:,} to {slope.high_live:,} live "
        f"{_ns(slope.median_s_per_object)} ns/object [{_ns(slope.low_s_per_object)}, "
        f"{_ns(slope.high_s_per_object)}{zero}], the pooled {_ns(cost.median)} ns "
        + _agreement_words(slope, cost.median, short=True)
    )
