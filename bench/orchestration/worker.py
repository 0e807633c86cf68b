"""Worker process: runs one suite once and writes its SuiteOutput as JSON.

    python -m bench.worker SUITE CONFIG_JSON_FILE OUTPUT_JSON_FILE WORKER_INDEX

Each worker is a fresh interpreter (as pyperf's workers are): hash seeds, allocator state and
memory layout differ from one to the next, so values from several workers sample that noise
instead of hiding it.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import torch

from bench import suites
from bench.base.storage import write_json
from bench.core.workload import use_torch_tensors
from bench.measure.context import WorkerContext

# One intra-op thread: on the CPU the pool copies then run on the measured thread alone,
# instead of waking a thread pool whose scheduling adds noise on a 2-core machine.
TORCH_THREADS = 1


# Study knob (bench.commands.variation): ballast allocated before anything is built, so that the
# objects built after it land elsewhere in the heap (the instruction gate shifts layouts alike).
HEAP_SHIFT_ENV = "REQSTATE_HEAP_SHIFT"
_BALLAST: list[object] = []


def main(argv: list[str]) -> int:
    suite, config_path, output_path, index = argv
    shift = int(os.environ.get(HEAP_SHIFT_ENV, "0") or 0)
    _BALLAST.extend(bytes(8 + (i * 37) % 200) for i in range(shift * 997))
    config = suites.config_from_json(Path(config_path).read_text(encoding="utf-8"))
    torch.set_num_threads(TORCH_THREADS)
    use_torch_tensors()  # requests hold real tensors where SGLang's Req does
    device, strategies = config.subjects()
    ctx = WorkerContext(
        config=config,
        worker_index=int(index),
        device=device,
        strategies=strategies,
        rng=random.Random(config.seed * 1009 + int(index)),
    )
    output = suites.get(suite).run(ctx)
    write_json(Path(output_path), output.to_dict())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
