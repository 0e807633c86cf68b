"""`python -m bench list | run | selftest-aa | selfcheck`: what a run measures, measuring it,
and checking it (registered by bench/commands/main.py). User mistakes end as one line and exit 2."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import suites
from bench.base.cpucache import sweep_env_mb
from bench.base.errors import EXIT_FAILED, UsageError
from bench.base.storage import DEFAULT_REPORTS_DIR, latest_run_dir, read_json, write_json
from bench.commands.real import add_run_options, run_real
from bench.commands.selftest_aa import SELFTEST_FILE, config_for, count_flags, lines
from bench.commands.target import add_min_replayed_option, add_trust_option, check_trust
from bench.config.budget import add_budget_options, budget_changes
from bench.config.cliargs import (
    Adder,
    Command,
    Option,
    SubParsers,
    csv_list,
    positive_int,
    register_commands,
)
from bench.config.runconfig import RunConfig
from bench.core import scenarios
from bench.measure.sweep_probe import cached_sweep_mb
from bench.orchestration import sequence
from bench.orchestration.selfcheck import SELFCHECK_FILE, selfcheck
from bench.runformat.schema import MANIFEST, Manifest
from bench.target.placement import MIN_REPLAYED
from bench.target.select import (
    list_targets,
    looks_like_target,
    materialize_targets,
    split_targets,
    target_name,
)
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

    names, external = _split_strategies(args.strategy, args.external)
    specs = split_targets(args.target)
    check_trust(args, specs)
    if specs:
        paths = list_targets(
            specs, getattr(args, "group", None), trust=getattr(args, "trust_target_code", False)
        )
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

    config = suites.default_config()
    if args.quick:
        config = config.quick()
    given = _read_config_file(Path(args.config)) if args.config else {}
    if given:
        config = _with_config_file(Path(args.config), given, config)
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
    config = _with_suite_flags(args, config)
    if args.pattern:
        changes["patterns"] = args.pattern
    if args.no_aa:
        changes["aa_twins"] = 0
    if args.request_model:
        changes["request_model"] = args.request_model
    if args.request_class:
        changes["request_class"] = args.request_class
    changes.update(budget_changes(args, given))
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


def _with_suite_flags(args: argparse.Namespace, config: RunConfig) -> RunConfig:
    """Each suite's own flags (its FLAGS) given on the command line, into its options."""
    for spec in suites.specs():
        for flag in spec.flags:
            value = getattr(args, flag.dest(spec.name), None)
            if value is not None:
                config = config.with_suite(spec.name, **{flag.field: value})
    return config


def _add_suite_flags(parser: argparse.ArgumentParser) -> None:
    for spec in suites.specs():
        for flag in spec.flags:
            parser.add_argument(
                flag.option,
                dest=flag.dest(spec.name),
                type=flag.type,
                metavar=flag.metavar or flag.field.upper(),
                help=f"{spec.name} suite: {flag.help}",
            )


def _read_config_file(path: Path) -> dict[str, Any]:
    """A --config file: a JSON object of configuration keys (the flat keys of
    bench/config/runconfig.py and of every suite's options), read once."""

    raw = read_json(path)
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: expected a JSON object of configuration keys")
    return raw


def _with_config_file(path: Path, given: dict[str, Any], base: RunConfig) -> RunConfig:
    merged = {**base.flat(), **given}
    try:
        return suites.config_from_json(json.dumps(merged))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{path}: {exc}") from None


# The suites with a cold regime, whose sweep the run sizes (bench.measure.regime.sweep_bytes).
COLD_SUITES = ("step", "lookup")


def with_measured_sweep(config: RunConfig) -> RunConfig:
    """The cold regimes' sweep sized by this machine's probe (bench.measure.sweep_probe), where
    neither the configuration (a --config file's cold_sweep_mb) nor the machine's setting
    (bench.base.cpucache.SWEEP_ENV) sized it; said on stderr."""
    unsized = [
        name
        for name in COLD_SUITES
        if name in config.suites
        and "cold" in config.suite(name).regimes
        and config.suite(name).cold_sweep_mb == 0
    ]
    if not unsized or sweep_env_mb() is not None:
        return config
    mb, probe = cached_sweep_mb()
    points = sorted(probe["curve_us"].items(), key=lambda kv: int(kv[0]))
    curve = ", ".join(f"{k} MiB {v:g}" for k, v in points)
    print(
        f"cold sweep: {mb} MiB, the smallest after which the decode scan costs "
        f"{probe['plateau']:.0%} of what it costs after 1 GiB on this machine (µs per scan: "
        f"{curve}; the kernel reports a {probe['reported_llc_mb']} MiB last-level cache)",
        file=sys.stderr,
    )
    for name in unsized:
        config = config.with_suite(name, cold_sweep_mb=mb)
    return config


