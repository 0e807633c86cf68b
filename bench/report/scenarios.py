"""Per scenario, in the units a reviewer decides with: queue statistics, each strategy's cost
per scheduler iteration net of `control` (the harness's own loop) with a CI, lookups and
states created per iteration, that cost as a share of the scenario's forward time, GC per
1,000 iterations, and one paragraph a reviewer can paste.

Reads the step suite's benchmarks (kind `step`) and the gc suite's (kind `gc`) by their
`scenario` parameter; the scenario cases themselves (preset, values, sources, what --set or
--sweep changed) come from the manifest, so an old run shows what it ran with.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench import stats
from bench.core.scheduler import QUEUES
from bench.names import BenchName
from bench.report.load import RunData, SuiteData
from bench.report.markup import Html, num, section, table, tag, td
from bench.report.text import esc_md, fmt
from bench.stats.derive import GcRates, NetCost, QueueStat, net_of, queue_stats

# Host-side wins of 1-2% of a step are merged as PRs (WORKLOAD.md 'Scale'): below 1% of a
# forward a per-iteration cost "stops mattering" in this report's wording.
MATERIAL_SHARE = 0.01
REFERENCE = "control"  # the strategy whose call sites touch nothing: the harness's own cost
REVIEW = ("dynattr", "cached")  # the review's suggestion: lazy attribute, looked up once
QUEUE_SHORT = {
    "inflight": "inflight",
    "decode_batch": "decode batch",
    "prefill_batch": "prefill batch",
}
QUEUE_TITLES = {
    "bootstrap": "bootstrap queue",
    "waiting": "waiting queue",
    "inflight": "inflight queue",
    "decode_batch": "decode batch",
    "prefill_batch": "requests per prefill batch",
    "admitted": "arrivals per iteration",
    "aborted": "aborts per iteration",
}


@dataclass(frozen=True)
class Cost:
    bench: BenchName
    median_s: float
    net: NetCost | None  # net of control
    forward_s: float
    lookups: float | None  # per iteration (counted)
    created: float | None

    @property
    def strategy(self) -> str:
        return self.bench.strategy

    @property
    def pattern(self) -> str:
        return self.bench.get("pattern") or ""

    def share(self, value_s: float) -> float:
        return value_s / self.forward_s if self.forward_s else float("nan")


@dataclass(frozen=True)
class Case:
    key: str  # 'scenario=prefill-dspark' (+ swept key=value)
    name: str  # the preset
    description: str
    modified: tuple[str, ...]
    values: dict[str, Any]
    sources: dict[str, str]
    queues: dict[str, QueueStat]
    costs: list[Cost]
    gc: dict[str, GcRates]  # strategy -> rates (collector enabled, per_field)

    @property
    def forward_ms(self) -> float:
        return float(self.values.get("forward_ms", 0.0))

    @property
    def title(self) -> str:
        extra = self.key.split("/", 1)[1] if "/" in self.key else ""
        return (
            self.name
            + (f" ({extra})" if extra else "")
            + (" [modified preset]" if self.modified else "")
        )

    def cost(self, strategy: str, pattern: str) -> Cost | None:
        return next(
            (c for c in self.costs if c.strategy == strategy and c.pattern == pattern), None
        )


def case_params(key: str) -> dict[str, str]:
    """'scenario=decode-dspark/decode_batch=64' -> {'scenario': ..., 'decode_batch': '64'}."""
    return dict(part.split("=", 1) for part in key.split("/") if "=" in part)


def ordered_cases(keys: Any, config: dict[str, Any]) -> list[str]:
    """Scenario cases in the configuration's scenario order, then by key."""
    order = [str(x) for x in config.get("scenarios", ())]

    def position(key: str) -> tuple[int, str]:
        name = case_params(key).get("scenario", "")
        return (order.index(name) if name in order else len(order), key)

    return sorted(set(keys), key=position)


def _case_info(run: RunData) -> dict[str, dict[str, Any]]:
    cases = run.manifest.get("cases")
    return {c["key"]: c for c in cases} if isinstance(cases, list) else {}


