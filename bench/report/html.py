"""report.html: one self-contained page (inline CSS, plots as data: URIs, no JavaScript, no
network request of any kind). Markup comes from bench.report.markup, which escapes by default.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from bench.report import pr, precision, viewspec
from bench.report.headline import Metric
from bench.report.load import RunData
from bench.report.markup import Html, Td, join, num, page, pre, section, table, tag, td, void
from bench.report.plots import Plot
from bench.report.profile import profile_section
from bench.report.text import TIMES, esc_html, fmt, fmt_ci, fmt_p, fmt_ratio
from bench.report.verdict import Entry, Family, Verdict, axis_values, describe_family
from bench.report.views import cross_suite
from bench.runformat.schema import REGIME_WORDS, StrategyMeta
from bench.stats.derive import Summary


def verdict_cell(
    verdict: str | None, is_baseline: bool, reason: str = "", twin: bool = False
) -> Html:
    """faster / slower only where classify() found a difference; the reason on hover."""
    title = reason or None
    if is_baseline:
        return td("baseline", class_="muted")
    if twin:
        return td("A/A twin (noise floor)", class_="twin", title=title)
    if verdict == "faster":
        return td("▼ faster", class_="faster", title=title)
    if verdict == "slower":
        return td("▲ slower", class_="slower", title=title)
    return td(verdict or "", title=title)


def figure(plot: Plot) -> Html:
    uri = "data:image/png;base64," + base64.b64encode(plot.png).decode("ascii")
    return tag(
        "figure",
        void("img", src=uri, alt=plot.alt or plot.title),
        tag(
            "figcaption",
            plot.title,
            " (vector copy: ",
            tag("code", f"plots/{plot.name}.svg"),
            ")",
        ),
    )


# --- header and environment ----------------------------------------------------------------


def gc_mode_text(run: RunData) -> str:
    """The collector's modes per suite, as the benchmarks' pyperf metadata records them."""
    parts = []
    for data in run.with_data():
        modes = sorted(set(data.gc_modes.values()))
        if modes:
            parts.append(f"{data.name}: {', '.join(modes)}")
    return "; ".join(parts) or "enabled"


# Parameters shown in the environment table; the rest are behind "all parameters".
KEY_PARAMS = (
    "scenarios",
    "scenario_overrides",
    "sweep_key",
    "sweep_values",
    "lookup_sizes",
    "scaling_sizes",
    "patterns",
    "workers",
    "values",
    "seed",
)


def _param(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def env_section(run: RunData) -> Html:
    env = run.environment
    device = env.device + (f" ({env.device_name})" if env.device_name else "")
    cpu = env.cpu + (f" ({env.cpu_count} logical CPUs)" if env.cpu_count else "")
    if env.llc_bytes:
        cpu += f", last-level cache {env.llc_bytes >> 20} MiB"
    if env.cold_sweep_env_mb:
        cpu += f"; cold sweep {env.cold_sweep_env_mb} MiB (set for the machine)"
    rows = [
        ("Python", f"{env.python} {env.python_implementation}".strip()),
        ("torch", env.torch),
        ("pyperf", env.pyperf),
        ("device", device),
        ("CPU", cpu),
        (
            "load at start",
            "-" if env.load_avg_1min is None else f"{env.load_avg_1min:.2f} (1-minute average)",
        ),
        ("platform", env.platform),
        ("commit", env.git_commit),
        ("request class", run.requests_text),
        ("GC mode", gc_mode_text(run)),
        ("baseline", run.baseline),
        ("run status", run.status),
    ]
    config = run.config.flat()
    key_rows = [(k, _param(config[k])) for k in KEY_PARAMS if k in config]
    all_rows = [(k, _param(v)) for k, v in sorted(config.items())]
    return section(
        "env",
        "Environment",
        tag(
            "div",
            table(None, [(td(k, class_="rowhead"), v) for k, v in rows]),
            table(None, [(td(k, class_="rowhead"), v) for k, v in key_rows]),
            class_="cols",
        ),
        tag(
            "details",
            tag("summary", f"All {len(all_rows)} parameters (manifest config)"),
            table(("parameter", "value"), all_rows),
        ),
    )


def strategies_section(run: RunData) -> Html:
    rows = []
    for name in run.strategy_names():
        meta = run.strategies.get(name) or StrategyMeta()
        rows.append(
            (
                td(tag("code", name)),
                meta.description,
                meta.source,
                "yes" if meta.external else "no",
                "yes" if meta.thread_safe_create else "no",
                td(tag("code", meta.source_sha256[:12])),
            )
        )
    head = ("strategy", "description", "source", "external", "thread-safe create", "sha256")
    return section("strategies", "Strategies", table(head, rows))


# --- verdict -------------------------------------------------------------------------------


def small(text: object) -> Html:
    return tag("span", text, class_="small")


def headline_table(metrics: list[Metric], run: RunData) -> Html:
    strategies = [s for s in run.strategy_names() if any(s in m.cells for m in metrics)]
    rows = []
    for s in strategies:
        twin = run.is_twin(s)
        row: list[object] = [
            td(tag("code", s), " (A/A twin)" if twin else "", class_="twin" if twin else None)
        ]
        for m in metrics:
            cell = m.cells.get(s)
            if cell is None:
                row.append("")
            elif cell.baseline or cell.ratio is None:
                note = "baseline" if cell.baseline else "no ratio"
                row.append(num(join([fmt(cell.value, m.unit), void("br"), small(note)])))
            else:
                word = m.word(cell) + (" ~" if cell.noisy else "")
                ci = "" if cell.ci_low is None else f"[{cell.ci_low:.3f}, {cell.ci_high:.3f}]"
                cls = (
                    "num"
                    + (" faster" if cell.significant and cell.ratio < 1 else "")
                    + (" slower" if cell.significant and cell.ratio > 1 else "")
                )
                parts = [fmt_ratio(cell.ratio), void("br"), small(ci), void("br"), small(word)]
                row.append(td(*parts, class_=cls, title=cell.reason or None))
        rows.append(row)
    notes = tag("ul", *(tag("li", tag("b", m.title), ": ", m.note) for m in metrics))
    return join(
        [
            tag(
                "p",
                f"Ratios against {run.baseline} with 95% CI (lower is better). "
                "Coloured and worded faster / slower only where the difference is significant "
                "(the CI, from a bootstrap over worker processes and then rounds, excludes 1) "
                "and relevant (larger than that benchmark family's noise floor: how far the "
                "A/A twin, a verbatim copy of the baseline, strays, and at least 2%); hover a "
                "cell for the reason. ~ marks a noisy measurement (IQR over 10% of the median).",
                class_="note",
            ),
            table(["strategy", *(m.title for m in metrics)], rows),
            notes,
        ]
    )


def _entry_td(e: Entry, baseline: str) -> Td:
    mark = ""
    if e.strategy == baseline:
        mark = " (baseline)"
    elif e.ratio is not None:
        mark = f" {e.ratio:.2f}{TIMES}"
    cls = "faster" if e.verdict == "faster" else "slower" if e.verdict == "slower" else None
    sym = " ▼" if e.verdict == "faster" else " ▲" if e.verdict == "slower" else ""
    ref = " (reference)" if e.reference else ""
    return td(
        tag("code", e.strategy),
        ref,
        " ",
        fmt(e.value, e.unit),
        tag("span", mark + sym, class_=cls),
    )


def family_block(f: Family, baseline: str, collapsed: bool = False) -> Html:
    depth = max(len(r.entries) for r in f.rankings)
    rows = []
    for i in range(depth):
        row: list[object] = [num(i + 1)]
        for r in f.rankings:
            row.append(_entry_td(r.entries[i], baseline) if i < len(r.entries) else "")
        rows.append(row)
    head = ["rank", *(r.condition or f.title for r in f.rankings)]
    sentences = describe_family(f, baseline)
    title = f.title + (f" by {f.axis}" if f.axis and len(f.rankings) > 1 else "")
    ranking = table(head, rows)
    if collapsed:  # the sentences stay visible, the table folds away
        ranking = tag("details", tag("summary", "ranking table"), ranking)
    return join(
        [
            tag("h3", title),
            tag("ul", *(tag("li", s) for s in sentences), class_="verdict"),
            ranking,
        ]
    )


def verdict_section(verdict: Verdict, metrics: list[Metric], run: RunData) -> Html:
    if not verdict.families and not metrics:
        return section("verdict", "Verdict", tag("p", "No results to judge in this run."))
    return section(
        "verdict",
        "Verdict",
        tag(
            "p",
            "Computed from the data in this run folder. Rankings are lowest first; ▼/▲ mark "
            f"significant differences against {verdict.baseline}. control stores nothing and is "
            "the harness's own cost: it is ranked but never named best.",
            class_="note",
        ),
        tag("h3", "Headline"),
        headline_table(metrics, run),
        *(family_block(f, verdict.baseline, collapsed=not f.featured) for f in verdict.families),
    )


# --- suites --------------------------------------------------------------------------------


def summary_table(rows: list[Summary], baseline: str) -> Html:
    body: list[Sequence[object]] = [
        (
            td(s.condition, class_="twin" if s.twin else None),
            td(
                tag("code", s.strategy),
                " (A/A twin)" if s.twin else "",
                class_="twin" if s.twin else None,
            ),
            num(s.n),
            num(fmt(s.median, s.unit)),
            num(fmt_ci(s.ci_low, s.ci_high, s.unit) if s.n > 1 else ""),
            num("" if s.ratio is None else fmt_ratio(s.ratio, s.ratio_low, s.ratio_high)),
            num(fmt_p(s.p_value)),
            verdict_cell(s.verdict, s.strategy == baseline, s.reason, s.twin),
            "noisy" if s.noisy else "",
        )
        for s in rows
    ]
    head = (
        "benchmark",
        "strategy",
        "n",
        "median",
        "95% CI",
        f"ratio vs {baseline} [95% CI]",
        "p",
        "verdict",
        "noisy",
    )
    return table(head, body)


def _order(rows: list[Summary], baseline: str) -> list[Summary]:
    """Per condition: the baseline, its A/A twins (the noise floor), then the others."""
    return sorted(rows, key=lambda s: (s.condition, s.strategy != baseline, not s.twin, s.strategy))


def summary_tables(
    summaries: list[Summary], baseline: str, split: str | tuple[str, ...] | None
) -> list[Html]:
    """One table per kind, or per value of the `split` parameter(s) (numbers ascending, the
    first parameter outermost)."""
    out: list[Html] = []
    if split is not None:
        keys = (split,) if isinstance(split, str) else split
        combos: list[tuple[str, ...]] = [()]
        for key in keys:
            found = axis_values(v for v in (s.bench.get(key) for s in summaries) if v is not None)
            combos = [(*c, v) for c in combos for v in found]
        for combo in combos:
            want = dict(zip(keys, combo, strict=True))
            rows = [s for s in summaries if s.bench.matches(**want)]
            if rows:
                title = " ".join(f"{k}={v}" for k, v in want.items())
                out += [tag("h3", title), summary_table(_order(rows, baseline), baseline)]
        return out
    for kind in sorted({s.kind for s in summaries}):
        rows = [s for s in summaries if s.kind == kind]
        out += [tag("h3", kind), summary_table(_order(rows, baseline), baseline)]
    return out


def suite_section(name: str, run: RunData, plots: list[Plot]) -> Html:
    data = run.suites[name]
    spec = viewspec.view(name)
    title = spec.title if spec is not None else name
    status = data.status
    badge_cls = "badge" + (" bad" if status == "failed" else "" if status == "done" else " warn")
    head: list[Html] = [
        tag(
            "p",
            tag("span", status, class_=badge_cls),
            f" {spec.note}" if spec is not None else "",
            f" Wall time {data.wall_s:,.1f} s." if data.wall_s is not None else "",
            class_="note",
        )
    ]
    if data.failures or data.worker_errors:
        head.append(
            tag(
                "p",
                f"{len(data.failures)} strategy failure(s), {len(data.worker_errors)} worker "
                "error(s): see ",
                Html('<a href="#failures">failures</a>'),
                ".",
                class_="banner",
            )
        )
    if not data.has_data:
        return section(name, title, *head, tag("p", f"No results: this suite is {status}."))
    body: list[Html] = [figure(p) for p in plots if p.suite == name]
    split = spec.table_split if spec is not None else None
    body += summary_tables(data.summaries, run.baseline, split)
    if spec is not None:
        body += spec.report_extra(data)
    body += precision.html_table(data)
    return section(name, title, *head, *body)


def failures_section(run: RunData) -> Html | None:
    items: list[Html] = []
    for name, data in run.suites.items():
        if data.status not in ("done", "partial"):
            items.append(tag("h3", f"{name}: {data.status}"))
            items.append(tag("p", "This suite has no results (not run, interrupted or failed)."))
        if data.failures or data.worker_errors:
            items.append(tag("h3", f"{name}: {len(data.failures) + len(data.worker_errors)}"))
            for strategy, err in sorted(data.failures.items()):
                items.append(tag("p", "strategy ", tag("code", strategy), " failed:"))
                items.append(pre(err))
            for err in data.worker_errors:
                items.append(tag("p", "worker error:"))
                items.append(pre(err))
    if not items:
        return None
    return section("failures", "Failures", *items)


def reproduce_section(run: RunData) -> Html:
    return section(
        "reproduce",
        "Reproduce",
        tag("p", "The exact command that produced this run (from the repository root):"),
        pre(run.command),
        tag(
            "p", "Re-render this report from the run folder without measuring again.", class_="note"
        ),
    )


def selfcheck_section(run: RunData) -> Html | None:
    """The plain-timeit cross-check of the lookup suite's warm get_hit (bench/orchestration/selfcheck.py)."""
    check = run.selfcheck
    if check is None:
        return None
    rows = []
    for strategy, mine in check.timeit_ns.items():
        suite = check.suite_ns.get(strategy)
        agreement = check.agreement(strategy)
        rows.append(
            (
                td(tag("code", f"get_hit {strategy}")),
                num(f"{mine:.1f} ns"),
                num("" if suite is None else f"{suite:.1f} ns"),
                num("" if agreement is None else f"{agreement:.3f}"),
                "" if agreement is None else check.word(agreement),
            )
        )
    for regime, mine in check.scan_timeit_us.items():
        suite = check.scan_suite_us.get(regime)
        agreement = check.scan_agreement(regime)
        rows.append(
            (
                td(
                    f"decode scan, {REGIME_WORDS.get(regime, regime)}"
                    + (", net of control's loop" if check.scan_control_us else "")
                ),
                num(f"{mine:.1f} µs"),
                num("" if suite is None else f"{suite:.1f} µs"),
                num("" if agreement is None else f"{agreement:.3f}"),
                "" if agreement is None else check.word(agreement),
            )
        )
    head = ("figure", "timeit", "suite", "timeit / suite", "")
    return section(
        "selfcheck",
        "Self-check: the suite against plain timeit",
        tag(
            "p",
            f"get_hit at live={check.live:,} (request model {check.request_model}), timed by "
            f"python -m bench selfcheck with timeit.Timer over the requests in allocation order "
            f"(median of {check.repeats} autoranged repeats in each of {check.hash_seeds} "
            f"processes, hash seeds as the suite's workers), none of the suite's measuring code; "
            f"agreement within ±{check.tolerance:.0%}.",
            class_="note",
        ),
        table(head, rows),
    )


