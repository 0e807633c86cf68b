"""`python -m bench history PATH A..B`: measure what the history's folder lacks, line by line,
find the steps, write the report (docs/HISTORY.md).

A line is one curve of the report: a real-mode preset (each commit's own scheduler), or target
mode's replay of one state group in one scenario (`--group`, for commits real mode cannot run,
or every commit with `--mode replay`). Each line has its own store, anchor rounds and noise."""

from __future__ import annotations

import hashlib
import json
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.base.errors import EXIT_FAILED, EXIT_OK, UsageError
from bench.core.hotpath import measured_path
from bench.core.scenarios import get
from bench.history import calls as hc_calls
from bench.history import commits as hc
from bench.history import measure as hm
from bench.history import report as hr
from bench.history import series
from bench.history.replay import ReplayRunner, replay_preparer
from bench.history.store import PROTOCOL, Store
from bench.real import capabilities, freqmap, venv
from bench.real import presets as rp
from bench.real.presets import RealPreset
from bench.real.run import machine, run_count

# (repository, anchor) -> a measured hot-path map is stored for the anchor (real mode: one
# untimed counting pass); --hot-path calls it when the cache has none
Mapper = Callable[[Path, hc.Commit], None]


@dataclass(frozen=True)
class Line:
    """One curve: its name, what a round measures, and how."""

    name: str  # the preset's, or "replay-<group>-<scenario>"
    mode: str  # "real" or "replay"
    preset: RealPreset  # how values pair (iterations per value); in lockstep
    forward_ms: float
    runner: hm.Runner
    preparer: hm.Preparer
    identity: dict[str, Any] = field(default_factory=dict)
    counter: hc_calls.Counter | None = None  # real mode: calls per function at each step
    counting: RealPreset | None = None  # the preset the counting pass runs


def real_line(
    preset: RealPreset,
    changed: dict[str, Any],
    runner: hm.Runner,
    preparer: hm.Preparer,
    counter: hc_calls.Counter | None = None,
) -> Line:
    lock = preset.in_lockstep(changed)
    ident = {
        "preset": preset.name,
        "changed": changed,
        "plan": lock.plan(),
        "values": {k: v for k, v, _src in lock.rows()},
        "driver_protocol": rp.DRIVER_PROTOCOL,
    }
    return Line(
        preset.name, "real", lock, preset.forward_ms, runner, preparer, ident, counter, preset
    )


def replay_line(repo: Path, group: str, scenario: str) -> Line:

    pairing = replace(rp.get("decode-b256"), iterations=1)  # one value per record
    ident = {"group": group, "scenario": scenario, "quick": True}
    return Line(
        f"replay-{group}-{scenario}", "replay", pairing, get(scenario).forward_ms,
        ReplayRunner(repo, group, scenario), replay_preparer, ident,
    )  # fmt: skip


@dataclass
class HistoryJob:
    repo: Path
    range_text: str
    lines: list[Line]
    rounds: int = hm.DEFAULT_ROUNDS
    batch: int = hm.DEFAULT_BATCH
    every: int = 1
    hot_path: bool = False
    budget_s: float | None = None
    seed: int = 0
    output_dir: Path = Path("reports")
    changed: dict[str, Any] = field(default_factory=dict)
    mapper: Mapper | None = None
    # At each step of a real line: the functions whose time moved from the commit before it
    # (bench.real.profile.run.where_moved: base, head, preset, folder, seed=...), or nothing.
    where: Callable[..., dict[str, Any]] | None = None


def folder(job: HistoryJob, anchor: str) -> Path:
    ident = json.dumps({"changed": job.changed, "protocol": PROTOCOL}, sort_keys=True)
    digest = hashlib.sha256(ident.encode()).hexdigest()[:8]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", job.repo.resolve().name.removesuffix(".git")) or "repo"
    return job.output_dir / "history" / f"{name}-{anchor[:10]}-{digest}"