def cases(run: RunData) -> list[Case]:
    data = run.suite("step")
    if data is None:
        return []
    info = _case_info(run)
    net = net_of(data.values, reference=REFERENCE, kind="step")
    gc_data = run.suite("gc")
    out = []
    keys = ordered_cases(
        (BenchName.parse(n).without("pattern").condition for n in data.values), run.config
    )
    for key in keys:
        meta = info.get(key, {})
        values = dict(meta.get("values", {}))
        forward_s = float(values.get("forward_ms", 0.0)) / 1e3
        costs = []
        for name in sorted(data.values):
            bench = BenchName.parse(name)
            if bench.kind != "step" or bench.without("pattern").condition != key:
                continue
            counts = data.extras.counts.get(name)
            per = counts.iterations if counts and counts.iterations else 0
            costs.append(
                Cost(
                    bench=bench,
                    median_s=stats.median(data.values[name]),
                    net=net.get(name),
                    forward_s=forward_s,
                    lookups=counts.lookups / per if per and counts else None,
                    created=counts.created / per if per and counts else None,
                )
            )
        queues = data.extras.queues.get(key)
        out.append(
            Case(
                key=key,
                name=str(meta.get("scenario", key.split("/")[0].removeprefix("scenario="))),
                description=str(meta.get("description", "")),
                modified=tuple(meta.get("modified", ())),
                values=values,
                sources=dict(meta.get("sources", {})),
                queues=queue_stats(queues.lengths) if queues else {},
                costs=costs,
                gc=_gc_of(gc_data, key),
            )
        )
    return out


def _gc_of(data: SuiteData | None, key: str) -> dict[str, GcRates]:
    if data is None:
        return {}
    out = {}
    for name, rates in data.gc_rates.items():
        bench = BenchName.parse(name)
        if bench.get("gc") == "enabled" and bench.without("gc").condition == key:
            out[bench.strategy] = rates
    return out


# -- numbers as text ----------------------------------------------------------------------------


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


def _difference(run: RunData, a: Cost, b: Cost) -> NetCost | None:
    """a minus b per round (paired), in seconds."""
    data = run.suite("step")
    if data is None:
        return None
    va, vb = data.values.get(str(a.bench)), data.values.get(str(b.bench))
    if not va or not vb or len(va) != len(vb) or len(va) < 2:
        return None
    diffs = [x - y for x, y in zip(va, vb, strict=True)]
    lo, hi = stats.bootstrap_median_ci(diffs)
    return NetCost(median=stats.median(diffs), ci_low=lo, ci_high=hi, n=len(diffs))


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
        diff = _difference(run, c, base)
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
        out.append(text + ".")
    return out


def verdict_paragraph(run: RunData, case: Case) -> str:
    """One paragraph a reviewer can paste (plain text; renderers escape it). Every saving it
    states is the paired per-round difference with its interval, and is called significant
    only where that interval excludes zero."""
    source = case.sources.get("forward_ms", "")
    head = f"{case.title}: forward {case.forward_ms:,.0f} ms" + (f" ({source})" if source else "")
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
    if run.targets:
        return " ".join([*parts, *_target_sentences(run, case, pr)])
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
        diff = _difference(run, pr, alt)
        if alt is best:
            best_saving = diff
        if diff is None:
            parts.append(f"{label} ({alt.strategy}, {alt.pattern}) costs {net_text(alt)}.")
            continue
        verb = "saves" if diff.median >= 0 else "costs"
        parts.append(
            f"{label} ({alt.strategy}, {alt.pattern}) costs {net_text(alt)}: switching {verb} "
            f"{interval_us(diff) if diff.median >= 0 else interval_us(_negated(diff))} per "
            f"iteration, paired per round ({pct(pr.share(abs(diff.median)))} of the forward; "
            f"{_difference_words(diff)})."
        )
    cached = case.cost(run.baseline, "cached")
    if cached is not None and cached.bench != pr.bench:
        diff = _difference(run, pr, cached)
        if diff is not None:
            effect = "saves" if diff.median >= 0 else "costs"
            shown = diff if diff.median >= 0 else _negated(diff)
            parts.append(
                f"For {run.baseline}, looking the state up once per call site instead of once per "
                f"field {effect} {interval_us(shown)} per iteration ({_difference_words(diff)})."
            )
    if best_saving is not None and best_saving.significant and best_saving.median > 0:
        saving = best_saving.median
        matters_below_ms = saving / MATERIAL_SHARE * 1e3
        where = (
            "so it matters here"
            if matters_below_ms >= case.forward_ms
            else "so at this forward time it does not"
        )
        parts.append(
            f"The largest saving reaches {MATERIAL_SHARE:.0%} of a forward (the level at which "
            f"scheduler wins get merged) only for forwards shorter than {matters_below_ms:,.2f} ms, "
            f"{where}."
        )
    return " ".join(parts)


