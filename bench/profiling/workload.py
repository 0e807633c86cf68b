"""The process `python -m bench profile` samples with py-spy: one strategy's scheduler loop.

    python -m bench.profiling.workload --strategy NAME --duration-s S --scenario NAME
        --pattern per_field|cached --device cpu|cuda[:i] --gc-out PATH

Setup (imports, building the scheduler with GC paused, warm-up steps) happens outside
`reqstate_profile_root`; the steady-state loop runs inside it, so in the collapsed stacks that
function is the named root of everything worth looking at, and the parent keeps only samples
under it (bench.profiling.stacks.ROOT_FUNCTION holds the name; a test keeps the two equal).

Over the loop, gc.callbacks (bench.base.gcprobe.GcProbe) record collector pauses, because py-spy
without --native cannot see the collector. On success the loop's numbers are written to
--gc-out (the parent's success marker); a failure prints a last line starting with ERROR_PREFIX.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path
from typing import Any

import torch

from bench.base.gcprobe import GcProbe, gc_paused
from bench.base.storage import write_json
from bench.base.timing import now_ns, resolve_device, sync
from bench.core.rowpool import RowPool, check_fits, default_shape
from bench.core.scenarios import get as get_scenario
from bench.core.scheduler import SchedulerLoop, make_scheduler, warmup_steps
from bench.core.workload import use_torch_tensors
from bench.orchestration.worker import TORCH_THREADS
from bench.profiling.run import ERROR_PREFIX
from strategies import resolve

WARMUP_STEPS = 5


def reqstate_profile_root(
    scheduler: SchedulerLoop, device: torch.device, duration_ns: int
) -> dict[str, Any]:
    """Step the scheduler until duration_ns of wall time has passed (the profiled loop).

    The device is synchronised after every step, as the step suite's clock does, so queued
    device work is paid for inside the step that queued it."""
    steps = 0
    with GcProbe() as probe:
        t0_ns = now_ns()
        while now_ns() - t0_ns < duration_ns:
            scheduler.step()
            sync(device)
            scheduler.worker_tick()
            steps += 1
        loop_ns = now_ns() - t0_ns
    return {
        "steps": steps,
        "loop_ns": loop_ns,
        "gc_pause_ns": probe.total_pause_ns,
        "gc_max_pause_ns": probe.max_pause_ns,
        "gc_collections": list(probe.collections),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    torch.set_num_threads(TORCH_THREADS)
    use_torch_tensors()  # requests hold real tensors where SGLang's Req does
    device = resolve_device(args.device)
    (strategy,) = resolve([args.strategy])
    scenario = get_scenario(args.scenario)
    shape = default_shape(
        device, chunked_prefill_size=scenario.chunk_tokens, pool_rows=scenario.pool_rows
    )
    check_fits(shape, device)
    pool = RowPool(shape, device)
    with gc_paused():
        scheduler = make_scheduler(strategy, scenario, pool, pattern=args.pattern)
    scheduler.run(warmup_steps(scenario) + WARMUP_STEPS)
    sync(device)
    loop = reqstate_profile_root(scheduler, device, int(args.duration_s * 1e9))
    scheduler.close()
    return {
        "strategy": strategy.name,
        "pattern": args.pattern,
        "scenario": scenario.name,
        "device": str(device),
        "warmup_steps": WARMUP_STEPS,
        "duration_s": args.duration_s,
        **loop,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profiling.workload")
    parser.add_argument("--strategy", required=True)
    parser.add_argument("--duration-s", type=float, required=True)
    parser.add_argument("--scenario", default="prefill-dspark")
    parser.add_argument("--pattern", default="per_field")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--gc-out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        result = run(args)
    except Exception as exc:
        traceback.print_exc()
        print(f"{ERROR_PREFIX} {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 3
    write_json(args.gc_out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
