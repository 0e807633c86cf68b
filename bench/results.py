"""Run folders, atomic writes, metadata, and pyperf JSON in and out.

A run folder under reports/ is named `<UTC timestamp>-<git commit>[-<n>]` and holds:
    manifest.json           metadata, parameters, and the status of every suite
    <suite>.json            a pyperf BenchmarkSuite (opens with `python -m pyperf stats`)
    <suite>.extra.json      what pyperf cannot hold: per-step percentiles, GC counts, fits
Every file is written to a unique temporary name in the same folder and renamed into place, so
a reader never sees half a file and an interrupted run keeps every suite already finished.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyperf
import torch

from bench.errors import DataError, UsageError
from strategies import Strategy

SCHEMA = "reqstate-bench/1"
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REPORTS_DIR = ROOT / "reports"


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write text or bytes to path so that readers see the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot be read ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


def git_commit(cwd: Path = ROOT) -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
        commit = out.stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "nogit"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device: torch.device) -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "torch": torch.__version__,
        "pyperf": pyperf.__version__,
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "device": str(device),
        "git_commit": git_commit(),
    }
    if device.type == "cuda":
        env["device_name"] = torch.cuda.get_device_name(device)
    return env


def strategy_metadata(strategies: list[Strategy]) -> dict[str, dict[str, Any]]:
    return {
        s.name: {
            "description": s.description,
            "source": s.source_path,
            "source_sha256": s.source_sha256,
            "external": s.external,
            "thread_safe_create": s.thread_safe_create,
        }
        for s in strategies
    }


def new_run_dir(base: Path) -> Path:
    """A fresh, uniquely named run folder (mkdir is atomic: concurrent runs never share one)."""
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{base}: cannot create output folder ({exc.strerror})") from None
    if not os.access(base, os.W_OK):
        raise UsageError(f"{base}: output folder is not writable")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = f"{stamp}-{git_commit()}"
    for n in range(1000):
        path = base / (name if n == 0 else f"{name}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise UsageError(f"{base}: could not create a unique run folder")


def check_free_space(path: Path, need_bytes: int = 16 * 2**20) -> None:
    """Fail before measuring, not after, when results could not be written."""
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    if free < need_bytes:
        raise UsageError(f"{path}: only {free // 2**20} MiB free; results need ~16 MiB")
    probe = path / f".probe-{os.getpid()}"
    try:
        probe.write_text("x")
    except OSError as exc:
        raise UsageError(f"{path}: cannot write results ({exc.strerror})") from None
    finally:
        probe.unlink(missing_ok=True)


@dataclass(frozen=True)
class BenchValues:
    """What a worker measured for one benchmark in one process (one pyperf run)."""

    name: str
    values: list[float]
    warmups: list[float]
    loops: int
    unit: str = "second"


def to_pyperf_suite(
    runs: Mapping[str, list[BenchValues]], metadata: Mapping[str, Any]
) -> pyperf.BenchmarkSuite:
    """One pyperf Benchmark per name; one pyperf Run per worker process."""
    benchmarks = []
    for name, per_worker in runs.items():
        pruns = []
        for bv in per_worker:
            md: dict[str, Any] = {
                "name": name,
                "loops": bv.loops,
                "unit": bv.unit,
                "python_version": metadata.get("python", sys.version.split()[0]),
            }
            for key in ("cpu_count", "platform", "device", "git_commit", "gc_mode"):
                if metadata.get(key) is not None:
                    md[key] = metadata[key]
            warmups = [(bv.loops, w) for w in bv.warmups] or None
            pruns.append(
                pyperf.Run(bv.values, warmups=warmups, metadata=md, collect_metadata=False)
            )
        benchmarks.append(pyperf.Benchmark(pruns))
    return pyperf.BenchmarkSuite(benchmarks)


def dump_pyperf(suite: pyperf.BenchmarkSuite, path: Path) -> None:
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
