"""`python -m bench gate`: the regression gate's command (registered by bench/commands/main.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.base.errors import UsageError
from bench.base.storage import ROOT
from bench.commands.real import parse_set
from bench.commands.target import add_min_replayed_option, add_trust_option
from bench.config import cliargs
from bench.config.cliargs import Adder, Option, SubParsers, csv_list, positive_int
from bench.gate.config import load_gate_config
from bench.gate.run import TargetSpec, run_gate
from bench.real import presets as rp
from bench.real.gate import RealGate, presets_for, run
from bench.real.presets import with_changes
from strategies import resolve


def _real_specs(args: argparse.Namespace) -> tuple[str, str]:
    """--real PATH --base REV --head REV (a revision of PATH each; --head absent: PATH's
    working tree), or --base and --head given whole (PATH@REV, sglang==X.Y.Z)."""
    if not args.base:
        raise UsageError("gate --real needs --base (a revision of --real PATH, or a whole source)")
    if args.baseline:
        raise UsageError("gate --real measures both sides itself: no --baseline")

    def whole(text: str) -> bool:
        return "==" in text or "@" in text

    path = args.real
    base = args.base if whole(args.base) or path in (None, "") else f"{path}@{args.base}"
    if args.head is None:
        if not path:
            raise UsageError("gate --real without PATH needs --head (a whole source)")
        head = path
    else:
        head = args.head if whole(args.head) or not path else f"{path}@{args.head}"
    return base, head


def _cmd_real_gate(args: argparse.Namespace) -> int:

    for attr in ("target", "strategy", "pattern", "lookup_op", "group", "trust_target_code"):
        if getattr(args, attr, None):
            raise UsageError(
                f"gate --real measures the revisions' schedulers: no --{attr.replace('_', '-')}"
            )
    if args.mode != "wall":
        raise UsageError(
            "gate --real is wall clock only (a real scheduler under callgrind takes hours)"
        )

    base, head = _real_specs(args)
    names = [x for group in (args.real_preset or [list(rp.GATE_DEFAULT)]) for x in group]
    changes = parse_set(args.set)
    cfg = RealGate(
        base=base,
        head=head,
        presets=tuple(with_changes(p, changes) for p in presets_for(names)),
        rounds=args.rounds or 6,
        threshold_pct=args.threshold if args.threshold is not None else 5.0,
        threshold_us=args.threshold_us,
        threshold_share_pct=args.threshold_share,
        interpreter=args.real_python,
        changed=changes,
        where=args.where,
    )
    return run(
        cfg,
        json_out=Path(args.json) if args.json else None,
        markdown_out=Path(args.markdown) if args.markdown else None,
    )


def _cmd_gate(args: argparse.Namespace) -> int:
    if args.real is not None:
        return _cmd_real_gate(args)

    overrides: dict[str, object] = {
        "strategies": args.strategy,
        "patterns": args.pattern,
        "rounds": args.rounds,
        "threshold_pct": args.threshold if args.mode == "wall" else None,
        "instruction_threshold_pct": args.threshold if args.mode == "instructions" else None,
        "threshold_us": args.threshold_us,
        "threshold_share_pct": args.threshold_share,
    }
    if args.lookup_op is not None:
        overrides["lookup_ops"] = () if args.lookup_op == ("none",) else args.lookup_op
    pyproject = Path(args.pyproject) if args.pyproject else ROOT / "pyproject.toml"
    cfg = load_gate_config(pyproject, **overrides)
    target = None
    if args.target is not None:
        if args.baseline or not args.base:
            raise UsageError("gate --target PATH needs --base REV (and takes --head REV)")
        if args.strategy or args.pattern:
            raise UsageError(
                "gate --target measures the revisions' own code: no --strategy/--pattern"
            )
        target = TargetSpec(
            args.target,
            args.base,
            args.head,
            args.group,
            args.min_replayed,
            trust=args.trust_target_code,
        )
    elif args.trust_target_code:
        raise UsageError("gate --trust-target-code is for --target PATH (a user's tree)")
    elif args.head or args.group:
        raise UsageError(
            "gate --head REV is for --target PATH (this tree's gate runs the working tree)"
        )
    else:
        known = {s.name for s in resolve()}
        for name in cfg.strategies:
            if name not in known:
                raise UsageError(
                    f"unknown strategy {name!r}; available: {', '.join(sorted(known))}"
                )
    return run_gate(
        cfg,
        mode=args.mode,
        base_ref=args.base,
        baseline_file=Path(args.baseline) if args.baseline else None,
        json_out=Path(args.json) if args.json else None,
        markdown_out=Path(args.markdown) if args.markdown else None,
        target=target,
    )


def _add_baseline(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--base",
        metavar="GIT_REF",
        help="baseline tree (default: merge base with main, else HEAD~1); with --target, the "
        "base revision of PATH",
    )
    which.add_argument("--baseline", metavar="GATE_JSON", help="a stored gate result as the baseline")  # fmt: skip


_GATE: tuple[Option | Adder, ...] = (
    _add_baseline,
    (("--target",), {"metavar": "PATH",
      "help": "gate a user's SGLang tree: PATH at --base REV against --head REV (default: its "
              "working tree), measured by this harness"}),
    (("--real",), {"nargs": "?", "const": "", "metavar": "PATH",
      "help": "gate two revisions' own SGLang schedulers on the CPU (docs/REAL.md): PATH's "
              "--base REV against --head REV (default: its working tree), or --base/--head given "
              "whole (PATH@REV, sglang==X.Y.Z)"}),
    (("--real-preset",), {"action": "append", "type": csv_list, "metavar": "NAME[,NAME]",
      "help": "with --real: the presets gated (default prefill-chunked,decode-b256)"}),
    (("--head",), {"metavar": "REV", "help": "with --target or --real: the candidate revision"}),
    (("--set",), {"action": "append", "metavar": "KEY=VALUE",
      "help": "with --real: change a preset value in every gated preset (python -m bench real "
              "presets --explain NAME)"}),
    (("--real-python",), {"metavar": "PYTHON",
      "help": "with --real: this interpreter instead of building the revisions' environments"}),
    (("--where",), {"choices": ("auto", "always", "never"), "default": "auto",
      "help": "with --real: profile both sides with py-spy and name the functions whose time "
              "moved, for presets whose change is significant (auto), every preset, or never"}),
    (("--group",), {"metavar": "NAME",
      "help": "with --target: the state group to gate (default: what moved between the "
              "revisions; pd-hidden-study: the project's PD hidden study)"}),
    add_trust_option,
    add_min_replayed_option,
    (("--mode",), {"choices": ("wall", "instructions"), "default": "wall"}),
    (("--strategy",), {"type": csv_list, "help": "gated strategies (default from pyproject)"}),
    (("--pattern",), {"type": csv_list, "help": "gated access patterns"}),
    (("--lookup-op",), {"type": csv_list, "help": "gated lookup ops, or 'none'"}),
    (("--threshold",), {"type": float, "help": "percent; default from pyproject"}),
    (("--threshold-us",), {"type": float, "metavar": "US",
      "help": "wall clock, step benchmarks: fail above this many µs per scheduler iteration"}),
    (("--threshold-share",), {"type": float, "metavar": "PCT",
      "help": "wall clock, step benchmarks: fail above this percent of the scenario's forward"}),
    (("--rounds",), {"type": positive_int, "help": "wall-clock rounds"}),
    (("--json",), {"metavar": "PATH", "help": "write the JSON result here"}),
    (("--markdown",), {"metavar": "PATH", "help": "write the markdown summary here"}),
    (("--pyproject",), {"metavar": "PATH", "help": "read [tool.reqstate-bench.gate] from here"}),
)  # fmt: skip


def register(sub: SubParsers[argparse.ArgumentParser]) -> None:
    gate_help = (
        "regression gate: the working tree against a baseline (exit 0 pass, 1 regression, 2 error)"
    )
    cliargs.register_commands(sub, (cliargs.Command("gate", gate_help, _GATE, _cmd_gate),))
