"""`python -m bench real build | presets | hotpath`, and the `--real` of `run` and `gate`: the
user's own SGLang scheduler on the CPU (bench/real/, docs/REAL.md)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.base.errors import EXIT_OK, UsageError
from bench.base.storage import write_atomic, write_json
from bench.base.timing import wall_s
from bench.config.budget import BUDGET_DEFAULT
from bench.config.cliargs import SubParsers, csv_list
from bench.core import hotpath
from bench.real import coverage, features, freqmap, interleave, presets, source, venv
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


def _cmd_coverage(args: argparse.Namespace) -> int:
    """`real coverage SRC`: each preset's untimed counting pass, traced line by line."""

    names = [x for group in (args.real_preset or [list(rp.GATE_DEFAULT)]) for x in group]
    before_names = [x for group in (args.before or []) for x in group]
    changes = parse_set(args.set)
    chosen = _presets(names, changes)
    before = _presets(before_names, changes) if before_names else []
    (rev,) = prepare([args.source], args.real_python, [*chosen, *before])
    traced = replace_iterations(
        chosen + [p for p in before if p.name not in names], args.iterations
    )
    outs: dict[str, dict[str, Any]] = {}
    for preset in traced:
        _progress(f"{preset.name} {rev.source.label}: tracing the scheduler's packages (untimed)")
        t0 = wall_s()
        out = run_count(rev, preset, seed=args.seed, coverage=True)
        if not out.get("ok"):
            raise UsageError(
                f"{rev.source.label} {preset.name}: the pass failed: {out.get('message')}"
            )
        outs[preset.name] = out
        _progress(f"{preset.name}: traced in {wall_s() - t0:.0f} s")
    cov = coverage.Coverage.build(rev.source.label, {n: outs[n] for n in names})
    table = hotpath.measured(rev.source.commit or rev.source.label)
    rows = table.rows if table is not None else []
    cov.measured_functions = [r.name for r in rows if coverage.traced(r.defined)]
    prior = (
        coverage.Coverage.build(rev.source.label, {p.name: outs[p.name] for p in before})
        if before
        else None
    )
    text = coverage.markdown(cov, before=prior)
    if args.markdown:
        print(text, end="")
    else:
        print("\n".join(coverage.lines(cov)))
    if args.output:
        write_atomic(Path(args.output), text)
    return EXIT_OK


def _cmd_features(args: argparse.Namespace) -> int:
    """`real features SRC`: each feature's and mode's cost per iteration, in lockstep."""

    (base,) = _presets([args.base], parse_set(args.set))
    chosen = [x for group in (args.variants or [list(features.DEFAULT_VARIANTS)]) for x in group]
    cfg = features.FeatureRun(
        source=args.source,
        base=base,
        variants=tuple(chosen),
        share=args.share,
        rounds=args.rounds,
        seed=args.seed,
        interpreter=args.real_python,
        output_dir=Path(args.output_dir),
    )
    return features.execute(cfg)


def replace_iterations(chosen: list[Any], iterations: int) -> list[Any]:
    """The presets as a coverage pass runs them: `iterations` measured iterations in one value."""
    return [replace(p, values=1, iterations=iterations) for p in chosen]


def _presets(names: list[str], changes: dict[str, Any]) -> list[Any]:

    return selected(names, changes)


def parse_set(items: list[str] | None) -> dict[str, Any]:
    """--set KEY=VALUE for real presets (bench.real.presets.SETTABLE: each key's type)."""

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or key not in SETTABLE:
            raise UsageError(f"--set {item}: with --real, KEY is one of {', '.join(SETTABLE)}")
        try:
            out[key] = presets.parse_value(key, value)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if SETTABLE[key] is int and out[key] <= 0 and key not in _MAY_BE_ZERO:
            raise UsageError(f"--set {key}={value}: expected a positive integer")
    return out


# integers whose 0 (or -1) means something: no cap, no KV override, output logprobs only
_MAY_BE_ZERO = frozenset(
    {"kv_tokens", "max_new_tokens", "top_logprobs_num", "logprob_start_len", "top_k",
     "think_iterations", "retract_every"}
)  # fmt: skip


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


def _revision(p: argparse.ArgumentParser, *, presets: bool = True) -> None:
    """The options every verb that runs a revision takes."""
    p.add_argument("source", metavar="SRC", help="PATH@REV, PATH or sglang==X.Y.Z")
    if presets:
        p.add_argument("--set", action="append", metavar="KEY=VALUE", help="change a preset value")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--real-python",
        metavar="PYTHON",
        help="this interpreter instead of building an environment",
    )


