"""The row pool's free list: sorted disjoint intervals under a lock, in plain Python.

Pure Python on purpose (no torch): it mirrors the real pool's free list (PDHiddenRowPool,
python/sglang/srt/disaggregation/utils.py:245-300 at bytedance-iaas/sglang c96e68b62b: sorted
(start, end) intervals under a threading.Lock), where the real allocator's CPU cost lives, and the instruction-count gate runs it under callgrind, where importing torch
alone costs a minute.
"""

from __future__ import annotations

import threading


class IntervalAllocator:
    """Free rows as a sorted list of disjoint half-open (start, end) intervals, under a lock."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self._free: list[tuple[int, int]] = [(0, rows)] if rows > 0 else []
        self._lock = threading.Lock()

    def free_rows(self) -> int:
        return sum(end - start for start, end in self._free)

    def alloc(self, n: int) -> list[int] | None:
        """First-fit contiguous run of n rows, else the lowest free rows; None if too few."""
        if n <= 0:
            return []
        with self._lock:
            for i, (start, end) in enumerate(self._free):
                if end - start >= n:
                    if end - start == n:
                        del self._free[i]
                    else:
                        self._free[i] = (start + n, end)
                    return list(range(start, start + n))
            if self.free_rows() < n:
                return None
            rows: list[int] = []
            while len(rows) < n:
                start, end = self._free[0]
                take = min(end - start, n - len(rows))
                rows.extend(range(start, start + take))
                if start + take == end:
                    del self._free[0]
                else:
                    self._free[0] = (start + take, end)
            return rows

    def free(self, indices: list[int]) -> None:
        """Return rows; double frees are ignored; adjacent intervals are merged."""
        if not indices:
            return
        with self._lock:
            ordered = sorted(indices)
            runs: list[tuple[int, int]] = []
            if ordered[-1] - ordered[0] + 1 == len(ordered) and len(set(ordered)) == len(ordered):
                # one contiguous run, as alloc gives them (the rows a request is given): no
                # Python loop over its rows (a loop per row was 10 s of a 58 s gc suite, py-spy,
                # 2026-12-06, in the transfer worker's untimed frees)
                runs.append((ordered[0], ordered[-1] + 1))
                ordered = []
            for r in ordered:
                if runs and r < runs[-1][1]:
                    continue  # duplicate within this call
                if runs and r == runs[-1][1]:
                    runs[-1] = (runs[-1][0], r + 1)
                else:
                    runs.append((r, r + 1))
            # union with the free list: overlaps (double frees) collapse, neighbours merge
            merged: list[tuple[int, int]] = []
            for start, end in sorted(self._free + runs):
                if merged and start <= merged[-1][1]:
                    if end > merged[-1][1]:
                        merged[-1] = (merged[-1][0], end)
                else:
                    merged.append((start, end))
            self._free = merged


def is_contiguous(indices: list[int]) -> bool:
    return bool(indices) and indices[-1] - indices[0] + 1 == len(indices)
