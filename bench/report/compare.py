"""Two runs side by side, as a PR author shows them: base (before) and head (after).

For every benchmark both runs hold, head/base as a ratio of medians with a 95% CI from a
hierarchical bootstrap (each run's worker processes, then the values within them; unpaired: the
two runs were not interleaved), judged by the report's one rule (bench.stats.classify): a change
only when the CI excludes 1 and the effect exceeds the family's noise floor in either run (its
A/A twin's deviation) and 2%. Benchmarks only one side holds are listed, never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench import stats
from bench.names import BenchName
from bench.report.load import RunData
from bench.report.markdown import md_table
from bench.report.markup import Html, join, num, page, pre, section, table, tag, td
from bench.report.text import esc_md, fmt, fmt_p, fmt_ratio, md_code, md_code_block
from bench.stats.classify import Classification, classify
from bench.stats.derive import noise_family

# Measured before the rule (values treated as independent, no noise floor): two default runs
# of near-identical code flagged 26 of 248 rows (10%).
CAVEAT = (
    "Two separate runs are not interleaved: machine drift between them is not controlled. "
    "CIs resample worker processes (values of one process are correlated) and a change must "
    "exceed the A/A noise floor either run measured, but drift between runs has no twin: for "
    "a merge decision use `bench gate`, which measures both trees in one job, round by round."
)

# Environment keys that make two runs hard to compare when they differ.
ENV_KEYS = ("python", "torch", "device", "device_name", "cpu", "cpu_count", "platform")


@dataclass(frozen=True)
class Row:
    name: str
    suite: str
    unit: str
    base_median: float
    head_median: float
    n_base: int
    n_head: int
    comparison: stats.Comparison
    classification: Classification

    @property
    def verdict(self) -> str:
        return self.classification.verdict


@dataclass(frozen=True)
class Diff:
    base: RunData
    head: RunData
    rows: list[Row]
    only_base: list[str]
    only_head: list[str]

    def by_verdict(self, verdict: str) -> list[Row]:
        return [r for r in self.rows if r.verdict == verdict]

    def env_differences(self) -> list[str]:
        b, h = self.base.environment.to_json(), self.head.environment.to_json()
        return [k for k in ENV_KEYS if b.get(k) != h.get(k)]


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


def diff(base: RunData, head: RunData) -> Diff:
    b, h = _benchmarks(base), _benchmarks(head)
    floors_b, floors_h = _floors(base), _floors(head)
    rows = []
    for name in sorted(set(b) & set(h)):
        suite, unit, base_runs = b[name]
        head_runs = h[name][2]
        base_vals = [v for g in base_runs for v in g]
        head_vals = [v for g in head_runs for v in g]
        cmp = stats.hierarchical_compare(head_runs, base_runs, paired=False)
        spec = (head.suite(suite) or base.suite(suite)).spec  # type: ignore[union-attr]  # declaration
        family = noise_family(BenchName.parse(name), None if spec is None else spec.noise_keys)
        found = [f[family] for f in (floors_b, floors_h) if family in f]
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
                classification=classify(
                    cmp.ratio, cmp.ci_low, cmp.ci_high, noise_floor=max(found) if found else None
                ),
            )
        )
    return Diff(base, head, rows, sorted(set(b) - set(h)), sorted(set(h) - set(b)))


def _words(row: Row) -> str:
    v = row.verdict
    if v == "same" or row.unit == "second":
        return v
    return "smaller" if v == "faster" else "larger"


# --- HTML ----------------------------------------------------------------------------------


def _verdict_td(row: Row) -> Html:
    word = _words(row)
    cls = {"faster": "faster", "smaller": "faster", "slower": "slower", "larger": "slower"}
    sym = "▼ " if cls.get(word) == "faster" else "▲ " if cls.get(word) == "slower" else ""
    return td(sym + word, class_=cls.get(word), title=row.classification.reason)


def _rows_table(rows: list[Row]) -> Html:
    body = [
        (
            r.name,
            num(f"{fmt(r.base_median, r.unit)} (n={r.n_base})"),
            num(f"{fmt(r.head_median, r.unit)} (n={r.n_head})"),
            num(fmt_ratio(r.comparison.ratio, r.comparison.ci_low, r.comparison.ci_high)),
            num(fmt_p(r.comparison.p_value)),
            _verdict_td(r),
        )
        for r in rows
    ]
    head = ("benchmark", "base median", "head median", "head / base [95% CI]", "p", "verdict")
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


def render_compare_html(d: Diff) -> str:
    faster, slower = d.by_verdict("faster"), d.by_verdict("slower")
    same = d.by_verdict("same")
    differs = d.env_differences()
    summary = [
        tag(
            "p",
            f"{len(d.rows)} benchmarks in both runs: {len(faster)} faster, {len(slower)} slower, "
            f"{len(same)} without a change beyond noise (CI excluding 1 and beyond the A/A "
            "noise floor and 2%). "
            f"{len(d.only_base)} only in base, {len(d.only_head)} only in head.",
        ),
        tag("p", CAVEAT, class_="banner"),
    ]
    if differs:
        summary.append(
            tag(
                "p",
                "The runs differ in environment (" + ", ".join(differs) + "): ratios mix the "
                "change with the machine.",
                class_="banner",
            )
        )
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
                esc_md(fmt_ratio(r.comparison.ratio, r.comparison.ci_low, r.comparison.ci_high)),
                esc_md(fmt_p(r.comparison.p_value)),
                f"**{word}**" if word != "same" else word,
            ]
        )
    return out


def render_compare_md(d: Diff) -> str:
    head = ["benchmark", "base", "head", "head / base [95% CI]", "p", "verdict"]
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
        f"{len(d.rows)} benchmarks in both runs: **{len(faster)} faster**, "
        f"**{len(slower)} slower**, {len(d.rows) - len(faster) - len(slower)} same "
        "(unpaired: ratio of medians, bootstrap 95% CI, Mann-Whitney U, p < 0.05).",
        "",
        f"> {CAVEAT}",
        "",
    ]
    differs = d.env_differences()
    if differs:
        out += [f"> The runs differ in: {esc_md(', '.join(differs))}.", ""]
    if faster or slower:
        out += [md_table(head, _md_rows(slower + faster)), ""]
    else:
        out += ["No significant change.", ""]
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
