"""Collapsed stacks as py-spy's `--format raw` writes them, and the shares computed from them.

One line per distinct stack, root first, then a space and the sample count:

    main (bench/profiling/workload.py:95);reqstate_profile_root (bench/profiling/workload.py:47) 12

A Python frame is `name (file:line)`; a native frame (with --native) is `name (library)`, e.g.
`gc_collect_main (libpython3.11.so.1.0)`. File names may contain spaces and colons (the call
sites' `<callsite NAME:STRATEGY:PATTERN>`), so a frame is split at its last " (".

Only samples under ROOT_FUNCTION count (the steady-state loop; imports and setup are left out).
Within those, a sample is counted once for a share when any of its frames matches:

strategy_share  a frame in a strategy module: its file is `strategies/<module>.py`, including
                `strategies/_contract.py` (the shared state class), but not
                `strategies/__init__.py` (the registry, which only runs at setup).
callsite_share  a frame of a generated call site (`<callsite NAME:STRATEGY:PATTERN>`, see
                bench/core/callsites.py). Call-site frames do NOT count as strategy code: their
                templates are the same for every strategy and hold the scheduler's own work
                (payload dicts, slicing, checks), which a real scheduler does wherever the state
                lives. Time in the call sites' own lines that is still storage cost (attribute
                reads and writes on the state object) is therefore in callsite_share only, so
                strategy_share is a lower bound on storage cost and callsite_share, which also
                covers the strategy calls made from call sites, an upper bound.
gc_share        a native CPython collector frame (GC_FRAME_MARKERS). Allocation-side functions
                such as `_PyObject_GC_New`/`_PyObject_GC_Link` are not collection and do not
                count; when they trigger a collection, the collector's frames appear below them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

ROOT_FUNCTION = "reqstate_profile_root"  # bench.profiling.workload's loop; kept equal by a test

CALLSITE_FILE_RE = re.compile(r"^<callsite (?P<site>\w+):(?P<strategy>\w+):(?P<pattern>\w+)>$")
_STRATEGY_FILE_RE = re.compile(r"(?:^|/)strategies/(?P<module>[A-Za-z_]\w*)\.py$")
_REGISTRY_MODULE = "__init__"
# Substrings of CPython's collector functions across versions: gc_collect_main,
# gc_collect_with_callback, gc_collect_generations, gc_collect_young/increment/full (3.13+),
# collect_with_callback/collect_generations (<= 3.10), _PyGC_Collect, PyGC_Collect, _Py_RunGC.
GC_FRAME_MARKERS: tuple[str, ...] = (
    "gc_collect",
    "collect_main",
    "collect_with_callback",
    "collect_generations",
    "PyGC_Collect",
    "_Py_RunGC",
)
# <= 3.10 named the collector's core simply `collect`: matched exactly, and only when native.
_GC_EXACT_NAMES = frozenset({"collect"})


@dataclass(frozen=True)
class Frame:
    name: str
    file: str  # a library's name for native frames
    line: int | None  # None for native frames, and after by_function()
    native: bool = False

    def label(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{self.name} ({where})" if where else self.name


@dataclass(frozen=True)
class Sample:
    frames: tuple[Frame, ...]  # root first
    count: int


def parse_frame(text: str) -> Frame:
    name, sep, rest = text.rpartition(" (")
    if not sep or not rest.endswith(")"):
        return Frame(name=text, file="", line=None, native=True)
    location = rest[:-1]
    file, colon, line = location.rpartition(":")
    if colon and line.isdigit():
        return Frame(name=name, file=file, line=int(line))
    return Frame(name=name, file=location, line=None, native=True)


def parse_collapsed(text: str) -> list[Sample]:
    """Every non-empty stack of a collapsed-stack text (lines with no frames are skipped)."""
    samples = []
    for raw_line in text.splitlines():
        line = raw_line.strip()
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = tuple(parse_frame(f) for f in stack.split(";") if f)
        if frames:
            samples.append(Sample(frames=frames, count=int(count)))
    return samples


def under_root(samples: Iterable[Sample], root: str = ROOT_FUNCTION) -> list[Sample]:
    """Samples taken inside `root`, each trimmed so that `root` is its first frame."""
    kept = []
    for s in samples:
        for i, f in enumerate(s.frames):
            if f.name == root:
                kept.append(Sample(frames=s.frames[i:], count=s.count))
                break
    return kept


def by_function(samples: Iterable[Sample]) -> list[Sample]:
    """Line numbers dropped, so each function is one frame (one box in a flamegraph)."""
    return [
        Sample(frames=tuple(replace(f, line=None) for f in s.frames), count=s.count)
        for s in samples
    ]


def is_strategy_frame(frame: Frame) -> bool:
    if frame.native:
        return False
    m = _STRATEGY_FILE_RE.search(frame.file.replace("\\", "/"))
    return m is not None and m.group("module") != _REGISTRY_MODULE


def is_callsite_frame(frame: Frame) -> bool:
    return not frame.native and CALLSITE_FILE_RE.match(frame.file) is not None


def is_gc_frame(frame: Frame) -> bool:
    if not frame.native:
        return False
    return frame.name in _GC_EXACT_NAMES or any(m in frame.name for m in GC_FRAME_MARKERS)


@dataclass(frozen=True)
class Shares:
    samples: int  # samples under the root
    strategy_samples: int
    callsite_samples: int
    gc_samples: int
    native_frames: bool  # whether any native frame was seen (py-spy ran with --native)

    def share(self, part: int) -> float:
        return part / self.samples if self.samples else 0.0

    @property
    def strategy_share(self) -> float:
        return self.share(self.strategy_samples)

    @property
    def callsite_share(self) -> float:
        return self.share(self.callsite_samples)

    @property
    def gc_share(self) -> float:
        return self.share(self.gc_samples)


def compute_shares(samples: Iterable[Sample], root: str = ROOT_FUNCTION) -> Shares:
    total = strategy = callsite = gc = 0
    native = False
    for s in under_root(samples, root):
        total += s.count
        strategy += s.count if any(is_strategy_frame(f) for f in s.frames) else 0
        callsite += s.count if any(is_callsite_frame(f) for f in s.frames) else 0
        gc += s.count if any(is_gc_frame(f) for f in s.frames) else 0
        native = native or any(f.native for f in s.frames)
    return Shares(
        samples=total,
        strategy_samples=strategy,
        callsite_samples=callsite,
        gc_samples=gc,
        native_frames=native,
    )
