"""`python -m bench target inspect PATH[@REV] [--json]`, and the `--target` option that
`bench run`, `bench list` and `bench gate` share (registered by bench/cli.py).

    python -m bench target inspect ../sglang                 the working tree
    python -m bench target inspect ../sglang@v0.5.3 --json   a revision, for machines
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench.errors import UsageError
from bench.target.tree import SourceTree


def split_targets(groups: list[list[str]] | None) -> list[str]:
    """--target A@x,B@y (repeatable) -> [A@x, B@y], duplicates refused."""
    specs = [s.strip() for group in groups or () for s in group if s.strip()]
    names: dict[str, str] = {}
    for spec in specs:
        name = SourceTree.open(spec).strategy_name()
        if name in names:
            raise UsageError(f"--target {spec} and {names[name]} are the same revision ({name})")
        names[name] = spec
    return specs


def target_name(spec: str) -> str:
    """The strategy NAME a PATH[@REV] is measured under."""
    return SourceTree.open(spec).strategy_name()


def looks_like_target(text: str) -> bool:
    """A --baseline that names a revision (PATH@REV or an existing folder), not a strategy."""
    return "@" in text or Path(text).is_dir()


def _cmd_inspect(args: argparse.Namespace) -> int:
    from bench.target.inspection import describe, inspect_tree

    ins = inspect_tree(SourceTree.open(args.spec))
    if args.json:
        print(json.dumps(ins.to_json(), indent=1, sort_keys=True))
    else:
        print(describe(ins))
    return 0


def list_targets(specs: list[str]) -> list[str]:
    """Materialize targets in a temporary folder for `bench list` (their files go with it)."""
    from bench.target.materialize import materialize

    folder = Path(tempfile.mkdtemp(prefix="reqstate-targets-"))
    return [str(materialize(spec, folder).path) for spec in specs]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "target",
        help="read a user's SGLang tree: request class, where the state lives, call sites",
    )
    tsub = p.add_subparsers(dest="target_command", required=True, parser_class=type(p))
    ins = tsub.add_parser(
        "inspect",
        help="what PATH[@REV] holds, read with ast (sglang is never imported)",
        description="Read an SGLang tree (the working tree, or a git revision with git show; "
        "no checkout is touched): the request class, where the per-request PD hidden state "
        "lives, and per function how the call sites touch it, beside the harness's model.",
    )
    ins.add_argument("spec", metavar="PATH[@REV]", help="an SGLang source tree, optionally @REV")
    ins.add_argument("--json", action="store_true", help="machine-readable output")
    ins.set_defaults(func=_cmd_inspect)
