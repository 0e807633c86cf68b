"""What the terminal shows of a run: by default the PR section (bench.report.pr) in plain text;
verbose, every suite's table (medians, IQR, ratio vs baseline with 95% CI, verdict, then the
suite's own lines: its view's `terminal_extra`). Reads a loaded run folder like the report."""

from __future__ import annotations

import textwrap
from pathlib import Path

from bench.report import pr, precision, viewspec
from bench.report.load import RunData, SuiteData, load_run
from bench.report.text import fmt_value
from bench.stats.derive import Summary


def ratio_text(s: Summary) -> str:
    if s.ratio is None:
        return ""
    return f"{s.ratio:.3f} [{s.ratio_low:.3f}, {s.ratio_high:.3f}]"


def summary_lines(rows: list[Summary], baseline: str) -> list[str]:
    header = f"{'benchmark':<52} {'median':>12} {'IQR':>10}  {'ratio [95% CI]':<24} verdict"
    lines = [header, "-" * len(header)]
    for s in rows:
        mark = "*" if s.verdict in ("faster", "slower") else " "
        noisy = "~" if s.noisy else " "
        word = s.verdict or ("baseline" if s.strategy == baseline else "")
        if s.twin:
            word = "A/A twin"
        elif s.verdict == "same" and s.reason.startswith("significant but"):
            word = "same†"
        lines.append(
            f"{s.name:<52} {fmt_value(s.median, s.unit):>12} {fmt_value(s.q3 - s.q1, s.unit):>10}"
            f"{noisy} {ratio_text(s):<24} {mark}{word}"
        )
    return lines


def suite_lines(data: SuiteData, baseline: str) -> list[str]:
    lines = [
        f"\n== {data.name} (ratios vs {baseline}; * = significant and beyond the A/A noise "
        "floor, † = significant but within it, ~ = noisy)"
    ]
    view = viewspec.view(data.name)
    rows = data.summaries if view is None else view.terminal_rows(data.summaries)
    lines += summary_lines(rows, baseline)
    floors = data.noise_floors
    if floors:
        ordered = sorted(floors.values())
        lines.append(
            f"   A/A noise floor ({baseline}'s twin vs {baseline}) over {len(ordered)} "
            f"families: median {ordered[len(ordered) // 2]:.1%}, largest {ordered[-1]:.1%}"
        )
    if view is not None:
        lines += view.terminal_extra(data)
    lines += precision.terminal_lines(data)
    for strategy, err in data.failures.items():
        lines.append(f"   FAILED {strategy}: {err}")
    for err in data.worker_errors:
        lines.append(f"   WORKER ERROR: {err}")
    return lines


def render_run(run: RunData) -> str:
    lines: list[str] = []
    loaded = precision.load_sentence(run)
    if loaded:
        lines.append("WARNING: " + loaded)
    for data in run.suites.values():
        if data.name not in run.manifest.suites:
            continue
        if not data.has_data:
            lines.append(f"\n== {data.name}: {data.status}")
            continue
        lines += suite_lines(data, run.baseline)
    lines.append(f"\nrun folder: {run.path}")
    missing = run.manifest.missing
    lines.append(f"status: {run.status}" + (f" (missing: {', '.join(missing)})" if missing else ""))
    return "\n".join(lines)


def render_table(run_dir: Path) -> str:
    return render_run(load_run(run_dir))


def terminal(run: RunData, *, verbose: bool = False) -> str:
    """What a run prints when it ends: the PR section's table and verdict (under 50 lines),
    or with verbose every suite's full table."""

    if verbose:
        return render_run(run)
    tail = [] if run.status == "complete" else [f"status: {run.status}"]
    loaded = precision.load_sentence(run)
    if loaded:
        tail += textwrap.wrap("WARNING: " + loaded, 110, subsequent_indent="    ")
    tail += [
        f"run folder: {run.path}",
        f"every suite's table: python -m bench show --verbose {run.path}",
    ]
    return pr.terminal(pr.build(run)) + "\n".join(tail)
