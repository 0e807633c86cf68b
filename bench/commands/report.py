"""`python -m bench report`: re-render a run folder, or compare two (registered by bench/commands/main.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.base.errors import UsageError
from bench.config.cliargs import SubParsers
from bench.real import report as real_report
from bench.real.folder import is_real_run
from bench.report import write_compare, write_report
from bench.runformat.schema import MANIFEST


def _cmd_report(args: argparse.Namespace) -> int:

    if args.compare:
        base, head = (Path(p) for p in args.compare)
        out_dir = Path(args.output_dir) if args.output_dir else head
        out_dir.mkdir(parents=True, exist_ok=True)
        from bench.report.comparable import NotComparable

        try:
            paths = write_compare(base, head, out_dir, force=args.force)
        except NotComparable as exc:
            raise UsageError(f"report --compare: {exc}") from None
    else:
        if not args.run:
            raise UsageError("report: give a run folder, or --compare BASE_RUN HEAD_RUN")
        if is_real_run(Path(args.run)):  # a run --real folder (docs/REAL.md)
            run_dir = Path(args.run)
            real_report.write(run_dir)
            paths = [run_dir / real_report.REPORT, run_dir / real_report.SUMMARY]
        else:
            paths = write_report(Path(args.run), long=args.long)
    for path in paths:
        print(f"report: {path}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from bench.report.console import terminal
    from bench.report.load import load_run

    run = Path(args.run)
    if not (run / MANIFEST).is_file():
        raise UsageError(f"{run}: not a run folder (no {MANIFEST})")
    if is_real_run(run):
        print(real_report.terminal(run, verbose=args.verbose))
        return 0
    print(terminal(load_run(run), verbose=args.verbose))
    return 0


def register(sub: SubParsers[argparse.ArgumentParser]) -> None:
    p_show = sub.add_parser("show", help="print a run folder's summary (or every table)")
    p_show.add_argument("run", help="run folder under reports/")
    p_show.add_argument(
        "--verbose", action="store_true", help="every suite's full table instead of the summary"
    )
    p_show.set_defaults(func=_cmd_show)
    p_report = sub.add_parser(
        "report", help="HTML + markdown report of a run folder (or a comparison)"
    )
    p_report.add_argument("run", nargs="?", help="run folder under reports/")
    p_report.add_argument(
        "--compare", nargs=2, metavar=("BASE_RUN", "HEAD_RUN"), help="diff two runs"
    )
    p_report.add_argument("--output-dir", help="where --compare writes (default: HEAD_RUN)")
    p_report.add_argument(
        "--long",
        action="store_true",
        help="summary.md in its long form: every headline metric, verdict family and sentence",
    )
    p_report.add_argument(
        "--force",
        action="store_true",
        help="--compare runs that measured different things (the header lists the differences)",
    )
    p_report.set_defaults(func=_cmd_report)
