"""step: scheduler step latency per strategy x access pattern, interleaved.

Names: step/<strategy>/<pattern>. A value is the mean host time of `steps_per_value` scheduler
iterations (pyperf loops = steps). Every step's own latency is kept too (host, and device time
from CUDA events on a GPU), with a flag for "a GC collection ran during this step", so the
parent can report p50/p99/p99.9/max, steps per second and which spikes were GC.
"""

from __future__ import annotations

from typing import Any

from bench.gcprobe import GcProbe, gc_paused
from bench.scheduler import SyntheticScheduler, make_hidden
from bench.suites.common import Subject, SuiteOutput, WorkerContext, failure_text, interleave
from bench.timing import StepClock


class StepRecorder:
    """Runs k steps of one scheduler, timing each; keeps per-step data of measured values."""

    def __init__(self, scheduler: SyntheticScheduler, clock: StepClock, probe: GcProbe) -> None:
        self.scheduler = scheduler
        self.clock = clock
        self.probe = probe
        self.pending: dict[str, list[int]] = {}
        self.kept: dict[str, list[int]] = {"host_ns": [], "device_ns": [], "gc": []}

    def measure(self, k: int) -> float:
        sched, clock, probe = self.scheduler, self.clock, self.probe
        host, device, gcs = [], [], []
        for _ in range(k):
            before = probe.total_collections
            clock.start()
            sched.step()
            h, d = clock.stop()
            host.append(h)
            device.append(d)
            gcs.append(probe.total_collections - before)
        self.pending = {"host_ns": host, "device_ns": device, "gc": gcs}
        return sum(host) / k / 1e9

    def commit(self) -> None:
        for key, values in self.pending.items():
            self.kept[key].extend(values)
        self.pending = {}


def build_recorders(
    ctx: WorkerContext,
    out: SuiteOutput,
    *,
    prefix: str,
    patterns: tuple[str, ...],
    live_requests: int,
    probe: GcProbe,
    name_suffix: str = "",
) -> dict[str, StepRecorder]:
    """One scheduler per strategy x pattern, all sharing one pool tensor and hidden buffer."""
    pool = ctx.make_pool()
    clock = StepClock(ctx.device)
    recorders: dict[str, StepRecorder] = {}
    hidden = None
    for s in ctx.strategies:
        if s.name in out.failures:
            continue
        for pattern in patterns:
            params = ctx.scheduler_params(pattern=pattern, live_requests=live_requests)
            if hidden is None:
                hidden = make_hidden(params, pool)
            name = (
                f"{prefix}/{s.name}/pattern={pattern}{name_suffix}"
                if not name_suffix
                else f"{prefix}/{s.name}{name_suffix}"
            )
            try:
                with gc_paused():
                    sched = SyntheticScheduler(s, params, pool, hidden=hidden)
            except Exception as exc:
                out.failures[s.name] = f"{name} setup: {failure_text(exc)}"
                break
            recorders[name] = StepRecorder(sched, clock, probe)
    return recorders


def subjects_for(recorders: dict[str, StepRecorder], steps: int) -> list[Subject]:
    return [
        Subject(
            name=name,
            strategy=rec.scheduler.strategy.name,
            measure=lambda rec=rec: rec.measure(steps),  # type: ignore[misc]
            loops=steps,
        )
        for name, rec in recorders.items()
    ]


def close_all(recorders: dict[str, StepRecorder]) -> None:
    for rec in recorders.values():
        rec.scheduler.close()


def step_extras(recorders: dict[str, StepRecorder]) -> dict[str, Any]:
    return {
        name: {**rec.kept, "live_requests": rec.scheduler.params.live_requests}
        for name, rec in recorders.items()
    }


def run(ctx: WorkerContext) -> SuiteOutput:
    out = SuiteOutput()
    cfg = ctx.config
    with GcProbe() as probe:
        recorders = build_recorders(
            ctx,
            out,
            prefix="step",
            patterns=cfg.patterns,
            live_requests=cfg.live_requests,
            probe=probe,
        )
        ctx.progress(0.05, "step: schedulers built")

        def keep(subject: Subject, warmup: bool) -> None:
            rec = recorders[subject.name]
            if warmup:
                rec.pending = {}
            else:
                rec.commit()

        interleave(
            ctx,
            out,
            subjects_for(recorders, cfg.steps_per_value),
            label="step",
            progress_base=0.05,
            progress_span=0.95,
            after_value=keep,
        )
    out.extra["steps"] = step_extras(recorders)
    close_all(recorders)
    return out
