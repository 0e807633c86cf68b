"""The gc suite's reading half (bench.suites.spec): collections and pauses per 1,000 iterations,
full-collection pauses, memory per request, headline columns and verdict families."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.base.names import BenchName, CaseKey
from bench.report.markup import num, table, tag, td
from bench.report.viewspec import FamilySpec, FigureSpec
from bench.stats import median
from bench.suites.gc import extras_of
from bench.suites.gc import view_pressure as gcpressure
from bench.suites.gc.view_checks import (
    check_words,
    counted_aa,
    heap_words,
    measured_floor,
    slope_sentence,
    twins_of,
)

if TYPE_CHECKING:
    from bench.report.headline import Metric
    from bench.report.load import RunData, SuiteData
    from bench.report.markup import Html
    from bench.report.verdict import Family

TITLE = "Garbage collection and memory"
NOTE = "Step time with a large background heap, collector enabled vs frozen; memory per request."

# The gc and gc_full families rank strategies once per GC mode, in the configuration's order,
# one family per scenario case.
_BY_GC_MODE: dict[str, Any] = {
    "axis_label": "GC mode",
    "axis_config": "gc_modes",
    "group": "scenario",
    "group_config": "scenarios",
}


def _case(name: str) -> CaseKey:
    """The scheduler case of a gc benchmark (its parameters without the GC mode)."""
    return BenchName.parse(name).case


def _mode(name: str) -> str:
    return BenchName.parse(name)["gc"]


def _modes(data: SuiteData) -> list[str]:
    order = list(data.config.suite("gc").modes)
    found = {_mode(n) for n in data.gc_rates}
    return [m for m in order if m in found] + sorted(found - set(order))


def _cases(data: SuiteData) -> list[CaseKey]:
    return list(dict.fromkeys(_case(n) for n in sorted(data.gc_rates)))


def _medians(data: SuiteData, kind: str) -> dict[str, float]:
    return {str(x.bench): x.median for x in data.summaries if x.kind == kind}


def pressure(data: SuiteData) -> list[Any]:
    """Per strategy, live size and mode, the extra full-collection pause its state costs."""

    return gcpressure.extras(
        extras_of(data.extras).memory,
        _medians(data, "gc_live"),
        extras_of(data.extras).gc_live_objects,
        data.config.suite("gc").live_sizes,
    )


def _collections(data: SuiteData, name: str) -> Any:

    counts = data.extras.gc.get(name)
    return gcpressure.collections(counts) if counts is not None else None


def _not_exercised(c: Any, mode: str) -> str:
    """Why a measurement saw no collection of some generation, in words (empty: it saw all)."""
    if c is None:
        return "no measurement"
    parts = []
    if c.not_exercised(0):
        parts.append(
            f"no young collection in {c.steps:,} iterations (gc={mode}: the youngest threshold "
            "was not crossed by what the iterations left alive)"
        )
    if c.not_exercised(2):
        every = c.full_every_steps
        if every is not None:
            parts.append(
                f"no full collection in {c.steps:,} iterations: the long-lived generation "
                f"({c.gen2_objects:,.0f} objects) grows by {c.gen2_growth_per_step:,.1f} per "
                f"iteration, so CPython would start one about every {every:,.0f} iterations"
            )
        elif mode == "frozen":
            parts.append("no full collection: the long-lived objects are frozen")
        else:
            parts.append(
                f"no full collection in {c.steps:,} iterations (the long-lived generation did "
                "not grow)"
            )
    return "; ".join(parts)


def verdict_sentences(data: SuiteData) -> list[str]:
    """The GC verdict in a maintainer's units, for the baseline: tracked objects per live
    request, the MODELLED extra full-collection pause at each live size (counted objects times
    live requests times the pooled per-object cost, with that cost's interval, and its share of
    the pause measured there), unfrozen and frozen; the check of that per-object cost against
    the measured pause's slope; the A/A floor of the measured pause; the heap built; the
    collections the scenarios saw per 1,000 iterations; and what a request's death costs."""
    base = data.config.baseline
    by = {(e.live, e.mode): e for e in pressure(data) if e.strategy == base}
    out = _pressure_sentences(data, base, by) if by else []
    heap = heap_words(data)
    if heap:
        out.append(heap[0].upper() + heap[1:] + ".")
    out += _collection_sentences(data, base)
    death = _medians(data, "death")
    mine = death.get(str(BenchName.of("death", base, metric="ns_per_request")))
    if mine is not None:
        out.append(
            f"A request's end (release and its last reference dropped) costs {base} "
            f"{mine * 1e9:,.0f} ns."
        )
    return out


