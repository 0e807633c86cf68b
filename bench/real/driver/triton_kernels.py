"""Torch versions of the Triton kernels SGLang's speculative path launches on its own (the spec
v2 overlap loop's, and the EAGLE path's before its CPU ops existed), served by
bench.real.driver.triton_launch. Each takes the launch grid and the kernel's arguments by the
kernel's parameter names, and writes its outputs in place as the kernel does; its semantics are
read from the revision's Triton source, cited per kernel as file:line at a commit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

KERNELS: dict[str, Callable[..., Any]] = {}


def _rows(t: Any, width: int) -> Any:
    """A buffer as rows of `width` elements (the kernels address it row-major)."""
    return t.view(-1, int(width))


def gather_rows(grid: tuple[int, ...], **a: Any) -> None:
    """_gather_rows_kernel (python/sglang/kernels/ops/speculative/gather_spec_extras.py:10-45
    at sgl-project/sglang d55f1c28e2, the same in sglang 0.5.23): row i of each destination is
    row idx[i] of its source, for three buffer pairs and a fourth where HAS3."""
    idx = a["idx_ptr"].view(-1).to(torch.int64)[: grid[0]]
    pairs = [("s0", "d0", "n0"), ("s1", "d1", "n1"), ("s2", "d2", "n2")]
    if a.get("HAS3"):
        pairs.append(("s3", "d3", "n3"))
    for s, d, n in pairs:
        _rows(a[d], a[n])[: idx.shape[0]] = _rows(a[s], a[n])[idx]


KERNELS["_gather_rows_kernel"] = gather_rows
