"""The one place that knows clocks and device synchronisation.

Host time is `time.perf_counter_ns` (monotonic, the highest resolution Python offers). Device
time on CUDA comes from CUDA events recorded on the current stream; the device is synchronised
only at step boundaries, when a measurement needs the device work to be finished. Nothing else
in the harness calls perf_counter or torch.cuda.synchronize.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported where a device is used: readers of results never need it
    import torch

now_ns: Callable[[], int] = time.perf_counter_ns
wall_s: Callable[[], float] = time.time  # timestamps for humans (ETA, manifest), never timing
cpu_s: Callable[[], float] = time.process_time  # this process's CPU time (bench.base.cpuload)


def resolve_device(name: str) -> torch.device:
    """'auto' -> cuda when available, else cpu. Raises ValueError for a device we cannot use
    (an unknown name before torch is imported: a typo is refused in a blink, not in a second)."""
    if name not in ("auto", "cpu", "cuda") and not name.startswith("cuda:"):
        raise ValueError(f"unknown device {name!r}; choose auto, cpu or cuda")
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda" or name.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ValueError(f"--device {name} asked for, but torch sees no CUDA device")
        return torch.device(name)
    raise AssertionError(name)  # every other name was refused above


def sync(device: torch.device) -> None:
    """Wait until the device has finished queued work (no-op on the CPU)."""
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)


@dataclass
class StepClock:
    """Times one scheduler step: host time always; device time from CUDA events on a GPU.

    Usage: start(); ... host work that enqueues device work ...; host_ns, device_ns = stop().
    On the CPU device_ns is 0: device work runs synchronously on the host and is inside host_ns.
    """

    device: torch.device
    _t0: int = 0
    _events: tuple[Any, Any] | None = None  # (start, end) torch.cuda.Event

    def __post_init__(self) -> None:
        if self.device.type == "cuda":
            import torch

            self._events = (
                torch.cuda.Event(enable_timing=True),
                torch.cuda.Event(enable_timing=True),
            )

    def start(self) -> None:
        if self._events is not None:
            self._events[0].record()
        self._t0 = now_ns()

    def stop(self) -> tuple[int, int]:
        host_ns = now_ns() - self._t0
        if self._events is None:
            return host_ns, 0
        begin, end = self._events
        end.record()
        end.synchronize()  # step boundary: the only place the device is waited for
        return host_ns, int(begin.elapsed_time(end) * 1e6)


def time_loop_ns(func: Callable[[int], object], loops: int) -> int:
    """Host nanoseconds taken by func(loops); func runs the loop itself (pyperf's time_func)."""
    t0 = now_ns()
    func(loops)
    return now_ns() - t0
