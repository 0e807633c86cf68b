"""Measuring a history: every selected commit's own scheduler (real mode, bench/real/), in
batches that run in lockstep with the anchor.

Processes of one revision differ by ±10% and more on a shared 2-core machine (docs/REAL.md),
so commits measured one after another would hide any step smaller than that. Instead a round
starts, together, one driver for the anchor, one more for the anchor (the A/A copy: what
identical code moves), and one for each commit of a batch, and lets them measure their
iterations in turns (bench.real.process.run_lockstep): value i of every member comes from the
same seconds of the machine's life. Each commit's figure in the round is the ratio of its mean
iteration to the anchor's (the gate's paired statistic), so a commit measured in another batch,
or in a later call, is still on the same scale: every round holds the anchor.

A commit is stored when each of its rounds ends (bench.history.store), so an interruption loses
at most the round in flight, and a later call measures only the rounds a commit still lacks.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.base.cpuload import LoadMeter
from bench.base.errors import DataError, UsageError
from bench.base.timing import wall_s
from bench.history.commits import Commit, Selection
from bench.history.store import Store
from bench.real.measure import figures, matched_share, values
from bench.real.presets import RealPreset
from bench.real.process import LOCKSTEP_GROUP, run_lockstep
from bench.real.run import job, prepare
from bench.stats.paired import round_ratio

DEFAULT_ROUNDS = 5
# commits per lockstep round, beside the anchor and its copy: a group of the gate's size, so a
# commit reads the size its gate and bisect read (bench.real.process.LOCKSTEP_GROUP)
DEFAULT_BATCH = LOCKSTEP_GROUP - 2


def progress(msg: str) -> None:
    print(f"[history] {msg}", file=sys.stderr, flush=True)


@dataclass
class Member:
    """A commit and what runs it (bench.real.run.Revision in real mode; anything a runner
    understands in tests)."""

    commit: Commit
    revision: Any
    copy: bool = False  # the anchor's A/A copy


# (members, preset, seed, first worker index, rng) -> one driver output per member
Runner = Callable[[Sequence[Member], RealPreset, int, int, random.Random], list[dict[str, Any]]]
# (repository, commit) -> its revision, or a UsageError saying why it cannot run
Preparer = Callable[[Path, Commit], Any]


def lockstep_runner(
    members: Sequence[Member], preset: RealPreset, seed: int, first: int, rng: random.Random
) -> list[dict[str, Any]]:

    units = [
        (m.revision.env, m.revision.tree, job(m.revision, preset, seed=seed, worker=first + k))
        for k, m in enumerate(members)
    ]
    return run_lockstep(units, rng)


def real_preparer(interpreter: str | None) -> Preparer:
    def prepare_one(repo: Path, commit: Commit) -> Any:

        (rev,) = prepare([f"{repo}@{commit.sha}"], interpreter)
        return rev

    return prepare_one


@dataclass
class Plan:
    """What a history measures and how long it may take."""

    repo: Path
    selection: Selection
    preset: RealPreset  # in lockstep, with --set applied
    changed: dict[str, Any]
    rounds: int = DEFAULT_ROUNDS
    batch: int = DEFAULT_BATCH
    budget_s: float | None = None
    seed: int = 0
    runner: Runner = lockstep_runner
    preparer: Preparer = field(default_factory=lambda: real_preparer(None))
    mode: str = "real"  # what the commits' records say they were measured by


def paired_ratio(cand: Sequence[float], anchor: Sequence[float]) -> float:
    """The round's change (bench.stats.paired, the gate's statistic): the ratio of the two
    processes' mean iteration, each over all its values."""
    if not cand or not anchor:
        raise DataError("no values to pair")
    return round_ratio(cand, anchor)


def _figures_us(out: dict[str, Any]) -> dict[str, float]:
    return {k: v * 1e6 for k, v in figures(out.get("records") or []).items()}