def _pressure_sentences(data: SuiteData, base: str, by: dict[tuple[int, str], Any]) -> list[str]:
    """The modelled extra pause per live size and mode, the check on the model, the A/A floor."""
    out = []
    n = next(iter(by.values())).objects_per_request
    parts = []
    for live in data.config.suite("gc").live_sizes:
        for mode, words in (("enabled", "unfrozen"), ("frozen", "with the heap frozen")):
            e = by.get((live, mode))
            if e is None or e.pause_s is None:
                continue
            parts.append(
                f"{words}, at {live:,} live requests {e.extra_s * 1e3:+,.3f} ms "
                f"[{e.low_s * 1e3:+,.3f}, {e.high_s * 1e3:+,.3f}] per full collection "
                f"({(e.share or 0) * 100:+.2f}% of its measured {e.pause_s * 1e3:,.1f} ms)"
            )
    out.append(
        f"{base}'s state adds {n:+,.2f} GC-tracked objects per live request (net of a bare "
        "request, counted). Modelled extra pause (those objects x the live requests x a "
        "per-object cost pooled over processes; the interval is that cost's spread only): "
        + "; ".join(parts)
        + "."
    )
    checks = [
        x
        for x in (
            slope_sentence(data, "enabled", "unfrozen", n),
            slope_sentence(data, "frozen", "frozen", n),
        )
        if x
    ]
    if checks:
        out.append("Check on the model: " + "; ".join(checks) + ".")
    twins = twins_of(data, base)
    if not twins:
        return out
    floor_on, floor_ms_on = measured_floor(data, base, twins, "enabled")
    floor_fr, floor_ms_fr = measured_floor(data, base, twins, "frozen")
    text = (
        f"A/A floor (measured full pauses): {', '.join(twins)} differs from {base} by up "
        f"to {floor_on:.1f}% ({floor_ms_on * 1e3:,.2f} ms) unfrozen and {floor_fr:.1f}% "
        f"({floor_ms_fr * 1e3:,.2f} ms) frozen at the live sizes"
    )
    first = by.get((data.config.suite("gc").live_sizes[0], "enabled"))
    if first is not None and first.pause_s is not None and floor_ms_on:
        under = abs(first.extra_s) < floor_ms_on
        text += f"; the modelled {first.extra_s * 1e3:+,.2f} ms at {first.live:,} is " + (
            "under it: too small for these measured pauses to show" if under else "over it"
        )
    counted = counted_aa(data, base, twins)
    if counted is not None:
        text += (
            f". Counted, not a floor: its tracked objects per request differ by "
            f"{counted:.1f}% (exact counts of identical code: 0 by construction, as is "
            "its modelled extra pause's difference)"
        )
    out.append(text + ".")
    return out


def _collection_sentences(data: SuiteData, base: str) -> list[str]:
    """Per case: the collections per 1,000 iterations each gc mode saw, and their pauses."""
    out = []
    for case in _cases(data):
        bits = []
        for mode in _modes(data):
            name = str(BenchName.of("gc", base, **case.as_params(), gc=mode))
            c = _collections(data, name)
            if c is None:
                continue
            why = _not_exercised(c, mode)
            seen = "/".join(f"{x:,.0f}" for x in c.per_kstep)
            bits.append(
                f"gc={mode}: {seen} collections (g0/g1/g2) and {c.pause_ms_per_kstep:,.1f} ms of "
                f"pause per 1,000 iterations, longest {c.max_pause_ms:,.2f} ms"
                + (f" ({why})" if why else "")
            )
        if bits:
            out.append(f"{case.short}, {base}: " + "; ".join(bits) + ".")
    return out


