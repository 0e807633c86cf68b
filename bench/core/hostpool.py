"""A row pool without a device: the allocator is real, the copies are skipped.

Used by the instruction-count gate, which runs the scheduler under callgrind where importing
torch alone costs ~60 s and ~5e9 instructions. Host-side scheduling (allocator, index lists,
state lookups) is exactly what the gate is about; the device copy is not.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class HostShape:
    rows: int
    width: int = 1
    dtype: object = None


class HostPool:
    """Duck-types RowPool for SyntheticScheduler: same shape/device/write, no tensor."""

    device = None

    def __init__(self, rows: int) -> None:
        self.shape = HostShape(rows=rows)

    def write(self, indices: list[int], hidden: object) -> None:
        return None


def host_hidden(chunked_prefill_size: int) -> range:
    """Stand-in for the hidden-state buffer: slicing a range is O(1) and allocates nothing big."""
    return range(chunked_prefill_size)
