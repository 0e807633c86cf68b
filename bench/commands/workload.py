"""`python -m bench scenarios` and `python -m bench workload`: the scheduler presets and the
request models, the core's own commands (registered by bench/commands/main.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.base.errors import UsageError
from bench.base.storage import write_json
from bench.commands import scenario_docs
from bench.config.cliargs import Parser, SubParsers, model_name
from bench.core import reqcompare, reqmodel, scenarios
from bench.core.sglang_req import SglangMissing


def _cmd_scenarios(args: argparse.Namespace) -> int:

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


def _cmd_compare_real(args: argparse.Namespace) -> int:

    if reqmodel.load(args.model) is None:
        raise UsageError(
            f"--model {args.model}: no such table; see python -m bench workload models"
        )
    try:
        result = reqcompare.compare(args.model)
    except SglangMissing as exc:
        raise UsageError(str(exc)) from None
    print(result.markdown() if args.markdown else "\n".join(result.lines()), end="\n")
    return 0


def _cmd_workload(args: argparse.Namespace) -> int:

    if args.workload_command == "compare-real":
        return _cmd_compare_real(args)

    if args.workload_command == "models":
        for name in reqmodel.available():
            model = reqmodel.load(name)
            if model is None:
                print(f"{name:<20} the earlier generated table (bench/core/workload.py)")
            elif name in reqmodel.imported():
                print(
                    f"{name:<20} {len(model.attrs)} attributes, {model.tracked()} GC-tracked; "
                    f"{model.origin} (imported: {reqmodel.user_dir()})"
                )
            else:
                print(
                    f"{name:<20} {len(model.attrs)} attributes, {model.tracked()} GC-tracked; {model.origin}"
                )
        return 0
    if args.output is None and args.name in reqmodel.shipped():
        raise UsageError(
            f"--name {args.name}: a shipped request model (read-only); choose another name"
        )
    try:
        model = reqmodel.import_req(Path(args.path), args.name, origin=args.origin or "")
    except reqmodel.ImportReqError as exc:
        raise UsageError(str(exc)) from None
    print(reqmodel.describe(model))
    out = Path(args.output) if args.output else reqmodel.user_dir() / f"{args.name}.json"

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_json(out, model.to_json())
    except OSError as exc:
        raise UsageError(f"{out}: cannot write the table ({exc.strerror})") from None
    print(f"table: {out}")
    return 0


def register(sub: SubParsers[argparse.ArgumentParser]) -> None:
    p_scen = sub.add_parser("scenarios", help="list the scheduler scenarios, one line each")
    p_scen.add_argument("--explain", metavar="NAME", help="one scenario's parameters and sources")
    p_scen.add_argument(
        "--markdown", action="store_true", help="docs/SCENARIOS.md (every preset, every source)"
    )
    p_scen.set_defaults(func=_cmd_scenarios)

    p_work = sub.add_parser("workload", help="request models: import SGLang's Req, list models")
    work = p_work.add_subparsers(dest="workload_command", required=True, parser_class=Parser)
    p_imp = work.add_parser(
        "import-req", help="read class Req from a schedule_batch.py into a request model table"
    )
    p_imp.add_argument("path", help="path to sglang/srt/managers/schedule_batch.py")
    p_imp.add_argument("--name", type=model_name, default="imported", help="model name (imported)")
    p_imp.add_argument("--origin", help="where the file came from (recorded in the table)")
    p_imp.add_argument(
        "--output",
        help="write the table here (default: $XDG_DATA_HOME/reqstate-bench/request_models/"
        "NAME.json, ~/.local/share when unset; then --request-model NAME finds it)",
    )
    work.add_parser("models", help="the request models: shipped, then the user's imported ones")
    p_cmp = work.add_parser(
        "compare-real",
        help="a request model against the installed sglang's Req (needs sglang importable)",
    )
    p_cmp.add_argument(
        "--model", type=model_name, default="sglang-0.5.23", help="the table (sglang-0.5.23)"
    )
    p_cmp.add_argument("--markdown", action="store_true", help="a markdown table (docs/LOOKUP.md)")
    p_work.set_defaults(func=_cmd_workload)