def real_mapper(preparer: hm.Preparer, preset: RealPreset) -> Mapper:
    def count(repo: Path, anchor: hc.Commit) -> None:

        if measured_path(anchor.sha).is_file():
            return
        hm.progress(f"{anchor.short}: counting calls per function for the hot-path map (untimed)")
        rev = preparer(repo, anchor)
        out = run_count(rev, preset)
        if out.get("ok"):
            measured = freqmap.build(out, revision=rev.source.label, preset=preset.name)
            freqmap.store(measured, rev.source)

    return count


def _costs(records: list[dict[str, Any]]) -> dict[str, float]:
    per = [sum(r.get("cost_s", 0.0) for r in rec.get("rounds", [])) for rec in records]
    per = [p for p in per if p > 0]
    built = [rec["prepare_s"] for rec in records if rec.get("built_now") and rec.get("prepare_s")]
    return {
        "per_commit_s": sum(per) / len(per) if per else 0.0,
        "built_s": sum(built) / len(built) if built else 0.0,
    }


def _measure(job: HistoryJob, sel: hc.Selection, where: Path) -> int:
    status = EXIT_OK
    for line in job.lines:
        store = Store(where / line.name)
        ident = {
            "repository": job.repo.resolve().name,
            "anchor": sel.anchor.sha,
            "mode": line.mode,
            "protocol": PROTOCOL,
            # rounds of another host or batch size are not on the same scale (a step read
            # -2.2% on one host and -5.3% on another)
            "host": {k: v for k, v in machine().items() if k in ("cpu", "cores", "python")},
            "batch": job.batch,
            **line.identity,
        }
        manifest = store.open(ident)
        manifest["order"] = [c.sha for c in sel.all]
        store.save_manifest(manifest)
        plan = hm.Plan(
            job.repo, sel, line.preset, job.changed, job.rounds, job.batch, job.budget_s,
            job.seed, line.runner, line.preparer, mode=line.mode,
        )  # fmt: skip
        done = hm.measure(plan, store)
        if done["left"]:
            status = EXIT_FAILED
            failed = sum(bool((store.load(sha) or {}).get("failed")) for sha in done["left"])
            hm.progress(
                f"{line.name}: {len(done['left'])} selected commit(s) short of their rounds "
                f"({failed} failed: tried again when the same command is run again); exit 1"
            )
    return status


def _calls(job: HistoryJob, line: Line, store: Store, curve: series.Curve) -> dict[str, list[str]]:
    """Calls per function moved at each step (counted once; kept in the manifest)."""
    assert line.counter is not None
    assert line.counting is not None
    manifest = store.manifest()
    kept = manifest.setdefault("calls", {})
    hm.progress(f"{line.name}: counting calls per function at {len(curve.steps)} step(s) (untimed)")
    try:
        out = hc_calls.at_steps(
            line.counter, job.repo, line.counting, [(s.commit, s.before) for s in curve.steps], kept
        )
    except UsageError as exc:  # DataError included: a counting pass failed
        hm.progress(f"{line.name}: calls not counted ({exc})")
        return {}
    finally:
        store.save_manifest(manifest)
    return out


def _where(
    job: HistoryJob, line: Line, store: Store, curve: series.Curve, folder: Path
) -> dict[str, list[str]]:
    """At each step, the functions whose time moved (bench.real.profile), from the commit
    before it to the step's commit; profiled once, kept in the manifest."""
    manifest = store.manifest()
    kept = manifest.setdefault("where", {})
    out: dict[str, list[str]] = {}
    for s in curve.steps:
        if s.commit.sha not in kept:
            hm.progress(f"{line.name}: where it moved at {s.commit.short}, under py-spy")
            try:
                base = line.preparer(job.repo, s.before)
                head = line.preparer(job.repo, s.commit)
                assert job.where is not None
                kept[s.commit.sha] = job.where(
                    base, head, line.preset, folder / "where" / s.commit.short, seed=job.seed
                )
            except UsageError as exc:  # DataError included
                hm.progress(f"{line.name}: not profiled at {s.commit.short} ({exc})")
                continue
            store.save_manifest(manifest)
        d = kept[s.commit.sha]
        names = set(d.get("where", ()))
        rows = [r for r in d["rows"] if r["resolved"] and r["name"] in names]
        out[s.commit.sha] = [
            f"time moved in {r['name']}: {r['delta_us']:+,.1f} µs per iteration "
            f"[{r['ci_us'][0]:+,.1f}, {r['ci_us'][1]:+,.1f}]"
            for r in rows[:3]
        ] or [f"no function's time moved beyond ±{d['resolution_us'][1]:,.1f} µs (median)"]
    return out


