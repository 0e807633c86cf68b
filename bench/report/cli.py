"""`python -m bench report`: re-render a run folder, or compare two (registered by bench/cli.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.cliargs import SubParsers
from bench.errors import UsageError


def _cmd_report(args: argparse.Namespace) -> int:
    from bench.report import write_compare, write_report

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
        paths = write_report(Path(args.run))
    for path in paths:
        print(f"report: {path}")
    return 0


def register(sub: SubParsers[argparse.ArgumentParser]) -> None:
    p_report = sub.add_parser(
        "report", help="HTML + markdown report of a run folder (or a comparison)"
    )
    p_report.add_argument("run", nargs="?", help="run folder under reports/")
    p_report.add_argument(
        "--compare", nargs=2, metavar=("BASE_RUN", "HEAD_RUN"), help="diff two runs"
    )
    p_report.add_argument("--output-dir", help="where --compare writes (default: HEAD_RUN)")
    p_report.add_argument(
        "--force",
        action="store_true",
        help="--compare runs that measured different things (the header lists the differences)",
    )
    p_report.set_defaults(func=_cmd_report)
