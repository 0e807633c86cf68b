"""From a stored history to its curve and its steps.

Each commit's point is the mean over its rounds of log(ratio to the anchor): the ratio of the
same round's paired values (bench.history.measure), so the machine's slow drift cancels. Its
variance is its rounds' spread over their number, floored by the noise identical code shows: the
larger of the commits' pooled within-commit spread and the A/A copy's (the anchor measured
against itself in every round). The A/A copy's mean is the systematic offset a step must exceed.
The steps are bench.stats.steps's penalised fit over those points.

For each step: its size in percent and µs per iteration with a 95% interval, its share of the
preset's forward, and the phases of the iteration whose time moved (each phase's difference
from the anchor, the later segment's commits against the earlier's, interval excluding zero).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.history.commits import Commit
from bench.real.driver.phases import PHASES
from bench.stats import mean_t_ci
from bench.stats import steps as sd

# Phases reported as having moved at a step: at most this many, the largest first.
MAX_PHASES = 3


@dataclass(frozen=True)
class CommitPoint:
    commit: Commit
    rounds: int
    ratio: float  # exp(mean log ratio)
    var: float  # of the mean log ratio (floored)
    us: float  # µs per iteration: the anchor's median times the ratio
    failed: str | None = None

    @property
    def pct(self) -> float:
        return (self.ratio - 1) * 100


@dataclass(frozen=True)
class PhaseMove:
    phase: str
    us: float
    low: float
    high: float


@dataclass(frozen=True)
class FoundStep:
    commit: Commit
    before: Commit  # the last commit of the earlier segment
    step: sd.Step
    us: float  # the size in µs per iteration (at the anchor's cost)
    us_low: float
    us_high: float
    share_of_forward: float | None
    phases: tuple[PhaseMove, ...] = ()
    # where the data place it: after `earliest_before`, at or before `latest` (measured commits
    # the fit cannot tell apart), and how many selected commits in that span were not measured
    earliest_before: Commit | None = None
    latest: Commit | None = None
    not_measured: int = 0
    phases_note: str = ""  # why no phase is compared, where none is


@dataclass(frozen=True)
class Curve:
    points: tuple[CommitPoint, ...]  # measured, in commit order (the anchor first)
    unmeasured: tuple[CommitPoint, ...]  # failed or not yet measured
    anchor_us: float
    noise_var: float  # per round, log space: the floor's source
    aa_offset: float  # log space
    resolution_pct: float  # smallest step found 80% of the time at a boundary mid-series
    fit: sd.Fit | None
    steps: tuple[FoundStep, ...] = field(default=())
    offset_applies: bool = False  # the A/A copy's offset is systematic (its interval excludes 0)


def _logs(rec: dict[str, Any]) -> list[float]:
    return [math.log(r["ratio"]) for r in rec.get("rounds", []) if r.get("ratio", 0) > 0]


def _var(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return math.nan
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def build(
    order: Sequence[Commit],
    records: dict[str, dict[str, Any]],
    *,
    forward_ms: float | None = None,
) -> Curve:
    """`order`: the anchor then the selected commits; `records`: commit sha -> stored record."""
    anchor = order[0]
    anchor_rec = records.get(anchor.sha) or {}
    aa_logs = _logs(anchor_rec)
    anchor_us = _median([r["anchor_us"] for r in anchor_rec.get("rounds", [])]) or math.nan
    measured, missing, rows = [], [], []
    for c in order:
        rec = records.get(c.sha) or {}
        logs = _logs(rec)
        if not logs:  # a failed commit keeps the rounds it measured before it failed
            missing.append(
                CommitPoint(c, len(logs), math.nan, math.nan, math.nan, rec.get("failed"))
            )
            continue
        rows.append((c, rec, logs))
    within = [_var(logs) for _c, _r, logs in rows if len(logs) > 1]
    pooled = sum(within) / len(within) if within else math.nan
    aa_var = _var(aa_logs)
    noise = max((v for v in (pooled, aa_var) if not math.isnan(v)), default=0.0)
    aa_offset = sum(aa_logs) / len(aa_logs) if aa_logs else 0.0
    # The A/A offset (the copy against the anchor, both the anchor's code) is a floor only for a
    # step from the anchor's own point, whose figure is that copy's: every other commit is
    # measured against the same anchor processes in the same rounds, so a systematic offset of
    # the anchor cancels in the difference of two segments of them. And only where it is
    # systematic: its t interval over the A/A rounds excludes zero. (As a floor for every step,
    # a history's +1.04% offset hid every step under 1.04% where ±0.58% could be seen.)
    aa_ci = mean_t_ci(aa_logs) if len(aa_logs) > 1 else None
    offset_applies = aa_ci is not None and not aa_ci[1] <= 0.0 <= aa_ci[2]
    points = []
    for c, _rec, logs in rows:
        mean = sum(logs) / len(logs)
        own = _var(logs) if len(logs) > 1 else noise
        var = max(own, noise) / len(logs)
        ratio = math.exp(mean)
        measured.append(CommitPoint(c, len(logs), ratio, var, anchor_us * ratio))
        points.append(sd.Point(mean, var))
    if len(points) < 3 or noise <= 0.0:  # too few commits, or no round to tell noise by
        return Curve(tuple(measured), tuple(missing), anchor_us, noise, aa_offset, math.nan, None)
    # the anchor's own record (first of rows) holds the A/A rounds: counted once
    df = sum(len(logs) - 1 for _c, _r, logs in rows)
    offset = aa_offset if offset_applies else 0.0
    fit = sd.detect(points, offset=offset, df=df, offset_at=(1,))
    res = math.expm1(sd.min_detectable(points, fit.penalty)) * 100
    recs = [r for _c, r, _l in rows]
    found = tuple(
        _found(s, fit, points, measured, recs, order, anchor_us, forward_ms) for s in fit.steps
    )
    return Curve(
        tuple(measured),
        tuple(missing),
        anchor_us,
        noise,
        aa_offset,
        res,
        fit,
        found,
        offset_applies,
    )


def _median(xs: Sequence[float]) -> float | None:
    xs = sorted(x for x in xs if not math.isnan(x))
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def _found(
    step: sd.Step,
    fit: sd.Fit,
    ys: Sequence[sd.Point],
    points: Sequence[CommitPoint],
    recs: Sequence[dict[str, Any]],
    order: Sequence[Commit],
    anchor_us: float,
    forward_ms: float | None,
) -> FoundStep:
    us = math.expm1(step.size) * anchor_us
    lo, hi = math.expm1(step.low) * anchor_us, math.expm1(step.high) * anchor_us
    share = us / (forward_ms * 1e3) if forward_ms else None
    first, last = sd.location(ys, fit, step)
    earliest_before, latest = points[first - 1].commit, points[last].commit
    pos = {c.sha: i for i, c in enumerate(order)}
    measured = {p.commit.sha for p in points}
    span = order[pos[earliest_before.sha] + 1 : pos[latest.sha] + 1]
    phases, note = _phases_checked(fit, step, recs)
    return FoundStep(
        points[step.index].commit,
        points[step.index - 1].commit,
        step,
        us,
        lo,
        hi,
        share,
        phases,
        earliest_before,
        latest,
        sum(c.sha not in measured for c in span),
        note,
    )


def _phase_deltas(rec: dict[str, Any]) -> dict[str, float]:
    """A commit's mean difference from the anchor per phase (µs per iteration)."""
    sums: dict[str, list[float]] = {}
    for r in rec.get("rounds", []):
        for p, v in r.get("phases_us", {}).items():
            a = r.get("anchor_phases_us", {}).get(p)
            if a is not None and p in PHASES:
                sums.setdefault(p, []).append(v - a)
    return {p: sum(v) / len(v) for p, v in sums.items()}


