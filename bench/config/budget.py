"""The budget and precision a run is measured to: the defaults, the --budget / --precision
flags, and a --config file's keys (read once, by the caller)."""

from __future__ import annotations

import argparse
from typing import Any

from bench.config.cliargs import duration_s, percent

# Adaptive measurement (bench/orchestration/adaptive.py), by default: the suites' budget and
# the precision each family is measured to. The default run aims, within 6 minutes on 2 cores,
# at each suite's own target (Adaptive.precision_pct: the step suite's baseline cost per
# iteration to +-10%, the lookup suite's ratios to +-25%); the quick run at +-50% (an interval
# that excludes zero) within a minute; --precision sets one for all; `--budget off` runs the fixed plan
# (each suite its `workers`). The budget covers the suites only, so it is set below 6 minutes by
# what the selfcheck, the report and starting the workers take (~20 s), and the step plan's
# five processes cost ~180 s whatever the budget (measured: docs/REGIMES.md, "What the
# defaults cost" and "Values sized to what an iteration costs"). 312 since the allocator's
# frees lost their loop per row (the gc suite took 50.6 s for 58, 2026-12-06). The gc and
# scaling suites run first on their fixed plans (bench.suites.run_order), and the adaptive
# suites share the rest, so the suites' total is the budget on a slow hour too (run last, the
# fixed plans overran their reserve by 14 s in one run that hour: 353 s of wall time).
BUDGET_DEFAULT = object()
RUN_BUDGET_S = 312.0
QUICK_BUDGET_S = 40.0
QUICK_PRECISION_PCT = 50.0


def budget_changes(args: argparse.Namespace, given: dict[str, Any] | None = None) -> dict[str, Any]:
    """budget_s and precision_pct from --budget / --precision, else from the --config file's
    keys (`given`, read once by the caller), else the defaults of the set."""
    given = given or {}
    out: dict[str, Any] = {}
    budget = getattr(args, "budget", BUDGET_DEFAULT)
    if budget is not BUDGET_DEFAULT:
        out["budget_s"] = budget
    elif "budget_s" not in given:
        out["budget_s"] = QUICK_BUDGET_S if args.quick else RUN_BUDGET_S
    precision = getattr(args, "precision", None)
    if precision is not None:
        out["precision_pct"] = precision
    elif "precision_pct" not in given and args.quick:
        out["precision_pct"] = QUICK_PRECISION_PCT
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
        f"(default: each suite's own, step 10 and lookup 25; --quick {QUICK_PRECISION_PCT:g})",
    )
