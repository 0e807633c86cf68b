"""Marks a sampling profiler sees: while `python -m bench profile --real` samples a driver, the
driver spins in one of these functions for a few sampling periods at each measured boundary,
so that every measured iteration's samples are followed by samples of a mark that names the
iteration's kind, and the first measured iteration is preceded by the start mark
(bench.real.profile.samples splits the samples at them). The spin is CPU work, not a sleep: a
profiler that drops idle threads' samples still sees it. It lies outside every timed iteration
(the boundary's own work is outside both)."""

from __future__ import annotations

from bench.base.timing import now_ns

KIND_OF_MODE = {"DECODE": "decode", "EXTEND": "extend", "MIXED": "extend"}


def _spin(seconds: float) -> None:
    end = now_ns() + int(seconds * 1e9)
    while now_ns() < end:
        pass


START_TIMES = 8  # the start mark spins this many gaps (at least START_MIN_S): py-spy's first
START_MIN_S = 0.1  # samples after it attaches can lag, and a missed start loses the process


def reqstate_measure_start(seconds: float) -> None:
    _spin(max(START_TIMES * seconds, START_MIN_S))


def reqstate_after_decode(seconds: float) -> None:
    _spin(seconds)


def reqstate_after_extend(seconds: float) -> None:
    _spin(seconds)


def reqstate_after_other(seconds: float) -> None:
    _spin(seconds)


AFTER = {
    "decode": reqstate_after_decode,
    "extend": reqstate_after_extend,
    "other": reqstate_after_other,
}


def after(mode: str, seconds: float) -> None:
    """The mark after a measured iteration of forward mode `mode` (idle: no batch)."""
    AFTER[KIND_OF_MODE.get(mode, "other")](seconds)