def collections_words(data: SuiteData, strategy: str) -> str:
    """The collections the first scenario saw unfrozen, and when a full one would come."""
    cases = _cases(data)
    if not cases:
        return ""
    name = str(BenchName.of("gc", strategy, **cases[0].as_params(), gc="enabled"))
    c = _collections(data, name)
    if c is None:
        return ""
    seen = "/".join(f"{x:,.0f}" for x in c.per_kstep)
    text = f"{cases[0].short} unfrozen: {seen} collections (g0/g1/g2) per 1,000 iterations"
    if c.not_exercised(2):
        every = c.full_every_steps
        text += (
            f", no full collection in {c.steps:,} (CPython would start one about every "
            f"{every:,.0f} iterations at this growth)"
            if every
            else f", no full collection in {c.steps:,}"
        )
    return text


def summary_lines(data: SuiteData, names: list[str]) -> list[str]:
    """The PR section's GC line and memory line: the baseline and the candidate (names) side
    by side, in the same units (tracked objects and bytes per request, signed; the modelled ms
    per full collection at the first live size, unfrozen and frozen, and whether the measured
    slope agrees with the model's per-object cost; the heap built; the collections the first
    scenario saw)."""
    live = data.config.suite("gc").live_sizes
    by = {(e.strategy, e.mode): e for e in pressure(data) if live and e.live == live[0]}
    shown = [n for n in names if (n, "enabled") in by]
    out = []
    if shown:
        pause = by[(shown[0], "enabled")].pause_s or 0.0
        objects = ", ".join(f"{n} {by[(n, 'enabled')].objects_per_request:+,.2f}" for n in shown)

        def extra(mode: str) -> str:
            return ", ".join(
                f"{n} {e.extra_s * 1e3:+,.2f} [{e.low_s * 1e3:+,.2f}, {e.high_s * 1e3:+,.2f}]"
                for n in shown
                if (e := by.get((n, mode))) is not None and e.pause_s
            )

        line = (
            f"GC: tracked objects per live request {objects}; at {live[0]:,} live requests, "
            f"modelled ms added to a measured full collection of {pause * 1e3:,.0f} ms "
            f"(objects x live x pooled cost per object): {extra('enabled')}"
        )
        frozen = by.get((shown[0], "frozen"))
        if frozen is not None and frozen.pause_s:
            line += f"; with the heap frozen (SGLang's default, {frozen.pause_s * 1e3:,.1f} ms): "
            line += extra("frozen")
        check = check_words(data, live[0])
        if check:
            line += f"; {check}"
        heap = heap_words(data, short=True)
        if heap:
            line += f"; {heap}"
        seen = collections_words(data, shown[0])
        out.append(line + (f"; {shown[0]} in {seen}." if seen else "."))
    memory = extras_of(data.extras).memory
    mem = [n for n in names if n in memory]
    if mem:
        bare = memory[mem[0]]
        out.append(
            "Memory per request, over a bare request's "
            f"{bare.bare_request_bytes:,.0f} bytes: "
            + ", ".join(
                f"{n} {memory[n].state_bytes:+,.0f} bytes ({memory[n].state_tracked_objects:+,.2f}"
                " tracked objects)"
                for n in mem
            )
            + "."
        )
    return out


def summary_verdict(data: SuiteData, names: list[str]) -> list[str]:
    """One sentence: what the baseline's state adds to a full collection against the
    candidate's, at the first live size, unfrozen: counted objects, the modelled pause."""
    live = data.config.suite("gc").live_sizes
    by = {
        e.strategy: e for e in pressure(data) if live and e.live == live[0] and e.mode == "enabled"
    }
    shown = [n for n in names if n in by and by[n].pause_s]
    if not shown:
        return []
    first = by[shown[0]]
    text = (
        f"Its state adds {first.objects_per_request:+,.2f} GC-tracked objects per request (counted), "
        f"{first.extra_s * 1e3:+,.2f} ms modelled to a measured {(first.pause_s or 0) * 1e3:,.0f} ms "
        f"full collection at {live[0]:,} live requests ({(first.share or 0) * 100:+.2f}%)"
    )
    if len(shown) > 1:
        other = by[shown[1]]
        text += (
            f"; {shown[1]}'s {other.objects_per_request:+,.2f}, "
            f"{other.extra_s * 1e3:+,.2f} ms modelled"
        )
    return [text + "."]