def _new_run(config: RunConfig, args: argparse.Namespace) -> tuple[Path, Manifest, RunConfig]:
    """A fresh run folder with its manifest. Revisions (--target) are written into it as
    strategy files (run/targets/, bench/target/select.py), measured as external strategies and
    described in the manifest."""

    specs = split_targets(getattr(args, "target", None))
    check_trust(args, specs)
    if not specs:
        sequence.check_strategies_and_device(config)  # before a folder is made
    run_dir = sequence.new_run_folder(Path(args.output_dir))
    targets: dict[str, dict[str, Any]] = {}
    if specs:
        made = materialize_targets(
            specs,
            run_dir / "targets",
            group=getattr(args, "group", None),
            min_replayed=getattr(args, "min_replayed", MIN_REPLAYED),
            trust=getattr(args, "trust_target_code", False),
        )
        targets = {t.name: t.metadata() for t in made}
        config = replace(config, external=(*config.external, *(str(t.path) for t in made)))
        base = next((t for t in made if t.name == config.baseline), made[0])
        base_model = base.path.with_suffix(".reqmodel.json")
        if base_model.is_file() and args.request_model is None:
            # every other strategy (control above all: every net figure is taken against it)
            # builds the baseline revision's Req, so a figure net of control holds no
            # difference between two request classes but the revisions' own (with the
            # default model, PR #652's base read -7.8 µs net of control in cache and -71.6
            # evicted; with its own Req -2.0 and -40.0, the rest being the union of replayed
            # loops that control runs and that base, which has no decode scan, does not)
            config = replace(config, request_model=str(base_model))
    config = with_measured_sweep(config)
    command = "python -m bench " + " ".join(shlex.quote(a) for a in args.argv)
    manifest = sequence.start(config, run_dir, command, targets=targets)
    return run_dir, manifest, config


def _cmd_run(args: argparse.Namespace) -> int:
    from bench.report.console import terminal
    from bench.report.load import load_run

    if args.real:
        if args.trust_target_code:
            raise UsageError(
                "run --real runs the revisions' own schedulers in processes of their own: "
                "no --trust-target-code (it is for --target)"
            )
        return run_real(args)
    if args.resume:
        run_dir = Path(args.resume)
        manifest, config = sequence.resume(run_dir)
        missing = manifest.missing_suites()
        if not missing:
            print(f"nothing to resume: {run_dir} is {manifest.status}", file=sys.stderr)
            print(terminal(load_run(run_dir), verbose=args.verbose))
            return 0 if manifest.status == "complete" else EXIT_FAILED
        print(f"resuming {run_dir}: {', '.join(missing)}", file=sys.stderr)
    else:
        _refuse_moved_options(args)
        config = _config_from_args(args)
        run_dir, manifest, config = _new_run(config, args)
    finished = sequence.execute(run_dir, manifest, config)
    if isinstance(finished, int):
        return finished
    if getattr(args, "quick", False):
        print(
            f"selfcheck: not in the quick set (~5 s); run: python -m bench selfcheck {run_dir}",
            file=sys.stderr,
        )
    return sequence.finish(
        run_dir, selfcheck=not args.quick, report=not args.no_report, verbose=args.verbose
    )


def _cmd_selfcheck(args: argparse.Namespace) -> int:
    from bench.report.load import load_run

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
            None if run_dir is None else load_run(run_dir),
            live=args.live,
            request_model=args.request_model,
            write=not args.no_write,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print("\n".join(result.lines()))
    if run_dir is not None and not args.no_write:
        print(f"written: {run_dir / SELFCHECK_FILE}", file=sys.stderr)
    return 0


def _cmd_selftest_aa(args: argparse.Namespace) -> int:
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
    finished = sequence.execute(run_dir, manifest, config)
    if isinstance(finished, int):
        return finished
    result = count_flags(run_dir, copy_names)
    write_json(run_dir / SELFTEST_FILE, result)
    print("\n".join(lines(result)))
    return 0 if finished.status == "complete" else EXIT_FAILED


def _add_moved_options(parser: argparse.ArgumentParser) -> None:
    """Options that moved to a suite's flags: accepted, then refused with a hint
    (_refuse_moved_options)."""
    for moved in _MOVED_OPTIONS:
        flag = "--" + moved.replace("_", "-")
        if moved == "streaming":
            parser.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
        else:
            parser.add_argument(flag, help=argparse.SUPPRESS)


_OUTPUT_DIR: Option = (
    ("--output-dir",),
    {"default": str(DEFAULT_REPORTS_DIR), "help": "where run folders go"},
)
_EXTERNAL_HELP = "also load a strategy from a dotted module path or a .py file (repeatable)"
_TARGET_LIST_HELP = "also list revisions of an SGLang tree, each as the strategy it is measured as"

_LIST: tuple[Option | Adder, ...] = (
    (("--external",), {"action": "append", "default": [], "metavar": "MODULE_OR_FILE", "help": _EXTERNAL_HELP}),
    (("--strategy",), {"action": "append", "type": csv_list, "metavar": "NAME_OR_FILE",
      "help": "list only these (names, or strategy .py files loaded like --external)"}),
    (("--target",), {"action": "append", "type": csv_list, "metavar": "PATH@REV[,PATH@REV]",
      "help": _TARGET_LIST_HELP}),
    (("--group",), {"metavar": "NAME", "help": "with --target: the state group"}),
    add_trust_option,
)  # fmt: skip

