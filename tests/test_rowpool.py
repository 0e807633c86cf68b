"""Row pool: the interval allocator and the device writes (CPU here)."""

from __future__ import annotations

import random

import pytest
import torch

from bench.core.rowpool import (
    IntervalAllocator,
    PoolShape,
    RowPool,
    check_fits,
    default_shape,
    is_contiguous,
)


def test_first_fit_contiguous_then_lowest_rows() -> None:
    a = IntervalAllocator(10)
    x = a.alloc(4)
    y = a.alloc(3)
    assert x == [0, 1, 2, 3]
    assert y == [4, 5, 6]
    a.free(x)
    # 4 free at 0..3 and 3 at 7..9: a run of 5 does not fit anywhere, so lowest rows are used
    assert a.alloc(5) == [0, 1, 2, 3, 7]
    assert a.free_rows() == 2
    assert a.alloc(3) is None


def test_double_free_is_ignored_and_neighbours_merge() -> None:
    a = IntervalAllocator(8)
    x = a.alloc(8)
    assert x is not None
    a.free(x[2:5])
    a.free(x[2:5])
    a.free([3, 3, 4])
    assert a.free_rows() == 3
    a.free(x)
    assert a._free == [(0, 8)]


def test_random_churn_never_hands_out_a_row_twice() -> None:
    rng = random.Random(1)
    a = IntervalAllocator(500)
    held: list[list[int]] = []
    for _ in range(3000):
        if held and rng.random() < 0.5:
            a.free(held.pop(rng.randrange(len(held))))
        else:
            rows = a.alloc(rng.randrange(1, 60))
            if rows is not None:
                held.append(rows)
        in_use = [r for rows in held for r in rows]
        assert len(in_use) == len(set(in_use))
        assert a.free_rows() == 500 - len(in_use)
    for rows in held:
        a.free(rows)
    assert a._free == [(0, 500)]


def test_zero_rows() -> None:
    assert IntervalAllocator(4).alloc(0) == []


def test_pool_writes_contiguous_and_scattered_rows() -> None:
    pool = RowPool(PoolShape(rows=16, width=3, dtype=torch.float32), torch.device("cpu"))
    pool.write([2, 3, 4], torch.ones(3, 3))
    pool.write([7, 10], torch.full((2, 3), 2.0))
    assert pool.buffer[2:5].eq(1).all()
    assert pool.buffer[[7, 10]].eq(2).all()
    assert pool.buffer[5].eq(0).all()
    view = pool.read_view([2, 3, 4])
    assert view.data_ptr() == pool.buffer[2].data_ptr()  # zero-copy for contiguous rows
    assert pool.read_view([7, 10]).eq(2).all()
    assert is_contiguous([4, 5, 6])
    assert not is_contiguous([4, 6])


def test_defaults_follow_workload_on_gpu_and_stay_small_on_cpu() -> None:
    gpu = default_shape(torch.device("cuda"), chunked_prefill_size=8192)
    assert (gpu.rows, gpu.width, gpu.dtype) == (16384, 3 * 7168, torch.bfloat16)
    assert default_shape(torch.device("cpu"), chunked_prefill_size=32768).rows == 32768
    assert default_shape(torch.device("cpu"), chunked_prefill_size=8192).nbytes < 2**26


def test_pool_too_large_for_memory_is_refused() -> None:
    huge = PoolShape(rows=1 << 40, width=1 << 10, dtype=torch.float32)
    with pytest.raises(ValueError, match="lower it with --set pool_rows=N"):
        check_fits(huge, torch.device("cpu"))