def _names(p: argparse.ArgumentParser, flag: str, text: str) -> None:
    p.add_argument(flag, action="append", type=csv_list, metavar="NAME[,NAME]", help=text)


def _add_coverage(verbs: Any) -> None:
    c = verbs.add_parser(
        "coverage",
        help="the lines and functions of the scheduler's packages each preset runs (untimed), "
        "their union, and the hot-path functions no preset reaches",
    )
    _revision(c)
    _names(
        c, "--real-preset", f"the presets traced (default: the gate's, {','.join(rp.GATE_DEFAULT)})"
    )
    _names(
        c,
        "--before",
        "also trace these presets and show their union beside the others' (what the coverage "
        "was with them alone)",
    )
    c.add_argument(
        "--iterations",
        type=int,
        default=coverage.DEFAULT_ITERATIONS,
        help=f"measured iterations traced per preset (default {coverage.DEFAULT_ITERATIONS})",
    )
    c.add_argument("--markdown", action="store_true", help="print the tables as markdown")
    c.add_argument("--output", metavar="PATH", help="also write the markdown here")
    c.set_defaults(func=_cmd_coverage)


def _add_features(verbs: Any) -> None:
    f = verbs.add_parser(
        "features",
        help="what each request feature and scheduler mode costs per iteration against the "
        "plain preset at the same batch (processes in lockstep)",
    )
    _revision(f)
    f.add_argument("--base", default="decode-b256", help="the plain preset (default decode-b256)")
    _names(
        f,
        "--variants",
        f"features and modes measured (default all: {','.join(features.DEFAULT_VARIANTS)}; "
        f"speculative decoding when named: {','.join(rp.SPEC_VARIANTS)})",
    )
    f.add_argument(
        "--share",
        type=float,
        default=features.DEFAULT_SHARE,
        help=f"the share of requests a feature is on (default {features.DEFAULT_SHARE})",
    )
    f.add_argument("--rounds", type=int, default=features.DEFAULT_ROUNDS)
    f.add_argument("--output-dir", default="reports", help="where the features folder goes")
    f.set_defaults(func=_cmd_features)


def _cmd_interleave(args: argparse.Namespace) -> int:
    """`real interleave BASE HEAD`: a change's size by what runs between two iterations."""

    (preset,) = _presets([args.real_preset], parse_set(args.set))
    cfg = interleave.Study(
        base=args.source,
        head=args.head,
        preset=preset.in_lockstep(parse_set(args.set)),
        others=tuple(int(x) for x in args.others),
        rewarms=tuple(int(x) for x in args.rewarm),
        processes=args.processes,
        seed=args.seed,
        interpreter=args.real_python,
        output_dir=Path(args.output_dir),
    )
    return interleave.execute(cfg)


def _add_interleave(verbs: Any) -> None:
    i = verbs.add_parser(
        "interleave",
        help="one change measured with 1, 3, 7 and 11 other processes' iterations between two "
        "of one process's, with and without a re-warm iteration, and alone (docs/REAL.md)",
    )
    _revision(i)
    i.add_argument("head", metavar="HEAD", help="the other revision (PATH@REV ...)")
    i.add_argument("--real-preset", default="prefill-chunked", help="the preset (one)")
    i.add_argument(
        "--others", type=csv_list, default=[str(x) for x in interleave.DEFAULT_OTHERS],
        help="other processes between two iterations (odd: the group holds both sides equally)",
    )  # fmt: skip
    i.add_argument(
        "--rewarm", type=csv_list, default=[str(x) for x in interleave.DEFAULT_REWARMS],
        help="unrecorded iterations at each turn's start, each tried",
    )  # fmt: skip
    i.add_argument("--processes", type=int, default=interleave.DEFAULT_PROCESSES)
    i.add_argument("--output-dir", default="reports")
    i.set_defaults(func=_cmd_interleave)


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
    _revision(h, presets=False)
    h.add_argument("--preset", help="the preset counted (default decode-b256)")
    h.add_argument("--markdown", action="store_true", help="print the comparison as markdown")
    h.add_argument("--json", metavar="PATH", help="also write the measured map here")
    h.set_defaults(func=_cmd_hotpath)
    _add_coverage(verbs)
    _add_features(verbs)
    _add_interleave(verbs)
