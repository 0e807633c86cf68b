"""What a change between two revisions moved: fields whose home changed, matched by name.

A field moved when it left one home and appears in another at the other revision: it left
Req.__init__ and is now a field of a container class, a side table's state or a lazy attribute
(matched by its name, or by its name under a common prefix: `pd_hidden_meta` -> `meta`), or the
reverse, or it moved between two such homes. Moves are grouped by the group that received
them: `logprob: fields on Req -> req.logprob: ReqLogprob (slots)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.base.errors import UsageError
from bench.target.groups import Group, Home, Revision, inline_field

# A prefix explains a move when at least this share of the group's fields carry it.
_MIN_PREFIX_SHARE = 0.5


class NoMove(UsageError):
    """The two revisions keep every field where it was (one line, exit 2)."""


@dataclass(frozen=True)
class Move:
    group: str  # the name of the group at the revision that holds the fields away from Req
    fields: tuple[tuple[str, str], ...]  # (name at base, name at head)
    base: Group  # the group at base (an inline group of exactly these fields when they were on Req)
    head: Group

    def describe(self) -> str:
        return f"{self.group}: {self.base.home.describe()} -> {self.head.home.describe()}"


def inline_of(rev: Revision, names: list[str], like: Group) -> Group:
    """The fields as they sit on Req at `rev`: an inline group of them."""
    attrs = rev.inline_attrs()

    fields = tuple(inline_field(attrs[n]) for n in names)
    line = min(f.line for f in fields)
    return Group(like.name, Home("inline", rev.schedule_batch, line), fields)


def _match_inline(group: Group, came_from: Revision, stays: Revision) -> list[tuple[str, str]]:
    """Fields of `group` (at one revision) that are Req attributes at `came_from` and not at
    `stays` (the revision of `group`): (name on Req, name in the group)."""
    there = came_from.inline_attrs()
    here = stays.inline_attrs()
    best: list[tuple[str, str]] = []
    prefixes = {""} | {
        a[: -len(f.name)] for a in there for f in group.fields if a.endswith("_" + f.name)
    }
    for prefix in prefixes:
        hits = [
            (prefix + f.name, f.name)
            for f in group.fields
            if prefix + f.name in there and prefix + f.name not in here
        ]
        if prefix and len(hits) < _MIN_PREFIX_SHARE * len(group.fields):
            continue
        if len(hits) > len(best):
            best = hits
    return best


def _same_place(rev: Revision, group: Group) -> Group | None:
    return next((g for g in rev.groups if g.home.same_place(group.home)), None)


def find_moves(base: Revision, head: Revision) -> list[Move]:
    """Every group of fields whose home changed between base and head."""
    moves: list[Move] = []
    for rev, other, forward in ((head, base, True), (base, head, False)):
        for g in rev.groups:
            if g.home.kind == "inline":
                continue
            twin = _same_place(other, g)
            pairs = _match_inline(g, other, rev)
            if twin is not None:
                pairs = [p for p in pairs if twin.field(p[1]) is None]
            if pairs:
                on_req = inline_of(other, [a for a, _ in pairs], g)
                kept = Group(
                    g.name, g.home, tuple(f for f in g.fields if f.name in {b for _, b in pairs})
                )
                if forward:
                    moves.append(Move(g.name, tuple(pairs), on_req, kept))
                else:
                    moves.append(Move(g.name, tuple((b, a) for a, b in pairs), kept, on_req))
            if forward and twin is None:
                # between two homes away from Req: the same fields in another group at base
                for old in other.groups:
                    if old.home.kind == "inline" or _same_place(rev, old) is not None:
                        continue
                    shared = [f.name for f in g.fields if old.field(f.name) is not None]
                    if shared and len(shared) >= _MIN_PREFIX_SHARE * len(g.fields):
                        moves.append(
                            Move(
                                g.name,
                                tuple((n, n) for n in shared),
                                Group(
                                    old.name,
                                    old.home,
                                    tuple(f for f in old.fields if f.name in shared),
                                ),
                                Group(
                                    g.name, g.home, tuple(f for f in g.fields if f.name in shared)
                                ),
                            )
                        )
    _refuse_twice(moves, base, head)
    return moves


def _refuse_twice(moves: list[Move], base: Revision, head: Revision) -> None:
    seen: dict[tuple[str, str], str] = {}
    for m in moves:
        for a, b in m.fields:
            for key in (("base", a), ("head", b)):
                if key in seen and seen[key] != m.group:
                    at = base if key[0] == "base" else head
                    raise UsageError(
                        f"{at.tree.label}: field {key[1]!r} matched twice (groups {seen[key]} and "
                        f"{m.group}); name the group with --group"
                    )
                seen[key] = m.group


def describe_moves(moves: list[Move]) -> list[str]:
    lines = []
    for m in moves:
        renamed = [f"{a} -> {b}" for a, b in m.fields if a != b]
        names = ", ".join(renamed[:4] if renamed else [b for _, b in m.fields][:6])
        more = len(m.fields) - (len(renamed[:4]) if renamed else min(6, len(m.fields)))
        lines.append(
            f"{m.describe()}  [{len(m.fields)} fields: {names}{f', +{more}' if more > 0 else ''}]"
        )
    return lines
