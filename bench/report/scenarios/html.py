"""The scenario view in report.html: per case, the verdict paragraph, queues, the cost table
and the parameters with their sources; the request class per strategy."""

from __future__ import annotations

from collections.abc import Sequence

from bench.core.scheduler import QUEUES
from bench.report.load import RunData
from bench.report.markup import Html, num, section, table, tag, td
from bench.report.placement import placement_html
from bench.report.scenarios.model import request_rows
from bench.report.scenarios.prose import (
    headline_cases,
    net_text,
    pct,
    sweep_sentences,
    verdict_paragraph,
    versus_baseline,
)
from bench.report.text import fmt
from bench.stats.cases import Case, RequestRow

QUEUE_TITLES = {
    "bootstrap": "bootstrap queue",
    "waiting": "waiting queue",
    "inflight": "inflight queue",
    "decode_batch": "decode batch",
    "prefill_batch": "requests per prefill batch",
    "admitted": "arrivals per iteration",
    "aborted": "aborts per iteration",
}


REQUEST_HEAD = (
    "strategy",
    "request model",
    "attributes",
    "__dict__ bytes",
    "GC-tracked values",
    "bytes per request",
    "tracked objects per request",
    "construction µs [95% CI]",
)


def request_cells(r: RequestRow) -> list[str]:
    lo, hi = r.construct_ci_ns
    return [
        r.model,
        f"{r.attributes:,}",
        f"{r.dict_bytes:,}",
        f"{r.tracked_values:,}",
        f"{r.bytes:,.0f}" if r.bytes else "-",
        f"{r.tracked_objects:,.1f}" if r.bytes else "-",
        f"{r.construct_ns / 1e3:,.2f} [{lo / 1e3:,.2f}, {hi / 1e3:,.2f}]",
    ]


def request_table(run: RunData) -> list[Html]:
    rows = request_rows(run)
    if not rows:
        return []
    body = [(td(tag("code", r.strategy)), *(num(x) for x in request_cells(r))) for r in rows]
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


def _queue_table(case: Case) -> Html:
    rows = [
        (
            QUEUE_TITLES.get(name, name),
            num(f"{q.mean:,.2f}"),
            num("too few iterations" if q.p99 is None else f"{q.p99:,.1f}"),
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
                num(versus_baseline(run, case, c)),
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
        "vs baseline, paired [95% CI]",
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
            "nothing: the harness's own cost), paired per round within each worker process, "
            "median and bootstrap 95% CI. Collector pauses are not in it: all schedulers of a "
            "case share one heap, so the young collections run between iterations, untimed, and "
            "the GC section measures each strategy's collections in a heap of its own. As a "
            "share of the scenario's forward time; lookups and states created are counted "
            "exactly over untimed iterations. Queues emerge from arrivals and residence times.",
            class_="note",
        )
    ]
    body += request_table(run)
    if run.targets:
        body += placement_html([(n, m.get("placement")) for n, m in run.targets.items()])
    sweep = sweep_sentences(run, all_cases)
    if sweep:
        body += [
            tag("h3", "Across the sweep"),
            tag("ul", *(tag("li", s) for s in sweep), class_="verdict"),
        ]
    for case in all_cases:
        body += [
            tag(
                "h3", case.title, id=f"scenario-{case.key.text.replace('/', '-').replace('=', '-')}"
            ),
            tag("p", case.description, class_="note"),
            *(
                [tag("p", verdict_paragraph(run, case), class_="verdict")]
                if case in headline_cases(all_cases)
                else []
            ),
            tag("h4", "Queues (per iteration)"),
            _queue_table(case),
            tag("h4", "Cost per iteration"),
            _cost_table(run, case),
            _params_table(case),
        ]
    return section("scenarios", "Scenarios", *body)
