"""Two runs side by side, as a PR author shows them: base (before) and head (after).

The runs must have measured the same thing (bench.report.comparable; --force compares anyway
and lists the differences). Each benchmark's change is then judged through an anchor measured in
the same rounds of the same run: per round, the median of the same benchmark over the other
strategies whose code is the same in both runs (their source hashes; twins left out). Per run,
the benchmark's per-round ratio to that anchor is taken (paired: the same worker process and
round); the change is head's median ratio over base's, with a 95% CI from a hierarchical
bootstrap of each run on its own (worker processes, then rounds). A machine that runs 12% slower
in the second run moves benchmark and anchor alike and cancels; a strategy whose code changed
is no anchor, so its change moves no other benchmark's anchor, the baseline's included. A
benchmark no unchanged strategy measured beside it is "unresolvable" between runs (use
`bench gate`, which interleaves both trees).

A change is judged by the report's one rule (bench.stats.classify): the CI excludes 1 and the
effect exceeds the noise floor: the family's A/A floor in either run, how far the A/A twin's
anchored change strays from its original's between the runs, and the spread of the family's
unchanged strategies' anchored changes (3 robust standard deviations: each strategy's own
process moves it, which no anchor cancels and which a run of one worker process cannot put in
its interval), never under 2%. The header states the drift itself ("head's unchanged strategies ran 12% slower
than base's"). Benchmarks only one side holds are listed, never silently dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bench import stats
from bench.base.names import BenchName
from bench.report.comparable import machine_differences
from bench.report.load import RunData
from bench.report.markdown import md_table
from bench.report.markup import Html, join, num, page, pre, section, table, tag, td
from bench.report.text import esc_md, fmt, fmt_p, fmt_ratio, md_code, md_code_block
from bench.stats.cases import REFERENCE
from bench.stats.classify import Classification, classify
from bench.stats.derive import noise_family

# Measured before anchoring (ratio of each run's medians, the in-run A/A floor): two quick
# runs of identical code back to back flagged 29 of 290 benchmarks, 28 "slower": the machine
# drifted 8-20% between them (the README's "Comparing two runs" has the figures after).
CAVEAT = (
    "Two separate runs are not interleaved: each benchmark is judged through its ratio to an "
    "anchor measured in the same rounds of the same run, which cancels drift the machine "
    "applies to both; what it cannot cancel (a change every strategy shares, drift that hits "
    "one benchmark and not the others, variation between worker processes that a run with one "
    "process cannot see) is why a merge decision belongs to `bench gate`, which measures both "
    "trees in one job, round by round."
)

# Environment keys that make two runs hard to compare when they differ.
ENV_KEYS = ("python", "torch", "device", "device_name", "cpu", "cpu_count", "platform")


UNRESOLVABLE = "unresolvable"


@dataclass(frozen=True)
class Anchor:
    """What each benchmark is divided by, in its own run and rounds: per round, the median of
    the same benchmark over these strategies (the benchmark's own strategy left out)."""

    strategies: tuple[str, ...]
    changed: tuple[str, ...]  # strategies whose code differs between the runs (not anchors)

    @property
    def why(self) -> str:
        left = f"; left out, their code differs: {', '.join(self.changed)}" if self.changed else ""
        return (
            f"per round, the median of the same benchmark over the {len(self.strategies)} "
            f"strategies whose code is the same in both runs{left}"
        )


@dataclass(frozen=True)
class Row:
    name: str
    suite: str
    unit: str
    base_median: float
    head_median: float
    n_base: int
    n_head: int
    comparison: stats.Comparison  # the anchored change (head/base of the ratio to the anchor)
    classification: Classification
    raw: stats.Comparison | None = None  # head/base of the medians (the drift included)

    @property
    def verdict(self) -> str:
        return self.classification.verdict


@dataclass(frozen=True)
class Drift:
    """How far the anchors moved between the runs: head/base of their medians."""

    strategy: str
    median: float  # over its benchmarks
    low: float
    high: float
    n: int

    def sentence(self) -> str:
        change = self.median - 1.0
        word = "slower" if change > 0 else "faster"
        spread = f" ({self.n} benchmarks: {self.low:.3f}-{self.high:.3f}x)" if self.n > 1 else ""
        return f"head's {self.strategy} ran {abs(change):.1%} {word} than base's{spread}"


@dataclass(frozen=True)
class Diff:
    base: RunData
    head: RunData
    rows: list[Row]
    only_base: list[str]
    only_head: list[str]
    anchor: Anchor | None = None
    drifts: list[Drift] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)  # measurement differences (--force)
    single_process: list[str] = field(default_factory=list)  # suites one process measured

    def by_verdict(self, verdict: str) -> list[Row]:
        return [r for r in self.rows if r.verdict == verdict]

    def env_differences(self) -> list[str]:
        b, h = self.base.environment.to_json(), self.head.environment.to_json()
        return [k for k in ENV_KEYS if b.get(k) != h.get(k)]

    def drift_line(self) -> str:
        moved = "; ".join(d.sentence() for d in self.drifts) or "no benchmark in both runs"
        anchor = (
            f" Every benchmark is judged through its ratio to its anchor ({self.anchor.why}), "
            "which cancels it."
            if self.anchor is not None
            else ""
        )
        return f"Drift between the runs (head/base of medians): {moved}.{anchor}"


