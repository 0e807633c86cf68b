"""Instruction mode: deterministic instruction counts of the gate's benchmarks under callgrind.

For each benchmark the target (bench.instr_target) runs twice in the same tree: setup only
(0 iterations) and setup + N iterations. The difference of callgrind's totals is the
instructions of the iterations alone. Hash randomisation and address-space randomisation are
switched off, so the same code in the same heap layout gives the same count run after run.

The same code in another heap layout does not: CPython's type attribute cache is indexed by the
attribute name's address, so which lookups miss it (and walk the MRO's dicts) depends on where
strings landed. Measured on step/dynattr/scenario=decode-dspark/pattern=per_field, eight heap
shifts of one tree: 23.40M to 24.47M instructions (range 4.5%), the difference sitting in
_PyType_Lookup / find_name_in_mro and the dict lookups under them. So a layout is a random
factor, like a worker process in wall-clock mode: every side is counted in `heap_shifts`
layouts (kept per layout), the candidate's A/A copy in as many other layouts, and the judge
(bench.gate.judge.InstructionRule) holds a difference to the spread identical code shows.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.errors import DataError, UsageError
from bench.gate.config import GateConfig
from bench.gate.protocol import Base
from bench.names import BenchName

# callgrind runs Python ~50x slower; a single target run must not hang a CI job forever.
RUN_TIMEOUT_S = 900
_CAPTURE: dict[str, Any] = {"capture_output": True, "text": True, "check": False}


def check_valgrind() -> str:
    exe = shutil.which("valgrind")
    if exe is None:
        raise UsageError("instruction mode needs valgrind: apt-get install valgrind")
    return exe


def _setarch() -> list[str]:
    exe = shutil.which("setarch")
    return [exe, platform.machine(), "-R"] if exe else []


def count_instructions(
    tree: Path,
    benchmark: str,
    iterations: int,
    *,
    live: int,
    seed: int,
    heap_shift: int = 0,
    options: tuple[str, ...] | None = None,
) -> int:
    """callgrind's total instruction count of one target run in `tree` (`options`: the target
    options that tree understands; None: all of them)."""
    valgrind = check_valgrind()
    wanted = {"--live": str(live), "--seed": str(seed), "--heap-shift": str(heap_shift)}
    extra = [
        arg
        for opt, value in wanted.items()
        if options is None or opt in options
        for arg in (opt, value)
    ]
    with tempfile.TemporaryDirectory(prefix="reqstate-cg-") as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = [
            *_setarch(),
            valgrind,
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-m",
            "bench.instr_target",
            benchmark,
            "--iterations",
            str(iterations),
            *extra,
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            proc = subprocess.run(cmd, cwd=tree, env=env, timeout=RUN_TIMEOUT_S, **_CAPTURE)
        except subprocess.TimeoutExpired:
            raise DataError(
                f"{benchmark}: callgrind run timed out after {RUN_TIMEOUT_S} s"
            ) from None
        if proc.returncode != 0 or not out.exists():
            tail = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("==")]
            last = tail[-1] if tail else f"exit status {proc.returncode}"
            raise DataError(f"{benchmark} in {tree.name}: instruction target failed: {last}")
        for line in out.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
        raise DataError(f"{benchmark}: callgrind wrote no totals line")


def measure(
    trees: dict[str, Path],
    benchmarks: dict[str, tuple[int, int]],
    *,
    seed: int,
    heap_shifts: int = 3,
    progress: object = None,
    bases: dict[str, Base] | None = None,
) -> dict[str, dict[str, list[int]]]:
    """{side: {benchmark: [instructions of the iterations, one per heap layout]}}.

    benchmarks maps name -> (iterations, live requests). Baseline and candidate are counted
    with heap shifts 0..heap_shifts-1, the A/A copy (side "aa") with the next heap_shifts
    shifts: identical code in other layouts, so its counts show how far layout alone moves
    this benchmark (an A/A in the same layouts would agree to the instruction and show
    nothing). Runs use every core: counts do not depend on what else the machine does."""

    def shifts(side: str) -> range:
        first = heap_shifts if side == "aa" else 0
        return range(first, first + heap_shifts)

    jobs = [
        (side, name, n, k)
        for side in trees
        for name, (iters, _live) in benchmarks.items()
        for n in (0, iters)
        for k in shifts(side)
    ]
    counts: dict[tuple[str, str, int, int], int] = {}

    speak = bases or {}

    def one(job: tuple[str, str, int, int]) -> None:
        side, name, n, k = job
        base = speak.get(side)
        counts[job] = count_instructions(
            trees[side],
            name if base is None else base.name(name),
            n,
            live=benchmarks[name][1],
            seed=seed,
            heap_shift=k,
            options=None if base is None else base.instr_options,
        )
        if callable(progress):
            progress(len(counts), len(jobs), f"{side} {name} x{n} shift {k}")

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        list(pool.map(one, jobs))
    return {
        side: {
            name: [
                counts[(side, name, iters, k)] - counts[(side, name, 0, k)] for k in shifts(side)
            ]
            for name, (iters, _live) in benchmarks.items()
        }
        for side in trees
    }


def measure_gate(
    cfg: GateConfig, trees: dict[str, Path], bases: dict[str, Base]
) -> dict[str, dict[str, list[float]]]:
    """{side: {benchmark: [instructions]}} for the gated benchmarks of instruction mode."""
    benchmarks: dict[str, tuple[int, int]] = {}
    for name in cfg.benchmarks("instructions"):
        if BenchName.parse(name).kind == "step":
            benchmarks[name] = (cfg.instr_steps, 0)  # the scenario in the name sizes it
        else:
            benchmarks[name] = (cfg.instr_lookup_passes, cfg.instr_lookup_live)

    def report(done: int, total: int, label: str) -> None:
        print(f"[gate] callgrind {done}/{total}: {label}", file=sys.stderr, flush=True)

    for base in bases.values():  # a name the base cannot measure stops here, not mid-run
        for name in benchmarks:
            base.name(name)
    counts = measure(
        trees,
        benchmarks,
        seed=cfg.seed,
        heap_shifts=cfg.instr_heap_shifts,
        progress=report,
        bases=bases,
    )
    return {
        side: {n: [float(c) for c in cs] for n, cs in per.items()} for side, per in counts.items()
    }
