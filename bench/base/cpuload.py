"""What the rest of the machine did while a round was measured: the CPU time other processes
took, read from the kernel's counters.

A round's figure is only as good as the machine was quiet while it was taken: on a shared
machine another process on the other core evicts the shared cache and competes for memory
bandwidth, and on a VM the hypervisor can take the CPU away (steal). pyperf records the load and
the CPU's state in its metadata and warns when a result may be unstable; here every round of a
worker is metered:

    others_cores   CPU time every other process took during the round (all CPUs' busy time in
                   /proc/stat less this process's own CPU time), per second of the round's wall
                   time: 0.0 on a quiet machine, 1.0 when another process kept one core busy
    steal_cores    the same for the time the hypervisor gave to other guests (/proc/stat steal)

A round is *loaded* when others_cores + steal_cores reaches LOADED_CORES. /proc/stat counts in
clock ticks (USER_HZ, 100 per second on Linux): a round shorter than MIN_METERED_S cannot tell a
quarter of a core from a rounding error and is left unjudged (loaded=False, metered=False).
Where /proc/stat cannot be read (not Linux), nothing is metered.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

from bench.base.timing import cpu_s, now_ns

PROC_STAT = Path("/proc/stat")
# Others' CPU, in cores, from which a round counts as measured under load: a project choice,
# well above what an idle machine reads (kernel threads, the parent orchestrator's progress
# lines) and well below one busy core (docs/REGIMES.md, "The machine's other load").
LOADED_CORES = 0.25
# The shortest round the tick counters can judge: 1 tick (10 ms) of error per CPU is 0.05 cores
# of a 0.4 s round on 2 CPUs.
MIN_METERED_S = 0.4


def _ticks_per_s() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):
        return 100


TICKS_PER_S = _ticks_per_s()


@dataclass(frozen=True)
class CpuTimes:
    """The machine's busy and steal time (seconds, all CPUs), this process's CPU time, and a
    monotonic timestamp, at one instant."""

    busy_s: float
    steal_s: float
    own_s: float
    at_ns: int


def _children_s() -> float:
    """The CPU time of this process's children that have ended and been waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def read_cpu_times(children: bool = False) -> CpuTimes | None:
    """Now, or None where /proc/stat is missing or unreadable. `children`: this process's own
    time counts its waited-for children's too (a real-mode round's driver processes are the
    round's own work, not the machine's other load)."""
    try:
        first = PROC_STAT.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not first or first[0] != "cpu" or len(first) < 9:
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in first[1:9])
    busy = user + nice + system + irq + softirq
    return CpuTimes(
        busy_s=busy / TICKS_PER_S,
        steal_s=steal / TICKS_PER_S,
        own_s=cpu_s() + (_children_s() if children else 0.0),
        at_ns=now_ns(),
    )


@dataclass(frozen=True)
class RoundLoad:
    """What other processes took during one round."""

    wall_s: float
    others_cores: float
    steal_cores: float
    metered: bool  # long enough to judge (MIN_METERED_S) and /proc/stat was readable

    @property
    def cores(self) -> float:
        return self.others_cores + self.steal_cores

    @property
    def loaded(self) -> bool:
        return self.metered and self.cores >= LOADED_CORES


def load_between(start: CpuTimes | None, end: CpuTimes | None) -> RoundLoad:
    """Others' CPU between two readings (unmetered when either is missing or too close)."""
    if start is None or end is None:
        return RoundLoad(0.0, 0.0, 0.0, metered=False)
    wall = (end.at_ns - start.at_ns) / 1e9
    if wall <= 0:
        return RoundLoad(0.0, 0.0, 0.0, metered=False)
    others = max(0.0, (end.busy_s - start.busy_s) - (end.own_s - start.own_s))
    steal = max(0.0, end.steal_s - start.steal_s)
    return RoundLoad(wall, others / wall, steal / wall, metered=wall >= MIN_METERED_S)


class LoadMeter:
    """start() before a round, stop() after it: the round's RoundLoad."""

    def __init__(self, children: bool = False) -> None:
        self._start: CpuTimes | None = None
        self.children = children  # stop() after the round's child processes were waited for

    def start(self) -> None:
        self._start = read_cpu_times(self.children)

    def stop(self) -> RoundLoad:
        return load_between(self._start, read_cpu_times(self.children))