def terminal_extra(data: SuiteData) -> list[str]:
    if not data.gc_rates:
        return []
    lines = ["", *(f"   {t}" for t in verdict_sentences(data))]
    lines += [
        "\n   GC per 1,000 steps                              collections(g0/g1/g2)     pause ms   longest ms"
    ]
    modes = _modes(data)
    ordered = sorted(
        data.gc_rates.items(), key=lambda kv: (_case(kv[0]), modes.index(_mode(kv[0])), kv[0])
    )
    for name, r in ordered:
        c = "/".join(f"{x:.0f}" for x in r.collections_per_kstep)
        lines.append(f"   {name:<50} {c:>12} {r.pause_ms_per_kstep:12.2f} {r.max_pause_ms:11.2f}")
    return lines


def report_extra(data: SuiteData) -> list[Html]:
    """The gc suite's section of report.html: the verdict, the modelled extra pause, the
    collections per 1,000 iterations per case and mode, memory per request."""
    out = [tag("p", " ".join(verdict_sentences(data)), class_="verdict")]
    return out + _pressure_section(data) + _rates_section(data) + _memory_section(data)


def _pressure_section(data: SuiteData) -> list[Html]:
    extra_rows = [
        (
            td(tag("code", e.strategy)),
            num(e.mode),
            num(f"{e.live:,}"),
            num(f"{e.objects_per_request:+,.2f}"),
            num(f"{e.extra_s * 1e3:+,.3f} [{e.low_s * 1e3:+,.3f}, {e.high_s * 1e3:+,.3f}]"),
            num("-" if e.pause_s is None else f"{e.pause_s * 1e3:,.1f}"),
            num("-" if e.share is None else f"{e.share * 100:+.2f}%"),
        )
        for e in pressure(data)
    ]
    out: list[Html] = []
    if extra_rows:
        out += [
            tag("h3", "What the state adds to a full collection (modelled)"),
            tag(
                "p",
                "Modelled, not measured: tracked objects per live request net of a bare request "
                "(counted, signed: a state that removes objects reads negative), times the live "
                "requests, times a full collection's cost per object it traverses (each "
                "process's measured pause at that size over the objects it traversed, pooled "
                "over every strategy's process; the interval is that pool's spread only, not "
                "the pause's): the modelled extra pause, beside the strategy's own measured "
                "pause at that size. The check on the model (the measured pause's slope per "
                "tracked object between two live sizes) is in the verdict above.",
                class_="note",
            ),
            table(
                (
                    "strategy",
                    "gc",
                    "live requests",
                    "state objects / request (counted)",
                    "modelled extra pause ms [95% CI of the per-object cost]",
                    "measured pause ms",
                    "modelled share",
                ),
                extra_rows,
            ),
        ]
    return out


def _rates_section(data: SuiteData) -> list[Html]:
    out: list[Html] = []
    for case in _cases(data):
        for mode in _modes(data):
            rows = [
                (
                    td(tag("code", BenchName.parse(name).strategy)),
                    num(" / ".join(f"{c:,.1f}" for c in r.collections_per_kstep)),
                    num(f"{r.pause_ms_per_kstep:,.3f}"),
                    num(f"{r.max_pause_ms:,.3f}"),
                    num(f"{_tracked(data, name):,.0f}"),
                    num(r.steps),
                )
                for name, r in sorted(data.gc_rates.items())
                if _case(name) == case and _mode(name) == mode
            ]
            head = (
                "strategy",
                "collections g0 / g1 / g2",
                "pause ms",
                "longest pause ms",
                "tracked objects",
                "steps",
            )
            out += [tag("h3", f"GC per 1,000 iterations: {case}, gc={mode}"), table(head, rows)]
            base = _collections(
                data, str(BenchName.of("gc", data.config.baseline, **case.as_params(), gc=mode))
            )
            why = _not_exercised(base, mode)
            if why:
                out.append(tag("p", f"Not exercised: {why}.", class_="note"))
    return out