def _negated(diff: NetCost) -> NetCost:
    return NetCost(median=-diff.median, ci_low=-diff.ci_high, ci_high=-diff.ci_low, n=diff.n)


def sweep_sentences(run: RunData, all_cases: Sequence[Case]) -> list[str]:
    """With a sweep: per scenario, where per_field vs cached becomes significant for the
    baseline, and where the cheapest design changes."""
    key = run.config.get("sweep_key")
    if not key:
        return []
    out = []
    for name in dict.fromkeys(c.name for c in all_cases):
        mine = [c for c in all_cases if c.name == name]
        if len(mine) < 2:
            continue
        sig_at = []
        leaders = []
        for c in mine:
            value = case_params(c.key).get(key, "?")
            pr = c.cost(run.baseline, run.pattern_of(run.baseline))
            cached = c.cost(run.baseline, "cached")
            if pr is not None and cached is not None:
                diff = _difference(run, pr, cached)
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
        values = [case_params(c.key).get(key, "?") for c in mine]
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


# -- the request class --------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestRow:
    """One strategy's request class as its workers built it."""

    strategy: str
    model: str
    attributes: int
    dict_bytes: int
    tracked_values: int
    construct_ns: float  # median over repetitions (all workers)
    construct_ci_ns: tuple[float, float]


def request_rows(run: RunData) -> list[RequestRow]:
    data = run.suite("step")
    if data is None:
        return []
    rows = []
    for strategy in run.strategy_names():
        f = data.extras.requests.get(strategy)
        if f is None or not f.construct_ns:
            continue
        lo, hi = (
            stats.bootstrap_median_ci(f.construct_ns)
            if len(f.construct_ns) > 1
            else (f.construct_ns[0], f.construct_ns[0])
        )
        rows.append(
            RequestRow(
                strategy,
                f.model,
                f.attributes,
                f.dict_bytes,
                f.tracked_values,
                stats.median(f.construct_ns),
                (lo, hi),
            )
        )
    return rows


REQUEST_HEAD = (
    "strategy",
    "request model",
    "attributes",
    "__dict__ bytes",
    "GC-tracked values",
    "construction µs [95% CI]",
)


def _request_cells(r: RequestRow) -> list[str]:
    lo, hi = r.construct_ci_ns
    return [
        r.model,
        f"{r.attributes:,}",
        f"{r.dict_bytes:,}",
        f"{r.tracked_values:,}",
        f"{r.construct_ns / 1e3:,.2f} [{lo / 1e3:,.2f}, {hi / 1e3:,.2f}]",
    ]


def request_table(run: RunData) -> list[Html]:
    rows = request_rows(run)
    if not rows:
        return []
    body = [(td(tag("code", r.strategy)), *(num(x) for x in _request_cells(r))) for r in rows]
    return [
        tag("h3", "The request class"),
        tag(
            "p",
            "Each strategy's request class as the step suite's workers built it: attributes after "
            "__init__, sys.getsizeof of the instance dict, attribute values the cyclic collector "
            "tracks, and the time to build one request (median over batches, collector paused). "
            "A revision (--target) brings its own Req.",
            class_="note",
        ),
        table(REQUEST_HEAD, body),
    ]


