"""scaling: step cost as live requests grow from 256 to 65,536 (log steps), per strategy.

Names: scaling/<strategy>/live=<n>; a value is the mean step time at that size. The parent
divides by n for the cost per live request and fits log(cost per request) against log(n): a
slope near 0 is constant cost per request, a clearly positive slope a cost that grows.
"""

from __future__ import annotations

import gc

from bench.gcprobe import GcProbe
from bench.suites.common import SuiteOutput, WorkerContext, interleave
from bench.suites.step import build_recorders, close_all, subjects_for


def run(ctx: WorkerContext) -> SuiteOutput:
    out = SuiteOutput()
    cfg = ctx.config
    sizes = cfg.scaling_sizes
    for i, n in enumerate(sizes):
        with GcProbe() as probe:
            recorders = build_recorders(
                ctx,
                out,
                prefix="scaling",
                patterns=(cfg.scaling_pattern,),
                live_requests=n,
                probe=probe,
            )
            # names read scaling/<strategy>/live=<n>: the pattern is fixed for the suite
            subjects = subjects_for(recorders, cfg.scaling_steps_per_value)
            for subj in subjects:
                subj.name = f"scaling/{subj.strategy}/live={n}"
            interleave(
                ctx,
                out,
                subjects,
                label=f"scaling live={n}",
                progress_base=i / len(sizes),
                progress_span=1 / len(sizes),
                after_value=lambda _s, _w: None,
            )
        close_all(recorders)
        del recorders
        gc.collect()
    out.extra["pattern"] = cfg.scaling_pattern
    return out
