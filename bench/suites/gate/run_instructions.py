"""The deterministic workload the instruction-count gate runs under callgrind.

    python -m bench.instr_target BENCHMARK --iterations N [--live L] [--seed S] [--external F]

(bench/instr_target.py runs this module's main: gates invoke it by that path in other trees.)

BENCHMARK is a gate benchmark name: step/<strategy>/scenario=<s>/pattern=<p> or
lookup/<strategy>/op=get_hit/live=<n>/regime=warm. The target builds the same setup whatever N is, then runs
N iterations (scheduler steps, or passes of get over the live requests). The gate runs it twice,
with N = 0 and N = iterations, and takes the difference of callgrind's totals: the instructions
of the iterations alone, free of interpreter start-up and setup. No torch is imported: the
scheduler uses a HostPool.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from array import array

from bench.base.names import BenchName
from bench.core.hostpool import HostPool, host_hidden
from bench.core.scenarios import get as get_scenario
from bench.core.scheduler import make_scheduler, warmup_steps
from bench.core.workload import RequestSource
from strategies import Strategy, load_builtin, load_external


def parse_benchmark(name: str) -> BenchName:
    """A gate benchmark: step/<s>/scenario=<x>/pattern=<p> or lookup/<s>/op=get_hit/live=<n>/regime=warm."""
    bench = BenchName.parse(name)
    if bench.kind not in ("step", "lookup"):
        raise ValueError(f"not a gate benchmark name: {name!r}")
    return bench


def _strategy(name: str, external: list[str]) -> Strategy:
    for spec in external:
        s = load_external(spec)
        if s.name == name:
            return s
    return load_builtin(name)


def mark() -> None:
    """A marker callgrind dumps its counts at (`--dump-before=time_sleep`): called right before
    and right after the measured iterations, so one run counts them alone."""
    time.sleep(0)


def run(
    name: str,
    iterations: int,
    *,
    live: int,
    seed: int,
    external: list[str],
    heap_shift: int = 0,
    marks: bool = False,
) -> list[object]:
    bench = parse_benchmark(name)
    strategy = _strategy(bench.strategy, external)
    gc.disable()  # a collection's timing depends on history; counts must not
    # Allocator state and object addresses (hence identity hashes) depend on the heap's
    # history; the gate takes the median over a few deliberate shifts of it.
    ballast: list[object] = [bytes(8 + (i * 37) % 200) for i in range(heap_shift * 997)]
    if bench.kind == "step":
        scenario = get_scenario(bench["scenario"])
        sched = make_scheduler(
            strategy,
            scenario,
            HostPool(scenario.pool_rows),
            pattern=bench["pattern"],
            seed=seed,
            hidden=host_hidden(scenario.chunk_tokens),
        )
        sched.run(warmup_steps(scenario))  # in both the 0- and the N-iteration runs
        if marks:
            mark()
        sched.run(iterations)
        if marks:
            mark()
        return ballast
    n = bench.int("live")
    cls = RequestSource().make(strategy)  # a revision's own Req when it brings one
    reqs = [cls(f"i{i}", array("q", (1, 2)), 1) for i in range(n)]
    get = strategy.get
    for r in reqs:
        get(r)
    if marks:
        mark()
    for _ in range(iterations):
        for r in reqs:
            get(r)
    if marks:
        mark()
    return ballast


# The options main() takes: part of the cross-tree contract (bench/gate/protocol.py).
OPTIONS = ("--iterations", "--live", "--seed", "--external", "--heap-shift", "--marks")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.instr_target")
    ap.add_argument("benchmark")
    ap.add_argument("--iterations", type=int, required=True)
    ap.add_argument("--live", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--external", action="append", default=[])
    ap.add_argument("--heap-shift", type=int, default=0)
    ap.add_argument("--marks", action="store_true", help="call the marker around the iterations")
    args = ap.parse_args(argv)
    run(
        args.benchmark,
        args.iterations,
        live=args.live,
        seed=args.seed,
        external=args.external,
        heap_shift=args.heap_shift,
        marks=args.marks,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
