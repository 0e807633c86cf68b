"""Per function, from the processes' profiles: self and inclusive shares of the measured
iterations' samples, and µs per iteration (the share times the measured mean iteration of the
same process), each a mean over processes with its 95% t interval; per iteration kind (all,
decode, extend). A function is its qualified name in its file (bench.real.profile.samples.Frame:
a frame's line is its function's first line)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench.profiling.stacks import Frame
from bench.real.profile import samples
from bench.real.profile.samples import Profile, key
from bench.stats import mean_t_ci

KINDS = ("all", "decode", "extend")


@dataclass
class Counted:
    """One process's figures for one iteration kind."""

    samples: int
    mean_us: float  # the process's measured mean iteration of that kind (stand-in left out)
    self_n: Counter[str] = field(default_factory=Counter)
    incl_n: Counter[str] = field(default_factory=Counter)

    def share(self, key: str, *, inclusive: bool) -> float:
        n = (self.incl_n if inclusive else self.self_n)[key]
        return n / self.samples if self.samples else 0.0

    def us(self, key: str, *, inclusive: bool) -> float:
        return self.share(key, inclusive=inclusive) * self.mean_us


def count(stacks: Counter[tuple[Frame, ...]], mean_us: float) -> Counted:
    c = Counted(samples=sum(stacks.values()), mean_us=mean_us)
    for stack, n in stacks.items():
        if not stack:
            continue
        c.self_n[key(stack[-1])] += n
        for k in {key(f) for f in stack}:
            c.incl_n[k] += n
    return c


def mean_iteration_us(records: list[dict[str, Any]], which: str) -> float:
    modes = {"all": None, "decode": ("DECODE",), "extend": ("EXTEND", "MIXED")}[which]
    ns = [r["ns"] for r in records if modes is None or r["mode"] in modes]
    return sum(ns) / len(ns) / 1e3 if ns else 0.0


def counted(profile: Profile, records: list[dict[str, Any]]) -> dict[str, Counted]:
    return {
        which: count(
            profile.merged(None if which == "all" else which), mean_iteration_us(records, which)
        )
        for which in KINDS
    }


@dataclass(frozen=True)
class Interval:
    mean: float
    lo: float
    hi: float

    @classmethod
    def of(cls, values: list[float]) -> Interval:
        if not values:
            return cls(math.nan, math.nan, math.nan)
        m, lo, hi = mean_t_ci(values)
        return cls(m, lo, hi)


@dataclass(frozen=True)
class Row:
    key: str
    name: str
    file: str
    line: int
    kind: str  # revision, library, stand-in, stub, driver
    self_pct: Interval
    incl_pct: Interval
    self_us: Interval
    incl_us: Interval


def frames_by_key(profiles: list[Profile]) -> dict[str, Frame]:
    out: dict[str, Frame] = {}
    for p in profiles:
        for stacks in p.stacks.values():
            for stack in stacks:
                for f in stack:
                    out.setdefault(key(f), f)
    return out


def rows(
    per_process: list[dict[str, Counted]], frames: dict[str, Frame], which: str = "all"
) -> list[Row]:
    """Every function any process sampled in iterations of kind `which`, by self share, the
    largest first."""
    procs = [p[which] for p in per_process if p[which].samples]
    keys = {k for p in procs for k in p.incl_n}
    out = []
    for k in keys:
        f = frames[k]
        out.append(
            Row(
                key=k,
                name=f.name,
                file=f.file,
                line=f.line or 0,
                kind=samples.kind(f),
                self_pct=Interval.of([100 * p.share(k, inclusive=False) for p in procs]),
                incl_pct=Interval.of([100 * p.share(k, inclusive=True) for p in procs]),
                self_us=Interval.of([p.us(k, inclusive=False) for p in procs]),
                incl_us=Interval.of([p.us(k, inclusive=True) for p in procs]),
            )
        )
    out.sort(key=lambda r: (-r.self_pct.mean, r.key))
    return out
