"""Argument parsing and dispatch. User mistakes end as one line on stderr and exit 2."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.config import RunConfig
from bench.core import scenarios
from bench.errors import EXIT_FAILED, EXIT_USAGE, DataError, UsageError, one_line
from bench.runformat import MANIFEST
from bench.storage import DEFAULT_REPORTS_DIR
from strategies import is_strategy_file, load_external, resolve


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors in one line and exits 2 (its default, kept explicit)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(one_line(f"{self.prog}: {message}"))


def _split_strategies(
    groups: list[tuple[str, ...]] | None, external: list[str]
) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """--strategy takes names and strategy files alike: a file (a name with '/' or ending in
    .py) is loaded like --external and selected by its NAME. Returns (names, externals)."""
    if not groups:
        return None, tuple(external)
    names: list[str] = []
    files = list(external)
    for token in (x for group in groups for x in group):
        if is_strategy_file(token):
            names.append(load_external(token).name)
            files.append(token)
        else:
            names.append(token)
    return tuple(dict.fromkeys(names)), tuple(dict.fromkeys(files))


def _cmd_list(args: argparse.Namespace) -> int:
    from bench.target.cli import list_targets, split_targets

    names, external = _split_strategies(args.strategy, args.external)
    specs = split_targets(args.target)
    if specs:
        paths = list_targets(specs)
        external = (*external, *paths)
        if names is not None:
            names = (*names, *(load_external(p).name for p in paths))
    strategies = resolve(names, external=external)
    width = max(len(s.name) for s in strategies)
    for s in strategies:
        tags = []
        if s.is_target:
            tags.append(
                f"target: {s.target.get('spec')} ({s.target.get('commit') or 'working tree'})"
            )
        elif s.external:
            tags.append(f"external: {s.source_path}")
        if not s.thread_safe_create:
            tags.append("racy create")
        suffix = f"  [{'; '.join(tags)}]" if tags else ""
        print(f"{s.name:<{width}}  {s.description}{suffix}")
    return 0


def _cmd_scenarios(args: argparse.Namespace) -> int:
    from bench.core import scenario_docs

    try:
        if args.markdown:
            print(scenario_docs.markdown(), end="")
        elif args.explain:
            print(scenario_docs.explain(scenarios.get(args.explain)))
        else:
            print(scenario_docs.listing())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return 0


def _cmd_workload(args: argparse.Namespace) -> int:
    from bench.core import reqmodel

    if args.workload_command == "models":
        for name in reqmodel.available():
            model = reqmodel.load(name)
            if model is None:
                print(f"{name:<20} the earlier generated table (bench/core/workload.py)")
            else:
                print(
                    f"{name:<20} {len(model.attrs)} attributes, {model.tracked()} GC-tracked; {model.origin}"
                )
        return 0
    try:
        model = reqmodel.import_req(Path(args.path), args.name, origin=args.origin or "")
    except reqmodel.ImportReqError as exc:
        raise UsageError(str(exc)) from None
    print(reqmodel.describe(model))
    out = Path(args.output) if args.output else reqmodel.DATA_DIR / f"{args.name}.json"
    from bench.storage import write_json

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_json(out, model.to_json())
    except OSError as exc:
        raise UsageError(f"{out}: cannot write the table ({exc.strerror})") from None
    print(f"table: {out}")
    return 0


def _model_name(text: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", text):
        raise argparse.ArgumentTypeError(
            f"a model name is lowercase letters, digits, . _ -; got {text!r}"
        )
    return text


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {value}")
    return value


def _csv(text: str) -> tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


def _config_from_args(args: argparse.Namespace) -> RunConfig:
    from bench.target.cli import looks_like_target, split_targets, target_name

    config = RunConfig()
    if args.quick:
        config = config.quick()
    if args.config:
        config = _load_config_file(Path(args.config), config)
    names, external = _split_strategies(args.strategy, args.external)
    changes: dict[str, object] = {"device": args.device, "external": external}
    if args.suite:
        changes["suites"] = tuple(dict.fromkeys(x for group in args.suite for x in group))
    specs = split_targets(getattr(args, "target", None))
    if specs:
        # A revision is measured beside `control` (the harness's own cost, which every net
        # figure needs) and whatever --strategy adds; the first revision is the baseline.
        if args.request_class == "sglang":
            raise UsageError("--request-class sglang and --target: a revision brings its own Req")
        targets = tuple(target_name(x) for x in specs)
        names = (*targets, *(names if names is not None else ("control",)))
        changes["baseline"] = targets[0]
    if args.baseline is not None and looks_like_target(args.baseline):
        if not specs:
            raise UsageError(f"--baseline {args.baseline}: a revision needs --target")
        args.baseline = target_name(args.baseline)
        if args.baseline not in names:  # type: ignore[operator]
            raise UsageError(f"--baseline {args.baseline}: not among the --target revisions")
    if names is not None:
        changes["strategies"] = names
    for attr in ("baseline", "seed", "workers", "values", "background_objects"):
        value = getattr(args, attr)
        if value is not None:
            changes[attr] = value
    if args.values is not None:
        changes["step_values"] = args.values  # one knob for every suite's repetitions
    if args.workers is not None:
        changes["lookup_workers"] = args.workers
    if args.pattern:
        changes["patterns"] = args.pattern
    if args.regime:
        changes["lookup_regimes"] = args.regime
    if args.no_aa:
        changes["aa_twins"] = 0
    if args.request_model:
        changes["request_model"] = args.request_model
    if args.request_class:
        changes["request_class"] = args.request_class
    try:
        if args.scenario:
            changes["scenarios"] = tuple(dict.fromkeys(x for group in args.scenario for x in group))
            for name in changes["scenarios"]:  # type: ignore[attr-defined]
                scenarios.get(name)
        if args.set:
            changes["scenario_overrides"] = {
                **config.scenario_overrides,
                **scenarios.parse_set(args.set),
            }
        if args.sweep:
            changes["sweep_key"], changes["sweep_values"] = scenarios.parse_sweep(args.sweep)
        config = replace(config, **changes)  # type: ignore[arg-type]
        config.validate()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return config


# Options of earlier versions whose knobs are scenario parameters now.
_MOVED_OPTIONS = {
    "requests": "live requests are no longer held: queues emerge from a scenario's arrivals and residence times (--scenario, --set)",
    "pd_fraction": "use --set pd_fraction=X",
    "streaming": "use --set streaming=true",
    "pool_rows": "use --set pool_rows=N",
    "chunked_prefill_size": "use --set chunked_prefill_size=N",
}


def _refuse_moved_options(args: argparse.Namespace) -> None:
    for attr, hint in _MOVED_OPTIONS.items():
        if getattr(args, attr, None) not in (None, False):
            raise UsageError(
                f"--{attr.replace('_', '-')} is gone: {hint}; see python -m bench scenarios"
            )


def _load_config_file(path: Path, base: RunConfig) -> RunConfig:
    """Overrides from a JSON object of RunConfig fields (see bench/config.py)."""
    from bench.storage import read_json

    raw = read_json(path)
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: expected a JSON object of configuration keys")
    merged = {**json.loads(base.to_json()), **raw}
    try:
        return RunConfig.from_json(json.dumps(merged))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{path}: {exc}") from None


def _check_strategies_and_device(config: RunConfig) -> None:
    """Refuse unknown strategies, a missing baseline or an unusable device before any work."""
    from bench.rowpool import check_fits, default_shape  # torch: only when measuring
    from bench.timing import resolve_device

    chosen = resolve(config.strategies, external=config.external)
    names = {s.name for s in chosen}
    if config.baseline not in names:
        raise UsageError(
            f"baseline strategy {config.baseline!r} is not among the measured ones "
            f"({', '.join(sorted(names))}); add it with --strategy or pick --baseline"
        )
    try:
        device = resolve_device(config.device)
        for scenario, _extra in [*config.cases(), *config.scaling_cases()]:
            shape = default_shape(
                device,
                chunked_prefill_size=scenario.chunked_prefill_size,
                pool_rows=scenario.pool_rows,
            )
            check_fits(shape, device)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _new_run(config: RunConfig, args: argparse.Namespace) -> tuple[Path, dict[str, Any], RunConfig]:
    """A fresh run folder with its manifest, for a configuration already validated. Revisions
    (--target) are written into it as strategy files (run/targets/), measured as external
    strategies, and described in the manifest."""
    from bench import runner
    from bench.storage import check_free_space, new_run_dir
    from bench.target.cli import split_targets

    specs = split_targets(getattr(args, "target", None))
    if not specs:
        _check_strategies_and_device(config)
    run_dir = new_run_dir(Path(args.output_dir))
    check_free_space(run_dir)
    targets: dict[str, dict[str, Any]] = {}
    if specs:
        from bench.target.materialize import materialize

        made = [materialize(spec, run_dir / "targets") for spec in specs]
        targets = {t.name: t.metadata() for t in made}
        config = replace(config, external=(*config.external, *(str(t.path) for t in made)))
        _check_strategies_and_device(config)
    command = "python -m bench " + " ".join(shlex.quote(a) for a in args.argv)
    manifest = runner.start_run(config, run_dir, command, targets=targets)
    print(f"run folder: {run_dir}", file=sys.stderr)
    return run_dir, manifest, config


def _execute(run_dir: Path, manifest: dict[str, Any], config: RunConfig) -> dict[str, Any] | int:
    """Run the suites and print the terminal table; the final manifest, or the exit status of
    an interruption (finished suites kept, and how to finish)."""
    from bench import runner
    from bench.report.console import render_table

    try:
        manifest = runner.execute(run_dir, manifest, config)
        print(render_table(run_dir))
        return manifest
    except runner.Interrupted as exc:
        print(
            f"interrupted ({exc}); finished suites kept in {run_dir}; "
            f"finish with: python -m bench run --resume {run_dir}",
            file=sys.stderr,
        )
        return 128 + exc.signum


def _cmd_run(args: argparse.Namespace) -> int:
    from bench import runner
    from bench.report.console import render_table
    from bench.storage import check_free_space, read_json

    if args.resume:
        run_dir = Path(args.resume)
        manifest = read_json(run_dir / MANIFEST)
        try:
            config = RunConfig.from_json(json.dumps(manifest["config"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{run_dir / MANIFEST}: unusable configuration ({exc})") from None
        _check_strategies_and_device(config)
        check_free_space(run_dir)
        missing = runner.missing_suites(manifest)
        if not missing:
            print(f"nothing to resume: {run_dir} is {manifest['status']}", file=sys.stderr)
            print(render_table(run_dir))
            return 0 if manifest["status"] == "complete" else EXIT_FAILED
        print(f"resuming {run_dir}: {', '.join(missing)}", file=sys.stderr)
    else:
        _refuse_moved_options(args)
        config = _config_from_args(args)
        run_dir, manifest, config = _new_run(config, args)
    finished = _execute(run_dir, manifest, config)
    if isinstance(finished, int):
        return finished
    _run_selfcheck(run_dir, config)
    if not args.no_report:
        from bench.report import write_report

        try:
            paths = write_report(run_dir)
        except Exception as exc:  # the measurements are safe on disk: say so, do not bury them
            print(
                f"error: the report could not be written ({type(exc).__name__}: {exc}); results "
                f"are kept in {run_dir}; retry with: python -m bench report {run_dir}",
                file=sys.stderr,
            )
            return EXIT_FAILED
        for path in paths:
            print(f"report: {path}")
    return 0 if finished["status"] == "complete" else EXIT_FAILED


def _cmd_selfcheck(args: argparse.Namespace) -> int:
    from bench.selfcheck import SELFCHECK_FILE, selfcheck
    from bench.storage import latest_run_dir

    if args.run:
        run_dir: Path | None = Path(args.run)
        if not (Path(args.run) / MANIFEST).is_file():
            raise UsageError(f"{args.run}: not a run folder (no {MANIFEST})")
    else:
        run_dir = latest_run_dir(Path(args.output_dir))
    if run_dir is not None:
        print(f"comparing with {run_dir}", file=sys.stderr)
    try:
        result = selfcheck(
            run_dir, live=args.live, request_model=args.request_model, write=not args.no_write
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print("\n".join(result.lines()))
    if run_dir is not None and not args.no_write:
        print(f"written: {run_dir / SELFCHECK_FILE}", file=sys.stderr)
    return 0


def _run_selfcheck(run_dir: Path, config: RunConfig) -> None:
    """After a run whose lookup suite measured warm get_hit: the timeit cross-check, written
    into the run folder. A failure here never costs the run."""
    from bench.selfcheck import run_sizes, selfcheck

    if "lookup" not in config.suites or "warm" not in config.lookup_regimes:
        return
    if config.request_class != "model":
        return  # the check builds the request model's class; the run measured sglang's own
    try:
        if not run_sizes(run_dir):
            return
        print("selfcheck: timing get_hit with plain timeit (~10 s)", file=sys.stderr)
        result = selfcheck(run_dir)
    except Exception as exc:
        print(f"selfcheck skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
        return
    print("\n".join(result.lines()))


def _cmd_selftest_aa(args: argparse.Namespace) -> int:
    from bench.selftest_aa import SELFTEST_FILE, config_for, count_flags, lines
    from bench.storage import write_json
    from strategies import load_external

    config = RunConfig().quick() if args.quick else RunConfig()
    copies = tuple(args.copy or ())
    config = config_for(config, copies)
    try:
        copy_names = [load_external(c).name for c in copies]
        config.validate()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    run_dir, manifest, config = _new_run(config, args)
    finished = _execute(run_dir, manifest, config)
    if isinstance(finished, int):
        return finished
    result = count_flags(run_dir, copy_names)
    write_json(run_dir / SELFTEST_FILE, result)
    print("\n".join(lines(result)))
    return 0 if finished["status"] == "complete" else EXIT_FAILED


def _cmd_report(args: argparse.Namespace) -> int:
    from bench.report import write_compare, write_report

    if args.compare:
        base, head = (Path(p) for p in args.compare)
        out_dir = Path(args.output_dir) if args.output_dir else head
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = write_compare(base, head, out_dir)
    else:
        if not args.run:
            raise UsageError("report: give a run folder, or --compare BASE_RUN HEAD_RUN")
        paths = write_report(Path(args.run))
    for path in paths:
        print(f"report: {path}")
    return 0


def _cmd_gate(args: argparse.Namespace) -> int:
    from bench.gate.config import load_gate_config
    from bench.gate.run import TargetSpec, run_gate
    from bench.storage import ROOT

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
        target = TargetSpec(args.target, args.base, args.head)
    elif args.head:
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
    p_list.add_argument(
        "--strategy",
        action="append",
        type=_csv,
        metavar="NAME_OR_FILE",
        help="list only these (names, or strategy .py files loaded like --external)",
    )
    p_list.add_argument(
        "--target",
        action="append",
        type=_csv,
        metavar="PATH@REV[,PATH@REV]",
        help="also list revisions of an SGLang tree, each as the strategy it is measured as",
    )
    p_list.set_defaults(func=_cmd_list)

    p_run = sub.add_parser("run", help="measure: run suites and write a run folder")
    p_run.add_argument(
        "--suite", action="append", type=_csv, help="lookup,step,gc,scaling (default: all)"
    )
    p_run.add_argument(
        "--strategy",
        action="append",
        type=_csv,
        metavar="NAME_OR_FILE",
        help="strategies to measure (default: all); a path/to/mine.py is loaded like --external",
    )
    p_run.add_argument(
        "--external",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="also measure a strategy from a module path or .py file",
    )
    p_run.add_argument(
        "--target",
        action="append",
        type=_csv,
        metavar="PATH@REV[,PATH@REV]",
        help="measure revisions of an SGLang tree (PATH alone: its working tree), each with its "
        "own Req, state code and call sites, beside control (add built-ins with --strategy); "
        "the first is the baseline unless --baseline PATH@REV",
    )
    p_run.add_argument(
        "--quick", action="store_true", help="the small CI-sized set (about a minute here)"
    )
    p_run.add_argument(
        "--config", metavar="JSON", help="configuration overrides (keys of bench/config.py)"
    )
    p_run.add_argument("--device", default="auto", help="auto (cuda when available), cpu or cuda")
    p_run.add_argument(
        "--scenario",
        action="append",
        type=_csv,
        metavar="NAME[,NAME]",
        help=f"scheduler scenarios (default: {','.join(scenarios.DEFAULT_SET)}; list: python -m bench scenarios)",
    )
    p_run.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scenario parameter in every selected scenario (repeatable; recorded)",
    )
    p_run.add_argument(
        "--sweep",
        metavar="KEY=V1,V2,...",
        help="measure every scenario at each value of one parameter (e.g. decode_batch=64,256,1024,4096)",
    )
    p_run.add_argument("--pattern", type=_csv, help="access patterns: per_field,cached")
    p_run.add_argument(
        "--regime", type=_csv, help="lookup memory regimes: warm,cold (also: mixed, the old one)"
    )
    p_run.add_argument(
        "--request-model",
        metavar="NAME",
        help="request model table (default: the fork head the PR targets; list: python -m bench workload models)",
    )
    p_run.add_argument(
        "--request-class",
        choices=("model", "sglang"),
        help="model: generated from the request model (default); sglang: the installed sglang's Req",
    )
    for moved in _MOVED_OPTIONS:  # refused with a hint (see _refuse_moved_options)
        flag = "--" + moved.replace("_", "-")
        if moved == "streaming":
            p_run.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
        else:
            p_run.add_argument(flag, help=argparse.SUPPRESS)
    p_run.add_argument(
        "--baseline",
        help="strategy ratios are taken against (default pr652), or a --target PATH@REV",
    )
    p_run.add_argument("--seed", type=int)
    p_run.add_argument("--workers", type=_positive_int, help="worker processes per suite")
    p_run.add_argument("--values", type=_positive_int, help="measured values per worker")
    p_run.add_argument("--background-objects", type=int, help="GC background heap size")
    p_run.add_argument(
        "--output-dir", default=str(DEFAULT_REPORTS_DIR), help="where run folders go"
    )
    p_run.add_argument("--resume", metavar="RUN", help="finish an interrupted run folder")
    p_run.add_argument("--no-report", action="store_true", help="skip writing the report")
    p_run.add_argument(
        "--no-aa",
        action="store_true",
        help="do not measure the baseline's A/A twin (<baseline>.aa), which sets each family's noise floor",
    )
    p_run.set_defaults(func=_cmd_run)

    p_scen = sub.add_parser("scenarios", help="list the scheduler scenarios, one line each")
    p_scen.add_argument("--explain", metavar="NAME", help="one scenario's parameters and sources")
    p_scen.add_argument(
        "--markdown", action="store_true", help="docs/SCENARIOS.md (every preset, every source)"
    )
    p_scen.set_defaults(func=_cmd_scenarios)

    p_work = sub.add_parser("workload", help="request models: import SGLang's Req, list models")
    work = p_work.add_subparsers(dest="workload_command", required=True, parser_class=_Parser)
    p_imp = work.add_parser(
        "import-req", help="read class Req from a schedule_batch.py into a request model table"
    )
    p_imp.add_argument("path", help="path to sglang/srt/managers/schedule_batch.py")
    p_imp.add_argument("--name", type=_model_name, default="imported", help="model name (imported)")
    p_imp.add_argument("--origin", help="where the file came from (recorded in the table)")
    p_imp.add_argument(
        "--output", help="write the table here (default bench/data/request_models/NAME.json)"
    )
    work.add_parser("models", help="the request models this harness ships")
    p_work.set_defaults(func=_cmd_workload)

    p_aa = sub.add_parser(
        "selftest-aa",
        help="run the suites with two A/A twins of the baseline and count the rows each verdict rule flags",
    )
    p_aa.add_argument("--quick", action="store_true", help="the quick set (about a minute)")
    p_aa.add_argument(
        "--copy",
        action="append",
        metavar="FILE",
        help="also measure this strategy file, a verbatim copy of the baseline under another NAME",
    )
    p_aa.add_argument("--output-dir", default=str(DEFAULT_REPORTS_DIR), help="where run folders go")
    p_aa.set_defaults(func=_cmd_selftest_aa)

    p_check = sub.add_parser(
        "selfcheck",
        help="warm get_hit of weakkey, declared, dynattr with plain timeit, against a run's figures",
    )
    p_check.add_argument(
        "run", nargs="?", help="run folder (default: the newest under --output-dir)"
    )
    p_check.add_argument(
        "--output-dir", default=str(DEFAULT_REPORTS_DIR), help="where run folders are"
    )
    p_check.add_argument(
        "--live",
        type=_positive_int,
        help="live requests (default: the run's smallest lookup size, else 1000)",
    )
    p_check.add_argument(
        "--request-model", metavar="NAME", help="request model (default: the run's)"
    )
    p_check.add_argument(
        "--no-write", action="store_true", help="do not write selfcheck.json into the run"
    )
    p_check.set_defaults(func=_cmd_selfcheck)

    p_report = sub.add_parser(
        "report", help="HTML + markdown report of a run folder (or a comparison)"
    )
    p_report.add_argument("run", nargs="?", help="run folder under reports/")
    p_report.add_argument(
        "--compare", nargs=2, metavar=("BASE_RUN", "HEAD_RUN"), help="diff two runs"
    )
    p_report.add_argument("--output-dir", help="where --compare writes (default: HEAD_RUN)")
    p_report.set_defaults(func=_cmd_report)

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
    p_gate.add_argument("--mode", choices=("wall", "instructions"), default="wall")
    p_gate.add_argument("--strategy", type=_csv, help="gated strategies (default from pyproject)")
    p_gate.add_argument("--pattern", type=_csv, help="gated access patterns")
    p_gate.add_argument("--lookup-op", type=_csv, help="gated lookup ops, or 'none'")
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
    p_gate.add_argument("--rounds", type=_positive_int, help="wall-clock rounds")
    p_gate.add_argument("--json", metavar="PATH", help="write the JSON result here")
    p_gate.add_argument("--markdown", metavar="PATH", help="write the markdown summary here")
    p_gate.add_argument(
        "--pyproject", metavar="PATH", help="read [tool.reqstate-bench.gate] from here"
    )
    p_gate.set_defaults(func=_cmd_gate)

    from bench.profiling import register as register_profile
    from bench.target.cli import register as register_target

    register_profile(sub)  # type: ignore[arg-type]
    register_target(sub)  # type: ignore[arg-type]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
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
