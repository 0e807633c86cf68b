"""pyperf in and out: every `<suite>.json` of a run folder is a pyperf BenchmarkSuite.

One pyperf Benchmark per benchmark name, one pyperf Run per worker process (its warm-up and
measured values), so `python -m pyperf stats` and `compare_to` open the files as they are.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyperf

from bench.base.errors import DataError
from bench.base.storage import read_json

# Run metadata copied from the environment into every pyperf run.
_ENV_METADATA = ("cpu_count", "platform", "device", "git_commit")


@dataclass(frozen=True)
class BenchValues:
    """What a worker measured for one benchmark in one process (one pyperf run)."""

    name: str
    values: list[float]
    warmups: list[float]
    loops: int
    unit: str = "second"
    gc_mode: str = "enabled"  # the collector's mode while these values were taken
    worker: int | None = None  # the worker process's index (pyperf run metadata `worker`)


def to_pyperf_suite(
    runs: Mapping[str, list[BenchValues]], environment: Mapping[str, Any]
) -> pyperf.BenchmarkSuite:
    benchmarks = []
    for name, per_worker in runs.items():
        pruns = []
        for bv in per_worker:
            md: dict[str, Any] = {
                "name": name,
                "loops": bv.loops,
                "unit": bv.unit,
                "gc_mode": bv.gc_mode,
                "python_version": environment.get("python", sys.version.split()[0]),
            }
            if bv.worker is not None:
                md["worker"] = bv.worker
            for key in _ENV_METADATA:
                if environment.get(key) is not None:
                    md[key] = environment[key]
            warmups = [(bv.loops, w) for w in bv.warmups] or None
            pruns.append(
                pyperf.Run(bv.values, warmups=warmups, metadata=md, collect_metadata=False)
            )
        benchmarks.append(pyperf.Benchmark(pruns))
    return pyperf.BenchmarkSuite(benchmarks)


def dump_pyperf(suite: pyperf.BenchmarkSuite, path: Path) -> None:
    """Atomically (pyperf writes the temporary file, we rename it into place)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        suite.dump(tmp, replace=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_pyperf(path: Path) -> pyperf.BenchmarkSuite:
    read_json(path)  # clear errors for missing/truncated/non-JSON files first
    try:
        return pyperf.BenchmarkSuite.load(str(path))
    except Exception as exc:
        raise DataError(f"{path}: not a pyperf benchmark file ({exc})") from None


def values_of(suite: pyperf.BenchmarkSuite) -> dict[str, list[float]]:
    """Every benchmark's values across its runs, keyed by benchmark name."""
    return {b.get_name(): list(b.get_values()) for b in suite.get_benchmarks()}


def runs_of(suite: pyperf.BenchmarkSuite) -> dict[str, list[list[float]]]:
    """Every benchmark's measured values per run (worker process), keyed by benchmark name."""
    return {
        b.get_name(): [list(r.values) for r in b.get_runs() if r.values]
        for b in suite.get_benchmarks()
    }


def workers_of(suite: pyperf.BenchmarkSuite) -> dict[str, list[int]]:
    """Per benchmark, the worker index of each run with values (runs_of's order); a benchmark
    whose runs do not all say (files of earlier versions) is left out."""
    out = {}
    for b in suite.get_benchmarks():
        ids = [r.get_metadata().get("worker") for r in b.get_runs() if r.values]
        if ids and all(isinstance(i, int) for i in ids):
            out[b.get_name()] = [int(i) for i in ids]
    return out


def gc_modes_of(suite: pyperf.BenchmarkSuite) -> dict[str, str]:
    """The GC mode each benchmark was measured under (pyperf metadata `gc_mode`)."""
    out = {}
    for b in suite.get_benchmarks():
        mode = b.get_metadata().get("gc_mode")
        if isinstance(mode, str):
            out[b.get_name()] = mode
    return out
