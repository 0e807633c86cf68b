"""`python -m bench gate`: the regression gate's command (registered by bench/commands/main.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.base.errors import UsageError
from bench.config.cliargs import SubParsers, csv_list, positive_int
from strategies import resolve


def _cmd_gate(args: argparse.Namespace) -> int:
    from bench.base.storage import ROOT
    from bench.gate.config import load_gate_config
    from bench.gate.run import TargetSpec, run_gate

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
        target = TargetSpec(args.target, args.base, args.head, args.group)
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


def register(sub: SubParsers[argparse.ArgumentParser]) -> None:
    p_gate = sub.add_parser(
        "gate",
        help="regression gate: the working tree against a baseline (exit 0 pass, 1 regression, 2 error)",
    )
    which = p_gate.add_mutually_exclusive_group()
    which.add_argument(
        "--base",
        metavar="GIT_REF",
        help="baseline tree (default: merge base with main, else HEAD~1); with --target, the "
        "base revision of PATH",
    )
    which.add_argument(
        "--baseline", metavar="GATE_JSON", help="a stored gate result as the baseline"
    )
    p_gate.add_argument(
        "--target",
        metavar="PATH",
        help="gate a user's SGLang tree: PATH at --base REV against --head REV (default: its "
        "working tree), measured by this harness",
    )
    p_gate.add_argument("--head", metavar="REV", help="with --target: the candidate revision")
    p_gate.add_argument(
        "--group",
        metavar="NAME",
        help="with --target: the state group to gate (default: what moved between the "
        "revisions; pd_hidden: the PD hidden study)",
    )
    p_gate.add_argument("--mode", choices=("wall", "instructions"), default="wall")
    p_gate.add_argument(
        "--strategy", type=csv_list, help="gated strategies (default from pyproject)"
    )
    p_gate.add_argument("--pattern", type=csv_list, help="gated access patterns")
    p_gate.add_argument("--lookup-op", type=csv_list, help="gated lookup ops, or 'none'")
    p_gate.add_argument("--threshold", type=float, help="percent; default from pyproject")
    p_gate.add_argument(
        "--threshold-us",
        type=float,
        metavar="US",
        help="wall clock, step benchmarks: fail above this many µs per scheduler iteration",
    )
    p_gate.add_argument(
        "--threshold-share",
        type=float,
        metavar="PCT",
        help="wall clock, step benchmarks: fail above this percent of the scenario's forward",
    )
    p_gate.add_argument("--rounds", type=positive_int, help="wall-clock rounds")
    p_gate.add_argument("--json", metavar="PATH", help="write the JSON result here")
    p_gate.add_argument("--markdown", metavar="PATH", help="write the markdown summary here")
    p_gate.add_argument(
        "--pyproject", metavar="PATH", help="read [tool.reqstate-bench.gate] from here"
    )
    p_gate.set_defaults(func=_cmd_gate)