def _memory_section(data: SuiteData) -> list[Html]:
    out: list[Html] = []
    memory = extras_of(data.extras).memory
    if memory:
        mem_rows = [
            (
                td(tag("code", name)),
                num(f"{m.request_bytes:,.0f}"),
                num(f"{m.state_bytes:+,.0f}"),
                num(f"{m.request_tracked_objects:,.2f}"),
                num(f"{m.state_tracked_objects:+,.2f}"),
            )
            for name, m in sorted(memory.items())
        ]
        mem_head = (
            "strategy",
            "bytes / request",
            "state bytes",
            "tracked objects",
            "state objects",
        )
        bare = min(memory.values(), key=lambda m: m.bare_request_bytes)
        note = (
            f"A bare request (no state) is about {bare.bare_request_bytes:,.0f} bytes and "
            f"{bare.bare_request_tracked_objects:,.2f} tracked objects; 'state' columns are the "
            "difference from a bare request measured in the same process, signed: negative when "
            "the state removes objects or bytes from a request (or, when small, within "
            "measurement noise)."
        )
        out += [
            tag("h3", "Memory per request"),
            tag("p", note, class_="note"),
            table(mem_head, mem_rows),
        ]
    return out


def _tracked(data: SuiteData, name: str) -> float:
    """Tracked objects in the heap when measuring began (the PR's entries that outlive release
    are among them), median over processes."""

    at_start = data.extras.gc[name].tracked_objects_at_start if name in data.extras.gc else []
    return median(at_start) if at_start else 0.0


def gc_figure(run: RunData, st: dict[str, Any]) -> Any:
    """Per scenario (x groups) and strategy (colour), with the collector enabled: collections
    and pause per 1,000 iterations (gc.callbacks) and the full-collection pause."""
    import matplotlib.pyplot as plt

    from bench.report.plots import label, yerr

    data = run.suite("gc")
    if data is None or not data.gc_rates:
        return None
    modes = _modes(data)
    mode = "enabled" if "enabled" in modes else modes[0]
    cases = _cases(data)
    full = {s.name: s for s in data.summaries if s.kind == "gc_full"}
    names = [n for n in st if any(BenchName.parse(k).strategy == n for k in data.gc_rates)]
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.6), layout="constrained")
    width = 0.8 / max(1, len(names))
    for i, case in enumerate(cases):
        for j, strategy in enumerate(names):
            x = i - 0.4 + width * (j + 0.5)
            common = {
                "color": st[strategy].color,
                "edgecolor": "#333333",
                "hatch": st[strategy].hatch,
            }
            r = data.gc_rates.get(str(BenchName.of("gc", strategy, **case.as_params(), gc=mode)))
            if r is not None:
                axes[0].bar(x, r.collections_total_per_kstep, width, **common)
                axes[1].bar(x, r.pause_ms_per_kstep, width, **common)
            s = full.get(str(BenchName.of("gc_full", strategy, **case.as_params(), gc=mode)))
            if s is not None:
                err = yerr(s.median, s.ci_low, s.ci_high, 1e3)
                axes[2].bar(
                    x, s.median * 1e3, width, yerr=[[err[0]], [err[1]]], capsize=2, **common
                )
    labels = (
        "collections per 1,000 iterations (all generations)",
        "GC pause per 1,000 iterations (ms)",
        "full gc.collect() pause (ms, median, 95% CI)",
    )
    for ax, ylabel in zip(axes, labels, strict=True):
        ax.set_xticks(range(len(cases)), [label(c.short) for c in cases], rotation=20)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        if not any(p.get_height() > 0 for p in ax.patches):
            ax.set_ylim(0, 1)
            ax.text(0.5, 0.5, "none measured", transform=ax.transAxes, ha="center")
    from bench.report.plots import legend

    legend(fig, names, st, run.baseline)
    fig.suptitle(f"Garbage collection per scenario and strategy (gc={mode})")
    return fig


def memory_figure(run: RunData, st: dict[str, Any]) -> Any:
    import matplotlib.pyplot as plt

    from bench.report.plots import label

    data = run.suite("gc")
    memory = extras_of(data.extras).memory if data is not None else {}
    names = [n for n in st if n in memory]
    if not names:
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12.5, 4.2), layout="constrained")
    for ax, key, ylabel in (
        (ax1, "request_bytes", "bytes per request (state included)"),
        (ax2, "request_tracked_objects", "GC-tracked objects per request"),
    ):
        for i, n in enumerate(names):
            bars = ax.bar(
                i,
                getattr(memory[n], key),
                0.7,
                color=st[n].color,
                edgecolor="#333333",
                hatch=st[n].hatch,
            )
            ax.bar_label(bars, fmt="{:,.0f}" if key == "request_bytes" else "{:,.2f}", fontsize=7)
        bare = sum(getattr(memory[n], f"bare_{key}") for n in names) / len(names)
        ax.axhline(bare, color="grey", linestyle="--", linewidth=1, label="bare request")
        ax.legend(loc="lower right", fontsize=8)
        ax.set_xticks(range(len(names)), [label(n) for n in names], rotation=30)
        ax.set_ylabel(ylabel)
    fig.suptitle("Memory per request")
    return fig


