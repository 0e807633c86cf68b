"""A group's access program at a revision: its functions' accesses (bench.target.accesses)
joined with how often the real scheduler runs them (bench.core.hotpath), each function placed
by bench.target.placement."""

from __future__ import annotations

from dataclasses import dataclass, replace

from bench.core.groupsites import GroupProgram, SiteProgram
from bench.target.accesses import FunctionAccesses
from bench.target.placement import Coverage, Placer
from bench.target.tree import SourceTree


@dataclass(frozen=True)
class Program:
    program: GroupProgram
    on_path: tuple[FunctionAccesses, ...]  # the functions replayed, in program order
    off_path: tuple[FunctionAccesses, ...]  # touching the group, not replayed (cold, unknown)
    table: str = ""  # which frequency table: the revision's measured one, or the typed one
    coverage: Coverage | None = None  # each function's placement, the share replayed

    def words(self, function: str) -> str:
        """What the placement says about one function ("" when replayed by its own name)."""
        for p in self.coverage.placements if self.coverage else ():
            if p.function.function == function:
                return p.words()
        return ""


def build(
    group: str,
    functions: list[FunctionAccesses],
    *,
    commit: str | None = None,
    tree: SourceTree | None = None,
) -> Program:
    """The functions' accesses joined with their frequencies: the revision's measured map
    where real mode has counted one (bench.core.hotpath.resolver), else the typed table; with
    `tree`, a typed row whose function the revision no longer defines places a method of the
    same name (bench.target.placement)."""
    placer = Placer.at(tree, commit)
    sites: list[SiteProgram] = []
    on: list[FunctionAccesses] = []
    off: list[FunctionAccesses] = []
    placements = []
    for f in functions:
        p = placer.place(f)
        placements.append(p)
        row = p.row
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
        source = row.source + (f"; placed {p.words()}" if p.status == "moved" else "")
        for frequency, phases in by_frequency.items():
            sites.append(
                SiteProgram(
                    function=f.function,
                    where=f.where,
                    frequency=frequency,
                    phases=tuple(phases),
                    accesses=accesses,
                    source=source,
                )
            )
    coverage = Coverage(tuple(placements), tuple(sorted(placer.absent)))
    return Program(GroupProgram(group, tuple(sites)), tuple(on), tuple(off), placer.table, coverage)
