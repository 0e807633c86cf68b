"""`python -m bench target inspect PATH[@REV] [--json]`, and the `--target` option that
`bench run`, `bench list` and `bench gate` share (registered by bench/commands/main.py).

    python -m bench target inspect ../sglang                 the working tree
    python -m bench target inspect ../sglang@v0.5.3 --json   a revision, for machines
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench.base.errors import UsageError
from bench.base.storage import DEFAULT_REPORTS_DIR
from bench.config.budget import add_budget_options
from bench.config.cliargs import (
    Adder,
    Command,
    Option,
    SubParsers,
    csv_list,
    fraction,
    register_commands,
)
from bench.core.hotpath import markdown
from bench.target.advise import advise
from bench.target.groups import describe as describe_groups
from bench.target.groups import read_groups
from bench.target.inspection import describe, inspect_tree
from bench.target.placement import MIN_REPLAYED
from bench.target.report import diff_report
from bench.target.tree import SourceTree


def _cmd_inspect(args: argparse.Namespace) -> int:

    ins = inspect_tree(SourceTree.open(args.spec))
    if args.json:
        print(json.dumps(ins.to_json(), indent=1, sort_keys=True))
    else:
        print(describe(ins))
    return 0


def _cmd_groups(args: argparse.Namespace) -> int:
    rev = read_groups(SourceTree.open(args.spec))
    if args.json:
        out = {
            "tree": rev.tree.label,
            "commit": rev.tree.commit,
            "schedule_batch": rev.schedule_batch,
            "groups": [g.to_json() for g in rev.groups],
        }
        print(json.dumps(out, indent=1, sort_keys=True))
    else:
        print(describe_groups(rev))
    return 0


def _cmd_diff(args: argparse.Namespace) -> int:

    base = f"{args.path}@{args.base}"
    head = args.path if args.head is None else f"{args.path}@{args.head}"
    report = diff_report(base, head, group=args.group)
    print(json.dumps(report.to_json(), indent=1, sort_keys=True) if args.json else report.text())
    return 0


def _cmd_hotpath(_args: argparse.Namespace) -> int:

    print(markdown(), end="")
    return 0


def _cmd_advise(args: argparse.Namespace) -> int:

    return advise(args)


_SPEC: Option = (
    ("spec",),
    {"metavar": "PATH[@REV]", "help": "an SGLang source tree, optionally @REV"},
)
_JSON: Option = (("--json",), {"action": "store_true", "help": "machine-readable output"})

_DIFF: tuple[Option | Adder, ...] = (
    (("path",), {"metavar": "PATH", "help": "an SGLang git repository"}),
    (("--base",), {"metavar": "REV", "required": True, "help": "the revision before"}),
    (("--head",), {"metavar": "REV", "help": "the revision after (default: working tree)"}),
    (("--group",), {"metavar": "NAME", "help": "one group (default: every moved one)"}),
    _JSON,
)
_ADVISE: tuple[Option | Adder, ...] = (
    _SPEC,
    (("--group",), {"required": True, "metavar": "NAME",
      "help": "a group `target groups` lists, or NAME=field,field,... (Req attributes)"}),
    (("--scenario",), {"action": "append", "type": csv_list, "help": "scenario presets"}),
    (("--home",), {"action": "append", "type": csv_list, "metavar": "HOME[,HOME]",
      "help": "only these candidate homes beside the current one (inline, slots, slots_lazy, "
              "dict, lazy_attr, declared, weak_table, rid_dict; default: every one)"}),
    (("--quick",), {"action": "store_true", "help": "the quick set (about a minute)"}),
    (("--no-aa",), {"action": "store_true", "help": "no A/A twin of the current home"}),
    (("--output-dir",), {"default": str(DEFAULT_REPORTS_DIR), "help": "where the run folder goes"}),
    add_budget_options,
)  # fmt: skip

_COMMANDS = (
    Command("inspect", "what PATH[@REV] holds, read with ast (nothing of the tree is imported or run)",
            (_SPEC, _JSON), _cmd_inspect,
            "Read an SGLang tree (the working tree, or a git revision with git show; no checkout "
            "is touched): the request class, where the per-request PD hidden state lives, and per "
            "function how the call sites touch it, beside the harness's model."),
    Command("groups", "the per-request state groups of PATH[@REV] and where each lives",
            (_SPEC, _JSON), _cmd_groups,
            "List the state groups a revision's Req carries, read with ast: containers (an object "
            "built in Req.__init__, or assigned later), prefixes of 3 or more fields on Req, side "
            "tables, lazy attributes (getattr(req, NAME, default)) and attributes declared on "
            "class Req, each with its field count and where it is defined."),
    Command("diff", "what a change moved: fields whose home changed between two revisions",
            _DIFF, _cmd_diff,
            "The fields whose home changed between --base and --head (the working tree by "
            "default), matched by name; each revision's request construction; and every function "
            "that touches the moved group at each revision, with its accesses per call and how "
            "often the real scheduler runs it."),
    Command("advise", "where a state group should live: every candidate home measured and ranked",
            _ADVISE, _cmd_advise,
            "Write the group in every candidate home (fields on Req, slots container eager and "
            "lazy, dict container, lazy attribute, declared attribute, weak side table, dict by "
            "request id) with the revision's accesses on the scheduler's hot path (the current "
            "home as written; every other as ported and looked up once per function), measure "
            "them with the step suite beside control, and rank them per scenario by the better "
            "port, each against the current home paired per round."),
    Command("hotpath", "the scheduler functions the harness replays, and how often each runs",
            (), _cmd_hotpath,
            "The hot-path table (bench/core/hotpath.py) as markdown: per function its frequency "
            "per scheduler iteration, the loops it runs in, and where it is defined and called in "
            "SGLang at the commit it was read from."),
)  # fmt: skip


def register(sub: SubParsers[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "target",
        help="read a user's SGLang tree: request class, where the state lives, call sites",
    )
    register_commands(
        p.add_subparsers(dest="target_command", required=True, parser_class=type(p)), _COMMANDS
    )


TRUST_HELP = (
    "with --target: execute a side-table revision's own state module (its file, in this "
    "process) instead of replaying it from what ast read; the only code of a tree that target "
    "mode can run, recorded in the manifest. Only for trees you trust (docs/TARGET.md)"
)


def add_min_replayed_option(parser: argparse.ArgumentParser) -> None:
    """--min-replayed, shared by `run` and `gate` (bench.target.placement)."""
    parser.add_argument(
        "--min-replayed",
        type=fraction,
        default=MIN_REPLAYED,
        metavar="SHARE",
        help="with --target --group: refuse (exit 2) a revision whose replay places less than "
        "this share of the group's accesses outside known-cold functions (default "
        f"{MIN_REPLAYED:g}; 0 accepts any non-empty replay, and the report lists what it did not "
        "place)",
    )


def add_trust_option(parser: argparse.ArgumentParser) -> None:
    """--trust-target-code, shared by `run`, `list` and `gate` (bench.target.replay)."""
    parser.add_argument("--trust-target-code", action="store_true", help=TRUST_HELP)


def check_trust(args: argparse.Namespace, specs: Any) -> None:
    """--trust-target-code only where revisions are materialized (one line, exit 2)."""

    if getattr(args, "trust_target_code", False) and not specs:
        raise UsageError("--trust-target-code is for --target: it is the one thing it changes")
