"""Where each function that touches a state group is placed on the modelled hot path, and how
much of the group's code the replay therefore covers.

Per function (bench.target.accesses), at one revision:

    table       its row in the frequency table (the revision's measured map, else the typed
                rows of bench.core.hotpath), by its full name
    moved       no row by its name, but exactly one typed row of the same method name whose
                own class does not define it at this revision (a class renamed, or its methods
                moved into a mixin: upstream's SchedulerOutputProcessorMixin before #25637)
    cold        in bench.core.hotpath.COLD: read and judged off the hot path (aborts,
                retraction, flushes); or, where real mode measured the revision's map, never
                called in its measured loop (NPU allocators, paths no CPU scheduler runs);
                not replayed, not held against the coverage
    unknown     in neither table ("not in the table"): not replayed, and counted against it

The coverage is the share of the group's static field accesses in functions that are not cold
that the replay places (table or moved). A gate refuses one below a stated share
(`--min-replayed`), naming the functions it could not place.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from bench.core import hotpath
from bench.core.hotpath import HotFunction
from bench.target.accesses import FunctionAccesses
from bench.target.tree import SourceTree, skip_file

# The share of a group's static accesses (outside known-cold functions) a gate must replay at
# each revision unless told otherwise: below it, most of what the change touches is not
# measured. A choice of this project, stated in gate.md and docs/TARGET.md.
MIN_REPLAYED = 0.5

STATUSES = ("table", "moved", "cold", "unknown")


@dataclass(frozen=True)
class Placement:
    function: FunctionAccesses
    status: str  # STATUSES
    row: HotFunction | None = None  # the row it is replayed with (table, moved)
    note: str = ""  # moved: "as Class.method"; cold: why; unknown: what was tried

    @property
    def replayed(self) -> bool:
        return self.row is not None

    def words(self) -> str:
        """What a report says about the function beside its accesses."""
        if self.status == "moved":
            return f"as {self.row.name if self.row else '?'} ({self.note})"
        if self.status == "cold":
            return f"known cold: {self.note}"
        if self.status == "unknown":
            return "not in the table" + (f" ({self.note})" if self.note else "")
        return ""


def defined_names(tree: SourceTree, names: Iterable[str]) -> set[str]:
    """Which of `names` (Class.method, or a module function) the tree defines: the method in
    that class's own body (not inherited), the function at a module's top level."""
    wanted = sorted(set(names))
    classes = {n.split(".")[0] for n in wanted if "." in n}
    functions = {n for n in wanted if "." not in n}
    needles = [f"class {c}" for c in sorted(classes)] + [f"def {f}(" for f in sorted(functions)]
    found: set[str] = set()
    if not needles:
        return found
    for rel in tree.grep_any(*needles):
        if skip_file(rel):
            continue
        try:
            module = ast.parse(tree.read(rel), filename=rel)
        except SyntaxError:
            continue
        for node in module.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name in functions:
                    found.add(node.name)
            elif isinstance(node, ast.ClassDef) and node.name in classes:
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        found.add(f"{node.name}.{item.name}")
    return found & set(wanted)


@dataclass(frozen=True)
class Placer:
    """How one revision's functions are placed."""

    find: Callable[[str], HotFunction | None]  # the frequency table's lookup (hotpath.resolver)
    table: str  # which table (words)
    absent: frozenset[str]  # typed rows whose function the revision does not define
    short: str  # the revision, for the words
    seen: frozenset[str] = frozenset()  # called in the measured loop (empty: no measured map)
    seen_in: str = ""  # the measured map's preset, for the words

    @classmethod
    def at(cls, tree: SourceTree | None, commit: str | None) -> Placer:
        m = hotpath.measured(commit)  # read once: the lookup and what the loop called
        find, table = hotpath.resolver(commit, m)
        absent: frozenset[str] = frozenset()
        if tree is not None:
            typed = [h.name for h in hotpath.HOT_PATH]
            absent = frozenset(set(typed) - defined_names(tree, typed))
        seen = frozenset(m.seen) if m is not None else frozenset()
        return cls(
            find,
            table,
            absent,
            tree.short if tree is not None else "",
            seen,
            m.preset if m is not None else "",
        )

    def place(self, f: FunctionAccesses) -> Placement:
        row = self.find(f.function)
        if row is not None:
            return Placement(f, "table", row)
        known = hotpath.cold(f.function)
        if known is not None:
            return Placement(f, "cold", None, known.why)
        if self.seen and f.function not in self.seen:
            return Placement(f, "cold", None, f"never called in the measured loop ({self.seen_in})")
        if "." not in f.function:
            return Placement(f, "unknown")
        cls_name, method = f.function.rsplit(".", 1)
        if "." in cls_name:  # a function nested in a method: the table has no such rows
            return Placement(f, "unknown", None, "a nested function")
        same = [h for h in hotpath.typed_with_method(method) if h.name in self.absent]
        if len(same) == 1:
            where = f"{same[0].name} is not defined at {self.short}" if self.short else ""
            return Placement(f, "moved", same[0], where or "moved")
        if len(same) > 1:
            names = ", ".join(h.name for h in same)
            return Placement(f, "unknown", None, f"{method} could be any of {names}")
        return Placement(f, "unknown")


@dataclass(frozen=True)
class Coverage:
    """What share of a group's static accesses the replay places at one revision."""

    placements: tuple[Placement, ...]
    absent_rows: tuple[str, ...]  # the typed rows not defined at the revision

    def accesses(self, *statuses: str) -> int:
        return sum(p.function.count() for p in self.placements if p.status in statuses)

    @property
    def share(self) -> float:
        """Placed accesses over all not known to be cold (1.0 when there are none to place)."""
        total = self.accesses("table", "moved", "unknown")
        return self.accesses("table", "moved") / total if total else 1.0

    @property
    def empty(self) -> bool:
        return not any(p.replayed for p in self.placements)

    def of(self, status: str) -> list[Placement]:
        return [p for p in self.placements if p.status == status]

    def to_json(self) -> dict[str, Any]:
        def one(p: Placement) -> dict[str, Any]:
            return {
                "function": p.function.function,
                "where": p.function.where,
                "accesses": p.function.count(),
                **({"as": p.row.name} if p.status == "moved" and p.row else {}),
                **({"note": p.note} if p.note else {}),
            }

        return {
            "share": self.share,
            "accesses": {s: self.accesses(s) for s in STATUSES},
            **{s: [one(p) for p in self.of(s)] for s in STATUSES},
            "absent_rows": list(self.absent_rows),
        }


def refusal(label: str, group: str, coverage: Coverage, min_share: float) -> str | None:
    """Why a gate or run must not measure this revision's group (None: it may)."""
    unplaced = coverage.of("unknown")
    names = ", ".join(f"{p.function.function} ({p.function.where})" for p in unplaced[:6])
    more = f" and {len(unplaced) - 6} more" if len(unplaced) > 6 else ""
    if coverage.empty:
        return (
            f"{label}: group {group!r} has no access the replay can place, so a measurement "
            "would compare two request constructions and nothing else"
            + (f"; not in the table: {names}{more}" if unplaced else "")
        )
    if coverage.share < min_share:
        measured = any("measured loop" in p.note for p in coverage.of("cold"))
        how = (
            ""
            if measured
            else "; with the revision's measured map (`python -m bench real hotpath "
            "PATH@REV`), functions its real loop never calls are taken as cold"
        )
        return (
            f"{label}: the replay places {coverage.share:.0%} of the accesses to group "
            f"{group!r} (below --min-replayed {min_share:g}); not in the table: {names}{more}" + how
        )
    return None
