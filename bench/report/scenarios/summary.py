"""scenarios.json: the scenario view for machines (derived: re-rendering a run rewrites it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from bench.report.load import RunData
from bench.report.scenarios.model import request_rows
from bench.report.scenarios.prose import sweep_sentences, verdict_paragraph
from bench.stats.cases import REFERENCE, Case


def scenario_summary(run: RunData, all_cases: Sequence[Case]) -> dict[str, Any]:
    """scenarios.json: per case, queue statistics (keys named after the queue: inflight_mean,
    inflight_p99, ...), and per design the cost net of control, its share of the forward,
    lookups and creations per iteration and GC per 1,000 iterations. Derived (re-rendering a
    run rewrites it)."""
    out: dict[str, Any] = {"baseline": run.baseline, "reference": REFERENCE, "cases": []}
    for case in all_cases:
        queues: dict[str, float | None] = {}  # a p99 is None with too few iterations
        for name, q in case.queues.items():
            queues.update({f"{name}_mean": q.mean, f"{name}_p99": q.p99, f"{name}_max": q.max})
        designs = []
        for c in case.costs:
            gc = case.gc.get(c.strategy) if c.pattern == run.pattern_of(c.strategy) else None
            designs.append(
                {
                    "strategy": c.strategy,
                    "pattern": c.pattern,
                    "iteration_us": c.median_s * 1e6,
                    "net_us": None if c.net is None else c.net.median * 1e6,
                    "net_ci_us": None
                    if c.net is None
                    else [c.net.ci_low * 1e6, c.net.ci_high * 1e6],
                    "share_of_forward": None if c.net is None else c.share(c.net.median),
                    "lookups_per_iteration": c.lookups,
                    "states_created_per_iteration": c.created,
                    "gc_collections_per_kiteration": None
                    if gc is None
                    else gc.collections_total_per_kstep,
                    "gc_pause_ms_per_kiteration": None if gc is None else gc.pause_ms_per_kstep,
                }
            )
        out["cases"].append(
            {
                "key": case.key.text,
                "scenario": case.name,
                "modified": list(case.modified),
                "forward_ms": case.forward_ms,
                "queues": queues,
                "designs": designs,
                "verdict": verdict_paragraph(run, case),
            }
        )
    out["sweep"] = sweep_sentences(run, all_cases)
    out["request_class"] = [dataclasses.asdict(r) for r in request_rows(run)]
    out["targets"] = run.targets
    return out
