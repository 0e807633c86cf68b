"""One module per scenario. Each exposes `run(ctx) -> SuiteOutput`, executed inside a worker
process (bench.worker); the parent (bench.runner) merges workers into pyperf JSON."""

from __future__ import annotations

from bench.suites import gate_suite, gc_suite, lookup, scaling, step
from bench.suites.common import SuiteOutput, WorkerContext

RUNNERS = {
    "lookup": lookup.run,
    "step": step.run,
    "gc": gc_suite.run,
    "scaling": scaling.run,
    "gate": gate_suite.run,
}

__all__ = ["RUNNERS", "SuiteOutput", "WorkerContext"]