def _pause_values(run: RunData, case: CaseKey, mode: str) -> dict[str, float]:
    """Collector pause per 1,000 iterations, in seconds, per strategy, for one case and mode."""
    data = run.suite("gc")
    if data is None:
        return {}
    return {
        BenchName.parse(name).strategy: r.pause_ms_per_kstep / 1e3
        for name, r in data.gc_rates.items()
        if _case(name) == case and _mode(name) == mode
    }


def headline(run: RunData) -> list[Metric]:
    from bench.report.headline import aggregate_metric, summary_metric

    metrics = [
        summary_metric(
            run,
            "gc",
            "memory",
            key="request_bytes",
            title="bytes / request",
            note="deep size of one request with its state (mean over sampled requests)",
            metric="request_bytes",
        ),
        summary_metric(
            run,
            "gc",
            "memory",
            key="tracked_objects",
            title="GC-tracked objects / request",
            note="objects the cyclic collector tracks per request, state included",
            metric="tracked_objects_per_request",
        ),
    ]
    data = run.suite("gc")
    cases = _cases(data) if data is not None else []
    if data is not None and cases:
        case = cases[0]
        modes = _modes(data)
        mode = "enabled" if "enabled" in modes else modes[0]
        short = case.short
        metrics.append(
            summary_metric(
                run,
                "gc",
                "gc_full",
                key="gc_full",
                title=f"full GC pause ({short}, gc={mode})",
                note="one full gc.collect() with the live population: the stall production sees",
                **case.as_params(),
                gc=mode,
            )
        )
        metrics.append(
            aggregate_metric(
                run,
                _pause_values(run, case, mode),
                key="gc_pause",
                title=f"GC pause / 1k iterations ({short}, gc={mode})",
                unit="second",
                words=("less", "more"),
                note="total collector pause per 1,000 scheduler iterations; one aggregate, no test",
            )
        )
    return [m for m in metrics if m is not None]


def extra_families(run: RunData) -> list[Family]:
    """The collector's pause per 1,000 iterations with GC enabled: one ranking per scenario
    case, one aggregate per strategy, no test."""
    from bench.report.verdict import Entry, Ranking, make_family, rank

    data = run.suite("gc")
    if data is None or not data.gc_rates:
        return []
    modes = _modes(data)
    mode = "enabled" if "enabled" in modes else modes[0]
    rankings = [
        Ranking(
            case.short,
            rank(
                Entry(strategy=s, value=v, unit="second", reference=run.is_reference(s))
                for s, v in _pause_values(run, case, mode).items()
            ),
        )
        for case in _cases(data)
    ]
    title = f"GC pause per 1,000 iterations (gc={mode})"
    return [make_family("gc_pause", title, "scenario", rankings, has_test=False, featured=True)]


FIGURES = (
    FigureSpec("gc_collections_pause", "GC collections and pause time", gc_figure),
    FigureSpec("memory_per_request", "Bytes and tracked objects per request", memory_figure),
)
FAMILIES = (
    FamilySpec(
        "gc_step_{group}",
        "iteration time with a background heap, {group}",
        "gc",
        axis="gc",
        **_BY_GC_MODE,
    ),
    FamilySpec(
        "gc_full_{group}", "full collection pause, {group}", "gc_full", axis="gc", **_BY_GC_MODE
    ),
    FamilySpec(
        "memory_request_bytes",
        "bytes per request",
        "memory",
        axis=None,
        match=(("metric", "request_bytes"),),
        has_test=False,
        featured=True,
    ),
    FamilySpec(
        "memory_tracked_objects_per_request",
        "GC-tracked objects per request",
        "memory",
        axis=None,
        match=(("metric", "tracked_objects_per_request"),),
        has_test=False,
    ),
)
