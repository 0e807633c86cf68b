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

import functools
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.base.errors import DataError, UsageError
from bench.base.names import BenchName
from bench.gate.config import GateConfig
from bench.gate.protocol import Base

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


@dataclass(frozen=True)
class Side:
    """How one side of an instruction gate is counted: in which tree, under which benchmark
    name (a base tree may name it differently), with which target options and strategy files,
    in which heap layouts."""

    tree: Path
    shifts: range
    names: dict[str, str] = field(default_factory=dict)  # the candidate's name -> this side's
    options: tuple[str, ...] | None = None  # the target options this tree takes (None: all)
    external: tuple[str, ...] = ()  # strategy files the target loads (--external)

    def name(self, benchmark: str) -> str:
        return self.names.get(benchmark, benchmark)

    @property
    def marks(self) -> bool:
        """Its target can mark the measured iterations (--marks; older trees cannot)."""
        return self.options is None or MARKS in self.options


# The target marks its measured iterations with time.sleep(0); callgrind dumps its counts on
# entering this C function, so one run counts the iterations alone (instead of a run with no
# iteration subtracted from a run with N: half the runs, and no start-up in either).
MARKER_FUNCTION = "time_sleep"
MARKS = "--marks"


def markers_work(python: str | None = None) -> bool:
    """Does callgrind dump at the marker in this interpreter (its symbols are there)? Asked
    once per interpreter: the probe is a Python start-up under callgrind (~2.4 s here)."""
    return _markers_work(python or sys.executable)


@functools.cache
def _markers_work(python: str) -> bool:
    with tempfile.TemporaryDirectory(prefix="reqstate-cg-probe-") as tmp:
        out = Path(tmp) / "probe.out"
        cmd = [
            check_valgrind(),
            "--tool=callgrind",
            f"--dump-before={MARKER_FUNCTION}",
            f"--callgrind-out-file={out}",
            python,
            "-c",
            "import time; time.sleep(0); time.sleep(0)",
        ]
        try:
            subprocess.run(cmd, timeout=RUN_TIMEOUT_S, **_CAPTURE)
        except subprocess.TimeoutExpired:
            return False
        return Path(f"{out}.2").is_file()


def benchmark_command(
    side: Side,
    benchmark: str,
    iterations: int,
    *,
    live: int,
    seed: int,
    heap_shift: int,
    out: Path,
    python: str = sys.executable,
    perf_map: bool = False,
    marks: bool = False,
) -> list[str]:
    wanted = {"--live": str(live), "--seed": str(seed), "--heap-shift": str(heap_shift)}
    extra = [
        arg
        for opt, value in wanted.items()
        if side.options is None or opt in side.options
        for arg in (opt, value)
    ]
    for path in side.external:
        extra += ["--external", path]
    if marks:
        extra.append(MARKS)
    return [
        *_setarch(),
        check_valgrind(),
        "--tool=callgrind",
        *([f"--dump-before={MARKER_FUNCTION}"] if marks else []),
        f"--callgrind-out-file={out}",
        python,
        *(["-X", "perf"] if perf_map else []),
        "-m",
        "bench.instr_target",
        side.name(benchmark),
        "--iterations",
        str(iterations),
        *extra,
    ]


