"""What a --target replay placed at each revision, as markdown (gate.md, the run report and
the PR section): the share of a state group's accesses replayed, and apart from one another
the functions placed by method name, those new since the first revision and not in the
frequency table, those known to be cold, and the table rows a revision does not define
(bench.target.placement writes the mapping each revision's metadata carries)."""

from __future__ import annotations

from typing import Any

from bench.report.text import esc_md

_KEYS = ("table", "moved", "cold", "unknown")
# Table rows not defined at a revision named before "and N more" (the run's JSON has them all).
ABSENT_SHOWN = 20


def _code(text: object) -> str:
    """A code span of a name read from a tree (a backtick in it cannot end the span)."""
    return "`" + str(text).replace("`", "'") + "`"


def _names(items: list[dict[str, Any]]) -> str:
    return ", ".join(f"{_code(f['function'])} ({f['accesses']})" for f in items)


def placement_markdown(sides: list[tuple[str, dict[str, Any] | None]]) -> list[str]:
    """One bullet per revision (label, its placement), "new" meaning absent at the first."""
    present = [(label, p) for label, p in sides if p]
    if not present:
        return []
    first = present[0][1]
    at_first = {f["function"] for key in _KEYS for f in first.get(key, [])}
    out = [
        "What the replay placed (static field accesses of the group, outside known-cold "
        "functions; a function not placed is not replayed):",
        "",
    ]
    for i, (label, p) in enumerate(present):
        acc = p.get("accesses", {})
        placed = acc.get("table", 0) + acc.get("moved", 0)
        out.append(
            f"- {esc_md(label)}: {p.get('share', 0.0):.0%} placed ({placed} of "
            f"{placed + acc.get('unknown', 0)} accesses)"
        )
        moved = p.get("moved") or []
        if moved:
            out.append(
                "  - placed by method name: "
                + ", ".join(f"{_code(f['function'])} as {_code(f.get('as', '?'))}" for f in moved)
            )
        unknown = p.get("unknown") or []
        new = [f for f in unknown if i > 0 and f["function"] not in at_first]
        old = [f for f in unknown if f not in new]
        if new:
            out.append(f"  - new since {esc_md(present[0][0])}, not in the table: {_names(new)}")
        if old:
            out.append(f"  - not in the table: {_names(old)}")
        cold = p.get("cold") or []
        if cold:
            out.append(f"  - known cold: {_names(cold)}")
        absent = p.get("absent_rows") or []
        if absent:
            more = len(absent) - ABSENT_SHOWN
            out.append(
                f"  - table rows not defined at this revision ({len(absent)}): "
                + ", ".join(_code(n) for n in absent[:ABSENT_SHOWN])
                + (f", and {more} more" if more > 0 else "")
            )
    return [*out, ""]
