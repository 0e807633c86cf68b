"""`python -m bench list | run | selftest-aa | selfcheck`: what a run measures, measuring it,
and checking it (registered by bench/cli.py). User mistakes end as one line and exit 2."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import suites
from bench.cliargs import SubParsers, csv_list, positive_int
from bench.config import RunConfig
from bench.core import scenarios
from bench.errors import EXIT_FAILED, DataError, UsageError
from bench.orchestration.sequence import (
    add_budget_options,
    budget_changes,
    execute,
    terminal_text,
)
from bench.runformat import MANIFEST, Manifest
from bench.storage import DEFAULT_REPORTS_DIR
from strategies import is_strategy_file, load_external, resolve


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
        paths = list_targets(specs, getattr(args, "group", None))
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


def _config_from_args(args: argparse.Namespace) -> RunConfig:
    from bench.target.cli import looks_like_target, split_targets, target_name

    config = suites.default_config()
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
    for attr in ("baseline", "seed", "workers", "values"):
        value = getattr(args, attr)
        if value is not None:
            changes[attr] = value
    # --workers and --values are every suite's: each suite's own count follows them
    every = {k: getattr(args, k) for k in ("workers", "values") if getattr(args, k) is not None}
    if every:
        config = config.for_every_suite(**every)
    if args.background_objects is not None:
        config = config.with_suite("gc", background_objects=args.background_objects)
    if args.pattern:
        changes["patterns"] = args.pattern
    if args.regime:
        config = config.with_suite("lookup", regimes=args.regime)
    if args.no_aa:
        changes["aa_twins"] = 0
    if args.request_model:
        changes["request_model"] = args.request_model
    if args.request_class:
        changes["request_class"] = args.request_class
    changes.update(budget_changes(args, config_file=args.config))
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
    """Overrides from a JSON object of configuration keys (the flat keys of bench/config.py and
    of every suite's options)."""
    from bench.storage import read_json

    raw = read_json(path)
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: expected a JSON object of configuration keys")
    merged = {**base.flat(), **raw}
    try:
        return suites.config_from_json(json.dumps(merged))
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
        for scenario, _extra in config.all_cases():
            shape = default_shape(
                device,
                chunked_prefill_size=scenario.chunk_tokens,
                pool_rows=scenario.pool_rows,
            )
            check_fits(shape, device)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _new_run(config: RunConfig, args: argparse.Namespace) -> tuple[Path, Manifest, RunConfig]:
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
        from bench.target.select import materialize_targets

        made = materialize_targets(specs, run_dir / "targets", group=getattr(args, "group", None))
        targets = {t.name: t.metadata() for t in made}
        config = replace(config, external=(*config.external, *(str(t.path) for t in made)))
        base = next((t for t in made if t.name == config.baseline), made[0])
        if base.group is not None and args.request_model is None:
            # every other strategy (control above all: every net figure is taken against it)
            # builds the baseline revision's Req, so a figure net of control holds no
            # difference between two request classes but the revisions' own
            config = replace(config, request_model=str(base.path.with_suffix(".reqmodel.json")))
        _check_strategies_and_device(config)
    command = "python -m bench " + " ".join(shlex.quote(a) for a in args.argv)
    manifest = runner.start_run(config, run_dir, command, targets=targets)
    print(f"run folder: {run_dir}", file=sys.stderr)
    return run_dir, manifest, config


def _cmd_run(args: argparse.Namespace) -> int:
    from bench import runner
    from bench.storage import check_free_space

    if args.resume:
        run_dir = Path(args.resume)
        manifest = runner.read_manifest(run_dir)
        try:
            config = suites.config_from_json(json.dumps(manifest.config))
        except (TypeError, ValueError) as exc:
            raise DataError(f"{run_dir / MANIFEST}: unusable configuration ({exc})") from None
        _check_strategies_and_device(config)
        check_free_space(run_dir)
        missing = manifest.missing_suites()
        if not missing:
            print(f"nothing to resume: {run_dir} is {manifest.status}", file=sys.stderr)
            print(terminal_text(run_dir, verbose=args.verbose))
            return 0 if manifest.status == "complete" else EXIT_FAILED
        print(f"resuming {run_dir}: {', '.join(missing)}", file=sys.stderr)
    else:
        _refuse_moved_options(args)
        config = _config_from_args(args)
        run_dir, manifest, config = _new_run(config, args)
    finished = execute(run_dir, manifest, config, quiet=True)
    if isinstance(finished, int):
        return finished
    if getattr(args, "quick", False):
        print(
            f"selfcheck: not in the quick set (~10 s); run: python -m bench selfcheck {run_dir}",
            file=sys.stderr,
        )
    else:
        _run_selfcheck(run_dir, config, verbose=args.verbose)
    print(terminal_text(run_dir, verbose=args.verbose))
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
    return 0 if finished.status == "complete" else EXIT_FAILED


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


def _run_selfcheck(run_dir: Path, config: RunConfig, *, verbose: bool = False) -> None:
    """After a run whose lookup suite measured warm get_hit: the timeit cross-check, written
    into the run folder. A failure here never costs the run."""
    from bench.report.load import load_run
    from bench.selfcheck import run_sizes, selfcheck

    if "lookup" not in config.suites or "warm" not in config.suite("lookup").regimes:
        return
    if config.request_class != "model":
        return  # the check builds the request model's class; the run measured sglang's own
    try:
        if not run_sizes(load_run(run_dir)):
            return
        print("selfcheck: timing get_hit with plain timeit (~10 s)", file=sys.stderr)
        result = selfcheck(run_dir)
    except Exception as exc:
        print(f"selfcheck skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
        return
    print("\n".join(result.lines()) if verbose else result.brief())


def _cmd_selftest_aa(args: argparse.Namespace) -> int:
    from bench.selftest_aa import SELFTEST_FILE, config_for, count_flags, lines
    from bench.storage import write_json
    from strategies import load_external

    config = suites.default_config()
    config = config.quick() if args.quick else config
    config = replace(config, **budget_changes(args))
    copies = tuple(args.copy or ())
    config = config_for(config, copies)
    try:
        copy_names = [load_external(c).name for c in copies]
        config.validate()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    run_dir, manifest, config = _new_run(config, args)
    finished = execute(run_dir, manifest, config)
    if isinstance(finished, int):
        return finished
    result = count_flags(run_dir, copy_names)
    write_json(run_dir / SELFTEST_FILE, result)
    print("\n".join(lines(result)))
    return 0 if finished.status == "complete" else EXIT_FAILED


def register(sub: SubParsers[argparse.ArgumentParser]) -> None:
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
        type=csv_list,
        metavar="NAME_OR_FILE",
        help="list only these (names, or strategy .py files loaded like --external)",
    )
    p_list.add_argument(
        "--target",
        action="append",
        type=csv_list,
        metavar="PATH@REV[,PATH@REV]",
        help="also list revisions of an SGLang tree, each as the strategy it is measured as",
    )
    p_list.add_argument("--group", metavar="NAME", help="with --target: the state group")
    p_list.set_defaults(func=_cmd_list)

    p_run = sub.add_parser("run", help="measure: run suites and write a run folder")
    p_run.add_argument(
        "--suite", action="append", type=csv_list, help="lookup,step,gc,scaling (default: all)"
    )
    p_run.add_argument(
        "--strategy",
        action="append",
        type=csv_list,
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
        type=csv_list,
        metavar="PATH@REV[,PATH@REV]",
        help="measure revisions of an SGLang tree (PATH alone: its working tree), each with its "
        "own Req, state code and call sites, beside control (add built-ins with --strategy); "
        "the first is the baseline unless --baseline PATH@REV",
    )
    p_run.add_argument(
        "--group",
        metavar="NAME",
        help="with --target: the state group to measure (python -m bench target groups lists "
        "them; pd_hidden: the PD hidden study); default: what moved between the two revisions",
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
        type=csv_list,
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
    p_run.add_argument("--pattern", type=csv_list, help="access patterns: per_field,cached")
    p_run.add_argument(
        "--regime",
        type=csv_list,
        help="lookup memory regimes: warm,cold (also: mixed, the old one)",
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
    p_run.add_argument("--workers", type=positive_int, help="worker processes per suite")
    p_run.add_argument("--values", type=positive_int, help="measured values per worker")
    p_run.add_argument("--background-objects", type=int, help="GC background heap size")
    p_run.add_argument(
        "--output-dir", default=str(DEFAULT_REPORTS_DIR), help="where run folders go"
    )
    add_budget_options(p_run)
    p_run.add_argument("--resume", metavar="RUN", help="finish an interrupted run folder")
    p_run.add_argument("--no-report", action="store_true", help="skip writing the report")
    p_run.add_argument(
        "--verbose",
        action="store_true",
        help="print every suite's full table and the selfcheck's, not the summary",
    )
    p_run.add_argument(
        "--no-aa",
        action="store_true",
        help="do not measure the baseline's A/A twin (<baseline>.aa), which sets each family's noise floor",
    )
    p_run.set_defaults(func=_cmd_run)

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
    add_budget_options(p_aa)
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
        type=positive_int,
        help="live requests (default: the run's smallest lookup size, else 1000)",
    )
    p_check.add_argument(
        "--request-model", metavar="NAME", help="request model (default: the run's)"
    )
    p_check.add_argument(
        "--no-write", action="store_true", help="do not write selfcheck.json into the run"
    )
    p_check.set_defaults(func=_cmd_selfcheck)
