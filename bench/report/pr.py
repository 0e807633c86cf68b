"""The PR section: what a reviewer reads in thirty seconds, in the shape SGLang PRs use for
"Speed Tests and Profiling" (a line of hardware and protocol, the command, one small table,
a few sentences), built once from a loaded run and rendered as summary.md, as the top of
report.html and as the terminal's default output.

    protocol   where and how it was measured, in one line
    rows       one per scenario: the baseline's cost per iteration net of control in cache and
               evicted (the two memory regimes), the candidate's (the review's suggestion, or
               the head revision), the paired difference with its interval, the share of the
               forward, lookups and states created per iteration
    gc, memory one line each, in the same units as the gc suite reports them
    verdict    at most three sentences
    footnote   said once, where a difference's interval includes zero
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from bench.report.load import RunData
from bench.report.scenarios.html import REQUEST_HEAD, request_cells
from bench.report.scenarios.model import STEPS, cases, request_rows
from bench.report.scenarios.prose import headline_cases, net_difference, pct, where_from
from bench.report.text import esc_md, md_code_block, md_table
from bench.report.viewspec import views
from bench.stats.cases import NET_STATISTIC_WORDS, REVIEW, Case, Cost
from bench.stats.derive import NetCost

SAME = "¹"  # marks a difference whose interval includes zero
FOOTNOTE = f"{SAME} the interval includes zero: no difference can be claimed."


def _us(value_s: float) -> str:
    return f"{value_s * 1e6:,.1f}"


def _interval(d: NetCost) -> str:
    """[low, high] in µs, or why there is none (bench.stats.derive.MIN_PROCESSES)."""
    if d.too_few_processes:
        return f"[too few processes: {d.processes}]"
    return f"[{_us(d.ci_low)}, {_us(d.ci_high)}]"


def _net(c: Cost | None) -> str:
    if c is None or c.net is None:
        return "-"
    return f"{_us(c.net.median)} {_interval(c.net)}"


def _delta(d: NetCost | None) -> str:
    if d is None:
        return "-"
    mark = "" if d.significant or d.too_few_processes else SAME
    return f"{d.median * 1e6:+,.1f} {_interval(d)}{mark}"


@dataclass(frozen=True)
class Row:
    scenario: str
    baseline: str  # net µs [CI], in cache
    baseline_cold: str  # the same, evicted
    candidate: str
    cheapest: str  # the cheapest design in cache (default runs): name and net
    delta: str  # candidate minus baseline, paired, in cache
    delta_cold: str
    share: str  # the baseline's (or the change's) share of the forward, in cache
    ops: str  # lookups / states created per iteration, baseline -> candidate


@dataclass(frozen=True)
class PrSummary:
    protocol: str
    command: str
    baseline_label: str
    candidate_label: str
    rows: list[Row]
    lines: list[str] = field(default_factory=list)  # the suites' own lines (GC, memory)
    verdict: list[str] = field(default_factory=list)
    footnote: bool = False
    status: str = "complete"
    failures: list[str] = field(default_factory=list)  # suites that failed or did not finish
    # what the reader must know before trusting the table: the self-check's disagreements
    warnings: list[str] = field(default_factory=list)


def _processes(run: RunData) -> str:
    data = run.suite(STEPS)
    if data is None or not data.families:
        return ""
    rounds = sorted({f.rounds for f in data.families.values()})
    if not rounds:
        return ""
    many = f"{rounds[0]}-{rounds[-1]}" if len(rounds) > 1 else f"{rounds[0]}"
    return f"{many} worker process{'es' if rounds[-1] > 1 else ''} per scenario"


def protocol_line(run: RunData) -> str:
    env = run.environment
    device = "GPU " + (env.device_name or env.device) if env.device == "cuda" else "CPU"
    step = run.config.suite(STEPS)
    parts = [
        f"{device}: {env.cpu} ({env.cpu_count or '?'} cores)",
        f"Python {env.python}",
        f"torch {env.torch}",
        f"commit {env.git_commit}",
        f"requests: {run.requests_text}",
    ]
    if STEPS in run.config.suites:
        procs = _processes(run)
        parts.append(
            (procs + ", " if procs else "")
            + f"every design interleaved iteration by iteration, {step.steps_per_value} "
            "iterations a value, costs net of control paired per round"
        )
    return " · ".join(parts)


def _designs(run: RunData, case: Case) -> list[Cost]:
    """The case's designs with a net cost: not control, not an A/A twin."""
    return [
        c
        for c in case.costs
        if c.net is not None and not run.is_reference(c.strategy) and not run.is_twin(c.strategy)
    ]


