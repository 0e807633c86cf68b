"""`python -m bench profile`: the subcommand, registered by bench/commands/main.py through register().

    python -m bench profile (--strategy NAME[,NAME...] ... | --all) [--native] [--duration-s S]
        [--scenario NAME] [--pattern per_field|cached] [--device auto|cpu|cuda] [--rate-hz HZ]
        [--run RUN_DIR | --output-dir DIR]

Output goes to <run folder>/profile/: an existing run folder with --run, else a new one under
--output-dir (default reports/), named as `bench run` names its run folders.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from bench.base.errors import EXIT_FAILED, EXIT_OK, UsageError
from bench.base.storage import DEFAULT_REPORTS_DIR, check_free_space, new_run_dir
from bench.commands.real import parse_set
from bench.profiling.run import (
    SHARES_FILE,
    ProfileError,
    ProfileSettings,
    check_request,
    find_py_spy,
    profile_strategies,
)
from bench.real.profile import run as real_profile
from bench.real.run import selected
from strategies import StrategyError, resolve

REAL_DEFAULT_PRESET = "decode-b256"

PROFILE_SUBDIR = "profile"


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _real_options(p: argparse.ArgumentParser) -> None:
    """The options of `profile --real` (bench.real.profile)."""
    real = p.add_argument_group("with --real")
    real.add_argument(
        "--real-preset",
        default=REAL_DEFAULT_PRESET,
        metavar="NAME",
        help="the preset (decode-b256)",
    )
    real.add_argument("--set", action="append", metavar="KEY=VALUE", help="change a preset value")
    real.add_argument(
        "--rounds", type=int, default=real_profile.DEFAULT_ROUNDS, help="lockstep rounds (2)"
    )
    real.add_argument(
        "--processes",
        type=int,
        default=real_profile.DEFAULT_PROFILED,
        help="profiled processes per revision and round (3)",
    )
    real.add_argument(
        "--plain",
        type=int,
        default=real_profile.DEFAULT_PLAIN,
        help="unprofiled processes per revision and round, for the profiler's overhead (1)",
    )
    real.add_argument("--function", metavar="NAME", help="only functions whose name holds NAME")
    real.add_argument("--top", type=int, default=20, help="rows of the top-functions table (20)")
    real.add_argument("--seed", type=int, default=0)
    real.add_argument("--real-python", metavar="PYTHON", help="this interpreter, nothing built")
    p.add_argument(
        "--native", action="store_true", help="also sample native frames (shows the collector)"
    )
    p.add_argument(
        "--duration-s",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds of loop per strategy (10)",
    )
    p.add_argument(
        "--scenario",
        default="prefill-dspark",
        metavar="NAME",
        help="scheduler scenario whose loop is profiled (prefill-dspark; python -m bench scenarios)",
    )
    p.add_argument("--pattern", default="per_field", help="access pattern: per_field or cached")
    p.add_argument("--device", default="auto", help="auto (cuda when available), cpu or cuda")
    p.add_argument(
        "--rate-hz", type=int, default=250, metavar="HZ", help="py-spy samples per second (250)"
    )


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add the `profile` subcommand; its handler is set as `func` and returns an exit code."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "profile",
        help="py-spy flamegraphs of the steady-state scheduler loop, per strategy",
        description="Sample each strategy's steady-state scheduler loop with py-spy; write a "
        "flamegraph SVG, a speedscope file, the raw collapsed stacks and shares.json "
        "(strategy-code and GC shares) to <run folder>/profile/.",
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--strategy",
        action="append",
        type=_names,
        metavar="NAME",
        help="strategy to profile (repeatable, or comma-separated)",
    )
    which.add_argument("--all", action="store_true", help="profile every strategy")
    which.add_argument(
        "--real",
        type=_names,
        metavar="SRC[,SRC]",
        help="profile revisions' own schedulers in real mode's measured iterations (PATH@REV, "
        "PATH or sglang==X.Y.Z); two: also the functions whose time moved (docs/PROFILE.md)",
    )
    _real_options(p)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--run", metavar="RUN_DIR", help="write into RUN_DIR/profile/")
    where.add_argument(
        "--output-dir",
        metavar="DIR",
        help=f"where the new run folder goes (default {DEFAULT_REPORTS_DIR})",
    )
    p.set_defaults(func=cmd_profile)
    return p


def _real(args: argparse.Namespace) -> int:
    changes = parse_set(args.set)
    preset = selected([args.real_preset], changes)[0].in_lockstep(changes)
    cfg = real_profile.ProfileRun(
        specs=args.real,
        preset=preset,
        rounds=args.rounds,
        profiled=args.processes,
        plain=args.plain,
        rate_hz=args.rate_hz,
        seed=args.seed,
        top=args.top,
        function=args.function,
        interpreter=args.real_python,
        output_dir=Path(args.output_dir) if args.output_dir else DEFAULT_REPORTS_DIR,
    )
    return real_profile.execute(cfg)


def cmd_profile(args: argparse.Namespace) -> int:
    if args.real:
        return _real(args)
    if args.all:
        try:
            names = [s.name for s in resolve()]
        except StrategyError as exc:
            raise UsageError(str(exc)) from None
    else:
        names = [n for group in args.strategy for n in group]
    settings = ProfileSettings(
        duration_s=args.duration_s,
        scenario=args.scenario,
        pattern=args.pattern,
        device=args.device,
        rate_hz=args.rate_hz,
        native=args.native,
    )
    names, _device = check_request(names, settings)  # arguments first, nothing written
    if args.run is not None and not Path(args.run).is_dir():
        raise UsageError(f"{args.run}: no such run folder")
    find_py_spy()  # then the tool, still before anything is written
    if args.run is not None:
        run_dir = Path(args.run)
    else:
        run_dir = new_run_dir(Path(args.output_dir) if args.output_dir else DEFAULT_REPORTS_DIR)
    check_free_space(run_dir)
    out_dir = run_dir / PROFILE_SUBDIR
    print(f"profile folder: {out_dir}", file=sys.stderr)
    status = EXIT_OK
    try:
        shares = profile_strategies(names, out_dir=out_dir, **dataclasses.asdict(settings))
    except ProfileError as exc:
        for name, text in exc.failures.items():
            print(f"profile of {name} failed: {text}", file=sys.stderr)
        shares, status = exc.shares, EXIT_FAILED
    print(out_dir / SHARES_FILE)
    for entry in shares.values():
        print(out_dir / entry["flamegraph"])
    return status