def _benchmarks(run: RunData) -> dict[str, tuple[str, str, list[list[float]]]]:
    """name -> (suite, unit, values per worker process) over every suite of a run."""
    out = {}
    for suite, data in run.suites.items():
        for name, runs in data.runs.items():
            groups = [list(r) for r in runs if len(r)]
            if groups:
                out[name] = (suite, data.units.get(name, "second"), groups)
    return out


def _floors(run: RunData) -> dict[object, float]:
    out: dict[object, float] = {}
    for data in run.suites.values():
        if data.has_data:
            out.update(data.noise_floors)
    return out


MIN_ANCHORS = 1  # other strategies a benchmark's anchor needs in the same family and round


def choose_anchor(base: RunData, head: RunData) -> Anchor:
    """The strategies both runs measured with the same code (no twin: a twin would count its
    original twice)."""
    members: list[str] = []
    changed: list[str] = []
    for name in sorted(set(base.strategies) & set(head.strategies)):
        b, h = base.strategies[name], head.strategies[name]
        if head.is_twin(name) or base.is_twin(name):
            continue
        (members if b.source_sha256 == h.source_sha256 else changed).append(name)
    return Anchor(tuple(members), tuple(changed))


def _anchored(run: RunData, suite: str, name: str, anchor: Anchor) -> list[list[float]] | None:
    """Per worker process, the benchmark's per-round ratio to the median of the anchor
    strategies' same benchmark in that round (paired: the same process and round)."""
    data = run.suite(suite)
    if data is None:
        return None
    bench = BenchName.parse(name)
    others = [
        str(bench.with_strategy(s))
        for s in anchor.strategies
        if s != bench.strategy and str(bench.with_strategy(s)) in data.rounds
    ]
    if len(others) < MIN_ANCHORS:
        return None
    groups = data.rounds.groups(name, *others)
    if groups is None:
        return None
    ratios = []
    for w, values in enumerate(groups[0]):
        row = []
        for i, v in enumerate(values):
            level = stats.median([g[w][i] for g in groups[1:]])
            if level > 0:
                row.append(v / level)
        if row:
            ratios.append(row)
    return ratios or None


def _drifts(
    b: dict[str, tuple[str, str, list[list[float]]]],
    h: dict[str, tuple[str, str, list[list[float]]]],
    watched: list[str],
    anchor: Anchor,
) -> list[Drift]:
    """head/base of the medians, over the anchor strategies' benchmarks together, then over
    each watched strategy's (the baseline, control)."""

    def moves(strategies: set[str]) -> list[float]:
        out = []
        for n in sorted(set(b) & set(h)):
            if BenchName.parse(n).strategy not in strategies:
                continue
            before = stats.median([v for g in b[n][2] for v in g])
            if before > 0:
                out.append(stats.median([v for g in h[n][2] for v in g]) / before)
        return out

    groups = [("unchanged strategies", set(anchor.strategies))]
    groups += [(s, {s}) for s in watched]
    out = []
    for label, members in groups:
        m = moves(members)
        if m:
            out.append(Drift(label, stats.median(m), min(m), max(m), len(m)))
    return out


# How far the anchored changes of a family's unchanged strategies spread between the runs is
# noise the anchor did not cancel (each strategy's own process: heap layout, hash seed). A change
# must exceed SPREAD_Z robust standard deviations of it (1.4826 x the median absolute deviation
# of their log changes, robust to the one strategy whose code did change), once at least
# SPREAD_MIN strategies give one.
SPREAD_Z = 3.0
SPREAD_MIN = 5