def _environment_change(records: dict[str, dict[str, Any]], step: series.FoundStep) -> list[str]:
    """At a step whose commit was measured in another environment than the commit before it:
    the packages whose versions differ (what the step holds besides the code)."""
    a = (records.get(step.before.sha) or {}).get("environment")
    b = (records.get(step.commit.sha) or {}).get("environment")
    if not a or not b or a == b:
        return []
    ea, eb = venv.load(a), venv.load(b)
    if ea is None or eb is None:
        return [f"environment changed: {a} -> {b} (one is no longer cached)"]
    diff = venv.installed_diff(ea, eb)
    shown = "; ".join(diff[:6]) + (f"; and {len(diff) - 6} more" if len(diff) > 6 else "")
    return [f"environment changed ({a} -> {b}), {len(diff)} package(s): {shown}"]


def execute(job: HistoryJob) -> tuple[Path, int]:
    sel = hc.select(job.repo, job.range_text, every=job.every, hot_path=False)
    if job.hot_path:
        if job.mapper is not None:
            job.mapper(job.repo, sel.anchor)
        sel = hc.select(job.repo, job.range_text, every=job.every, hot_path=True)
    ends = [sel.anchor.sha] + ([sel.commits[-1].sha] if sel.commits else [])
    real = [line.preset for line in job.lines if line.mode == "real"]
    capabilities.check_commits(job.repo, ends, real)
    where = folder(job, sel.anchor.sha)
    hm.progress(
        f"{job.range_text}: {len(sel.commits)} of {sel.in_range} commits ({sel.how}), anchor "
        f"{sel.anchor.short}; stored in {where}"
    )

    def terminated(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        status = _measure(job, sel, where)
    except KeyboardInterrupt:
        hm.progress("interrupted: every finished round is stored; run it again to resume")
        status = EXIT_FAILED
    finally:
        signal.signal(signal.SIGTERM, previous)
    curves, forward, records_all, moved = {}, {}, [], {}
    for line in job.lines:
        store = Store(where / line.name)
        records = {c.sha: r for c in sel.all if (r := store.load(c.sha)) is not None}
        records_all += [records[c.sha] for c in sel.commits if c.sha in records]
        forward[line.name] = line.forward_ms
        curve = series.build(sel.all, records, forward_ms=line.forward_ms)
        curves[line.name] = curve
        if status == EXIT_OK and curve.steps and line.counter and line.counting:
            moved[line.name] = _calls(job, line, store, curve)
            if job.where is not None:
                at = _where(job, line, store, curve, where / line.name)
                for sha, rows in at.items():
                    moved[line.name][sha] = rows + list(moved[line.name].get(sha, []))
        for s in curve.steps:
            env_lines = _environment_change(records, s)
            if env_lines:
                moved.setdefault(line.name, {}).setdefault(s.commit.sha, [])[:0] = env_lines
    view = hr.HistoryView(
        f"{job.repo.resolve().name} {sel.anchor.short}..{sel.commits[-1].short}",
        sel.how,
        job.rounds,
        curves,
        forward,
        _costs(records_all),
        moved,
        {line.name: line.mode for line in job.lines},
    )
    hr.write(where, view, [c.sha for c in sel.all])
    print(hr.terminal(view))
    print(f"history folder: {where}\nreport: {where / hr.REPORT}")
    return where, status
