"""Argument parsing and dispatch. User mistakes end as one line on stderr and exit 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bench.errors import EXIT_USAGE, UsageError
from strategies import StrategyError, resolve


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors in one line and exits 2 (its default, kept explicit)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _cmd_list(args: argparse.Namespace) -> int:
    strategies = resolve(external=args.external)
    width = max(len(s.name) for s in strategies)
    for s in strategies:
        tags = []
        if s.external:
            tags.append(f"external: {s.source_path}")
        if not s.thread_safe_create:
            tags.append("racy create")
        suffix = f"  [{'; '.join(tags)}]" if tags else ""
        print(f"{s.name:<{width}}  {s.description}{suffix}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m bench",
        description="Benchmark per-request side-state storage strategies for an LLM scheduler.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p_list = sub.add_parser("list", help="list the strategies")
    p_list.add_argument(
        "--external",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="also load a strategy from a dotted module path or a .py file (repeatable)",
    )
    p_list.set_defaults(func=_cmd_list)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args))
    except (UsageError, StrategyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