def _between(
    head: RunData,
    common: list[str],
    changes: dict[str, stats.Comparison],
    anchor: Anchor,
    specs: dict[str, Any],
) -> dict[object, float]:
    """The drift the anchor leaves between the runs, per family: the larger of the twins'
    anchored change against their originals' (1 where it cancelled everything) and the spread
    of the anchored changes of the strategies whose code did not change."""
    out: dict[object, float] = {}
    for name in common:
        bench = BenchName.parse(name)
        twin_of = head.strategies[bench.strategy].twin_of if head.is_twin(bench.strategy) else None
        original = str(bench.with_strategy(twin_of)) if twin_of else None
        if original is not None and name in changes and original in changes:
            family = noise_family(bench, None if specs[name] is None else specs[name].noise_keys)
            deviation = abs(changes[name].ratio / changes[original].ratio - 1.0)
            out[family] = max(out.get(family, 0.0), deviation)
    unchanged = set(anchor.strategies)
    unchanged |= {
        s for s, meta in head.strategies.items() if meta.twin_of and meta.twin_of in unchanged
    }
    for family, spread in spreads(common, changes, unchanged, specs).items():
        out[family] = max(out.get(family, 0.0), spread)
    return out


def spreads(
    common: list[str],
    changes: dict[str, stats.Comparison],
    unchanged: set[str],
    specs: dict[str, Any],
) -> dict[object, float]:
    """Per family, the spread of the anchored changes of the strategies whose code did not
    change (and their twins): SPREAD_Z robust standard deviations of their log changes, from
    SPREAD_MIN of them."""
    logs: dict[object, list[float]] = {}
    for name in common:
        bench = BenchName.parse(name)
        if name not in changes or bench.strategy not in unchanged or changes[name].ratio <= 0:
            continue
        spec = specs[name]
        family = noise_family(bench, None if spec is None else spec.noise_keys)
        logs.setdefault(family, []).append(math.log(changes[name].ratio))
    out = {}
    for family, xs in logs.items():
        if len(xs) >= SPREAD_MIN:
            centre = stats.median(xs)
            sigma = 1.4826 * stats.median([abs(x - centre) for x in xs])
            out[family] = math.exp(SPREAD_Z * sigma) - 1.0
    return out


def diff(base: RunData, head: RunData, *, differences: list[str] | None = None) -> Diff:
    b, h = _benchmarks(base), _benchmarks(head)
    floors_b, floors_h = _floors(base), _floors(head)
    anchor = choose_anchor(base, head)
    common = sorted(set(b) & set(h))
    changes: dict[str, stats.Comparison] = {}
    for name in common:
        suite = b[name][0]
        rb, rh = _anchored(base, suite, name, anchor), _anchored(head, suite, name, anchor)
        if rb is not None and rh is not None:
            changes[name] = stats.hierarchical_compare(rh, rb, paired=False)
    specs = {name: (head.suite(b[name][0]) or base.suite(b[name][0])).spec for name in common}  # type: ignore[union-attr]  # declaration
    between = _between(head, common, changes, anchor, specs)
    rows = []
    single: set[str] = set()
    for name in common:
        suite, unit, base_runs = b[name]
        head_runs = h[name][2]
        if min(len(base_runs), len(head_runs)) < 2:
            single.add(suite)
        base_vals = [v for g in base_runs for v in g]
        head_vals = [v for g in head_runs for v in g]
        raw = stats.hierarchical_compare(head_runs, base_runs, paired=False)
        bench = BenchName.parse(name)
        spec = specs[name]
        family = noise_family(bench, None if spec is None else spec.noise_keys)
        found = [f[family] for f in (floors_b, floors_h) if family in f]
        if family in between:
            found.append(between[family])
        floor = max(found) if found else None
        if name in changes:
            cmp = changes[name]
            cls = classify(cmp.ratio, cmp.ci_low, cmp.ci_high, noise_floor=floor)
        else:
            cmp, cls = (
                raw,
                Classification(
                    UNRESOLVABLE,
                    f"fewer than {MIN_ANCHORS} other strategies with unchanged code measured it in "
                    "both runs: its change cannot be told from the machine's; use bench gate",
                ),
            )
        rows.append(
            Row(
                name=name,
                suite=suite,
                unit=unit,
                base_median=stats.median(base_vals),
                head_median=stats.median(head_vals),
                n_base=len(base_vals),
                n_head=len(head_vals),
                comparison=cmp,
                classification=cls,
                raw=raw,
            )
        )
    watched = [x for x in (head.baseline, REFERENCE) if x in head.strategies]
    return Diff(
        base,
        head,
        rows,
        sorted(set(b) - set(h)),
        sorted(set(h) - set(b)),
        anchor=anchor,
        drifts=_drifts(b, h, watched, anchor),
        differences=list(differences or []),
        single_process=sorted(single),
    )


