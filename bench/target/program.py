"""A group's access program at a revision: its functions' accesses (bench.target.accesses)
joined with how often the real scheduler runs them (bench.core.hotpath)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from bench.core import hotpath
from bench.core.groupsites import GroupProgram, SiteProgram
from bench.target.accesses import FunctionAccesses


@dataclass(frozen=True)
class Program:
    program: GroupProgram
    on_path: tuple[FunctionAccesses, ...]  # the functions replayed, in program order
    off_path: tuple[FunctionAccesses, ...]  # touching the group, not on the modelled hot path
    table: str = ""  # which frequency table: the revision's measured one, or the typed one


def build(group: str, functions: list[FunctionAccesses], *, commit: str | None = None) -> Program:
    """The functions' accesses joined with their frequencies: the revision's measured map
    where real mode has counted one (bench.core.hotpath.resolver), else the typed table."""
    find, table = hotpath.resolver(commit)
    sites: list[SiteProgram] = []
    on: list[FunctionAccesses] = []
    off: list[FunctionAccesses] = []
    for f in functions:
        row = find(f.function)
        if row is None or not any(a.field or a.op in ("reach", "bind") for a in f.accesses):
            off.append(f)
            continue
        on.append(f)
        accesses = f.accesses
        if row.condition:
            # the whole function runs under a condition: its accesses are branch-guarded
            accesses = tuple(replace(a, guard=a.guard or row.condition) for a in accesses)
        by_frequency: dict[str, list[str]] = {}
        for phase in row.phases:
            by_frequency.setdefault(row.frequency_in(phase), []).append(phase)
        for frequency, phases in by_frequency.items():
            sites.append(
                SiteProgram(
                    function=f.function,
                    where=f.where,
                    frequency=frequency,
                    phases=tuple(phases),
                    accesses=accesses,
                    source=row.source,
                )
            )
    return Program(GroupProgram(group, tuple(sites)), tuple(on), tuple(off), table)
