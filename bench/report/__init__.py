"""The PR-ready report of a run folder, the comparison of two runs, and the terminal table.

    write_report(run)                        -> [report.html, summary.md] (+ plots/ and
                                                scenarios.json, per-scenario figures, in the
                                                run folder; run: a loaded RunData or a path)
    write_compare(base_run, head_run, out)   -> [compare.html, compare.md]
    console.terminal(run)                    -> what a run prints when it ends

All of them only read result files (never measure, never import torch) and raise
bench.base.errors.DataError, one line naming the file, for anything missing, truncated or foreign.
Every file is written atomically. Submodules are imported on use: `import bench.report` alone
is cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bench.base.storage import write_atomic, write_json
from bench.report import views

if TYPE_CHECKING:
    from bench.report.load import RunData

__all__ = ["write_compare", "write_report"]


def write_report(run: RunData | Path | str, *, long: bool = False) -> list[Path]:
    """Write report.html, summary.md and plots/*.png|svg into the run folder (a loaded run, or
    its path); return the first two. long: summary.md in its long form (every headline metric,
    ranking and sentence)."""
    from bench.report import html, markdown, plots, verdict
    from bench.report.headline import headline
    from bench.report.load import RunData, load_run

    if not isinstance(run, RunData):
        run = load_run(Path(run))
    run_dir = run.path
    figures = plots.make_plots(run)
    metrics = headline(run)
    judged = verdict.compute(run)
    plots.write_plots(figures, run_dir / "plots")
    report = run_dir / "report.html"
    summary = run_dir / "summary.md"
    write_atomic(report, html.render_report(run, figures, metrics, judged))
    render = markdown.render_long if long else markdown.render_summary
    write_atomic(summary, render(run, metrics, judged))
    for view in views.cross_suite():
        for name, data in view.files(run).items():
            write_json(run_dir / name, data)
    return [report, summary]


def write_compare(
    base_run: Path, head_run: Path, out_dir: Path, *, force: bool = False
) -> list[Path]:
    """Write compare.html and compare.md (head against base) into out_dir; return them.
    bench.report.comparable.NotComparable (one line) when the runs measured different things
    and not force."""
    from bench.report import comparable, compare
    from bench.report.load import load_run

    base, head = load_run(Path(base_run)), load_run(Path(head_run))
    differences = comparable.check(base, head, force=force)
    d = compare.diff(base, head, differences=differences)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    page = out_dir / "compare.html"
    text = out_dir / "compare.md"
    write_atomic(page, compare.render_compare_html(d))
    write_atomic(text, compare.render_compare_md(d))
    return [page, text]