def _wrapped(recs: Sequence[dict[str, Any]]) -> set[str]:
    return {w for r in recs for rnd in r.get("rounds", []) for w in rnd.get("wrapped", [])}


def _phases_checked(
    fit: sd.Fit, step: sd.Step, recs: Sequence[dict[str, Any]]
) -> tuple[tuple[PhaseMove, ...], str]:
    """The phases that moved, or none and why: where the two segments' commits timed different
    methods, their phases do not hold the same code."""
    later = next(s for s in fit.segments if s.start == step.index)
    earlier = next(s for s in fit.segments if s.end == step.index)
    a = _wrapped(recs[earlier.start : earlier.end])
    b = _wrapped(recs[later.start : later.end])
    if a and b and a != b:
        only = sorted((a - b) | (b - a))
        return (), "phases not compared: the commits time different methods (" + "; ".join(
            only[:3]
        ) + ")"
    return _phases(fit, step, recs), ""


def _phases(fit: sd.Fit, step: sd.Step, recs: Sequence[dict[str, Any]]) -> tuple[PhaseMove, ...]:
    """Phases whose difference from the anchor moved between the two segments the step
    separates (each commit's mean over its rounds; a t interval per segment)."""
    later = next(s for s in fit.segments if s.start == step.index)
    earlier = next(s for s in fit.segments if s.end == step.index)
    before = [_phase_deltas(r) for r in recs[earlier.start : earlier.end]]
    after = [_phase_deltas(r) for r in recs[later.start : later.end]]
    moves = []
    for phase in sorted({p for d in before + after for p in d}):
        a = [d[phase] for d in before if phase in d]
        b = [d[phase] for d in after if phase in d]
        if len(a) < 2 or len(b) < 2:
            continue
        ma, lo_a, hi_a = mean_t_ci(a)
        mb, lo_b, hi_b = mean_t_ci(b)
        half = math.hypot((hi_a - lo_a) / 2, (hi_b - lo_b) / 2)
        size = mb - ma
        if abs(size) > half:
            moves.append(PhaseMove(phase, size, size - half, size + half))
    moves.sort(key=lambda m: -abs(m.us))
    return tuple(moves[:MAX_PHASES])
