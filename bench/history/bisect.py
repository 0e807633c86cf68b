"""`python -m bench bisect PATH GOOD BAD`: the first commit of GOOD..BAD whose scheduler cost
differs from GOOD's, in about log2(N) paired gates.

Each step of the search is one real-mode gate (bench.real.gate: GOOD, the commit, and an A/A copy
of the commit in lockstep, judged by the wall gate's rule at its A/A-calibrated bound). The
first gate is GOOD against BAD: if it passes, there is no step above the threshold in the range
and the search ends. Otherwise its verdict (regression: slower; improvement: faster) is the
direction looked for, and the search keeps the invariant "GOOD does not differ in that
direction, the upper end does". The first gate measures the step (GOOD..BAD's change); every
further gate asks which side of it a commit is on: where its change lies, as a fraction of that
step, past one half (the commit is after the step: the upper end moves down) or short of it (the
lower end moves up). A gate whose interval holds one half cannot say, so it is measured again
with twice the rounds, up to MAX_ROUND_FACTOR times `--rounds`, and then decided by its median.
A threshold verdict would not do here: near the bound, a commit after the step passes as often
as not, and one wrong turn lands the search on the wrong commit (measured: docs/HISTORY.md).
It ends on the first commit after the step: at most ceil(log2 N) + 1 gates, some longer.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.base.errors import EXIT_FAILED, EXIT_OK, UsageError
from bench.base.storage import write_atomic, write_json
from bench.base.timing import wall_s
from bench.gate.judge import Judgement
from bench.history import commits as hc
from bench.real import capabilities
from bench.real.gate import MIN_ROUNDS, RealGate, judge, measure
from bench.real.presets import RealPreset
from bench.real.profile.render import where_section
from bench.real.profile.run import where_moved
from bench.real.run import prepare

SCHEMA = "reqstate-bench-bisect/2"
DIRECTIONS = ("regression", "improvement")
MAX_ROUND_FACTOR = 4  # a gate that straddles the step's midpoint: up to 4x --rounds


@dataclass(frozen=True)
class GateStep:
    good: hc.Commit
    commit: hc.Commit
    verdicts: dict[str, str]  # preset -> pass | regression | improvement
    changes: dict[str, tuple[float, float, float]]  # preset -> (change %, CI low %, CI high %)
    wall_s: float
    rounds: int = 0
    # where the change lies as a fraction of the first gate's step (point, low, high: the
    # interval holds the first gate's own uncertainty); None for the first gate
    fraction: tuple[float, float, float] | None = None
    # still straddling half the step at MAX_ROUND_FACTOR x --rounds: decided by its point alone
    undecided: bool = False

    def shows(self, direction: str) -> bool:
        return any(v == direction for v in self.verdicts.values())

    def after(self) -> bool:
        """The commit is past the step: its change is at least half the first gate's."""
        return self.fraction is not None and self.fraction[0] >= 0.5


# (good, commit, rounds) -> the gate's judgements, one per preset
GateFn = Callable[[hc.Commit, hc.Commit, int], list[Judgement]]


@dataclass
class BisectJob:
    repo: Path
    good: str
    bad: str
    presets: list[RealPreset]
    changed: dict[str, Any] = field(default_factory=dict)
    rounds: int = 6
    threshold_pct: float = 5.0
    seed: int = 0
    interpreter: str | None = None
    output_dir: Path = Path("reports")
    gate: GateFn | None = None  # tests give their own
    # At the first commit: the functions whose time moved from its parent (real_where), or none
    where: Callable[[BisectJob, hc.Commit, hc.Commit, Path], dict[str, Any]] | None = None


