"""Where the process-level variation of a step figure comes from: a study, not a test.

    python -m bench.commands.variation [--processes 6] [--scenario decode-dspark] [--output-dir DIR]

The step suite's intervals are over worker processes, because the same net cost measured in
different processes differs more than the rounds within one do. This study measures pr652's net
cost per iteration (per_field, net of control) in `--processes` fresh worker processes per arm,
in both memory regimes (bench.measure.regime), and reports the spread of the per-process
medians (coefficient of variation, min-max) per arm:

    suite             as the suite runs it: hash seeds 1..N, the baseline and control alone
    fixed seed        every process with PYTHONHASHSEED=1
    fixed seed+heap   the same seed, and ballast of i x 997 small objects allocated first in
                      process i (another heap layout, as another tree's objects would give)
    all schedulers    hash seeds 1..N, every built-in strategy and pattern interleaved in one heap
                      (the default run's step suite)
    loaded            as `suite`, with a process on another core reading one byte of every
                      cache line of a buffer larger than the last-level cache, in a loop
                      (bench.measure.regime.CacheSweep: ordinary loads that go through the
                      caches; a memset of that size uses non-temporal stores that bypass them)

What differs between `suite` and `fixed seed` is the hash seed's share; between `fixed seed`
and `fixed seed+heap`, the heap layout's; between `suite` and `all schedulers`, how many
schedulers share the heap; between `suite` and `loaded`, the machine. Prints a markdown table
and writes variation.json into the output folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.base.names import BenchName
from bench.base.storage import ROOT, write_json
from bench.orchestration.runner import FIXED_HASH_SEED_ENV
from bench.report.load import load_run
from bench.stats.cases import NET_STATISTIC
from bench.stats.derive import paired_difference

READS = "step"  # the suite the study runs and reads
HEAP_SHIFT_ENV = "REQSTATE_HEAP_SHIFT"  # bench/worker.py reads it
ARMS = ("suite", "fixed seed", "fixed seed+heap", "all schedulers", "loaded")
# The loaded arm's other process: the cold regime's own sweep, forever (it evicts what the
# measured process keeps in the shared last-level cache).
HOG = (
    "from bench.measure.regime import CacheSweep, sweep_bytes\n"
    "sweep = CacheSweep(sweep_bytes())\n"
    "while True:\n    sweep()\n"
)


def _run(arm: str, processes: int, scenario: str, out: Path, shift: int | None) -> Path:
    args = [
        sys.executable, "-m", "bench", "run", "--suite", READS, "--scenario", scenario,
        "--workers", str(processes), "--budget", "off", "--no-report", "--no-aa",
        "--output-dir", str(out),
    ]  # fmt: skip
    if arm != "all schedulers":
        args += ["--strategy", "pr652,control", "--pattern", "per_field"]
    env = dict(os.environ)
    if arm.startswith("fixed seed"):
        env[FIXED_HASH_SEED_ENV] = "1"
    if shift is not None:
        env[HEAP_SHIFT_ENV] = str(shift)
    subprocess.run(args, env=env, check=True, capture_output=True, text=True, cwd=ROOT)
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def _per_process_us(run_dir: Path) -> dict[str, list[float]]:
    """Per regime: pr652's net cost per iteration (µs), the median of each worker's rounds."""

    run = load_run(run_dir)
    data = run.suite(READS)
    assert data is not None
    rounds = data.net_rounds
    out: dict[str, list[float]] = {}
    for name in rounds:
        bench = BenchName.parse(name)
        if bench.strategy != "pr652" or bench.get("pattern") != "per_field":
            continue
        groups = rounds.groups(name, str(bench.with_strategy("control")))
        if groups is None:
            continue
        regime = bench.get("regime") or "warm"
        for a, b in zip(*groups, strict=True):
            if len(a) >= 2:
                out.setdefault(regime, []).append(
                    paired_difference([a], [b], NET_STATISTIC).median * 1e6
                )
    return out


def _spread(values: list[float]) -> dict[str, float]:
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return {
        "processes": len(values),
        "mean_us": mean,
        "cv_pct": 100 * sd / mean if mean else float("nan"),
        "min_us": min(values),
        "max_us": max(values),
    }


def study(processes: int, scenario: str, output: Path, arms: tuple[str, ...]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for arm in arms:
        print(f"[variation] {arm}: {processes} processes", file=sys.stderr)
        hog = subprocess.Popen([sys.executable, "-c", HOG], cwd=ROOT) if arm == "loaded" else None
        try:
            per: dict[str, list[float]] = {}
            if arm == "fixed seed+heap":
                for i in range(processes):  # one process per layout
                    with tempfile.TemporaryDirectory(dir=output) as tmp:
                        got = _per_process_us(_run(arm, 1, scenario, Path(tmp), shift=i))
                    for regime, v in got.items():
                        per.setdefault(regime, []).extend(v)
            else:
                with tempfile.TemporaryDirectory(dir=output) as tmp:
                    per = _per_process_us(_run(arm, processes, scenario, Path(tmp), None))
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
        results[arm] = {r: {**_spread(v), "values_us": v} for r, v in per.items()}
    return results


def markdown(results: dict[str, Any], scenario: str) -> str:
    lines = [
        f"pr652 (per_field) net cost per iteration in {scenario}, µs, one figure per process "
        "(the median of its rounds):",
        "",
        "| arm | regime | processes | mean | CV | min - max |",
        "|---|---|---:|---:|---:|---|",
    ]
    for arm, per in results.items():
        for regime, s in sorted(per.items(), key=lambda kv: kv[0] != "warm"):
            lines.append(
                f"| {arm} | {regime} | {s['processes']} | {s['mean_us']:.1f} | "
                f"{s['cv_pct']:.1f}% | {s['min_us']:.1f} - {s['max_us']:.1f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.commands.variation", description=__doc__)
    ap.add_argument("--processes", type=int, default=6)
    ap.add_argument("--scenario", default="decode-dspark")
    ap.add_argument("--arm", action="append", choices=ARMS, help="default: every arm")
    ap.add_argument("--output-dir", default=str(ROOT / "reports" / "variation"))
    args = ap.parse_args(argv)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = study(args.processes, args.scenario, out, tuple(args.arm or ARMS))
    write_json(out / "variation.json", {"scenario": args.scenario, "arms": results})
    print(markdown(results, args.scenario))
    return 0


if __name__ == "__main__":
    sys.exit(main())