def request_markdown(run: RunData) -> list[str]:
    from bench.report.markdown import md_table

    rows = request_rows(run)
    if not rows:
        return []
    body = [[f"`{r.strategy}`", *(esc_md(x) for x in _request_cells(r))] for r in rows]
    return [
        "**The request class** (as built by the workers):",
        "",
        md_table(list(REQUEST_HEAD), body),
        "",
    ]


# -- terminal -----------------------------------------------------------------------------------


def cost_lines(data: SuiteData) -> list[str]:
    """The terminal's per-scenario costs net of control (the step suite's extra lines)."""
    net = net_of(data.values, reference=REFERENCE, kind="step")
    if not net:
        return []
    lines = ["\n   cost per iteration net of control       median [95% CI]"]
    for name in sorted(net):
        c = net[name]
        lines.append(
            f"   {name:<58} {c.median * 1e6:9.1f} µs [{c.ci_low * 1e6:,.1f}, {c.ci_high * 1e6:,.1f}]"
        )
    return lines


# -- HTML ---------------------------------------------------------------------------------------


def _queue_table(case: Case) -> Html:
    rows = [
        (
            QUEUE_TITLES.get(name, name),
            num(f"{q.mean:,.2f}"),
            num(f"{q.p99:,.1f}"),
            num(f"{q.max:,.0f}"),
        )
        for name, q in ((n, case.queues[n]) for n in QUEUES if n in case.queues)
    ]
    return table(("queue", "mean", "p99", "max"), rows)


def _cost_table(run: RunData, case: Case) -> Html:
    rows = []
    for c in sorted(case.costs, key=lambda c: (c.pattern, c.net.median if c.net else -1.0)):
        gc = case.gc.get(c.strategy)
        share = "" if c.net is None else pct(c.share(c.net.median))
        if c.net is not None:
            share += f" [{pct(c.share(c.net.ci_low))}, {pct(c.share(c.net.ci_high))}]"
        rows.append(
            (
                td(
                    tag("code", c.strategy),
                    " (reference)"
                    if run.is_reference(c.strategy)
                    else " (A/A twin)"
                    if run.is_twin(c.strategy)
                    else "",
                    class_="twin" if run.is_twin(c.strategy) else None,
                ),
                c.pattern,
                num(fmt(c.median_s)),
                num(
                    net_text(c)
                    if c.net
                    else ("0 (reference)" if run.is_reference(c.strategy) else "n/a")
                ),
                num(share),
                num("" if c.lookups is None else f"{c.lookups:,.1f}"),
                num("" if c.created is None else f"{c.created:,.2f}"),
                num(
                    ""
                    if gc is None or c.pattern != run.pattern_of(c.strategy)
                    else f"{gc.collections_total_per_kstep:,.1f} / {gc.pause_ms_per_kstep:,.2f} ms"
                ),
            )
        )
    head = (
        "strategy",
        "pattern",
        "iteration (median)",
        "net of control [95% CI]",
        "share of forward [95% CI]",
        "lookups / iteration",
        "states created / iteration",
        "GC per 1,000 iterations (collections / pause)",
    )
    return table(head, rows)


def _params_table(case: Case) -> Html:
    rows = [
        (
            td(tag("code", k)),
            str(v),
            td("modified", class_="slower") if k in case.modified else "",
            case.sources.get(k, ""),
        )
        for k, v in case.values.items()
    ]
    return tag(
        "details",
        tag("summary", "parameters and their sources"),
        table(("parameter", "value", "", "source"), rows),
    )


