"""The functions whose time moved between two revisions.

Per function, each process's inclusive µs per iteration (bench.real.profile.table); the
change is the candidate's mean over processes less the base's. Which changes are real is a
question asked of every function at once, so the intervals are simultaneous: Westfall and
Young's max-T, over the processes as units. Under the null hypothesis that the two revisions
are one, a process's label is exchangeable; relabelling the processes every way (or 4,000
random ways when there are more) gives the distribution of the largest |Welch t| over the
tested functions, and its 99th percentile c makes Δ ± c·SE an interval that holds for every
function at once 99% of the time. A function moved when its interval excludes zero; so a
revision against itself names none but one time in a hundred, and c·SE is the smallest change
each function's figure resolves (the resolution stated with every diff).

Functions are matched by file and qualified name; one whose qualified name is found in another
file of the other revision (and nowhere else) is matched there and said to have moved. Tested:
the revision's functions with at least MIN_SHARE_PCT of either side's iteration (inclusive).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from bench.profiling.stacks import Frame
from bench.real.profile.samples import kind
from bench.real.profile.table import Counted

MIN_SHARE_PCT = 1.0
FAMILY_LEVEL = 0.01  # the chance that a diff of one revision against itself names a function
MAX_RELABELLINGS = 4000
MIN_PROCESSES = 6  # per side: with fewer, the relabellings are too few for FAMILY_LEVEL


@dataclass(frozen=True)
class Moved:
    name: str
    base_file: str
    file: str  # the candidate's
    line: int
    base_us: float
    head_us: float
    delta_us: float
    lo_us: float
    hi_us: float
    moved_from: str = ""  # the base's file when the function moved between files

    @property
    def resolved(self) -> bool:
        return self.lo_us > 0 or self.hi_us < 0

    @property
    def delta_pct(self) -> float:
        return 100 * self.delta_us / self.base_us if self.base_us else math.inf


@dataclass(frozen=True)
class Diff:
    rows: list[Moved]  # every tested function, the largest |Δ| first
    critical: float  # c
    tested: int
    relabellings: int
    processes: tuple[int, int]

    ancestors: dict[str, set[str]] = field(default_factory=dict)  # name -> names above it

    def moved(self) -> list[Moved]:
        return [r for r in self.rows if r.resolved]

    def where(self) -> list[Moved]:
        """The resolved functions that are not there only because a callee moved: a function is
        left out when one it calls moved by at least half as much, the same way. What is left
        is where the change is (the caller chain above it is in `moved`)."""
        moved = self.moved()
        out = []
        for f in moved:
            below = [
                g
                for g in moved
                if g is not f
                and f.name in self.ancestors.get(g.name, set())
                and g.delta_us * f.delta_us > 0
                and abs(g.delta_us) >= 0.5 * abs(f.delta_us)
            ]
            if not below:
                out.append(f)
        return out

    def resolution_us(self) -> tuple[float, float]:
        """(smallest, median) half-width of the tested functions' simultaneous intervals."""
        half = sorted((r.hi_us - r.lo_us) / 2 for r in self.rows)
        if not half:
            return math.nan, math.nan
        return half[0], half[len(half) // 2]


def match(base: dict[str, Frame], head: dict[str, Frame]) -> list[tuple[str | None, str | None]]:
    """(base key, head key) pairs: by file and name, then by a name unique to both leftovers."""
    pairs: list[tuple[str | None, str | None]] = [(k, k) for k in base if k in head]
    left_b = {k: f for k, f in base.items() if k not in head}
    left_h = {k: f for k, f in head.items() if k not in base}
    by_name_b: dict[str, list[str]] = {}
    by_name_h: dict[str, list[str]] = {}
    for k, f in left_b.items():
        by_name_b.setdefault(f.name, []).append(k)
    for k, f in left_h.items():
        by_name_h.setdefault(f.name, []).append(k)
    for name, kb in by_name_b.items():
        kh = by_name_h.get(name, [])
        if len(kb) == 1 and len(kh) == 1:
            pairs.append((kb[0], kh[0]))
            left_b.pop(kb[0])
            left_h.pop(kh[0])
    pairs += [(k, None) for k in left_b] + [(None, k) for k in left_h]
    return pairs


def _ancestors(stacks: Iterable[tuple[Frame, ...]], names: set[str]) -> dict[str, set[str]]:
    """For each of `names`, the names found above it in some stack."""
    out: dict[str, set[str]] = {n: set() for n in names}
    for stack in stacks:
        seen: set[str] = set()
        for f in stack:
            if f.name in names:
                out[f.name] |= seen - {f.name}
            seen.add(f.name)
    return out


def _welch(a: list[float], b: list[float]) -> tuple[float, float]:
    """(Δ, SE) of mean(b) - mean(a)."""
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    return mb - ma, math.sqrt(va / len(a) + vb / len(b))


def _max_t(cols: list[list[float]], labels: tuple[int, ...], floors: list[float]) -> float:
    best = 0.0
    for col, floor in zip(cols, floors, strict=True):
        a = [x for x, lab in zip(col, labels, strict=True) if lab == 0]
        b = [x for x, lab in zip(col, labels, strict=True) if lab == 1]
        d, se = _welch(a, b)
        best = max(best, abs(d) / max(se, floor))
    return best


def _relabellings(na: int, nb: int, rng: random.Random) -> list[tuple[int, ...]]:
    n = na + nb
    if math.comb(n, na) <= MAX_RELABELLINGS:
        out = []
        for chosen in itertools.combinations(range(n), na):
            s = set(chosen)
            out.append(tuple(0 if i in s else 1 for i in range(n)))
        return out
    base = [0] * na + [1] * nb
    out = []
    for _ in range(MAX_RELABELLINGS):
        rng.shuffle(base)
        out.append(tuple(base))
    return out


def diff(
    base: list[Counted],
    head: list[Counted],
    base_frames: dict[str, Frame],
    head_frames: dict[str, Frame],
    *,
    seed: int = 0,
    stacks: Iterable[tuple[Frame, ...]] = (),
) -> Diff:
    if len(base) < MIN_PROCESSES or len(head) < MIN_PROCESSES:
        raise ValueError(
            f"a diff needs at least {MIN_PROCESSES} profiled processes per side "
            f"(got {len(base)} and {len(head)})"
        )
    tested = []
    for kb, kh in match(base_frames, head_frames):
        f = head_frames[kh] if kh else base_frames[kb or ""]
        if kind(f) != "revision":
            continue
        a = [p.us(kb, inclusive=True) if kb else 0.0 for p in base]
        b = [p.us(kh, inclusive=True) if kh else 0.0 for p in head]
        sa = max((100 * p.share(kb, inclusive=True) for p in base), default=0) if kb else 0
        sb = max((100 * p.share(kh, inclusive=True) for p in head), default=0) if kh else 0
        if max(sum(a) / len(a), sum(b) / len(b)) <= 0 or max(sa, sb) < MIN_SHARE_PCT:
            continue
        tested.append((kb, kh, a, b))
    cols = [a + b for _, _, a, b in tested]
    # a function's SE floor: a hundredth of a sample's worth, so a function absent from every
    # process of both sides (SE 0) cannot dominate the maximum
    per_sample = [p.mean_us / p.samples for p in base + head if p.samples]
    floor = 0.01 * (sum(per_sample) / len(per_sample)) if per_sample else 1e-9
    floors = [floor] * len(cols)
    labels = _relabellings(len(base), len(head), random.Random(seed))
    maxima = sorted(_max_t(cols, lab, floors) for lab in labels) if cols else [0.0]
    c = maxima[min(len(maxima) - 1, math.ceil((1 - FAMILY_LEVEL) * len(maxima)) - 1)]
    rows = []
    for kb, kh, a, b in tested:
        d, se = _welch(a, b)
        se = max(se, floor)
        fb = base_frames.get(kb) if kb else None
        fh = head_frames.get(kh) if kh else None
        shown = fh or fb
        assert shown is not None
        rows.append(
            Moved(
                name=shown.name,
                base_file=fb.file if fb else "",
                file=fh.file if fh else "",
                line=shown.line or 0,
                base_us=sum(a) / len(a),
                head_us=sum(b) / len(b),
                delta_us=d,
                lo_us=d - c * se,
                hi_us=d + c * se,
                moved_from=fb.file if fb and fh and fb.file != fh.file else "",
            )
        )
    rows.sort(key=lambda r: -abs(r.delta_us))
    return Diff(
        ancestors=_ancestors(stacks, {r.name for r in rows if r.resolved}),
        rows=rows,
        critical=c,
        tested=len(rows),
        relabellings=len(labels),
        processes=(len(base), len(head)),
    )
