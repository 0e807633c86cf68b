"""The run sequence every command that measures shares: the budget and precision a run is
measured to (defaults, flags, a --config file's keys), the adaptive round policy, and executing
the suites with an interruption kept resumable."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bench.cliargs import duration_s, percent
from bench.config import RunConfig
from bench.runformat import Manifest

# Adaptive measurement (bench.adaptive), by default: the suites' budget and the precision each
# family is measured to. The default run's baseline cost per iteration to +-15% in every default
# scenario within ~6 minutes here (2 cores), the quick run's to +-50% (an interval that excludes
# zero) within a minute; `--budget off` runs the fixed plan (each suite its `workers`). The
# budget covers the suites; the selfcheck (~10 s), the report (~12 s) and starting the workers
# come on top: 300 s of suites made 5m14s with both memory regimes and the 1.08M-object gc heap
# here (2026-12-01), so 330 s leave ~20 s to spare of 6 minutes.
BUDGET_DEFAULT = object()
RUN_BUDGET_S = 330.0
QUICK_BUDGET_S = 40.0
RUN_PRECISION_PCT = 15.0
QUICK_PRECISION_PCT = 50.0


def budget_changes(args: argparse.Namespace, config_file: str | None = None) -> dict[str, Any]:
    """budget_s and precision_pct from --budget / --precision, else from the --config file,
    else the defaults of the set."""
    from bench.storage import read_json

    given = read_json(Path(config_file)) if config_file else {}
    given = given if isinstance(given, dict) else {}
    out: dict[str, Any] = {}
    budget = getattr(args, "budget", BUDGET_DEFAULT)
    if budget is not BUDGET_DEFAULT:
        out["budget_s"] = budget
    elif "budget_s" not in given:
        out["budget_s"] = QUICK_BUDGET_S if args.quick else RUN_BUDGET_S
    precision = getattr(args, "precision", None)
    if precision is not None:
        out["precision_pct"] = precision
    elif "precision_pct" not in given:
        out["precision_pct"] = QUICK_PRECISION_PCT if args.quick else RUN_PRECISION_PCT
    return out


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--budget",
        type=duration_s,
        default=BUDGET_DEFAULT,
        metavar="DURATION",
        help=f"wall-clock budget of the suites, e.g. 6m, 90s (default {RUN_BUDGET_S:g} s, "
        f"--quick {QUICK_BUDGET_S:g} s): after its plan, a suite adds rounds to the families "
        "short of --precision while its share lasts; off: the fixed plan",
    )
    parser.add_argument(
        "--precision",
        type=percent,
        metavar="PCT",
        help=f"target 95%% CI half-width of each family's reported quantity, in percent of it "
        f"(default {RUN_PRECISION_PCT:g}, --quick {QUICK_PRECISION_PCT:g})",
    )


def policy_for(run_dir: Path, manifest: Manifest, config: RunConfig) -> Any:
    """The adaptive runner's round policy (with or without a budget: it records each
    family's rounds, precision and why it stopped)."""
    from bench.adaptive import AdaptivePolicy

    todo = [s for s in config.suites if not manifest.suites[s].finished]
    spent = sum(r.wall_s or 0.0 for r in manifest.suites.values() if r.finished)
    meta = manifest.strategies.get(config.baseline)
    pattern = "as_written" if meta is not None and meta.target else "per_field"
    policy = AdaptivePolicy(config, todo, spent_s=spent).with_baseline_pattern(pattern)
    return policy.with_targets(list(manifest.targets))


def terminal_text(run_dir: Path, *, verbose: bool = False) -> str:
    """What a run prints when it ends: the PR section's table and verdict (under 50 lines),
    or with --verbose every suite's full table."""
    from bench.report import pr
    from bench.report.console import render_run
    from bench.report.load import load_run

    run = load_run(run_dir)
    if verbose:
        return render_run(run)
    tail = [] if run.status == "complete" else [f"status: {run.status}"]
    tail += [
        f"run folder: {run_dir}",
        f"every suite's table: python -m bench show --verbose {run_dir}",
    ]
    return pr.terminal(pr.build(run)) + "\n".join(tail)


def execute(
    run_dir: Path,
    manifest: Manifest,
    config: RunConfig,
    *,
    quiet: bool = False,
    verbose: bool = False,
) -> Manifest | int:
    """Run the suites and print the terminal summary (not when quiet); the final manifest, or
    the exit status of an interruption (finished suites kept, and how to finish)."""
    from bench import runner

    try:
        policy = policy_for(run_dir, manifest, config)
        manifest = runner.execute(run_dir, manifest, config, policy)
        if not quiet:
            print(terminal_text(run_dir, verbose=verbose))
        return manifest
    except runner.Interrupted as exc:
        print(
            f"interrupted ({exc}); finished suites kept in {run_dir}; "
            f"finish with: python -m bench run --resume {run_dir}",
            file=sys.stderr,
        )
        return 128 + exc.signum
