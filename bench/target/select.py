"""Which state group a `--target` run or gate measures, and the revisions written as strategies.

--group pd-hidden-study    the project's PD hidden study (bench.target.materialize): the
                           call sites transcribed from the PR, the revision's own side table
                           (a name no tree's group can have: `--group pd_hidden` is the tree's
                           own group of that name, replayed and placed like any other)
--group NAME               that group at every revision (`bench target groups` lists them);
                           where a revision has not got it by name, the fields the other
                           revisions' group holds, found on its Req (a move: at the
                           revision before it, the fields are still on Req)
(none), two revisions      what `bench target diff` finds moved between them: one moved
                           group; PD hidden when the tree has it and nothing else moved
(none), one revision       PD hidden
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.base.errors import UsageError
from bench.target.diff import Move, find_moves, inline_of
from bench.target.groups import Group, GroupNotFound, Revision, inline_group, read_groups
from bench.target.home import MIN_FIELDS
from bench.target.materialize import Target, materialize, materialize_group
from bench.target.placement import MIN_REPLAYED
from bench.target.tree import SourceTree
from strategies._contract import FIELDS, PD_HIDDEN

STUDY = "pd-hidden-study"  # --group: the project's PD hidden study, apart from any tree's group


def _group_at(rev: Revision, name: str, like: Group | None) -> Group:
    """The group NAME at `rev`, or (a revision before or after a move) the same fields on Req."""
    try:
        return rev.group(name)
    except GroupNotFound:
        if like is None:
            raise

    attrs = rev.inline_attrs()
    names = [f.name for f in like.fields if f.name in attrs]
    if len(names) < len(like.fields) / 2:
        return rev.group(name)  # raises, naming the closest
    return inline_of(rev, names, like)


def group_by_name(rev: Revision, spec: str) -> Group:
    """--group NAME (a group `bench target groups` lists) or NAME=f1,f2,... (Req attributes
    of your own choosing, as an inline group)."""

    if "=" in spec:
        name, _, fields = spec.partition("=")
        names = [f.strip() for f in fields.split(",") if f.strip()]
        if not name.strip() or not names:
            raise UsageError(f"--group {spec!r}: expected NAME or NAME=field,field,...")
        return inline_group(rev, names, name.strip())
    return rev.group(spec)


def _pick(moves: list[Move], labels: tuple[str, str]) -> Move | None:
    if not moves:
        return None
    if len(moves) == 1:
        return moves[0]
    listed = "; ".join(m.describe() for m in moves)
    raise UsageError(
        f"{labels[0]} -> {labels[1]} moved {len(moves)} groups ({listed}); name one with --group"
    )


def materialize_targets(
    specs: list[str],
    folder: Path,
    *,
    group: str | None = None,
    names: list[str] | None = None,
    min_replayed: float = MIN_REPLAYED,
    trust: bool = False,
) -> list[Target]:
    """Every revision as a strategy module in `folder` (one line, exit 2, when the group cannot
    be found, or its replay places less than `min_replayed` of its accesses at a revision).
    `trust` (--trust-target-code): a PD hidden side table's own module is executed instead of
    replayed (bench.target.materialize); nothing else of a tree ever runs."""
    names = names or [SourceTree.open(s).strategy_name() for s in specs]
    if group == STUDY or (group is None and len(specs) == 1):
        return [
            materialize(s, folder, name=n, trust=trust) for s, n in zip(specs, names, strict=True)
        ]
    revs = [read_groups(SourceTree.open(s)) for s in specs]
    chosen: list[Group]
    if group is None:
        move = _pick(find_moves(revs[0], revs[1]), (revs[0].tree.short, revs[1].tree.short))
        if move is None or move.group == PD_HIDDEN.name:
            if move is None and not all(
                any(g.name == PD_HIDDEN.name for g in r.groups) or _pd_inline(r) for r in revs
            ):
                raise UsageError(
                    f"no field changed home between {revs[0].tree.label} and "
                    f"{revs[1].tree.label}, and neither keeps PD hidden state: name a group "
                    "with --group (python -m bench target groups PATH@REV lists them)"
                )
            return [
                materialize(s, folder, name=n, trust=trust)
                for s, n in zip(specs, names, strict=True)
            ]
        chosen = [move.base, move.head] + [_group_at(r, move.group, move.head) for r in revs[2:]]
    else:
        moves = {m.group: m for m in find_moves(revs[0], revs[-1])} if len(revs) > 1 else {}
        like = moves[group].head if group in moves else None
        found: list[Group | None] = []
        for r in revs:
            try:
                found.append(group_by_name(r, group))
            except GroupNotFound:
                found.append(None)
        like = like or next((g for g in found if g is not None), None)
        chosen = [
            g if g is not None else _group_at(r, group, like)
            for g, r in zip(found, revs, strict=True)
        ]
        # the same name for the group at every revision (the report compares them)
        label = group.partition("=")[0].strip()
        chosen = [Group(label, g.home, g.fields) for g in chosen]
    return [
        materialize_group(s, folder, group=g, rev=r, name=n, min_replayed=min_replayed)
        for s, g, r, n in zip(specs, chosen, revs, names, strict=True)
    ]


def _pd_inline(rev: Revision) -> bool:
    """PD hidden fields on Req (the code before the PR)."""

    attrs = rev.inline_attrs()
    return sum(1 for n in attrs for f in FIELDS if n.endswith("_" + f)) >= MIN_FIELDS


# -- the --target argument ------------------------------------------------------------------


def split_targets(groups: list[list[str]] | None) -> list[str]:
    """--target A@x,B@y (repeatable) -> [A@x, B@y], duplicates refused."""
    specs = [s.strip() for group in groups or () for s in group if s.strip()]
    names: dict[str, str] = {}
    for spec in specs:
        name = SourceTree.open(spec).strategy_name()
        if name in names:
            raise UsageError(f"--target {spec} and {names[name]} are the same revision ({name})")
        names[name] = spec
    return specs


def target_name(spec: str) -> str:
    """The strategy NAME a PATH[@REV] is measured under."""
    return SourceTree.open(spec).strategy_name()


def looks_like_target(text: str) -> bool:
    """A --baseline that names a revision (PATH@REV or an existing folder), not a strategy."""
    return "@" in text or Path(text).is_dir()


def list_targets(specs: list[str], group: str | None = None, *, trust: bool = False) -> list[str]:
    """Materialize targets in a temporary folder for `bench list` (their files go with it)."""
    folder = Path(tempfile.mkdtemp(prefix="reqstate-targets-"))
    return [str(t.path) for t in materialize_targets(specs, folder, group=group, trust=trust)]
