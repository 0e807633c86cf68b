"""selfcheck: the lookup suite's warm get-hit figures against a plain `timeit` loop.

`python -m bench selfcheck [RUN]` times `get` on live requests of weakkey, declared and dynattr
the way anyone would check a microbenchmark by hand: requests built in one go, each given its
state, then `timeit.Timer("for r in reqs: get(r)")` with autorange and repeats. Nothing of the
suites' measuring code is used (no Population, no calibrated passes, no worker process, no
clock module); only the request class, which is the workload's definition, is shared. It then
prints each strategy's figure beside the suite's warm get_hit at the same live size, and their
agreement. This is a benchmark, not a test: it says whether the suite measures what a plain loop
measures, it asserts nothing.

One thing it does share with the suite on purpose: hash seeds. A lookup by attribute name
probes the instance dict at positions set by the string hash, so dynattr's get_hit is bimodal
across PYTHONHASHSEED (66 or 85 ns here, seeds 0-5), and the suite's workers run with seeds
1..workers. The check times in one fresh process per seed, the same seeds, and pools the repeats.

The result is written to the run folder as selfcheck.json (the report shows it); `bench run`
does this by itself when its lookup suite measured the warm regime.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import timeit
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bench.base.storage import write_json
from bench.core.reqmodel import DEFAULT_MODEL
from bench.core.workload import make_request_class
from bench.measure.regime import sweep_bytes
from bench.measure.scan import SCAN_STRATEGY, time_scan_us
from bench.runformat.schema import DEFAULT_WORKERS, REPEATS, SELFCHECK_FILE, SelfCheck
from bench.stats.cases import REFERENCE
from strategies import load_builtin

if TYPE_CHECKING:
    from bench.report.load import RunData

STRATEGIES: tuple[str, ...] = ("weakkey", "declared", "dynattr")
# The suites whose figures it checks: the lookup suite's warm get_hit, the step suite's decode
# scan (their names are read here, and only here, as the check's inputs).
READS = ("lookup", "step")
LOOKUP, STEP = READS
DEFAULT_LIVE = 1_000
# Seconds a repeat lasts, its loop count set from CALIBRATION_LOOPS timed loops. timeit's
# autorange (0.2 s and more a repeat, and its own trials) made a check 7.2 s a process, 36 s of
# a default run's five hash-seed processes (2026-12-04); a 1,000-request loop takes 40-150 µs,
# so a repeat is hundreds of loops, far above the clock's resolution. The figures read within
# the machine's own spread between invocations of either (±10% here, hash seed 1).
REPEAT_S = 0.05
CALIBRATION_LOOPS = 10
# Scans timed per regime and strategy: pr652's and control's (120 each, not 200 for pr652
# alone: the check's cold scans, each after a sweep, stay ~4 s).
SCAN_REPEATS = 120
# The evicted scan is timed again after a sweep this many times the suite's (at most
# DEEP_SWEEP_MAX_MB, and only where that is larger), with DEEP_REPEATS scans per strategy: on
# the 2-core AMD EPYC VM of 2026-12-06 the probe chose 64 MiB and the check's loop read 139,
# 149 and 181 µs net after 64, 128 and 256 MiB, the suite 174-196 after 64 (the loop timed
# alone sat at the knee). ~2.5 s there; nothing on a machine whose sweep is already 256 MiB.
DEEP_SWEEP_FACTOR = 4
DEEP_SWEEP_MAX_MB = 256
DEEP_REPEATS = 60


def time_get_hit_ns(strategy_name: str, live: int, request_model: str) -> list[float]:
    """ns per `get` over `live` requests holding state, visited in allocation order: one figure
    per repeat, in this process."""

    strategy = load_builtin(strategy_name)
    cls = make_request_class(strategy, model=request_model)
    ids = array("q", range(16))
    reqs = [cls(f"selfcheck-{i}", ids, 1) for i in range(live)]
    get = strategy.get
    for r in reqs:
        get(r)
    timer = timeit.Timer("for r in reqs: get(r)", globals={"reqs": reqs, "get": get})
    number = max(
        1, round(REPEAT_S * CALIBRATION_LOOPS / max(timer.timeit(CALIBRATION_LOOPS), 1e-9))
    )
    timed = timer.repeat(REPEATS + 1, number)[1:]  # the first repeat warms up, untaken
    per_op = [t / (number * live) * 1e9 for t in timed]
    for r in reqs:
        strategy.release(r)
    return per_op


def suite_scan_figures(run: RunData) -> tuple[int, int, float, dict[str, float]]:
    """The run's decode batch, how many schedulers its warm decode case interleaved, the
    states pr652 created per iteration there (the batch's churn), and pr652's net decode cost
    per regime (µs), where measured."""
    from bench.report.scenarios.model import cases

    out: dict[str, float] = {}
    batch = schedulers = 0
    churn = 0.0
    for case in cases(run):
        if case.name != "decode-dspark" or set(case.key.extra) - {"regime"}:
            continue
        cost = case.cost(SCAN_STRATEGY, "per_field")
        if cost is not None and cost.net is not None:
            out[case.regime] = cost.net.median * 1e6
            batch = int(case.values.get("decode_batch", 0))
            if case.regime == "warm":
                schedulers = len(case.costs)
                churn = cost.created or 0.0
    return batch, schedulers, churn, out


def time_in_processes(
    strategies: Sequence[str], live: int, request_model: str, hash_seeds: Sequence[int]
) -> dict[str, float]:
    """Median ns per get_hit per strategy, repeats pooled over one fresh process per hash seed."""
    pooled: dict[str, list[float]] = {s: [] for s in strategies}
    for seed in hash_seeds:
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        args = [
            sys.executable,
            "-m",
            "bench.orchestration.selfcheck",
            ",".join(strategies),
            str(live),
        ]
        done = subprocess.run(
            [*args, request_model], env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"selfcheck process (hash seed {seed}) failed: {tail}")
        for name, values in json.loads(done.stdout).items():
            pooled[name] += values
    return {s: statistics.median(v) for s, v in pooled.items()}


def suite_figures(run: RunData, live: int) -> dict[str, float]:
    """The run's warm get_hit medians (ns) at `live`, per strategy."""
    data = run.suite(LOOKUP)
    if data is None:
        return {}
    return {
        s.strategy: s.median * 1e9
        for s in data.summaries
        if s.bench.matches(op="get_hit", live=live, regime="warm")
    }


def run_sizes(run: RunData) -> list[int]:
    """The live sizes the run's lookup suite measured get_hit at, warm."""
    data = run.suite(LOOKUP)
    if data is None:
        return []
    return sorted(
        {
            s.bench.int("live")
            for s in data.summaries
            if s.bench.matches(op="get_hit", regime="warm") and s.strategy in STRATEGIES
        }
    )


def applies(run: RunData) -> bool:
    """Whether `bench run` checks this run by itself: its lookup suite measured warm get_hit
    of the checked strategies, with the request model (the check builds the model's class;
    a run of sglang's own Req is not checked)."""
    config = run.config
    if LOOKUP not in config.suites or "warm" not in config.suite(LOOKUP).regimes:
        return False
    return config.request_class == "model" and bool(run_sizes(run))


def selfcheck(
    run: RunData | None,
    *,
    live: int | None = None,
    request_model: str | None = None,
    strategies: Sequence[str] = STRATEGIES,
    write: bool = True,
) -> SelfCheck:
    """Time the strategies with timeit and compare with the run (if any); write selfcheck.json
    into the run folder unless write is False."""

    model = request_model
    workers = DEFAULT_WORKERS
    if run is not None:
        model = model or run.config.request_model
        workers = run.config.suite(LOOKUP).workers
        if live is None:
            found = run_sizes(run)
            live = found[0] if found else None
    if not model:
        model = DEFAULT_MODEL
    live = live or DEFAULT_LIVE
    result = SelfCheck(
        live=live,
        request_model=model,
        # the suite's lookup workers run with hash seeds 1..lookup_workers (the runner's)
        timeit_ns=time_in_processes(strategies, live, model, range(1, workers + 1)),
        hash_seeds=workers,
    )
    if run is not None:
        result.suite_ns = suite_figures(run, live)
        result.run = run.path.name
        batch, schedulers, churn, suite_scan = suite_scan_figures(run)
        if suite_scan:
            result.scan_batch = batch
            result.scan_neighbours = max(0, schedulers - 1)
            result.scan_churn = churn
            result.scan_suite_us = suite_scan
            # the suite's own sweep: a cold figure is compared in the regime it was taken in
            # (the 64 MiB the check once read beside the suite's 960 read 0.54 of it)
            sweep = sweep_bytes(run.config.suite(STEP).cold_sweep_mb)
            result.scan_sweep_mb = result.suite_sweep_mb = sweep >> 20

            # The suite's figure is net of control, whose iteration walks the same requests:
            # so is the check's, the same loop with control's get timed beside it. (Gross,
            # the evicted scan read 1.26-1.61x the suite, 280 µs against 193-205; control's
            # loop alone took 80, its own misses on the requests, 2026-12-04.)
            def scan_us(
                regime: str, strategy: str, sweep_b: int = sweep, repeats: int = SCAN_REPEATS
            ) -> float:
                return statistics.median(
                    time_scan_us(batch, model, regime, result.scan_neighbours, churn, sweep_b,
                                 repeats, strategy)
                )  # fmt: skip

            gross = {regime: scan_us(regime, SCAN_STRATEGY) for regime in suite_scan}
            result.scan_control_us = {regime: scan_us(regime, REFERENCE) for regime in suite_scan}
            result.scan_timeit_us = {r: gross[r] - result.scan_control_us[r] for r in suite_scan}
            deep_mb = min(DEEP_SWEEP_FACTOR * (sweep >> 20), DEEP_SWEEP_MAX_MB)
            if "cold" in suite_scan and deep_mb > sweep >> 20:
                result.deep_sweep_mb = deep_mb
                result.deep_timeit_us = scan_us(
                    "cold", SCAN_STRATEGY, deep_mb << 20, DEEP_REPEATS
                ) - scan_us("cold", REFERENCE, deep_mb << 20, DEEP_REPEATS)
        if write:
            write_json(run.path / SELFCHECK_FILE, result.to_json())
    return result


def main(argv: list[str]) -> int:
    """python -m bench.orchestration.selfcheck STRATEGIES LIVE MODEL: one process's repeats, as JSON."""
    names, live, model = argv
    out = {name: time_get_hit_ns(name, int(live), model) for name in names.split(",")}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
