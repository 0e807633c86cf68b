"""summary.md: what goes into a PR's "Speed Tests and Profiling" section.

One line of environment, the headline table (ratios against the baseline with 95% CIs), a few
verdict lines, and the command that reproduces the run. Every cell is one line with '|'
escaped, so GitHub renders exactly one table.
"""

from __future__ import annotations

from bench.report import pr
from bench.report.headline import Metric
from bench.report.load import RunData
from bench.report.precision import markdown_sentence
from bench.report.scenarios.model import cases
from bench.report.scenarios.prose import headline_cases
from bench.report.text import esc_md, fmt, fmt_ratio, md_code, md_code_block, md_table
from bench.report.verdict import Verdict, describe_family
from bench.report.views import cross_suite


def env_line(run: RunData) -> str:
    env = run.environment
    device = env.device + (f" ({env.device_name})" if env.device_name else "")
    parts = [
        f"Python {env.python}",
        f"torch {env.torch}",
        f"device {device}",
        f"{env.cpu} ({env.cpu_count or '?'} CPUs)",
        f"commit {env.git_commit}",
        f"requests {run.requests_text}",
        f"scenarios {', '.join(run.config.scenarios)}",
        f"baseline {run.baseline}",
        f"run {run.status}",
    ]
    return "**Environment:** " + " · ".join(esc_md(p) for p in parts)


def headline_cell(metric: Metric, strategy: str) -> str:
    cell = metric.cells.get(strategy)
    if cell is None:
        return ""
    if cell.baseline or cell.ratio is None:
        return esc_md(fmt(cell.value, metric.unit) + (" (baseline)" if cell.baseline else ""))
    text = esc_md(fmt_ratio(cell.ratio, cell.ci_low, cell.ci_high))
    word = metric.word(cell)
    if word and word != "same":
        text += f" **{esc_md(word)}**"
    elif word:
        text += " same"
        if cell.reason.startswith("significant but"):
            text += " †"  # significant, but within the family's noise floor
    if cell.noisy:
        text += " ~"  # said once under the table
    return text


def headline_md(metrics: list[Metric], run: RunData) -> str:
    strategies = [s for s in run.strategy_names() if any(s in m.cells for m in metrics)]
    head = ["strategy", *(esc_md(m.title) for m in metrics)]
    rows = [
        [
            md_code(s) + (" *(A/A twin)*" if run.is_twin(s) else ""),
            *(headline_cell(m, s) for m in metrics),
        ]
        for s in strategies
    ]
    return md_table(head, rows)


def details_lines(run: RunData) -> list[str]:
    """What the short summary folds away: the forward times with their sources, precision and
    the self-check's agreement."""

    out = []
    # Scenarios whose forward time has one source share it: the source is written once.
    by_source: dict[str, list[str]] = {}
    for case in headline_cases(cases(run)):
        by_source.setdefault(case.sources.get("forward_ms", ""), []).append(
            f"{case.title} {case.forward_used_ms:,.0f} ms"
        )
    forwards = [
        ", ".join(ms) + (f" ({source})" if source else "") for source, ms in by_source.items()
    ]
    if forwards:
        out.append("The forward times the shares are of: " + "; ".join(forwards))
    sentence = markdown_sentence(run)
    if sentence:
        out.append(sentence)
    c = run.selfcheck
    if c is not None and c.items():
        words = [f"{item} {a:.2f} {c.word(a)}" for item, a in c.items()]
        out.append(
            f"Self-check, plain timeit / suite (tolerance ±{c.tolerance:.0%}; get_hit warm at "
            f"live={c.live:,}): " + "; ".join(words)
        )
    return out


def render_summary(run: RunData, metrics: list[Metric], verdict: Verdict) -> str:
    """summary.md as a PR pastes it (bench.report.pr): the long form is render_long."""

    return pr.markdown(pr.build(run), details_lines(run), pr.revision_blocks(run))


def render_long(run: RunData, metrics: list[Metric], verdict: Verdict) -> str:
    out = [
        "### Speed tests",
        "",
        env_line(run),
        "",
    ]
    if metrics:
        out += [
            f"Ratio against {md_code(run.baseline)} with 95% CI (lower is better); "
            "**bold** = a finding: significant (the CI, bootstrapped over worker processes "
            "then rounds, excludes 1) and beyond the noise floor (how far the A/A twin, a "
            "verbatim copy of the baseline, strays on that benchmark, and at least 2%). "
            "Baseline row: absolute values. Bytes, tracked objects and GC pause per 1k steps "
            "are single aggregates: ratio only, no test.",
            "",
            headline_md(metrics, run),
            "",
        ]
        if any(c.noisy for m in metrics for c in m.cells.values()):
            out += ["~ noisy: the interquartile range is over 10% of the median.", ""]
        if any(c.reason.startswith("significant but") for m in metrics for c in m.cells.values()):
            out += [
                "† significant, but within the noise floor of its family (the A/A twin's "
                "deviation there, or 2%): reported as same.",
                "",
            ]
    else:
        out += ["No results in this run.", ""]
    for view in cross_suite():
        out += view.markdown_lines(run)
    if run.selfcheck is not None and run.selfcheck.suite_ns:
        c = run.selfcheck
        parts = [f"{md_code(s)} {a:.2f}" for s in c.timeit_ns if (a := c.agreement(s)) is not None]
        out += [
            f"Self-check (plain timeit, warm get_hit, live={c.live:,}): timeit / suite = "
            + ", ".join(parts)
            + f" (agreement within ±{c.tolerance:.0%}).",
            "",
        ]
    lines = []
    for family in verdict.families:  # the featured ones; the HTML report has all of them
        if not family.featured:
            continue
        sentences = describe_family(family, verdict.baseline)
        lines.append(f"- **{esc_md(family.title)}:** " + " ".join(esc_md(s) for s in sentences))
    if lines:
        out += ["**Verdict** (computed from the data):", "", *lines, ""]
    sentence = markdown_sentence(run)
    if sentence:
        out += [esc_md(sentence), ""]
    failed = {
        name: len(d.failures) + len(d.worker_errors)
        for name, d in run.suites.items()
        if d.failures or d.worker_errors or d.status not in ("done", "partial")
    }
    if failed:
        listing = ", ".join(
            f"{esc_md(n)} ({esc_md(run.suites[n].status)}, {c} error(s))" for n, c in failed.items()
        )
        out += [f"**Failures:** {listing}; see report.html.", ""]
    descriptions = [
        [md_code(name), esc_md(meta.description if (meta := run.strategies.get(name)) else "")]
        for name in run.strategy_names()
    ]
    out += [
        "<details><summary>Strategies</summary>",
        "",
        md_table(["strategy", "description"], descriptions),
        "",
        "</details>",
        "",
        "Reproduce:",
        "",
        md_code_block(run.command),
        "",
    ]
    return "\n".join(out)