def real_gate(job: BisectJob) -> GateFn:
    """One real-mode gate per call; each revision's environment prepared once."""

    if job.rounds < MIN_ROUNDS:
        raise UsageError(
            f"bisect --rounds {job.rounds}: at least {MIN_ROUNDS} (a gate of fewer can never fail)"
        )
    revisions: dict[str, Any] = {}

    def rev(c: hc.Commit) -> Any:
        if c.sha not in revisions:
            (revisions[c.sha],) = prepare([f"{job.repo}@{c.sha}"], job.interpreter)
        return revisions[c.sha]

    def gate(good: hc.Commit, commit: hc.Commit, rounds: int) -> list[Judgement]:
        cfg = RealGate(
            f"{job.repo}@{good.sha}",
            f"{job.repo}@{commit.sha}",
            tuple(p.in_lockstep(job.changed) for p in job.presets),
            rounds=rounds,
            threshold_pct=job.threshold_pct,
            seed=job.seed,
            interpreter=job.interpreter,
            changed=job.changed,
        )
        vals, _seen = measure(cfg, {"base": rev(good), "candidate": rev(commit)})
        return judge(cfg, vals)

    return gate


def progress(msg: str) -> None:
    print(f"[bisect] {msg}", file=sys.stderr, flush=True)


def fraction_of(
    change: tuple[float, float, float], step: tuple[float, float, float]
) -> tuple[float, float, float]:
    """Where a change (point, low, high) lies as a fraction of the step (point, low, high, an
    interval that excludes zero): the point's ratio, and the extremes over both intervals."""
    ends = [c / s for c in change[1:] for s in step[1:]]
    return change[0] / step[0], min(ends), max(ends)


def _step(
    gate: GateFn,
    good: hc.Commit,
    commit: hc.Commit,
    presets: list[str],
    rounds: int,
    step: tuple[str, tuple[float, float, float]] | None = None,
) -> GateStep:
    """One gate; with `step` (the preset the first gate showed it on, its change in % with its
    interval), measured again with twice the rounds while its interval holds half the step, up
    to MAX_ROUND_FACTOR times `rounds`; then, if still so, marked undecided."""
    most = rounds * MAX_ROUND_FACTOR
    progress(f"gate {good.short} -> {commit.short} ({commit.subject[:60]})")
    t0 = wall_s()
    while True:
        judged = gate(good, commit, rounds)
        verdicts, changes = {}, {}
        for preset, j in zip(presets, judged, strict=True):
            verdicts[preset] = j.verdict
            changes[preset] = (j.change_pct, (j.ci_low - 1) * 100, (j.ci_high - 1) * 100)
        fraction = None
        undecided = False
        if step is not None:
            name, size = step
            fraction = fraction_of(changes[name], size)
            undecided = fraction[1] <= 0.5 <= fraction[2]
            if undecided and rounds * 2 <= most:
                progress(
                    f"  {name}: at {fraction[0]:.2f} of the step, undecided: again, "
                    f"{rounds * 2} rounds"
                )
                rounds *= 2
                continue
        break
    out = GateStep(
        good, commit, verdicts, changes, round(wall_s() - t0, 1), rounds, fraction, undecided
    )
    progress("  " + chain_line(out))
    return out


def chain_line(s: GateStep) -> str:
    parts = [
        f"{p} {s.verdicts[p]} {c[0]:+.2f}% [{c[1]:+.2f}, {c[2]:+.2f}]" for p, c in s.changes.items()
    ]
    where = ""
    if s.fraction is not None:
        side = "after" if s.after() else "before"
        if s.undecided:
            side += f" (UNDECIDED at {s.rounds} rounds: decided by its point alone)"
        where = f"; at {s.fraction[0]:.2f} of the step [{s.fraction[1]:.2f}, {s.fraction[2]:.2f}]: {side} it"
    return (
        f"{s.good.short} -> {s.commit.short}: "
        + "; ".join(parts)
        + where
        + f" ({s.rounds} rounds, {s.wall_s:.0f} s)"
    )