def _words(row: Row) -> str:
    v = row.verdict
    if v not in ("faster", "slower") or row.unit == "second":
        return v
    return "smaller" if v == "faster" else "larger"


# --- HTML ----------------------------------------------------------------------------------


def _verdict_td(row: Row) -> Html:
    word = _words(row)
    cls = {"faster": "faster", "smaller": "faster", "slower": "slower", "larger": "slower"}
    sym = "▼ " if cls.get(word) == "faster" else "▲ " if cls.get(word) == "slower" else ""
    return td(sym + word, class_=cls.get(word), title=row.classification.reason)


def _raw_text(r: Row) -> str:
    return "" if r.raw is None else fmt_ratio(r.raw.ratio, r.raw.ci_low, r.raw.ci_high)


def _rows_table(rows: list[Row]) -> Html:
    body = [
        (
            r.name,
            num(f"{fmt(r.base_median, r.unit)} (n={r.n_base})"),
            num(f"{fmt(r.head_median, r.unit)} (n={r.n_head})"),
            num(_raw_text(r)),
            num(fmt_ratio(r.comparison.ratio, r.comparison.ci_low, r.comparison.ci_high)),
            num(fmt_p(r.comparison.p_value)),
            _verdict_td(r),
        )
        for r in rows
    ]
    head = (
        "benchmark",
        "base median",
        "head median",
        "head / base, raw [95% CI]",
        "change through the anchor [95% CI]",
        "p",
        "verdict",
    )
    return table(head, body)


def _env_table(d: Diff) -> Html:
    keys = ["git_commit", *ENV_KEYS, "pyperf"]
    be, he = d.base.environment.to_json(), d.head.environment.to_json()
    rows = [
        (k, be.get(k, ""), he.get(k, ""), "differs" if be.get(k) != he.get(k) else "same")
        for k in keys
        if k in be or k in he
    ]
    rows += [("run folder", d.base.path.name, d.head.path.name, "")]
    rows += [("status", d.base.status, d.head.status, "")]
    rows += [("baseline strategy", d.base.baseline, d.head.baseline, "")]
    return table(("", "base", "head", "same?"), rows)


def _failures(d: Diff) -> list[Html]:
    out = []
    for side, run in (("base", d.base), ("head", d.head)):
        for name, data in run.suites.items():
            if data.status not in ("done", "partial"):
                out.append(tag("p", f"{side}: suite {name} is {data.status} (no results)."))
            for strategy, err in sorted(data.failures.items()):
                out += [
                    tag("p", f"{side}: {name}: strategy ", tag("code", strategy), ":"),
                    pre(err),
                ]
            for err in data.worker_errors:
                out += [tag("p", f"{side}: {name}: worker error:"), pre(err)]
    return out


def _header_notes(d: Diff) -> list[str]:
    """The sentences every rendering of a comparison opens with, after the counts."""
    notes = [d.drift_line()]
    if d.differences:
        notes.append(
            "Compared with --force although the runs measured different things: "
            + "; ".join(d.differences)
            + "."
        )
    if d.single_process:
        notes.append(
            f"One worker process measured {', '.join(d.single_process)} in a run: variation "
            "between processes (heap layout, hash seed) is not in those intervals, and a change "
            "there may be the process's, not the code's (the quick set measures one process)."
        )
    machine = machine_differences(d.base, d.head)
    if machine:
        notes.append(
            "The runs ran on different machines or software ("
            + "; ".join(machine)
            + "): the anchors cancel a uniform slowdown, not a change in what is fast."
        )
    return notes


