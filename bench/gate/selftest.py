"""Calibration of the wall-clock gate: false-alarm and detection rates, measured.

    python -m bench.gate.selftest --runs 10 --slowdown-pct 10 [--slowdown-pct 5]

Copies the working tree into a throwaway git repository (committed once: the baseline), then
runs the gate `--runs` times against an unchanged candidate (A/A: every failure is a false
alarm) and `--runs` times per slowdown against a candidate whose scheduler step spins for an
extra X% of its own duration (every pass of a step benchmark is a miss). Lookup benchmarks
are untouched by the injection, so they count as A/A too. Prints the rates; writes the raw
gate results under the output folder. This is a benchmark, not a test: it takes
~3.5 minutes per gate run on 2 cores (docs/GATE.md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.gate.git import snapshot
from bench.storage import ROOT

_STEP_DEF = '    def step(self) -> None:\n        """One scheduler loop iteration."""\n'  # SchedulerLoop.step


def _inject(tree: Path, slowdown_pct: float) -> None:
    path = tree / "bench" / "core" / "scheduler.py"
    src = path.read_text()
    if _STEP_DEF not in src:
        raise SystemExit("cannot find SchedulerLoop.step to inject a slowdown into")
    wrapper = (
        "    def step(self) -> None:\n"
        "        import time as _t\n"
        "        start = _t.perf_counter_ns()\n"
        "        self._real_step()\n"
        f"        until = _t.perf_counter_ns() + (_t.perf_counter_ns() - start) * {slowdown_pct} / 100\n"
        "        while _t.perf_counter_ns() < until:\n"
        "            pass\n\n"
        "    def _real_step(self) -> None:\n"
        '        """One scheduler loop iteration."""\n'
    )
    path.write_text(src.replace(_STEP_DEF, wrapper))


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=selftest", "-c", "user.email=s@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _gate(repo: Path, out: Path, extra: list[str]) -> dict[str, object]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "gate",
            "--base",
            "HEAD",
            "--json",
            str(out),
            "--markdown",
            str(out.with_suffix(".md")),
            *extra,
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"gate failed to run: {proc.stderr.strip().splitlines()[-1]}")
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.gate.selftest")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--slowdown-pct", type=float, action="append", default=None)
    ap.add_argument("--output-dir", default=str(ROOT / "reports" / "gate-selftest"))
    ap.add_argument("--gate-arg", action="append", default=[], help="passed to every gate run")
    args = ap.parse_args(argv)
    slowdowns = args.slowdown_pct or [10.0]
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="reqstate-selftest-") as tmp:
        repo = snapshot(ROOT, Path(tmp), "repo")
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "baseline")
        for label, pct in [("aa", 0.0), *[(f"slow{p:g}", p) for p in slowdowns]]:
            _git(repo, "checkout", "-q", "--", ".")
            if pct:
                _inject(repo, pct)
            step_flags = lookup_flags = step_total = lookup_total = 0
            for i in range(args.runs):
                result = _gate(repo, out_dir / f"{label}-{i}.json", args.gate_arg)
                for row in result["results"]:  # type: ignore[attr-defined]
                    failed = row["verdict"] == "regression"
                    if row["benchmark"].startswith("step/"):
                        step_total += 1
                        step_flags += failed
                    else:
                        lookup_total += 1
                        lookup_flags += failed
                print(f"{label} run {i + 1}/{args.runs}: status {result['status']}", flush=True)
            summary[label] = {
                "slowdown_pct": pct,
                "runs": args.runs,
                "step_benchmarks_flagged": f"{step_flags}/{step_total}",
                "lookup_benchmarks_flagged (untouched)": f"{lookup_flags}/{lookup_total}",
            }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
