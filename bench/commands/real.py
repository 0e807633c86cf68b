"""`python -m bench real build | presets | hotpath`, and the `--real` of `run` and `gate`: the
user's own SGLang scheduler on the CPU (bench/real/, docs/REAL.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bench.base.errors import EXIT_OK, UsageError
from bench.base.storage import write_json
from bench.base.timing import wall_s
from bench.config.budget import BUDGET_DEFAULT
from bench.config.cliargs import SubParsers, csv_list
from bench.real import freqmap, presets, source, venv
from bench.real import presets as rp
from bench.real.presets import SETTABLE
from bench.real.run import (
    DEFAULT_BUDGET_S,
    DEFAULT_PRECISION_PCT,
    RealRun,
    command_line,
    execute,
    prepare,
    run_count,
    selected,
)


def _progress(msg: str) -> None:
    print(f"[real] {msg}", file=sys.stderr, flush=True)


def _cmd_build(args: argparse.Namespace) -> int:

    for spec in args.source:
        src = source.parse(spec)
        t0 = wall_s()
        env, _tree, built = venv.ensure(src, _progress, rebuild=args.rebuild)
        took = wall_s() - t0
        how = f"built in {took:.0f} s" if built else f"already built (in {env.build_s:.0f} s)"
        stubs = ", ".join(env.stubs)
        print(
            f"{src.label}: environment {env.key} {how}, {env.size_bytes / 1e9:.2f} GB, "
            f"{len(env.installed)} packages; stubbed: {stubs}"
        )
    return EXIT_OK


def _cmd_presets(args: argparse.Namespace) -> int:

    if args.explain:
        try:
            p = presets.get(args.explain)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        print(f"{p.name}: {p.description}")
        for key, value, src in p.rows():
            print(f"  {key:<22} {value:<12} {src}")
        return EXIT_OK
    if args.markdown:
        print(presets.markdown(), end="")
        return EXIT_OK
    width = max(len(n) for n in presets.PRESETS)
    for name, p in presets.PRESETS.items():
        star = "*" if name in presets.DEFAULT else " "
        print(f"{name:<{width}} {star} {p.description}")
    print("* the default set of run --real")
    return EXIT_OK


def _cmd_hotpath(args: argparse.Namespace) -> int:

    (rev,) = prepare([args.source], args.real_python)
    preset = _presets([args.preset] if args.preset else ["decode-b256"], {})[0]
    _progress(f"{preset.name} {rev.source.label}: counting calls per function (untimed)")
    out = run_count(rev, preset, seed=args.seed)
    if not out.get("ok"):
        raise UsageError(f"{rev.source.label}: the counting pass failed: {out.get('message')}")
    measured = freqmap.build(out, revision=rev.source.label, preset=preset.name)
    kept = freqmap.store(measured, rev.source)
    rows = freqmap.compare(measured)
    if args.markdown:
        print(freqmap.markdown(measured, rows), end="")
    else:
        print("\n".join(freqmap.lines(measured, rows)))
    if args.json:
        write_json(Path(args.json), measured.to_json())
    print(f"measured map kept for target mode: {kept.name}", file=sys.stderr)
    return EXIT_OK


def _presets(names: list[str], changes: dict[str, Any]) -> list[Any]:

    return selected(names, changes)


def parse_set(items: list[str] | None) -> dict[str, Any]:
    """--set KEY=VALUE for real presets (bench.real.presets.SETTABLE)."""

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or key not in SETTABLE:
            raise UsageError(f"--set {item}: with --real, KEY is one of {', '.join(SETTABLE)}")
        out[key] = value if key in ("prompts", "outputs") else _int(key, value)
    return out


def _int(key: str, value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"--set {key}={value}: expected an integer") from None
    if n <= 0:
        raise UsageError(f"--set {key}={value}: expected a positive integer")
    return n


# Options of `run` that measure the synthetic loop: refused with --real.
_NOT_REAL = (
    "suite",
    "strategy",
    "target",
    "scenario",
    "sweep",
    "pattern",
    "request_model",
    "resume",
)


def run_real(args: argparse.Namespace) -> int:
    """`run --real SRC[,SRC]`."""

    for attr in _NOT_REAL:
        if getattr(args, attr, None):
            raise UsageError(
                f"--{attr.replace('_', '-')} measures the synthetic loop; not with --real"
            )
    specs = [x for group in args.real for x in group]
    names = [x for group in (args.real_preset or [list(rp.DEFAULT)]) for x in group]
    changes = parse_set(args.set)
    budget = getattr(args, "budget", None)

    cfg = RealRun(
        specs=specs,
        presets=_presets(names, changes),
        budget_s=DEFAULT_BUDGET_S if budget is BUDGET_DEFAULT else budget,
        precision_pct=args.precision or DEFAULT_PRECISION_PCT,
        seed=args.seed or 0,
        count=not args.no_count,
        command=command_line(args.argv),
        output_dir=Path(args.output_dir),
        changed=changes,
        interpreter=args.real_python,
        homes=[x for group in (args.real_home or []) for x in group],
    )
    _run_dir, status = execute(cfg)
    return status


def add_run_options(p: argparse.ArgumentParser) -> None:
    """`run`'s real-mode options (bench/commands/run.py registers them)."""
    p.add_argument(
        "--real",
        action="append",
        type=csv_list,
        metavar="SRC[,SRC]",
        help="measure revisions' own SGLang schedulers on the CPU with a stand-in model: "
        "PATH@REV of a git repository (bare works), PATH (its working tree), or sglang==X.Y.Z "
        "from the registry (docs/REAL.md)",
    )
    p.add_argument(
        "--real-preset",
        action="append",
        type=csv_list,
        metavar="NAME[,NAME]",
        help="with --real: the presets (default decode-b256,decode-b1024; list: python -m bench "
        "real presets); --set KEY=VALUE changes one in every preset",
    )
    p.add_argument(
        "--real-python",
        metavar="PYTHON",
        help="with --real: run the revisions with this interpreter instead of building an "
        "environment (its packages must import them)",
    )
    p.add_argument(
        "--real-home",
        action="append",
        type=csv_list,
        metavar="STRATEGY[,STRATEGY]",
        help="with --real: also measure each revision that keeps PD hidden state in a side table "
        "(PR #652's hidden_state.py) with these built-in strategies as its home",
    )
    p.add_argument(
        "--no-count",
        action="store_true",
        help="with --real: skip the untimed counting pass (the measured frequency map)",
    )