def _cheapest_cost(run: RunData, case: Case) -> Cost | None:
    designs = [c for c in _designs(run, case) if c.strategy != run.baseline]
    return min(designs, key=lambda c: c.net.median if c.net else 0.0) if designs else None


def _candidates(run: RunData, case: Case) -> tuple[Cost | None, Cost | None, str]:
    """The baseline and the candidate of one case, and the candidate's label: the head
    revision of a --target run, else the review's design, else (a run without it) the
    cheapest design measured."""
    base = case.cost(run.baseline, run.pattern_of(run.baseline))
    others = [t for t in run.targets if t != run.baseline]
    if others:
        return base, case.cost(others[0], run.pattern_of(others[0])), others[0]
    if any(c.strategy == REVIEW[0] for c in case.costs):
        return base, case.cost(*REVIEW), f"{REVIEW[0]} ({REVIEW[1]})"
    return base, _cheapest_cost(run, case), "the cheapest design"


def _ops(a: Cost | None, b: Cost | None) -> str:
    def one(c: Cost | None) -> str:
        if c is None or c.lookups is None:
            return "-"
        return f"{c.lookups:,.1f} / {c.created or 0:,.2f}"

    return f"{one(a)} → {one(b)}"


def _cheapest(run: RunData, case: Case) -> str:
    best = _cheapest_cost(run, case)
    return "-" if best is None else f"{best.strategy} ({best.pattern}) {_net(best)}"


def _named(c: Cost | None, label: str) -> str:
    """The candidate's cell: its net cost, with its name where the label does not say it."""
    if c is None or not label.startswith("the "):
        return _net(c)
    return f"{c.strategy} ({c.pattern}) {_net(c)}"


def rows(run: RunData) -> tuple[list[Row], bool, str]:
    """Per warm case (its cold twin folded in): the table's row; whether any difference's
    interval includes zero; the candidate's label."""
    all_cases = cases(run)
    out = []
    footnote = False
    label = ""
    for case in headline_cases(all_cases):
        base, cand, label = _candidates(run, case)
        if base is None or base.net is None:
            continue
        cold = case.in_regime(all_cases, "cold")
        base_c, cand_c, _ = _candidates(run, cold) if cold is not None else (None, None, "")
        delta = net_difference(run, cand, base) if cand is not None else None
        delta_c = net_difference(run, cand_c, base_c) if cand_c and base_c else None
        footnote |= any(
            d is not None and not d.significant and not d.too_few_processes
            for d in (delta, delta_c)
        )
        shown = delta.median if (run.targets and delta is not None) else base.net.median
        out.append(
            Row(
                case.title,
                _net(base),
                _net(base_c),
                _named(cand, label),
                "" if run.targets or label.startswith("the ") else _cheapest(run, case),
                _delta(delta),
                _delta(delta_c),
                pct(base.share(shown)),
                _ops(base, cand),
            )
        )
    return out, footnote, label


def compared(run: RunData) -> list[str]:
    """The strategies the section compares: the baseline and the candidate."""
    others = [t for t in run.targets if t != run.baseline]
    return [run.baseline, others[0] if others else REVIEW[0]]


def suite_lines(run: RunData, hook: str = "summary_lines") -> list[str]:
    """Each suite view's lines for the PR section (the gc suite: one GC line, one memory
    line; with hook="summary_verdict" its verdict sentence), in report order."""

    out = []
    for v in views():
        data = run.suite(v.name)
        if data is not None and data.has_data:
            out += getattr(v, hook)(data, compared(run))
    return out


