"""`python -m bench history PATH A..B`: measure what the history's folder lacks, find the
steps, write the report (docs/HISTORY.md)."""

from __future__ import annotations

import hashlib
import json
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.base.errors import EXIT_FAILED, EXIT_OK
from bench.history import commits as hc
from bench.history import measure as hm
from bench.history import report as hr
from bench.history import series
from bench.history.store import PROTOCOL, Store
from bench.real.presets import RealPreset

# (repository, anchor) -> a measured hot-path map is stored for the anchor (real mode: one
# untimed counting pass); --hot-path calls it when the cache has none
Mapper = Callable[[Path, hc.Commit], None]


@dataclass
class HistoryJob:
    repo: Path
    range_text: str
    presets: list[RealPreset]  # as given (in lockstep here)
    changed: dict[str, Any] = field(default_factory=dict)
    rounds: int = hm.DEFAULT_ROUNDS
    batch: int = hm.DEFAULT_BATCH
    every: int = 1
    hot_path: bool = False
    budget_s: float | None = None
    seed: int = 0
    output_dir: Path = Path("reports")
    runner: hm.Runner = hm.lockstep_runner
    preparer: hm.Preparer = field(default_factory=lambda: hm.real_preparer(None))
    mapper: Mapper | None = None


def folder(job: HistoryJob, anchor: str) -> Path:
    ident = json.dumps({"changed": job.changed, "protocol": PROTOCOL}, sort_keys=True)
    digest = hashlib.sha256(ident.encode()).hexdigest()[:8]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", job.repo.resolve().name.removesuffix(".git")) or "repo"
    return job.output_dir / "history" / f"{name}-{anchor[:10]}-{digest}"


def real_mapper(preparer: hm.Preparer, preset: RealPreset) -> Mapper:
    def count(repo: Path, anchor: hc.Commit) -> None:
        from bench.core.hotpath import measured_path
        from bench.real import freqmap
        from bench.real.run import run_count

        if measured_path(anchor.sha).is_file():
            return
        hm.progress(f"{anchor.short}: counting calls per function for the hot-path map (untimed)")
        rev = preparer(repo, anchor)
        out = run_count(rev, preset)
        if out.get("ok"):
            freqmap.store(
                freqmap.build(out, revision=rev.source.label, preset=preset.name), rev.source
            )

    return count


def _identity(job: HistoryJob, preset: RealPreset, anchor: str) -> dict[str, Any]:
    return {
        "repository": job.repo.resolve().name,
        "anchor": anchor,
        "preset": preset.name,
        "changed": job.changed,
        "protocol": PROTOCOL,
        "plan": preset.plan(),
    }


def _costs(records: list[dict[str, Any]]) -> dict[str, float]:
    per = [sum(r.get("cost_s", 0.0) for r in rec.get("rounds", [])) for rec in records]
    per = [p for p in per if p > 0]
    built = [rec["prepare_s"] for rec in records if rec.get("built_now") and rec.get("prepare_s")]
    return {
        "per_commit_s": sum(per) / len(per) if per else 0.0,
        "built_s": sum(built) / len(built) if built else 0.0,
    }


def execute(job: HistoryJob) -> tuple[Path, int]:
    sel = hc.select(job.repo, job.range_text, every=job.every, hot_path=False)
    if job.hot_path:
        if job.mapper is not None:
            job.mapper(job.repo, sel.anchor)
        sel = hc.select(job.repo, job.range_text, every=job.every, hot_path=True)
    where = folder(job, sel.anchor.sha)
    hm.progress(
        f"{job.range_text}: {len(sel.commits)} of {sel.in_range} commits ({sel.how}), anchor "
        f"{sel.anchor.short}; stored in {where}"
    )
    status = EXIT_OK

    def terminated(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminated)
    curves, forward = {}, {}
    try:
        for preset in job.presets:
            lock = preset.in_lockstep(job.changed)
            store = Store(where / preset.name)
            manifest = store.open(_identity(job, lock, sel.anchor.sha))
            manifest["order"] = [c.sha for c in sel.all]
            store.save_manifest(manifest)
            plan = hm.Plan(
                job.repo, sel, lock, job.changed, job.rounds, job.batch, job.budget_s,
                job.seed, job.runner, job.preparer,
            )  # fmt: skip
            done = hm.measure(plan, store)
            if done["left"]:
                status = EXIT_FAILED
                hm.progress(f"{preset.name}: {len(done['left'])} commit(s) still to measure")
    except KeyboardInterrupt:
        hm.progress("interrupted: every finished round is stored; run it again to resume")
        status = EXIT_FAILED
    finally:
        signal.signal(signal.SIGTERM, previous)
    records_all: list[dict[str, Any]] = []
    for preset in job.presets:
        store = Store(where / preset.name)
        records = {c.sha: r for c in sel.all if (r := store.load(c.sha)) is not None}
        records_all += [records[c.sha] for c in sel.commits if c.sha in records]
        forward[preset.name] = preset.forward_ms
        curves[preset.name] = series.build(sel.all, records, forward_ms=preset.forward_ms)
    view = hr.HistoryView(
        f"{job.repo.resolve().name} {sel.anchor.short}..{sel.commits[-1].short}",
        sel.how,
        job.rounds,
        curves,
        forward,
        _costs(records_all),
    )
    hr.write(where, view, [c.sha for c in sel.all])
    print(hr.terminal(view))
    print(f"history folder: {where}\nreport: {where / hr.REPORT}")
    return where, status
