"""A driver's py-spy samples, split into its measured iterations by the driver's marks
(bench.real.driver.marks) and classified by what each frame is.

py-spy's speedscope file holds one profile per thread, its samples in time order, each a stack
of frame indices, root first. The scheduler's thread is the one whose samples hold the marks.
Reading it in order: everything before the start mark is warm-up, hold or setup and is
dropped; the samples between two marks belong to the iteration the second mark closes, whose
kind (decode, extend, other) the mark names. A sample inside the driver's boundary (its own
work between iterations: building arrivals, closing the record) lies outside every iteration's
figure and is counted apart, as is one inside the stand-in model (the iteration's figure leaves
the stand-in out). The driver's pass-through frames (the phase timers around the revision's
methods) are dropped from a stack, so the revision's frames nest as the revision calls them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench.profiling.stacks import Frame

DRIVER_DIR = "bench/real/driver/"
MARKS_FILE = DRIVER_DIR + "marks.py"
LOOP_FILE = DRIVER_DIR + "loop.py"
# the stand-in model: its forward and sampling, its speculative decoding (the verify's
# predictions, the logits that carry their argmax) and the device kernels it serves in torch
STANDIN_FILES = tuple(
    DRIVER_DIR + name
    for name in (
        "standin.py", "transfer.py", "spec.py", "logits.py", "kernels.py", "triton_kernels.py",
        "triton_launch.py",
    )
)  # fmt: skip
STUBS_FILE = DRIVER_DIR + "stubs.py"
BOUNDARY = "Steering.boundary"
WAITS = ("turn", "settled_turn")  # the lockstep waits (py-spy does not see a stdin read as idle)
START = "reqstate_measure_start"
AFTER = {
    "reqstate_after_decode": "decode",
    "reqstate_after_extend": "extend",
    "reqstate_after_other": "other",
}


def key(f: Frame) -> str:
    """A function's identity within a revision: its file and qualified name."""
    return f"{f.file}:{f.name}"


def kind(f: Frame) -> str:
    return kind_of(f.file)


def kind_of(file: str) -> str:
    f = file.replace("\\", "/")
    if any(f.endswith(s) for s in STANDIN_FILES):
        return "stand-in"
    if f.endswith(STUBS_FILE):
        return "stub"
    if DRIVER_DIR in f:
        return "driver"
    if "sglang/" in f:
        return "revision"
    return "library"


@dataclass
class Profile:
    """One process's measured samples: per iteration kind, the stacks (root first) and counts;
    apart, the stacks of the driver's own work between iterations and of the stand-in model."""

    rate_hz: int
    stacks: dict[str, Counter[tuple[Frame, ...]]] = field(default_factory=dict)
    boundary: Counter[tuple[Frame, ...]] = field(default_factory=Counter)
    stand_in: Counter[tuple[Frame, ...]] = field(default_factory=Counter)
    segments: Counter[str] = field(default_factory=Counter)  # runs of marks, per kind
    before_start: int = 0  # samples before the start mark (warm-up, hold, setup)
    after_last: int = 0  # samples after the last mark (the run's end)
    marks: int = 0  # samples inside the marks themselves
    waits: int = 0  # samples in the lockstep waits (between iterations, the process asleep)

    def samples(self, kind: str | None = None) -> int:
        kinds = [kind] if kind else list(self.stacks)
        return sum(sum(self.stacks.get(k, Counter()).values()) for k in kinds)

    def merged(self, kind: str | None = None) -> Counter[tuple[Frame, ...]]:
        out: Counter[tuple[Frame, ...]] = Counter()
        for k, c in self.stacks.items():
            if kind is None or k == kind:
                out.update(c)
        return out


def short_file(path: str) -> str:
    """A frame's file as this harness names it, whatever folder the revision was exported to:
    from its package's top folder (sglang/srt/..., bench/real/driver/...), a library's from
    site-packages, the standard library's from its version's folder."""
    p = path.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in p:
            return p.rsplit(marker, 1)[1]
    for top in ("/sglang/", "/bench/", "/strategies/"):
        if top in p:
            return top[1:] + p.rsplit(top, 1)[1]
    if "/lib/python3" in p:
        return p.rsplit("/lib/", 1)[1]
    return p


def _frames(doc: dict[str, Any]) -> list[Frame]:
    return [
        Frame(
            name=str(f.get("name", "?")),
            file=short_file(str(f.get("file", ""))),
            line=int(f.get("line") or 0),
        )
        for f in doc.get("shared", {}).get("frames", [])
    ]


def _scheduler_thread(doc: dict[str, Any], frames: list[Frame]) -> dict[str, Any] | None:
    """The thread whose samples hold the driver's marks (the scheduler's)."""
    best, most = None, 0
    for prof in doc.get("profiles", []):
        n = sum(
            1
            for s in prof.get("samples", [])
            if any(frames[i].file.endswith(MARKS_FILE) for i in s)
        )
        if n > most:
            best, most = prof, n
    return best


def _through(stack: tuple[Frame, ...]) -> tuple[Frame, ...]:
    """The stack without the driver's pass-through frames (those with a revision or library
    frame above them)."""
    out = list(stack)
    keep = []
    for i, f in enumerate(out):
        if kind(f) == "driver" and any(kind(g) in ("revision", "library") for g in out[i + 1 :]):
            continue
        keep.append(f)
    return tuple(keep)


def parse(doc: dict[str, Any], rate_hz: int) -> Profile:
    frames = _frames(doc)
    prof = Profile(rate_hz=rate_hz)
    thread = _scheduler_thread(doc, frames)
    if thread is None:
        return prof
    started = False
    last_mark = ""
    pending: list[tuple[str, tuple[Frame, ...]]] = []  # (where, stack) since the last mark
    for raw in thread.get("samples", []):
        stack = tuple(frames[i] for i in raw)
        names = {f.name for f in stack if f.file.endswith(MARKS_FILE)}
        mark = START if START in names else next((n for n in names if n in AFTER), "")
        if mark == START:
            started, pending = True, []
        elif not started:
            prof.before_start += 1
            continue
        elif mark:
            bucket = prof.stacks.setdefault(AFTER[mark], Counter())
            for where, st in pending:
                {"iteration": bucket, "boundary": prof.boundary, "stand-in": prof.stand_in}[where][
                    st
                ] += 1
            pending = []
        if mark:
            prof.marks += 1
            if mark != last_mark and mark != START:
                prof.segments[AFTER[mark]] += 1
            last_mark = mark
            continue
        last_mark = ""
        if any(f.name in WAITS and f.file == LOOP_FILE for f in stack):
            prof.waits += 1
        elif any(f.name == BOUNDARY and kind(f) == "driver" for f in stack):
            pending.append(("boundary", stack))
        elif any(kind(f) == "stand-in" for f in stack):
            pending.append(("stand-in", _through(stack)))
        else:
            pending.append(("iteration", _through(stack)))
    prof.after_last = len(pending)
    return prof