@dataclass(frozen=True)
class BisectResult:
    commits: int  # in the range
    chain: tuple[GateStep, ...]
    first: hc.Commit | None  # None: no step above the threshold
    direction: str | None
    # commits that could not be gated (git bisect skip): the first commit is then known only
    # to lie after `after`, at or before `first`
    skipped: tuple[tuple[hc.Commit, str], ...] = ()
    after: hc.Commit | None = None

    @property
    def max_gates(self) -> int:
        return math.ceil(math.log2(max(self.commits, 1))) + 1

    @property
    def certain(self) -> bool:
        """Every gate decided, and the first commit pinned to one commit."""
        return not any(s.undecided for s in self.chain) and self.span() <= 1

    after_distance: int = 1  # commits from `after` (exclusive) to `first` (inclusive)

    def span(self) -> int:
        """How many commits the first one may be (1 when pinned; 0 when there is no step)."""
        return self.after_distance if self.first is not None else 0


OnGate = Callable[["BisectResult"], object]


def _pick(lo: int, hi: int, skipped: set[int]) -> int | None:
    """The commit to gate between lo and hi (exclusive): the middle, else the nearest to it
    that was not skipped; None when every one was."""
    mid = (lo + hi) // 2
    for d in range(hi - lo):
        for k in (mid - d, mid + d):
            if lo < k < hi and k not in skipped:
                return k
    return None


def search(
    repo: Path,
    good_rev: str,
    bad_rev: str,
    presets: list[str],
    gate: GateFn,
    rounds: int = 6,
    on_gate: OnGate | None = None,
) -> BisectResult:
    """The search; `on_gate` receives the result so far after every gate."""
    good, bad = hc.resolve(repo, good_rev), hc.resolve(repo, bad_rev)
    commits = hc.in_range(repo, good.sha, bad.sha)
    if not commits or commits[-1].sha != bad.sha:
        raise UsageError(f"{bad_rev} is not a first-parent descendant of {good_rev}")
    first = _step(gate, good, bad, presets, rounds)
    chain = [first]
    direction = next((d for d in DIRECTIONS if first.shows(d)), None)
    if direction is None:
        result = BisectResult(len(commits), tuple(chain), None, None)
        if on_gate is not None:
            on_gate(result)
        return result
    # the step is read on the preset that shows it, the largest change where several do
    name = max(
        (p for p, v in first.verdicts.items() if v == direction),
        key=lambda p: abs(first.changes[p][0]),
    )
    step = (name, first.changes[name])
    lo, hi = -1, len(commits) - 1  # commits[hi] is past the step; lo (-1 = GOOD) is not
    skipped: dict[int, str] = {}

    def so_far() -> BisectResult:
        # the first commit lies after the last gated commit before hi (skipped ones between)
        below = max((k for k in range(lo, hi) if k not in skipped), default=lo)
        after = good if below < 0 else commits[below]
        return BisectResult(
            len(commits),
            tuple(chain),
            commits[hi],
            direction,
            tuple((commits[k], why) for k, why in sorted(skipped.items())),
            after,
            hi - below,
        )

    if on_gate is not None:
        on_gate(so_far())
    while hi - lo > 1:
        mid = _pick(lo, hi, set(skipped))
        if mid is None:
            break
        try:
            s = _step(gate, good, commits[mid], presets, rounds, step)
        except UsageError as exc:  # DataError included: this commit cannot be gated
            skipped[mid] = str(exc)
            progress(f"  {commits[mid].short} skipped: {exc}")
            if on_gate is not None:
                on_gate(so_far())
            continue
        chain.append(s)
        if s.after():
            hi = mid
        else:
            lo = mid
        if on_gate is not None:
            on_gate(so_far())
    return so_far()


def markdown(result: BisectResult, title: str) -> str:
    lines = [f"**Bisect** {title}: {result.commits} commits, {len(result.chain)} gates"]
    if result.first is None:
        lines.append("- no step above the threshold in this range (the first gate passed)")
    else:
        word = "slower" if result.direction == "regression" else "faster"
        if result.span() > 1 and result.after is not None:
            lines.append(
                f"- first commit {word}: after {result.after.short}, at or before "
                f"{result.first.short} ({result.span()} commits; the others between could not "
                "be gated)"
            )
        else:
            lines.append(f"- first commit {word}: {result.first.short} ({result.first.subject})")
    lines += [f"- gate {i + 1}: {chain_line(s)}" for i, s in enumerate(result.chain)]
    lines += [f"- skipped {c.short}: {why}" for c, why in result.skipped]
    if not result.certain:
        lines.append(
            "- **uncertain**: "
            + ("a gate stayed undecided; " if any(s.undecided for s in result.chain) else "")
            + ("commits were skipped; " if result.span() > 1 else "")
            + "exit status 1"
        )
    return "\n".join(lines) + "\n"