def run_callgrind(cmd: list[str], tree: Path, label: str, out: Path, *, marks: bool = False) -> str:
    """Run one callgrind command in `tree`; the output file's text (with marks: the counts
    between the two markers, callgrind's second dump)."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, timeout=RUN_TIMEOUT_S, **_CAPTURE)
    except subprocess.TimeoutExpired:
        raise DataError(f"{label}: callgrind run timed out after {RUN_TIMEOUT_S} s") from None
    if proc.returncode != 0 or not out.exists():
        tail = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("==")]
        last = tail[-1] if tail else f"exit status {proc.returncode}"
        raise DataError(f"{label} in {tree.name}: instruction target failed: {last}")
    if marks:
        between = Path(f"{out}.2")
        if not between.is_file():
            raise DataError(f"{label}: callgrind did not dump at the markers")
        return between.read_text(encoding="utf-8", errors="replace")
    return out.read_text(encoding="utf-8", errors="replace")


def total_of(text: str, label: str) -> int:
    for line in text.splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise DataError(f"{label}: callgrind wrote no totals line")


def count_instructions(
    side: Side,
    benchmark: str,
    iterations: int,
    *,
    live: int,
    seed: int,
    heap_shift: int = 0,
    marks: bool = False,
) -> int:
    """callgrind's instruction count of one target run on one side: the whole run, or with
    marks only the measured iterations."""
    with tempfile.TemporaryDirectory(prefix="reqstate-cg-") as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = benchmark_command(
            side,
            benchmark,
            iterations,
            live=live,
            seed=seed,
            heap_shift=heap_shift,
            out=out,
            marks=marks,
        )
        return total_of(run_callgrind(cmd, side.tree, benchmark, out, marks=marks), benchmark)


def measure(
    sides: dict[str, Side],
    benchmarks: dict[str, tuple[int, int]],
    *,
    seed: int,
    progress: object = None,
    layouts: dict[str, int] | None = None,
) -> dict[str, dict[str, list[int]]]:
    """{side: {benchmark: [instructions of the iterations, one per heap layout]}}.

    benchmarks maps name -> (iterations, live requests). Each side is counted in its own heap
    layouts (Side.shifts): the A/A copy in other layouts than the candidate, so its counts show
    how far layout alone moves a benchmark (an A/A in the same layouts would agree to the
    instruction and show nothing). Runs use every core: counts do not depend on what else the
    machine does. Where every side's target marks its iterations and callgrind dumps at the
    marker (markers_work), one run per layout counts them; otherwise a run with no iteration is
    subtracted from a run with N. `layouts`: a benchmark counted in fewer layouts per side takes
    each side's first ones; counted in one, it has no A/A copy (its count is taken as exact)."""
    marks = all(s.marks for s in sides.values()) and markers_work()
    runs = (None,) if marks else (0, None)  # None: the benchmark's N
    layouts = layouts or {}

    def shifts(side: str, name: str) -> range:
        spec = sides[side].shifts
        k = layouts.get(name, len(spec))
        if k <= 1 and side == "aa":
            return range(0)
        return spec[: max(1, k)]

    jobs = [
        (side, name, n, k)
        for side in sides
        for name in benchmarks
        for n in runs
        for k in shifts(side, name)
    ]
    counts: dict[tuple[str, str, int | None, int], int] = {}

    def one(job: tuple[str, str, int | None, int]) -> None:
        side, name, n, k = job
        iters, live = benchmarks[name]
        runs_n = iters if n is None else n
        counts[job] = count_instructions(
            sides[side], name, runs_n, live=live, seed=seed, heap_shift=k, marks=marks
        )
        if callable(progress):
            progress(len(counts), len(jobs), f"{side} {name} x{runs_n} shift {k}")

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        list(pool.map(one, jobs))
    return {
        side: {
            name: [
                counts[(side, name, None, k)] - (0 if marks else counts[(side, name, 0, k)])
                for k in shifts(side, name)
            ]
            for name in benchmarks
            if shifts(side, name)
        }
        for side in sides
    }


def gate_benchmarks(cfg: GateConfig) -> dict[str, tuple[int, int]]:
    """name -> (iterations, live requests) of the gated benchmarks in instruction mode."""
    benchmarks: dict[str, tuple[int, int]] = {}
    for name in cfg.benchmarks("instructions"):
        if BenchName.parse(name).kind == "step":
            benchmarks[name] = (cfg.instr_steps, 0)  # the scenario in the name sizes it
        else:
            benchmarks[name] = (cfg.instr_lookup_passes, cfg.instr_lookup_live)
    return benchmarks


def report_progress(done: int, total: int, label: str) -> None:
    print(f"[gate] callgrind {done}/{total}: {label}", file=sys.stderr, flush=True)


def measure_gate(
    cfg: GateConfig, trees: dict[str, Path], bases: dict[str, Base]
) -> dict[str, dict[str, list[float]]]:
    """{side: {benchmark: [instructions]}} for the gated benchmarks of instruction mode, the
    trees given (base, candidate, aa), `bases` saying how to speak to an older base tree."""
    benchmarks = gate_benchmarks(cfg)
    k = cfg.instr_heap_shifts
    sides = {}
    for side, tree in trees.items():
        base = bases.get(side)
        # a name the base cannot measure stops here, not mid-run
        names = {n: base.name(n) for n in benchmarks} if base is not None else {}
        sides[side] = Side(
            tree,
            range(k, 2 * k) if side == "aa" else range(k),
            names=names,
            options=None if base is None else base.instr_options,
        )
    return measure_sides(cfg, sides, benchmarks)


def measure_sides(
    cfg: GateConfig, sides: dict[str, Any], benchmarks: dict[str, tuple[int, int]]
) -> dict[str, dict[str, list[float]]]:
    """{side: {benchmark: [instructions]}}: each side's counts over its heap layouts, with the
    gate's progress lines (both gates, the working tree's and the target mode's)."""
    counts = measure(
        sides,
        benchmarks,
        seed=cfg.seed,
        progress=report_progress,
        layouts={n: cfg.layouts(n) for n in benchmarks},
    )
    return {
        side: {n: [float(c) for c in cs] for n, cs in per.items()} for side, per in counts.items()
    }