def _where(run: RunData, case: Case, cand: Cost | None) -> str:
    """For a revision: '; where: <the functions its change comes from>' (bench.report.scenarios)."""

    if cand is None or not run.is_target(cand.strategy):
        return ""
    sources = where_from(run, case, run.targets.get(cand.strategy, {}), cand)
    return f"; where: {sources}" if sources else ""


def revisions_line(run: RunData) -> str:
    """A --target run's revisions in one line: name, commit, the group and its home."""
    parts = []
    for name, meta in run.targets.items():
        commit = str(meta.get("commit") or "working tree")[:12]
        home = (
            f"group {meta['group']} ({meta.get('fields', '?')} fields): {meta.get('home', '')}"
            if "group" in meta
            else str(meta.get("home", ""))
        )
        parts.append(f"{name} at {commit}, {home}")
    return "Revisions: " + "; ".join(parts) + "." if parts else ""


def revision_blocks(run: RunData) -> list[str]:
    """A --target run's folded detail, as markdown lines: the request class of each revision
    (twins and control left to report.html) and one bullet per revision (where it was read, its
    forward batch, what the harness does not model)."""

    if not run.targets:
        return []
    out = []
    rows = [r for r in request_rows(run) if r.strategy in run.targets]
    if rows:
        body = [[f"`{r.strategy}`", *(esc_md(x) for x in request_cells(r))] for r in rows]
        out += ["The request class of each revision:", "", md_table(list(REQUEST_HEAD), body), ""]
    for name, meta in run.targets.items():
        text = f"{meta.get('path', '')} at {meta.get('commit') or 'working tree'}"
        if meta.get("forward_batch"):
            text += f"; forward batch: {meta['forward_batch']}"
        notes = [str(n) for n in meta.get("not_modelled") or []]
        placed = meta.get("placement")
        if placed:
            unknown = [f["function"] for f in placed.get("unknown") or []]
            notes.insert(
                0,
                f"the replay placed {placed.get('share', 0.0):.0%} of the group's accesses"
                + (f" (not in the table: {', '.join(unknown)})" if unknown else "")
                + (f"; known cold: {len(placed['cold'])} functions" if placed.get("cold") else ""),
            )
        if notes:
            text += "; not modelled: " + "; ".join(notes)
        out.append(f"- `{name}`: " + esc_md(text))
    return [*out, ""]


def _weight(run: RunData, case: Case) -> float:
    """How much a case weighs in the verdict: the change's share of the forward in a --target
    run (the largest change leads), else the baseline's own share."""
    base, cand, _label = _candidates(run, case)
    if base is None or base.net is None:
        return -1.0
    if run.targets and cand is not None:
        d = net_difference(run, cand, base)
        if d is not None:
            return abs(base.share(d.median))
    return base.share(base.net.median)


