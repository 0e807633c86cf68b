"""The memory regime a scheduler iteration is timed in, set untimed right before it.

What a state lookup costs depends mostly on where its memory is (docs/LOOKUP.md): a
WeakKeyDictionary get over requests whose lines sit in the core's caches costs a fraction of
one whose lines come from DRAM. A scheduler iteration timed after other schedulers' work lands
somewhere between the two, and where depends on how many schedulers share the heap and on what
else the machine runs (two runs of the same code read 38-49 us and 90-124 us for pr652's net
decode cost). So each step figure is taken in a declared regime:

    warm   right before the timed iteration, the scheduler's live requests and their state are
           read once (every attribute of every request, each state looked up without creating):
           their memory is in cache, as after the real scheduler's own passes over the batch
           (prepare_for_decode, result processing and output streaming each visit every request
           of the batch every iteration: bench/core/hotpath.py)
    cold   right before the timed iteration, a buffer is read (CacheSweep), as large as this
           machine needs for a larger one to slow the decode scan no further
           (bench.measure.sweep_probe): the requests' memory is evicted, as after other work
           (the forward's launch work, other processes on the same socket) ran between
           iterations

Both are set untimed and per scheduler, so the regime does not depend on how many schedulers
are interleaved or what else runs on the machine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from bench.base.cpucache import sweep_env_mb
from bench.config.runconfig import STEP_REGIMES as REGIMES

# The sweep when nothing sized it: 64 MiB. `bench run` sizes it from a probe of this machine
# (bench.measure.sweep_probe) and passes it in the configuration; this default is for a worker
# or a tool run without one.
DEFAULT_SWEEP_BYTES = 64 << 20


def sweep_bytes(configured_mb: int = 0) -> int:
    """The sweep's size: as configured (MiB: the run's probe of the machine, or a --config
    file's cold_sweep_mb), else
    the machine's (bench.base.cpucache.SWEEP_ENV), else DEFAULT_SWEEP_BYTES. Never the
    last-level cache the kernel reports: on a VM that is the host's (480 MiB on this project's
    machine, whose scan stops slowing past a 256 MiB sweep), and the run's length followed it."""
    if configured_mb > 0:
        return configured_mb << 20
    machine_mb = sweep_env_mb()
    if machine_mb:
        return machine_mb << 20
    return DEFAULT_SWEEP_BYTES


# Bytes between the loads of a sweep: one per cache line.
CACHE_LINE = 64


class CacheSweep:
    """Reads one byte of every cache line of a buffer larger than the last-level cache, with
    ordinary loads (a strided slice): each line comes through the caches and pushes an earlier
    one out. (memset and memcpy cannot do it: for buffers this large glibc uses non-temporal
    stores, which bypass the caches; a 64 MiB memset before the scan left pr652's decode scan
    at 34.5 µs against 32.7 warm here, the strided read at 66.3.)"""

    def __init__(self, size: int) -> None:
        self.size = size
        self._buf = bytearray(size)

    def __call__(self) -> None:
        self._buf[::CACHE_LINE]


def touch_requests(reqs: Iterable[Any], peek: Callable[[Any], Any], fields: Sequence[str]) -> None:
    """The warm regime's read: every attribute of every request, and each one's state looked up
    without creating (its fields read)."""
    for req in reqs:
        for _value in vars(req).values():
            pass
        state = peek(req)
        if state is not None:
            for f in fields:
                getattr(state, f, None)


def warm_hook(scheduler: Any) -> Callable[[], None]:
    """Read the scheduler's live requests and their state once (untimed)."""

    peek = scheduler.strategy.peek
    fields = scheduler.strategy.fields

    def touch() -> None:
        touch_requests((t.req for t in scheduler.live_tracked()), peek, fields)

    return touch


def prepare_hook(regime: str, scheduler: Any, sweep: CacheSweep | None) -> Callable[[], None]:
    """What runs right before each timed iteration of `scheduler` in `regime`."""
    if regime == "warm":
        return warm_hook(scheduler)
    if regime == "cold":
        if sweep is None:
            raise ValueError("the cold regime needs a CacheSweep")
        return sweep
    raise ValueError(f"unknown step regime {regime!r}; choose from {', '.join(REGIMES)}")
