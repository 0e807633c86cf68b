"""The CPU's last-level cache as the kernel reports it: the cold regimes size their eviction
from it (bench.measure.regime.sweep_bytes) and a run's environment records it, since two
machines with the same CPU name can differ here (a VM's host decides)."""

from __future__ import annotations

from pathlib import Path

CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


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
