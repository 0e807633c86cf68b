"""Where an instruction-count change is: callgrind's per-function counts of the two sides.

For a benchmark whose count moved, the target runs once more on each side under callgrind
(0 and N iterations, the first heap layout), and every function's instructions of the N
iterations are compared, per iteration:

    Python functions   inclusive instructions (the function and everything it calls), from
                       CPython's perf trampolines (`python -X perf`, Python >= 3.12 on Linux):
                       each Python function runs through a small trampoline of its own whose
                       address /tmp/perf-<pid>.map names, and callgrind charges the trampoline's
                       callees to it. Without such an interpreter, C functions only.
    C functions        self instructions (the interpreter's own functions: dict lookups,
                       attribute lookups, allocation), file:function where the binary says.

An interpreter for the Python view: $REQSTATE_PERF_PYTHON, this one if it is 3.12+, else
python3.13 / python3.12 on PATH (the instruction target needs nothing beyond the standard
library and this tree).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.base.storage import ROOT
from bench.gate.instructions import Side, benchmark_command, markers_work, run_callgrind

# The functions gate.md lists per benchmark.
TOP_FUNCTIONS = 8
# A function is listed when it moved by at least this share of the benchmark's change.
MIN_SHARE = 0.02
_TRAMPOLINE = re.compile(r"^0x[0-9a-f]+$")
_RECURSION = re.compile(r"'\d+$")  # callgrind's recursion-depth suffix: f'2
# The harness's own frames (the target's driver, the scheduler loop): their inclusive counts
# hold everything and name nothing under review. The call sites (`callsite X`), the revision's
# code, its strategy module and the standard library stay.
HARNESS_FILES = frozenset(
    {p.name for p in (ROOT / "bench").rglob("*.py") if p.name != "__init__.py"} | {"<frozen runpy>"}
)


def perf_python() -> str | None:
    """An interpreter with perf trampolines (3.12+), or None."""
    candidates = [os.environ.get("REQSTATE_PERF_PYTHON", ""), sys.executable]
    candidates += [shutil.which(n) or "" for n in ("python3.13", "python3.12")]
    for exe in filter(None, candidates):
        try:
            proc = subprocess.run(
                [exe, "-c", "import sys; print(hasattr(sys, 'activate_stack_trampoline'))"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and proc.stdout.strip() == "True":
            return exe
    return None


@dataclass(frozen=True)
class FunctionCost:
    name: str  # file:function
    python: bool  # a Python function (inclusive) or a C function (self)
    instructions: float  # per iteration


def _perf_map(text: str) -> dict[int, str]:
    m = re.search(r"^pid: (\d+)$", text, re.MULTILINE)
    if not m:
        return {}
    path = Path(f"/tmp/perf-{m.group(1)}.map")
    out: dict[int, str] = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return out
    finally:
        path.unlink(missing_ok=True)
    for line in lines:
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[2].startswith("py::"):
            out[int(parts[0], 16)] = parts[2][4:]
    return out


def _python_label(symbol: str, renames: dict[str, str]) -> str:
    """'WeakKeyDictionary.get:/usr/lib/python3.12/weakref.py' -> 'weakref.py:WeakKeyDictionary.get'."""
    func, _, path = symbol.partition(":")
    name = Path(path).name if path else "?"
    if path.startswith("<callsite "):
        name = path.split()[1].split(":")[0]
        return f"callsite {name}"
    if path.startswith("<Req "):
        return "request model:Req.__init__"  # the generated class, whichever side built it
    return f"{renames.get(name, name)}:{func}"


def parse(text: str, renames: dict[str, str] | None = None) -> dict[tuple[str, bool], float]:
    """{(file:function, python): instructions} from a callgrind output: inclusive for Python
    functions (trampolines named by the perf map), self for C functions."""
    names: dict[str, str] = {}
    files: dict[str, str] = {}
    perf = _perf_map(text)
    renames = renames or {}
    self_cost: dict[str, float] = {}
    incl: dict[str, float] = {}
    fn = ""
    fl = ""
    after_calls = False

    def compressed(table: dict[str, str], value: str) -> str:
        m = re.match(r"^\((\d+)\)(?: (.*))?$", value)
        if not m:
            return value
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1), value)

    for line in text.splitlines():
        if line.startswith("fl="):
            fl = compressed(files, line[3:])
        elif line.startswith(("fi=", "fe=")):
            compressed(files, line[3:])
        elif line.startswith("fn="):
            fn = f"{Path(fl).name}:{compressed(names, line[3:])}"
        elif line.startswith("cfn="):
            compressed(names, line[4:])
        elif line.startswith(("cfl=", "cfi=")):
            compressed(files, line[4:])
        elif line.startswith("calls="):
            after_calls = True
        elif line and (line[0].isdigit() or line[0] in "+-*"):
            parts = line.split()
            if len(parts) < 2:
                continue
            cost = float(parts[1])
            if after_calls:
                incl[fn] = incl.get(fn, 0.0) + cost
                after_calls = False
            else:
                self_cost[fn] = self_cost.get(fn, 0.0) + cost
                incl[fn] = incl.get(fn, 0.0) + cost
    out: dict[tuple[str, bool], float] = {}
    for key, cost in self_cost.items():
        func = key.split(":", 1)[1]
        if _TRAMPOLINE.match(func):
            continue
        label = _RECURSION.sub("", key.replace("???:", ""))
        out[(label, False)] = out.get((label, False), 0.0) + cost
    for key, cost in incl.items():
        func = key.split(":", 1)[1]
        if _TRAMPOLINE.match(func) and int(func, 16) in perf:
            label = _python_label(perf[int(func, 16)], renames)
            if label.split(":", 1)[0] in HARNESS_FILES:
                continue
            out[(label, True)] = out.get((label, True), 0.0) + cost
    return out


def per_iteration(
    side: Side,
    benchmark: str,
    iterations: int,
    *,
    live: int,
    seed: int,
    python: str | None,
    renames: dict[str, str] | None = None,
) -> dict[tuple[str, bool], float]:
    """Every function's instructions per iteration on one side, first heap layout: the counts
    between the target's markers where the interpreter dumps there, else the N-iteration run
    minus the 0-iteration run; divided by N."""
    exe = python or sys.executable
    marks = side.marks and markers_work(exe)
    runs = []
    for n in (iterations,) if marks else (0, iterations):
        with tempfile.TemporaryDirectory(prefix="reqstate-cgf-") as tmp:
            out = Path(tmp) / "callgrind.out"
            cmd = benchmark_command(
                side,
                benchmark,
                n,
                live=live,
                seed=seed,
                heap_shift=side.shifts.start,
                out=out,
                python=exe,
                perf_map=python is not None,
                marks=marks,
            )
            runs.append(parse(run_callgrind(cmd, side.tree, benchmark, out, marks=marks), renames))
    zero, full = ({}, runs[0]) if marks else (runs[0], runs[1])
    keys = set(zero) | set(full)
    return {k: (full.get(k, 0.0) - zero.get(k, 0.0)) / iterations for k in keys}


def movers(
    base: dict[tuple[str, bool], float],
    head: dict[tuple[str, bool], float],
    *,
    top: int = TOP_FUNCTIONS,
) -> list[tuple[FunctionCost, FunctionCost]]:
    """The functions whose per-iteration instructions moved most, Python functions first
    (they name the code under review), then C functions; (base, head) pairs."""
    keys = set(base) | set(head)
    total = sum(abs(head.get(k, 0.0) - base.get(k, 0.0)) for k in keys if not k[1]) or 1.0
    ranked = sorted(keys, key=lambda k: abs(head.get(k, 0.0) - base.get(k, 0.0)), reverse=True)
    out = []
    for python in (True, False):
        picked = [
            k
            for k in ranked
            if k[1] == python and abs(head.get(k, 0.0) - base.get(k, 0.0)) >= MIN_SHARE * total
        ][:top]
        out += [
            (
                FunctionCost(k[0], k[1], base.get(k, 0.0)),
                FunctionCost(k[0], k[1], head.get(k, 0.0)),
            )
            for k in picked
        ]
    return out
