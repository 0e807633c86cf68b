"""The PD-hidden row pool: one device tensor and a Python interval allocator, as SGLang's
PDHiddenRowPool (python/sglang/srt/disaggregation/utils.py:245 at bytedance-iaas/sglang c96e68b62b).

The allocator and the index lists stay in Python on purpose: that is where the scheduler's CPU
cost lives in the real code. Rows are handed out as `list(range(...))` like the original.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from bench.core.allocator import IntervalAllocator, is_contiguous

__all__ = [
    "IntervalAllocator",
    "PoolShape",
    "RowPool",
    "check_fits",
    "default_shape",
    "is_contiguous",
]

# Production shape on a GPU: 3 capture layers x a DeepSeek-class hidden size of 7168 (hidden
# width = layers x model hidden size, dspark_disaggregation.py:104 at c96e68b62b), bf16; pool rows
# default to max(max_prefill_buffer_tokens, max_prefill_tokens = 16384) (same file, 105-118).
GPU_HIDDEN_WIDTH = 3 * 7168
GPU_DTYPE = torch.bfloat16
DEFAULT_POOL_ROWS = 16384
# On the CPU the row copy runs synchronously on the very thread being measured. A narrow row
# (3 layers x 16) keeps that stand-in for device work from drowning the host-side scheduling
# cost under comparison; the allocator and index-list work depends on rows, not width, so it
# is unchanged.
CPU_HIDDEN_WIDTH = 3 * 16
CPU_DTYPE = torch.float32
# Refuse a pool that would take more than this share of the free memory it lives in.
MAX_MEMORY_FRACTION = 0.5


@dataclass(frozen=True, kw_only=True)
class PoolShape:
    rows: int
    width: int
    dtype: torch.dtype

    @property
    def nbytes(self) -> int:
        return self.rows * self.width * torch.empty((), dtype=self.dtype).element_size()


def default_shape(
    device: torch.device, *, chunked_prefill_size: int, pool_rows: int | None = None
) -> PoolShape:
    """The pool for this device; `pool_rows` overrides the row count (the width stays)."""
    rows = pool_rows if pool_rows is not None else max(chunked_prefill_size, DEFAULT_POOL_ROWS)
    if device.type == "cuda":
        return PoolShape(rows=rows, width=GPU_HIDDEN_WIDTH, dtype=GPU_DTYPE)
    return PoolShape(rows=rows, width=CPU_HIDDEN_WIDTH, dtype=CPU_DTYPE)


def available_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_fits(shape: PoolShape, device: torch.device, *, copies: int = 1) -> None:
    """Raise ValueError when `copies` pools of this shape would not fit in memory."""
    if shape.rows <= 0 or shape.width <= 0:
        raise ValueError(f"pool rows and width must be positive, got {shape.rows}x{shape.width}")
    need = shape.nbytes * copies
    have = available_bytes(device)
    if need > have * MAX_MEMORY_FRACTION:
        raise ValueError(
            f"row pool of {shape.rows} x {shape.width} {shape.dtype} needs {need / 2**30:.1f} GiB "
            f"on {device.type}; only {have / 2**30:.1f} GiB free (limit "
            f"{MAX_MEMORY_FRACTION:.0%}): lower it with --set pool_rows=N"
        )


class RowPool:
    """A (rows x width) tensor on the device, written by row indices."""

    def __init__(self, shape: PoolShape, device: torch.device) -> None:
        self.shape = shape
        self.device = device
        self.buffer = torch.zeros((shape.rows, shape.width), dtype=shape.dtype, device=device)

    def write(self, indices: list[int], hidden: torch.Tensor) -> None:
        """Copy hidden (len(indices) x width) into the given rows."""
        if is_contiguous(indices):
            self.buffer[indices[0] : indices[0] + len(indices)].copy_(hidden, non_blocking=True)
        else:
            index = torch.tensor(indices, dtype=torch.long).to(self.device, non_blocking=True)
            self.buffer.index_copy_(0, index, hidden)

    def read_view(self, indices: list[int]) -> torch.Tensor:
        """Zero-copy view when the rows are contiguous, else a gathered copy."""
        if is_contiguous(indices):
            return self.buffer[indices[0] : indices[0] + len(indices)]
        index = torch.tensor(indices, dtype=torch.long).to(self.device, non_blocking=True)
        return self.buffer.index_select(0, index)