def verdict(run: RunData) -> list[str]:
    """At most three sentences: the baseline's cost where it is largest against the forward,
    in both regimes; the candidate's difference there; the GC figure."""
    all_cases = cases(run)
    best: tuple[float, Case, Cost] | None = None
    for case in headline_cases(all_cases):
        base, _cand, _label = _candidates(run, case)
        if base is None or base.net is None:
            continue
        weight = _weight(run, case)
        if best is None or weight > best[0]:
            best = (weight, case, base)
    out = []
    if best is not None:
        _weight_of, case, base = best
        cold = case.in_regime(all_cases, "cold")
        base_c = _candidates(run, cold)[0] if cold is not None else None
        who = (
            f"{run.baseline} as written"
            if run.is_target(run.baseline)
            else f"the PR as written ({run.baseline})"
        )
        where = "the change" if run.targets else "it"
        text = (
            f"In {case.title}, where {where} weighs most against the forward, {who} costs "
            f"{_net(base)} µs per iteration with the requests in cache"
        )
        if base_c is not None and base_c.net is not None:
            text += f" and {_net(base_c)} µs with them evicted"
        median = base.net.median if base.net is not None else 0.0
        text += (
            f" ({pct(base.share(median))} of a {case.forward_used_ms:,.0f} ms forward in cache)."
        )
        out.append(text)
        _b, cand, label = _candidates(run, case)
        if cand is not None and label.startswith("the "):
            label = f"The cheapest design ({cand.strategy}, {cand.pattern})"
        d = net_difference(run, cand, base) if cand is not None else None
        where = _where(run, case, cand)
        if d is not None:
            if d.too_few_processes:
                out.append(
                    f"{label} differs from it by {d.median * 1e6:+,.1f} µs per iteration there, "
                    f"from too few processes ({d.processes}) for an interval{where}."
                )
            elif d.significant:
                word = "more" if d.median > 0 else "less"
                lo, hi = sorted((abs(d.ci_low), abs(d.ci_high)))
                out.append(
                    f"{label} costs {abs(d.median) * 1e6:,.1f} µs [{lo * 1e6:,.1f}, "
                    f"{hi * 1e6:,.1f}] {word} per iteration there, paired per round "
                    f"({pct(base.share(abs(d.median)))} of the forward){where}."
                )
            else:
                out.append(
                    f"{label} differs from it by {d.median * 1e6:+,.1f} µs [{_us(d.ci_low)}, "
                    f"{_us(d.ci_high)}] per iteration there: within noise{where}."
                )
    return (out + suite_lines(run, "summary_verdict"))[:3]


def failures(run: RunData) -> list[str]:
    """Each suite that did not finish cleanly, with how many of its strategies or workers
    failed (the details: report.html's failures section)."""
    out = []
    for name, d in run.suites.items():
        if not d.failures and not d.worker_errors and d.status == "done":
            continue
        parts = [", ".join(sorted(d.failures)) + " failed"] if d.failures else []
        if d.worker_errors:
            parts.append(f"{len(d.worker_errors)} worker error(s)")
        out.append(f"{name} ({d.status}" + (f": {'; '.join(parts)})" if parts else ")"))
    return out


def build(run: RunData) -> PrSummary:
    table, footnote, label = rows(run)
    others = [t for t in run.targets if t != run.baseline]
    base_label = (
        f"{run.baseline} (base)" if others else f"{run.baseline} ({run.pattern_of(run.baseline)})"
    )
    return PrSummary(
        protocol=protocol_line(run),
        command=run.command,
        baseline_label=base_label,
        candidate_label=f"{label} (head)" if others else label,
        rows=table,
        lines=[x for x in [revisions_line(run)] if x] + suite_lines(run),
        verdict=verdict(run),
        footnote=footnote,
        status=run.status,
        failures=failures(run),
        warnings=run.selfcheck.disagreements() if run.selfcheck is not None else [],
    )


# -- renderers ------------------------------------------------------------------------------


def _columns(pr: PrSummary) -> list[tuple[str, str]]:
    """(title, Row attribute) of the table's columns: those that carry something in some row
    (a run without the evicted regime has no evicted columns; a --target run no cheapest)."""
    cols = [
        ("scenario", "scenario"),
        (f"{pr.baseline_label} µs/iter, in cache", "baseline"),
        ("evicted", "baseline_cold"),
        (f"{pr.candidate_label}, in cache", "candidate"),
        ("cheapest design, in cache", "cheapest"),
        ("Δ in cache", "delta"),
        ("Δ evicted", "delta_cold"),
        ("share of forward", "share"),
        ("lookups / created per iter", "ops"),
    ]
    return [
        (title, key)
        for title, key in cols
        if any(getattr(r, key) not in ("", "-") for r in pr.rows) or key == "scenario"
    ]


def head(pr: PrSummary) -> list[str]:
    return [title for title, _key in _columns(pr)]


def cells(pr: PrSummary, r: Row) -> list[str]:
    return [getattr(r, key) for _title, key in _columns(pr)]


# summary.md's visible lines at most (outside its folded block): what a PR reader sees.
SUMMARY_LINES = 40