def round_entry(
    out: dict[str, Any],
    anchor_out: dict[str, Any],
    preset: RealPreset,
    rid: int,
    cost_s: float,
    twins: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """One commit's figures in one round, beside the anchor's; `cost_s`: the round's wall time
    over the commits it measured (the anchor's two processes included)."""
    mine = values(out["records"], preset.iterations).get("iteration", [])
    for twin in twins:  # the commit's second process in a one-commit batch
        mine = mine + values(twin["records"], preset.iterations).get("iteration", [])
    theirs = values(anchor_out["records"], preset.iterations).get("iteration", [])
    own, anchor = _figures_us(out), _figures_us(anchor_out)
    return {
        "round": rid,
        "ratio": paired_ratio(mine, theirs),
        "matched": round(matched_share(out["records"], anchor_out["records"]), 4),
        "wrapped": sorted({w.partition(" [")[0] for w in out.get("phases_wrapped") or []}),
        "us": own.get("iteration", math.nan),
        "anchor_us": anchor.get("iteration", math.nan),
        "phases_us": {k: v for k, v in own.items() if k != "iteration"},
        "anchor_phases_us": {k: v for k, v in anchor.items() if k != "iteration"},
        "cost_s": round(cost_s, 2),
    }


def _record(store: Store, commit: Commit, how: str) -> dict[str, Any]:
    return store.load(commit.sha) or {
        "commit": commit.sha,
        "date": commit.date,
        "subject": commit.subject,
        "mode": how,
        "rounds": [],
    }


def todo(plan: Plan, store: Store) -> list[Commit]:
    """The selected commits that still lack rounds (one that failed in this call is not tried
    again in it: `retry_failed` clears the mark when the next call starts)."""
    out = []
    for c in plan.selection.commits:
        rec = store.load(c.sha)
        if rec and (rec.get("failed") or len(rec.get("rounds", [])) >= plan.rounds):
            continue
        out.append(c)
    return out


def unmeasured(plan: Plan, store: Store) -> list[Commit]:
    """The selected commits short of their rounds, failed ones included."""
    return [c for c in plan.selection.commits if store.rounds(c.sha) < plan.rounds]


def retry_failed(plan: Plan, store: Store) -> None:
    """A new call tries again what failed in an earlier one (an environment that did not build,
    a driver that crashed): the failure is kept as the commit's last failure, the rounds it had
    measured are kept."""
    for c in plan.selection.commits:
        rec = store.load(c.sha)
        if rec and rec.get("failed") and len(rec.get("rounds", [])) < plan.rounds:
            rec["last_failure"] = rec.pop("failed")
            rec["attempts"] = int(rec.get("attempts", 1)) + 1
            store.save(rec)


def _prepare(plan: Plan, store: Store, c: Commit) -> Member | None:
    t0 = wall_s()
    try:
        rev = plan.preparer(plan.repo, c)
    except UsageError as exc:
        rec = _record(store, c, plan.mode)
        rec["failed"] = f"cannot be run: {exc}"
        store.save(rec)
        progress(f"{c.short}: {exc} (tried again on the next call)")
        return None
    rec = _record(store, c, plan.mode)
    rec["prepare_s"] = round(wall_s() - t0, 1)
    rec["built_now"] = bool(getattr(rev, "built_now", False))
    rec["environment"] = getattr(getattr(rev, "env", None), "key", None)
    store.save(rec)
    return Member(c, rev)


def batches(commits: Sequence[Commit], size: int, rng: random.Random) -> list[list[Commit]]:
    """The commits shuffled into batches of at most `size`, as even as can be. Shuffled again in
    every pass: commits of one batch share its anchor processes, whose own noise moves all their
    ratios together, so a fixed split would put a step of that noise at every batch boundary;
    reassigned each round, it is noise spread over the curve, which each commit's round spread
    measures."""
    order = list(commits)
    rng.shuffle(order)
    n = max(1, math.ceil(len(order) / size))
    per = math.ceil(len(order) / n) if order else 0
    return [order[i : i + per] for i in range(0, len(order), per)] if per else []


def measure(plan: Plan, store: Store) -> dict[str, Any]:
    """Measure what the store lacks, a pass at a time (every commit short of rounds gets one
    round per pass, in freshly shuffled batches); returns what happened ({'left': commits not
    measured for want of budget, 'rounds_run', 'wall_s'})."""
    retry_failed(plan, store)
    manifest = store.manifest()
    rng = random.Random(plan.seed + int(manifest.get("next_round", 0)))
    started = wall_s()
    anchor: Member | None = None
    prepared: dict[str, Member | None] = {}
    rounds_run = 0
    per_process: float | None = None
    while left := todo(plan, store):
        if anchor is None:
            try:
                anchor = Member(
                    plan.selection.anchor, plan.preparer(plan.repo, plan.selection.anchor)
                )
            except UsageError as exc:
                raise UsageError(f"the anchor {plan.selection.anchor.short}: {exc}") from None
        done = min(store.rounds(c.sha) for c in left)
        chunks = batches(left, plan.batch, rng)
        for b, chunk in enumerate(chunks, 1):
            for c in chunk:
                if c.sha not in prepared:
                    prepared[c.sha] = _prepare(plan, store, c)
            members = [m for c in chunk if (m := prepared[c.sha]) is not None]
            if not members:
                continue
            group = [anchor, Member(anchor.commit, anchor.revision, copy=True), *members]
            if len(members) == 1:  # its twin, so that no code follows only the other's
                group.append(Member(members[0].commit, members[0].revision, copy=True))
            if plan.budget_s is not None and per_process is not None:
                spent = wall_s() - started
                if spent + per_process * len(group) > plan.budget_s:
                    progress(
                        f"budget: {spent:.0f} of {plan.budget_s:.0f} s spent; the rest is "
                        "left for a later call (run the same command again)"
                    )
                    return _summary(plan, store, started, rounds_run)
            progress(
                f"round {done + 1}/{plan.rounds}, batch {b}/{len(chunks)}: the anchor, its A/A "
                f"copy and {len(members)} commit(s) in lockstep"
            )
            per_process = _round(plan, store, group, members)
            rounds_run += 1
    return _summary(plan, store, started, rounds_run)


def _round(plan: Plan, store: Store, group: list[Member], members: list[Member]) -> float:
    """One lockstep round, stored; the seconds it took per process."""
    t0 = wall_s()
    manifest = store.manifest()
    rid = int(manifest.get("next_round", 0))
    rng = random.Random(plan.seed * 1000 + rid)
    meter = LoadMeter(children=True)
    meter.start()
    outs = plan.runner(group, plan.preset, plan.seed + rid, rid * 100, rng)
    load = meter.stop()
    wall = wall_s() - t0
    anchor_out, copy_out = outs[0], outs[1]
    if not anchor_out.get("ok") or not copy_out.get("ok"):
        bad = anchor_out if not anchor_out.get("ok") else copy_out
        raise DataError(f"the anchor {plan.selection.anchor.short} failed: {bad.get('message')}")
    manifest["next_round"] = rid + 1
    anchor_rec = _record(store, plan.selection.anchor, plan.mode)
    anchor_rec["rounds"].append(round_entry(copy_out, anchor_out, plan.preset, rid, 0.0))
    store.save(anchor_rec)
    twins = [o for o in outs[2 + len(members) :] if o.get("ok")]
    for m, out in zip(members, outs[2 : 2 + len(members)], strict=True):
        rec = _record(store, m.commit, plan.mode)
        if not out.get("ok"):
            rec["failed"] = f"its driver failed: {out.get('message')}"
            progress(f"{m.commit.short}: {rec['failed']} (tried again on the next call)")
        elif len(rec["rounds"]) < plan.rounds:
            entry = round_entry(out, anchor_out, plan.preset, rid, wall / len(members), twins)
            entry["load_cores"] = round(load.cores, 3) if load.metered else None  # None: unmetered
            rec["rounds"].append(entry)
        store.save(rec)
    store.save_manifest(manifest)
    return wall / len(group)


def _summary(plan: Plan, store: Store, started: float, rounds_run: int) -> dict[str, Any]:
    return {
        "left": [c.sha for c in unmeasured(plan, store)],
        "rounds_run": rounds_run,
        "wall_s": round(wall_s() - started, 1),
    }