def scenario_section(run: RunData, all_cases: Sequence[Case]) -> Html | None:
    if not all_cases:
        return None
    body: list[Html] = [
        tag(
            "p",
            "Cost per scheduler iteration net of control (the same loop with call sites that touch "
            "nothing: the harness's own cost), paired per round, median and bootstrap 95% CI; as a "
            "share of the scenario's forward time; lookups and states created are counted exactly "
            "over untimed iterations. Queues emerge from arrivals and residence times.",
            class_="note",
        )
    ]
    body += request_table(run)
    sweep = sweep_sentences(run, all_cases)
    if sweep:
        body += [
            tag("h3", "Across the sweep"),
            tag("ul", *(tag("li", s) for s in sweep), class_="verdict"),
        ]
    for case in all_cases:
        body += [
            tag("h3", case.title, id=f"scenario-{case.key.replace('/', '-').replace('=', '-')}"),
            tag("p", case.description, class_="note"),
            tag("p", verdict_paragraph(run, case), class_="verdict"),
            tag("h4", "Queues (per iteration)"),
            _queue_table(case),
            tag("h4", "Cost per iteration"),
            _cost_table(run, case),
            _params_table(case),
        ]
    return section("scenarios", "Scenarios", *body)


# -- markdown -----------------------------------------------------------------------------------


def scenario_markdown(run: RunData, all_cases: Sequence[Case]) -> list[str]:
    from bench.report.markdown import md_table

    if not all_cases:
        return []
    out = [
        "**Per scenario** (cost per iteration net of `control`, median [95% CI]; share of the stated forward):",
        "",
    ]
    rows = []
    designs: list[tuple[str, str]] = [(t, "as_written") for t in run.targets] or [
        (run.baseline, "per_field"),
        (run.baseline, "cached"),
        REVIEW,
        ("declared", "cached"),
    ]
    for case in all_cases:
        for who in designs:
            c = case.cost(*who)
            if c is None or c.net is None:
                continue
            q = case.queues
            queues = ", ".join(f"{QUEUE_SHORT[n]} {q[n].mean:,.1f}" for n in QUEUE_SHORT if n in q)
            rows.append(
                [
                    esc_md(case.title),
                    f"`{c.strategy}` {esc_md(c.pattern)}",
                    esc_md(net_text(c)),
                    esc_md(pct(c.share(c.net.median))),
                    esc_md(
                        "" if c.lookups is None else f"{c.lookups:,.1f} / {c.created or 0:,.2f}"
                    ),
                    esc_md(queues),
                ]
            )
    if rows:
        out += [
            md_table(
                [
                    "scenario",
                    "design",
                    "net µs / iteration",
                    "share of forward",
                    "lookups / created per iteration",
                    "mean queues",
                ],
                rows,
            ),
            "",
        ]
    for case in all_cases:
        out += [f"- {esc_md(verdict_paragraph(run, case))}"]
    out += [f"- {esc_md(s)}" for s in sweep_sentences(run, all_cases)]
    out.append("")
    if run.targets:
        out += request_markdown(run)
        out += target_markdown(run)
    return out


def target_markdown(run: RunData) -> list[str]:
    """The revisions measured: path, full hash, where the state lives, what is not modelled."""
    out = ["**Revisions** (`--target`):", ""]
    for name, meta in run.targets.items():
        commit = meta.get("commit") or "working tree"
        out.append(
            f"- `{name}`: {esc_md(str(meta.get('path', '')))} at {esc_md(str(commit))}; "
            f"{esc_md(str(meta.get('home', '')))}; forward batch: "
            f"{esc_md(str(meta.get('forward_batch', '')))}"
        )
        for note in meta.get("not_modelled") or []:
            out.append(
                f"  - not modelled at {esc_md(str(meta.get('short', name)))}: {esc_md(str(note))}"
            )
    return [*out, ""]


# -- machine-readable ---------------------------------------------------------------------------


