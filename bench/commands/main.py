"""Command line: python -m bench {list,run,selftest-aa,selfcheck,scenarios,workload,report,gate,
profile,target,real,history,bisect}. A thin dispatcher: each command's parser lives with its
subsystem (its register(sub)); user mistakes end as one line on stderr and exit 2."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import traceback
from collections.abc import Sequence

from bench.base.errors import EXIT_USAGE, UsageError, one_line
from bench.base.storage import cache_dir
from bench.commands import gate as gate_cli
from bench.commands import history as history_cli
from bench.commands import real as real_cli
from bench.commands import report as report_cli
from bench.commands import run as run_cli
from bench.commands import target as target_cli
from bench.commands import workload as core_cli
from bench.commands.profile import register as register_profile
from bench.config.cliargs import Parser, SubParsers


def build_parser() -> argparse.ArgumentParser:

    parser = Parser(
        prog="python -m bench",
        description="Benchmark per-request side-state storage strategies for an LLM scheduler.",
    )
    sub: SubParsers[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", required=True, parser_class=Parser
    )
    run_cli.register(sub)
    core_cli.register(sub)
    report_cli.register(sub)
    gate_cli.register(sub)
    register_profile(sub)
    target_cli.register(sub)
    real_cli.register(sub)
    history_cli.register(sub)
    return parser


def _terminated(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    # SIGTERM (CI's cancel, a `kill`) unwinds like ^C, so that every command's cleanup runs:
    # a gate killed without it left its four driver processes running, orphaned
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        args = build_parser().parse_args(argv)
        args.argv = argv
        return int(args.func(args))
    except UsageError as exc:  # StrategyError and DataError included
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a pip timeout, a full disk: not a verdict, so never exit 1
        where = _keep_traceback()
        print(
            f"error: unexpected {type(exc).__name__}: {one_line(str(exc))} (traceback: {where})",
            file=sys.stderr,
        )
        return EXIT_USAGE


def _keep_traceback() -> str:
    """The traceback of an unexpected error, kept in the user's cache (the terminal gets one
    line, and CI's gate reads exit 1 as a regression)."""
    text = traceback.format_exc()
    try:
        path = cache_dir() / "last-error.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return str(path)
    except OSError:
        return "not kept: the cache folder cannot be written"
