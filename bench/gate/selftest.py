"""Calibration of the gate: false-alarm and detection rates, measured.

    python -m bench.gate.selftest --runs 10 --slowdown-pct 10 --slowdown-pct 5
    python -m bench.gate.selftest --mode instructions --runs 10 --instr-increase-pct 1

Copies the working tree into a throwaway git repository (committed once: the baseline), then
runs the gate `--runs` times against an unchanged candidate (A/A: every failure is a false
alarm) and `--runs` times per injected regression. Wall clock: the candidate's scheduler step
spins for an extra X% of its own duration. Instruction mode: the step runs K extra loop
iterations, K calibrated by one preliminary gate run so that the least affected gated step
benchmark grows by the asked percentage of its instructions; and every run's candidate carries
a module constant of another length, which runs nothing but moves the heap, so that each run
is another layout draw (counts are deterministic: the same tree ten times is one measurement). Lookup benchmarks are untouched by
either injection, so they count as A/A too. Prints the rates and writes summary.json and every
gate result under the output folder. This is a benchmark, not a test: a wall-clock gate run
takes ~5 minutes on 2 cores, an instruction-mode run ~8 (docs/GATE.md). An interrupted study
is continued with `--resume`: gate results already in the output folder (`<label>-<i>.json`)
are read instead of measured again, so they must come from the same tree.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.base.storage import ROOT
from bench.gate.git import snapshot
from bench.stats import median

_STEP_DEF = '    def step(self) -> None:\n        """One scheduler loop iteration."""\n'  # SchedulerLoop.step


def _inject(tree: Path, *, slowdown_pct: float = 0.0, extra_loops: int = 0) -> None:
    """Wrap SchedulerLoop.step: spin for slowdown_pct of its duration (wall clock), or run
    extra_loops empty loop iterations (instructions)."""
    path = tree / "bench" / "core" / "scheduler.py"
    src = path.read_text()
    if _STEP_DEF not in src:
        raise SystemExit("cannot find SchedulerLoop.step to inject a slowdown into")
    if extra_loops:
        # itertools.repeat, not range: range(K) allocates an int per iteration above 256, so
        # its cost per iteration depends on K and a probe with large K misjudged small K (the
        # first +1.1% injection, calibrated at K = 20,000, grew the prefill steps by 0.66-0.90%)
        body = (
            "        import itertools as _it\n"
            "        self._real_step()\n"
            f"        for _ in _it.repeat(None, {extra_loops}):\n"
            "            pass\n"
        )
    else:
        body = (
            "        import time as _t\n"
            "        start = _t.perf_counter_ns()\n"
            "        self._real_step()\n"
            f"        until = _t.perf_counter_ns() + (_t.perf_counter_ns() - start) * {slowdown_pct} / 100\n"
            "        while _t.perf_counter_ns() < until:\n"
            "            pass\n"
        )
    wrapper = (
        "    def step(self) -> None:\n"
        + body
        + "\n    def _real_step(self) -> None:\n"
        + '        """One scheduler loop iteration."""\n'
    )
    path.write_text(src.replace(_STEP_DEF, wrapper))


def _layout_pad(tree: Path, run: int) -> None:
    """Instruction mode: a change that runs nothing but moves the heap (a module constant whose
    length depends on the run). Counts are deterministic, so without it ten runs of one
    candidate are one measurement ten times; with it each run is another heap layout, as each
    real PR is (docs/GATE.md: the type attribute cache follows string addresses)."""
    path = tree / "bench" / "core" / "scheduler.py"
    pad = "x" * (64 + 97 * run)
    with path.open("a") as f:
        f.write(f'\n_SELFTEST_LAYOUT_PAD = "{pad}"  # moves the heap, runs nothing\n')


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=selftest", "-c", "user.email=s@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _gate(repo: Path, out: Path, mode: str, extra: list[str]) -> dict[str, Any]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "gate",
            "--mode",
            mode,
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
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def _calibrate_loops(
    repo: Path, out_dir: Path, pct: float, extra: list[str], *, resume: bool = False
) -> int:
    """K extra loop iterations per step so the least affected gated step benchmark grows by
    pct% of its instructions (instructions are linear in K: one gate run with K0 tells)."""
    probe = 20_000
    out = out_dir / "calibration.json"
    if resume and out.is_file():
        result = json.loads(out.read_text())
    else:
        _inject(repo, extra_loops=probe)
        result = _gate(repo, out, "instructions", extra)
        _git(repo, "checkout", "-q", "--", ".")
    growth = [r["change_pct"] for r in result["results"] if r["benchmark"].startswith("step/")]
    if not growth or min(growth) <= 0:
        raise SystemExit("calibration: the injected loop did not grow the step benchmarks")
    return max(1, round(probe * pct / min(growth)))


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench.gate.selftest")
    ap.add_argument("--mode", choices=("wall", "instructions"), default="wall")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--slowdown-pct", type=float, action="append", default=None)
    ap.add_argument(
        "--instr-increase-pct",
        type=float,
        action="append",
        default=None,
        help="instruction mode: injected growth of the least affected step benchmark (default 1.1: just above the 1%% threshold)",
    )
    ap.add_argument("--output-dir", default=str(ROOT / "reports" / "gate-selftest"))
    ap.add_argument("--gate-arg", action="append", default=[], help="passed to every gate run")
    ap.add_argument(
        "--resume",
        action="store_true",
        help="read gate results already in the output folder instead of measuring them again",
    )
    return ap


def _plan(args: argparse.Namespace, repo: Path, out_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """The arms: the A/A run, then each injected slowdown (wall) or calibrated growth."""
    plan: list[tuple[str, dict[str, Any]]] = [("aa", {})]
    if args.mode == "wall":
        plan += [(f"slow{p:g}", {"slowdown_pct": p}) for p in args.slowdown_pct or [10.0]]
    else:
        for pct in args.instr_increase_pct or [1.1]:
            loops = _calibrate_loops(repo, out_dir, pct, args.gate_arg, resume=args.resume)
            plan.append((f"instr+{pct:g}", {"extra_loops": loops, "target_pct": pct}))
    return plan


def _arm(
    args: argparse.Namespace, repo: Path, out_dir: Path, label: str, injection: dict[str, Any]
) -> dict[str, Any]:
    """Run one arm's gates (`args.runs` of them) and count what each flagged."""
    _git(repo, "checkout", "-q", "--", ".")
    kw = {k: v for k, v in injection.items() if k in ("slowdown_pct", "extra_loops")}
    if kw:
        _inject(repo, **kw)
    scheduler = repo / "bench" / "core" / "scheduler.py"
    labelled = scheduler.read_text()
    step_flags = lookup_flags = step_total = lookup_total = runs_flagged = 0
    changes: list[float] = []
    seconds: list[float] = []
    cpu_seconds: list[float] = []  # what the gate costs whatever else the machine runs
    for i in range(args.runs):
        out = out_dir / f"{label}-{i}.json"
        if args.mode == "instructions":
            scheduler.write_text(labelled)
            _layout_pad(repo, i)
        if args.resume and out.is_file():
            result = json.loads(out.read_text())
            took = "read from an earlier run"
        else:
            started, cpu_before = dt.datetime.now(), _children_cpu_s()
            result = _gate(repo, out, args.mode, args.gate_arg)
            seconds.append((dt.datetime.now() - started).total_seconds())
            cpu_seconds.append(_children_cpu_s() - cpu_before)
            took = f"{seconds[-1]:.0f} s, {cpu_seconds[-1]:.0f} s of CPU"
        for row in result["results"]:
            failed = row["verdict"] == "regression"
            if row["benchmark"].startswith("step/"):
                step_total += 1
                step_flags += failed
                changes.append(row["change_pct"])
            else:
                lookup_total += 1
                lookup_flags += failed
        print(f"{label} run {i + 1}/{args.runs}: status {result['status']} ({took})", flush=True)
        runs_flagged += result["status"] == "regression"
    return {
        "runs_flagged": runs_flagged,
        **injection,
        "runs": args.runs,
        "step_benchmarks_flagged": f"{step_flags}/{step_total}",
        "lookup_benchmarks_flagged (untouched)": f"{lookup_flags}/{lookup_total}",
        "step_change_pct_range": [min(changes), max(changes)] if changes else None,
        "gate_seconds_median": median(seconds) if seconds else None,
        "gate_cpu_seconds_median": median(cpu_seconds) if cpu_seconds else None,
    }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.processor() or platform.node()}",
        "mode": args.mode,
    }
    with tempfile.TemporaryDirectory(prefix="reqstate-selftest-") as tmp:
        repo = snapshot(ROOT, Path(tmp), "repo")
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "baseline")
        summary["commit"] = _commit_of_root()
        for label, injection in _plan(args, repo, out_dir):
            summary[label] = _arm(args, repo, out_dir, label, injection)
            (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _commit_of_root() -> str:
    try:
        return _git(ROOT, "rev-parse", "--short=12", "HEAD")
    except subprocess.CalledProcessError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