_RUN: tuple[Option | Adder, ...] = (
    (("--suite",), {"action": "append", "type": csv_list, "help": "lookup,step,gc,scaling (default: all)"}),
    (("--strategy",), {"action": "append", "type": csv_list, "metavar": "NAME_OR_FILE",
      "help": "strategies to measure (default: all); a path/to/mine.py is loaded like --external"}),
    (("--external",), {"action": "append", "default": [], "metavar": "MODULE_OR_FILE",
      "help": "also measure a strategy from a module path or .py file"}),
    (("--target",), {"action": "append", "type": csv_list, "metavar": "PATH@REV[,PATH@REV]",
      "help": "measure revisions of an SGLang tree (PATH alone: its working tree), each with its "
              "own Req, state code and call sites, beside control (add built-ins with --strategy); "
              "the first is the baseline unless --baseline PATH@REV"}),
    (("--group",), {"metavar": "NAME",
      "help": "with --target: the state group to measure (python -m bench target groups lists "
              "them; pd-hidden-study: the project's PD hidden study); default: what moved between the two revisions"}),
    add_trust_option,
    add_min_replayed_option,
    (("--quick",), {"action": "store_true", "help": "the small CI-sized set (about a minute here)"}),
    (("--config",), {"metavar": "JSON", "help": "configuration overrides (keys of bench/config/runconfig.py)"}),
    (("--device",), {"default": "auto", "help": "auto (cuda when available), cpu or cuda"}),
    (("--scenario",), {"action": "append", "type": csv_list, "metavar": "NAME[,NAME]",
      "help": f"scheduler scenarios (default: {','.join(scenarios.DEFAULT_SET)}; list: python -m bench scenarios)"}),
    (("--set",), {"action": "append", "metavar": "KEY=VALUE",
      "help": "override a scenario parameter in every selected scenario (repeatable; recorded)"}),
    (("--sweep",), {"metavar": "KEY=V1,V2,...",
      "help": "measure every scenario at each value of one parameter (e.g. decode_batch=64,256,1024,4096)"}),
    (("--pattern",), {"type": csv_list, "help": "access patterns: per_field,cached"}),
    (("--request-model",), {"metavar": "NAME",
      "help": "request model table (default: the fork head the PR targets; list: python -m bench workload models)"}),
    (("--request-class",), {"choices": ("model", "sglang"),
      "help": "model: generated from the request model (default); sglang: the installed sglang's Req"}),
    _add_moved_options,
    (("--baseline",), {"help": "strategy ratios are taken against (default pr652), or a --target PATH@REV"}),
    (("--seed",), {"type": int}),
    (("--workers",), {"type": positive_int, "help": "worker processes per suite"}),
    (("--values",), {"type": positive_int, "help": "measured values per worker"}),
    _add_suite_flags,
    _OUTPUT_DIR,
    add_budget_options,
    (("--resume",), {"metavar": "RUN", "help": "finish an interrupted run folder"}),
    add_run_options,
    (("--no-report",), {"action": "store_true", "help": "skip writing the report"}),
    (("--verbose",), {"action": "store_true",
      "help": "print every suite's full table and the selfcheck's, not the summary"}),
    (("--no-aa",), {"action": "store_true",
      "help": "do not measure the baseline's A/A twin (<baseline>.aa), which sets each family's noise floor"}),
)  # fmt: skip

_SELFTEST_AA: tuple[Option | Adder, ...] = (
    (("--quick",), {"action": "store_true", "help": "the quick set (about a minute)"}),
    (("--copy",), {"action": "append", "metavar": "FILE",
      "help": "also measure this strategy file, a verbatim copy of the baseline under another NAME"}),
    _OUTPUT_DIR,
    add_budget_options,
)  # fmt: skip

_SELFCHECK: tuple[Option | Adder, ...] = (
    (("run",), {"nargs": "?", "help": "run folder (default: the newest under --output-dir)"}),
    (("--output-dir",), {"default": str(DEFAULT_REPORTS_DIR), "help": "where run folders are"}),
    (("--live",), {"type": positive_int,
      "help": "live requests (default: the run's smallest lookup size, else 1000)"}),
    (("--request-model",), {"metavar": "NAME", "help": "request model (default: the run's)"}),
    (("--no-write",), {"action": "store_true", "help": "do not write selfcheck.json into the run"}),
)  # fmt: skip

_COMMANDS = (
    Command("list", "list the strategies", _LIST, _cmd_list),
    Command("run", "measure: run suites and write a run folder", _RUN, _cmd_run),
    Command("selftest-aa", "run the suites with two A/A twins of the baseline and count the rows "
            "each verdict rule flags", _SELFTEST_AA, _cmd_selftest_aa),
    Command("selfcheck", "warm get_hit of weakkey, declared, dynattr with plain timeit, against a "
            "run's figures", _SELFCHECK, _cmd_selfcheck),
)  # fmt: skip


def register(sub: SubParsers[argparse.ArgumentParser]) -> None:
    register_commands(sub, _COMMANDS)
