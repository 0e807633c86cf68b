"""What a --target replay placed at each revision, for gate.md, the run report (markdown and
report.html) and the PR section: the share of a state group's accesses replayed, and apart
from one another the functions placed by method name, those new since the first revision and
not in the frequency table, those known to be cold, and the table rows a revision does not
define (bench.target.placement writes the mapping each revision's metadata carries)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.report.markup import Html, h, tag
from bench.report.text import esc_md

_KEYS = ("table", "moved", "cold", "unknown")
# Table rows not defined at a revision named before "and N more" (the run's JSON has them all).
ABSENT_SHOWN = 20
INTRO = (
    "What the replay placed (static field accesses of the group, outside known-cold functions; "
    "a function not placed is not replayed):"
)


@dataclass(frozen=True)
class Placed:
    """One revision: its headline, then (what, names) pairs; a name is (code as the tree has
    it, words after it)."""

    label: str
    headline: str
    items: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]


def placed(sides: list[tuple[str, dict[str, Any] | None]]) -> list[Placed]:
    """Per revision (label, its placement), "new" meaning absent at the first."""
    present = [(label, p) for label, p in sides if p]
    if not present:
        return []
    at_first = {f["function"] for key in _KEYS for f in present[0][1].get(key, [])}

    def counted(items: list[dict[str, Any]]) -> tuple[tuple[str, str], ...]:
        return tuple((str(f["function"]), f" ({f['accesses']})") for f in items)

    out = []
    for i, (label, p) in enumerate(present):
        acc = p.get("accesses", {})
        n = acc.get("table", 0) + acc.get("moved", 0)
        headline = f"{p.get('share', 0.0):.0%} placed ({n} of {n + acc.get('unknown', 0)} accesses)"
        unknown = p.get("unknown") or []
        new = [f for f in unknown if i > 0 and f["function"] not in at_first]
        absent = list(p.get("absent_rows") or [])
        more = len(absent) - ABSENT_SHOWN
        items = [
            (
                "placed by method name",
                tuple((f"{f['function']} as {f.get('as', '?')}", "") for f in p.get("moved") or []),
            ),
            (f"new since {present[0][0]}, not in the table", counted(new)),
            ("not in the table", counted([f for f in unknown if f not in new])),
            ("known cold", counted(p.get("cold") or [])),
            (
                f"table rows not defined at this revision ({len(absent)})",
                tuple((str(n), "") for n in absent[:ABSENT_SHOWN])
                + ((("", f"and {more} more"),) if more > 0 else ()),
            ),
        ]
        out.append(Placed(label, headline, tuple((w, names) for w, names in items if names)))
    return out


def _code(text: str) -> str:
    """A code span of a name read from a tree (a backtick in it cannot end the span)."""
    return "`" + text.replace("`", "'") + "`"


def placement_markdown(sides: list[tuple[str, dict[str, Any] | None]]) -> list[str]:

    revisions = placed(sides)
    if not revisions:
        return []
    out = [INTRO, ""]
    for r in revisions:
        out.append(f"- {esc_md(r.label)}: {r.headline}")
        out += [
            f"  - {esc_md(what)}: "
            + ", ".join((_code(n) if n else "") + esc_md(after) for n, after in names)
            for what, names in r.items
        ]
    return [*out, ""]


def placement_html(sides: list[tuple[str, dict[str, Any] | None]]) -> list[Html]:
    revisions = placed(sides)
    if not revisions:
        return []
    rows = [
        tag(
            "li",
            tag("code", r.label),
            f": {r.headline}",
            tag(
                "ul",
                *(
                    tag(
                        "li",
                        f"{what}: ",
                        *_joined(
                            [Html((tag("code", n) if n else "") + h(after)) for n, after in names]
                        ),
                    )
                    for what, names in r.items
                ),
            )
            if r.items
            else "",
        )
        for r in revisions
    ]
    return [tag("h3", "What the replay placed"), tag("p", INTRO, class_="note"), tag("ul", *rows)]


def _joined(parts: list[Html]) -> list[Any]:
    out: list[Any] = []
    for i, p in enumerate(parts):
        out += [", "] if i else []
        out.append(p)
    return out