def scenario_summary(run: RunData, all_cases: Sequence[Case]) -> dict[str, Any]:
    """scenarios.json: per case, queue statistics (keys named after the queue: inflight_mean,
    inflight_p99, ...), and per design the cost net of control, its share of the forward,
    lookups and creations per iteration and GC per 1,000 iterations. Derived (re-rendering a
    run rewrites it)."""
    out: dict[str, Any] = {"baseline": run.baseline, "reference": REFERENCE, "cases": []}
    for case in all_cases:
        queues: dict[str, float] = {}
        for name, q in case.queues.items():
            queues.update({f"{name}_mean": q.mean, f"{name}_p99": q.p99, f"{name}_max": q.max})
        designs = []
        for c in case.costs:
            gc = case.gc.get(c.strategy) if c.pattern == run.pattern_of(c.strategy) else None
            designs.append(
                {
                    "strategy": c.strategy,
                    "pattern": c.pattern,
                    "iteration_us": c.median_s * 1e6,
                    "net_us": None if c.net is None else c.net.median * 1e6,
                    "net_ci_us": None
                    if c.net is None
                    else [c.net.ci_low * 1e6, c.net.ci_high * 1e6],
                    "share_of_forward": None if c.net is None else c.share(c.net.median),
                    "lookups_per_iteration": c.lookups,
                    "states_created_per_iteration": c.created,
                    "gc_collections_per_kiteration": None
                    if gc is None
                    else gc.collections_total_per_kstep,
                    "gc_pause_ms_per_kiteration": None if gc is None else gc.pause_ms_per_kstep,
                }
            )
        out["cases"].append(
            {
                "key": case.key,
                "scenario": case.name,
                "modified": list(case.modified),
                "forward_ms": case.forward_ms,
                "queues": queues,
                "designs": designs,
                "verdict": verdict_paragraph(run, case),
            }
        )
    out["sweep"] = sweep_sentences(run, all_cases)
    out["request_class"] = [dataclasses.asdict(r) for r in request_rows(run)]
    out["targets"] = run.targets
    return out


def sweep_figure(run: RunData, st: dict[str, Any]) -> Any:
    """With a sweep: each design's cost net of control against the swept value, one panel per
    scenario (colour: strategy; line: access pattern)."""
    key = run.config.get("sweep_key")
    all_cases = cases(run) if key else []
    if not key or len(all_cases) < 2:
        return None
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from bench.report.plots import label
    from bench.report.verdict import axis_values

    names = list(dict.fromkeys(c.name for c in all_cases))
    values = axis_values(case_params(c.key).get(str(key), "") for c in all_cases)
    fig, axes = plt.subplots(
        1, len(names), figsize=(5.4 * len(names) + 2, 4.4), squeeze=False, layout="constrained"
    )
    for ax, name in zip(axes[0], names, strict=True):
        mine = {case_params(c.key).get(str(key), ""): c for c in all_cases if c.name == name}
        for strategy in st:
            if run.is_reference(strategy):
                continue
            for pattern, style in (("per_field", "-"), ("cached", "--")):
                xs, ys, lo, hi = [], [], [], []
                for i, v in enumerate(values):
                    c = mine[v].cost(strategy, pattern) if v in mine else None
                    if c is None or c.net is None:
                        continue
                    xs.append(i)
                    ys.append(c.net.median * 1e6)
                    lo.append(max(0.0, (c.net.median - c.net.ci_low) * 1e6))
                    hi.append(max(0.0, (c.net.ci_high - c.net.median) * 1e6))
                if xs:
                    ax.errorbar(
                        xs,
                        ys,
                        yerr=[lo, hi],
                        color=st[strategy].color,
                        marker=st[strategy].marker,
                        linestyle=style,
                        capsize=2,
                        markersize=4,
                        linewidth=1.1,
                    )
        ax.set_xticks(range(len(values)), [label(v) for v in values])
        ax.set_xlabel(label(key))
        ax.set_title(label(name))
        ax.axhline(0, color="grey", linewidth=0.6)
    axes[0][0].set_ylabel("µs per iteration net of control (median, 95% CI)")
    handles = [
        Line2D([], [], color=st[n].color, marker=st[n].marker, label=label(n))
        for n in st
        if not run.is_reference(n)
    ]
    handles += [
        Line2D([], [], color="grey", linestyle="-", label="per_field"),
        Line2D([], [], color="grey", linestyle="--", label="cached"),
    ]
    fig.legend(handles=handles, loc="outside right upper", frameon=False)
    fig.suptitle(f"Cost per iteration against {label(key)}")
    return fig