def _counts(d: Diff) -> str:
    faster, slower = d.by_verdict("faster"), d.by_verdict("slower")
    unresolvable = d.by_verdict(UNRESOLVABLE)
    same = len(d.rows) - len(faster) - len(slower) - len(unresolvable)
    return (
        f"{len(d.rows)} benchmarks in both runs: {len(faster)} faster, {len(slower)} slower, "
        f"{same} without a change beyond noise (CI excluding 1 and beyond the noise floor and "
        f"2%), {len(unresolvable)} unresolvable between runs (no anchor beside them). "
        f"{len(d.only_base)} only in base, {len(d.only_head)} only in head."
    )


def render_compare_html(d: Diff) -> str:
    faster, slower = d.by_verdict("faster"), d.by_verdict("slower")
    summary = [
        tag("p", _counts(d)),
        *(tag("p", n, class_="banner") for n in _header_notes(d)),
        tag("p", CAVEAT, class_="banner"),
    ]
    changed = faster + slower
    if changed:
        summary += [tag("h3", "Significant changes"), _rows_table(changed)]
    parts: list[object] = [
        tag("header", tag("h1", "reqstate-bench comparison: head vs base")),
        section("env", "Environment", _env_table(d)),
        section("summary", "Summary", *summary),
    ]
    present = {r.suite for r in d.rows}
    for suite in [
        *(s for s in d.head.suites if s in present),
        *sorted(present - set(d.head.suites)),
    ]:
        rows = [r for r in d.rows if r.suite == suite]
        parts.append(section(suite, f"{suite} ({len(rows)} benchmarks)", _rows_table(rows)))
    only = [
        tag("h3", f"Only in base ({len(d.only_base)})"),
        tag("ul", *(tag("li", tag("code", n)) for n in d.only_base)),
        tag("h3", f"Only in head ({len(d.only_head)})"),
        tag("ul", *(tag("li", tag("code", n)) for n in d.only_head)),
    ]
    parts.append(section("only", "Benchmarks in one run only", *only))
    failures = _failures(d)
    if failures:
        parts.append(section("failures", "Failures", *failures))
    parts.append(
        section(
            "reproduce",
            "Reproduce",
            tag("p", "base:"),
            pre(d.base.command),
            tag("p", "head:"),
            pre(d.head.command),
        )
    )
    return page("reqstate-bench comparison", join(parts))


# --- markdown ------------------------------------------------------------------------------


def _md_rows(rows: list[Row]) -> list[list[str]]:
    out = []
    for r in rows:
        word = _words(r)
        out.append(
            [
                md_code(r.name),
                esc_md(fmt(r.base_median, r.unit)),
                esc_md(fmt(r.head_median, r.unit)),
                esc_md(_raw_text(r)),
                esc_md(fmt_ratio(r.comparison.ratio, r.comparison.ci_low, r.comparison.ci_high)),
                f"**{word}**" if word in ("faster", "slower", "smaller", "larger") else word,
            ]
        )
    return out


def render_compare_md(d: Diff) -> str:
    head = ["benchmark", "base", "head", "raw head / base", "change through the anchor", "verdict"]
    faster, slower = d.by_verdict("faster"), d.by_verdict("slower")
    be, he = d.base.environment.to_json(), d.head.environment.to_json()
    out = [
        "### Speed tests: head vs base",
        "",
        f"**Base:** commit {esc_md(be.get('git_commit', '?'))} · **Head:** commit "
        f"{esc_md(he.get('git_commit', '?'))} · Python {esc_md(he.get('python', '?'))} · "
        f"torch {esc_md(he.get('torch', '?'))} · device {esc_md(he.get('device', '?'))} · "
        f"{esc_md(he.get('cpu', '?'))}",
        "",
        esc_md(_counts(d)),
        "",
        *(f"> {esc_md(n)}\n" for n in _header_notes(d)),
        f"> {CAVEAT}",
        "",
    ]
    if faster or slower:
        out += [md_table(head, _md_rows(slower + faster)), ""]
    else:
        out += ["No change beyond noise.", ""]
    out += [
        f"<details><summary>All {len(d.rows)} benchmarks</summary>",
        "",
        md_table(head, _md_rows(d.rows)),
        "",
        "</details>",
        "",
    ]
    for side, names in (("base", d.only_base), ("head", d.only_head)):
        if names:
            out += [f"Only in {side}: " + ", ".join(md_code(n) for n in names), ""]
    out += [
        "Reproduce (base, then head):",
        "",
        md_code_block(d.base.command + "\n" + d.head.command),
        "",
    ]
    return "\n".join(out)