def register(sub: SubParsers[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("real", help="the user's own SGLang scheduler on the CPU (docs/REAL.md)")
    verbs = p.add_subparsers(dest="verb", required=True)
    b = verbs.add_parser(
        "build", help="build (or find) a revision's environment; its time and size"
    )
    b.add_argument("source", nargs="+", metavar="SRC", help="PATH@REV, PATH or sglang==X.Y.Z")
    b.add_argument("--rebuild", action="store_true", help="build again even if cached")
    b.set_defaults(func=_cmd_build)
    pr = verbs.add_parser("presets", help="the real-mode presets, each value with its source")
    pr.add_argument("--explain", metavar="NAME", help="every value of one preset with its source")
    pr.add_argument("--markdown", action="store_true", help="the table docs/REAL.md holds")
    pr.set_defaults(func=_cmd_presets)
    h = verbs.add_parser(
        "hotpath",
        help="count calls per function in the revision's scheduler (untimed) and set them "
        "beside bench/core/hotpath.py; kept for target mode",
    )
    h.add_argument("source", metavar="SRC", help="PATH@REV, PATH or sglang==X.Y.Z")
    h.add_argument("--preset", help="the preset counted (default decode-b256)")
    h.add_argument("--seed", type=int, default=0)
    h.add_argument(
        "--real-python",
        metavar="PYTHON",
        help="this interpreter instead of building an environment",
    )
    h.add_argument("--markdown", action="store_true", help="print the comparison as markdown")
    h.add_argument("--json", metavar="PATH", help="also write the measured map here")
    h.set_defaults(func=_cmd_hotpath)