def real_where(job: BisectJob, parent: hc.Commit, first: hc.Commit, folder: Path) -> dict[str, Any]:
    """The functions whose time moved from `parent` to `first`, on the first preset, each side
    under py-spy (bench.real.profile): what `--where auto` adds at the first commit."""
    preset = job.presets[0].in_lockstep(job.changed)
    base, head = prepare([f"{job.repo}@{parent.sha}", f"{job.repo}@{first.sha}"], job.interpreter)
    return where_moved(base, head, preset, folder, seed=job.seed)


def _where(job: BisectJob, first: hc.Commit, folder: Path) -> dict[str, Any] | None:
    """job.where at the first commit; None when there is none or it failed (said why)."""
    if job.where is None:
        return None
    parent = hc.resolve(job.repo, f"{first.sha}^")
    progress(f"where it moved: {parent.short} -> {first.short}, both under py-spy")
    try:
        return job.where(job, parent, first, folder)
    except UsageError as exc:  # DataError included: the bisection stands without it
        progress(f"where it moved: not profiled ({exc})")
        return None


def _write(job: BisectJob, out: Path, result: BisectResult, moved: dict[str, Any] | None) -> str:
    """bisect.md and bisect.json as they stand (written after every gate)."""
    title = f"{job.repo.resolve().name} {job.good}..{job.bad}"
    text = markdown(result, title)
    if moved is not None:
        text += "\n**Where it moved** at the first commit:\n\n"
        text += "\n".join(where_section(moved, 5)) + "\n"
    write_atomic(out / "bisect.md", text)
    write_json(
        out / "bisect.json",
        {
            "schema": SCHEMA,
            "range": [job.good, job.bad],
            "commits": result.commits,
            "first": result.first.sha if result.first else None,
            "after": result.after.sha if result.after else None,
            "span": result.span(),
            "certain": result.certain,
            "direction": result.direction,
            "chain": [asdict(s) for s in result.chain],
            "skipped": [{"commit": c.sha, "why": why} for c, why in result.skipped],
            "presets": [p.name for p in job.presets],
            "changed": job.changed,
            "threshold_pct": job.threshold_pct,
            "rounds": job.rounds,
            "where": moved,
        },
    )
    return text


def execute_bisect(job: BisectJob) -> tuple[Path, int]:
    """Exit 0 when the search ended certain (every gate decided, the first commit pinned, or no
    step), 1 when it did not (an undecided gate, skipped commits around the first)."""
    presets = [p.name for p in job.presets]
    if job.gate is None:  # the real one: both ends must run what the presets ask for
        ends = [hc.resolve(job.repo, job.good).sha, hc.resolve(job.repo, job.bad).sha]
        capabilities.check_commits(job.repo, ends, job.presets)
    gate = job.gate or real_gate(job)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = job.output_dir / f"bisect-{stamp}-{os.getpid()}"

    def written(r: BisectResult) -> None:
        if not out.is_dir():
            out.mkdir(parents=True)
            progress(f"the chain is written after every gate to {out}")
        _write(job, out, r, None)

    result = search(
        job.repo,
        job.good,
        job.bad,
        presets,
        gate,
        job.rounds,
        on_gate=written,
    )
    moved = _where(job, result.first, out / "where") if result.first is not None else None
    text = _write(job, out, result, moved)
    print(text, end="")
    print(f"bisect folder: {out}")
    return out, EXIT_OK if result.certain else EXIT_FAILED