def markdown(pr: PrSummary, details: list[str], blocks: list[str] | None = None) -> str:
    """summary.md: at most ~40 lines, valid GitHub markdown; `details` (sentences, as a list)
    and `blocks` (markdown lines as they are: a --target run's request class table and its
    revisions) go in a folded block."""

    out = ["### Speed Tests and Profiling", "", f"**Setup:** {esc_md(pr.protocol)}", ""]
    out += [md_code_block(pr.command), ""]
    if pr.status != "complete":
        out += [f"**This run is {esc_md(pr.status)}**: see report.html.", ""]
    if pr.failures:
        out += ["**Failures:** " + esc_md(", ".join(pr.failures)) + " (report.html).", ""]
    if pr.rows:
        out.append(
            md_table(
                [esc_md(h) for h in head(pr)], [[esc_md(c) for c in cells(pr, r)] for r in pr.rows]
            )
        )
        out.append("")
        note = (
            "Costs per scheduler iteration net of control (the harness's own loop), "
            f"{NET_STATISTIC_WORDS} [95% CI] over worker processes then rounds; Δ: candidate minus baseline, paired "
            "per round; in cache / evicted: the requests' memory read just before each "
            "iteration / a cache sweep before it (docs/REGIMES.md)."
        )
        out += [esc_md(note) + (f" {esc_md(FOOTNOTE)}" if pr.footnote else ""), ""]
    for line in pr.lines:
        out += [esc_md(line), ""]
    if pr.verdict:
        out += ["**Verdict:** " + " ".join(esc_md(v) for v in pr.verdict), ""]
    for warning in pr.warnings:
        out += [f"**Warning:** {esc_md(warning)}", ""]
    if details or blocks:
        out += ["<details><summary>Precision, self-check, revisions</summary>", ""]
        if details:
            out += [*[f"- {esc_md(d)}" for d in details], ""]
        out += [*(blocks or []), "</details>", ""]
    out += ["Every ranking, strategy and suite: `report.html` in the run folder.", ""]
    return "\n".join(out)


def terminal(pr: PrSummary) -> str:
    """The run's default terminal output: the same table (the cheapest design and the
    operation counts as lines under it, to fit ~130 columns) and verdict, plain text."""

    short = {
        "baseline": "baseline, in cache",
        "baseline_cold": "evicted",
        "candidate": "candidate, in cache",
        "delta": "Δ in cache",
        "delta_cold": "Δ evicted",
        "share": "share",
        "scenario": "scenario",
    }
    keys = [key for _title, key in _columns(pr) if key in short]
    titles = [short[k] for k in keys]
    table = [[getattr(r, k) for k in keys] for r in pr.rows]
    widths = [
        max(len(h), *(len(c[i]) for c in table)) if table else len(h) for i, h in enumerate(titles)
    ]

    def wrap(text: str) -> list[str]:
        return textwrap.wrap(text, 110, subsequent_indent="    ")

    lines = ["", *wrap(pr.protocol), ""]
    if pr.failures:
        lines += [*wrap("FAILURES: " + ", ".join(pr.failures)), ""]
    if table:
        lines += wrap(
            f"baseline {pr.baseline_label}, candidate {pr.candidate_label}: µs per scheduler "
            f"iteration net of control, {NET_STATISTIC_WORDS} [95% CI]; Δ candidate minus baseline, paired"
        )
        lines.append("  ".join(h.ljust(w) for h, w in zip(titles, widths, strict=True)).rstrip())
        lines += [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in table
        ]
        if pr.footnote:
            lines.append(FOOTNOTE)
        cheapest = "; ".join(f"{r.scenario} {r.cheapest}" for r in pr.rows if r.cheapest)
        if cheapest:
            lines += wrap(f"cheapest design in cache: {cheapest}")
        lines += wrap(
            "lookups / states created per iteration, baseline → candidate: "
            + "; ".join(f"{r.scenario} {r.ops}" for r in pr.rows)
        )
        lines.append("")
    for text in [*pr.lines, *(["Verdict: " + " ".join(pr.verdict)] if pr.verdict else [])]:
        lines += [*wrap(text), ""]
    for warning in pr.warnings:
        lines += [*wrap("WARNING: " + warning), ""]
    return "\n".join(lines)
