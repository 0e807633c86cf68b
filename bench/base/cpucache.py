"""The CPU's last-level cache as the kernel reports it, which a run's environment records,
since two machines with the same CPU name can differ here (a VM's host decides); and what
describes a machine, which keys what is measured of it once (bench.measure.sweep_probe: the cold
regimes size their eviction from a measurement, not from this report)."""

from __future__ import annotations

import hashlib
import os
import platform
from pathlib import Path

from bench.base.errors import UsageError

CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# The cold sweep's size (MiB) where a run's configuration leaves it at 0, for a whole machine:
# the project's tests set it (conftest.py), so their time does not depend on the LLC of the
# host they land on. A run records it in its environment when it is set.
SWEEP_ENV = "REQSTATE_BENCH_COLD_SWEEP_MB"


def llc_bytes() -> int | None:
    """The largest cache level's size (None when the kernel does not say)."""
    best = None
    for index in sorted(CACHE_DIR.glob("index*")):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        num = int("".join(c for c in text if c.isdigit()) or 0)
        size = num * UNITS.get(text[-1:].upper(), 1)
        best = size if best is None else max(best, size)
    return best


def sweep_env_mb() -> int | None:
    """SWEEP_ENV's value (None when unset); anything but a positive integer is a usage error."""
    raw = os.environ.get(SWEEP_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) <= 0:
        raise UsageError(f"{SWEEP_ENV} must be a positive number of MiB, got {raw!r}")
    return int(raw)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_key() -> str:
    """A short name for this machine: host, CPU model, cores and the cache reported; what it
    has measured of itself once is kept under it."""
    text = "|".join(
        [platform.node(), cpu_model(), str(os.cpu_count()), str(llc_bytes()), platform.machine()]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]