def pr_section(run: RunData, plots: list[Plot] | None = None) -> Html:
    """The PR section first (bench.report.pr): the overview figure (bench.report.overview, the
    table drawn), the self-check's warnings, the table, the verdict, the protocol, the suites'
    lines."""

    summary = pr.build(run)
    rows = [[td(c) for c in pr.cells(summary, r)] for r in summary.rows]
    first = [figure(p) for p in plots or [] if p.suite == "summary"]
    # within a 1400x900 window: the figure, what must be known before trusting it, the table
    # and the verdict; how it was measured and the suites' own lines after them
    parts: list[Any] = [
        *first,
        *(tag("p", tag("strong", "Warning: "), w, class_="banner") for w in summary.warnings),
        table(pr.head(summary), rows) if rows else tag("p", "No scenario measured."),
    ]
    if summary.footnote:
        parts.append(tag("p", pr.FOOTNOTE, class_="note"))
    if summary.verdict:
        parts.append(
            tag("p", tag("strong", "Verdict: "), " ".join(summary.verdict), class_="verdict")
        )
    parts.append(tag("p", summary.protocol, class_="note"))
    parts += [tag("p", line) for line in summary.lines]
    return section("summary", "Summary", *parts)


def render_report(run: RunData, plots: list[Plot], metrics: list[Metric], verdict: Verdict) -> str:
    failures = failures_section(run)
    suites = [suite_section(name, run, plots) for name in run.suites]
    views = [(v.NAME, s) for v in cross_suite() if (s := v.section(run)) is not None]
    check = selfcheck_section(run)
    nav_ids = ["summary", *(name for name, _s in views), "verdict", *run.suites]
    if failures is not None:
        nav_ids.insert(1 + len(views), "failures")
    if check is not None:
        nav_ids.append("selfcheck")
    nav_ids += ["strategies", "profile", "reproduce", "env"]
    nav = tag("nav", *(Html(f'<a href="#{esc_html(i)}">{esc_html(i)}</a>') for i in nav_ids))
    status_cls = "badge" + ("" if run.status == "complete" else " bad")
    header = tag(
        "header",
        tag("h1", "reqstate-bench report"),
        tag(
            "p",
            tag("code", run.path.name),
            " ",
            tag("span", run.status, class_=status_cls),
            f" commit {run.environment.git_commit} · baseline {run.baseline}",
            class_="muted",
        ),
    )
    banner = (
        tag(
            "div", f"This run is {run.status}: some results are missing or failed.", class_="banner"
        )
        if run.status != "complete"
        else Html("")
    )
    # what a reviewer decides with first; the environment and configuration last
    parts: list[Any] = [header, nav, banner, pr_section(run, plots)]
    parts += [section for _name, section in views]
    if failures is not None:
        parts.append(failures)
    parts.append(verdict_section(verdict, metrics, run))
    parts += suites
    if check is not None:
        parts.append(check)
    parts += [
        strategies_section(run),
        profile_section(run),
        reproduce_section(run),
        env_section(run),
    ]
    return page(f"reqstate-bench report: {run.path.name}", join(parts))
