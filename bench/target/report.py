"""`bench target diff`: what a change between two revisions moved, what building a request
costs at each, and every function that touches the moved group at each, with how often the
real scheduler runs it (text for people, JSON for machines)."""

from __future__ import annotations

import ast
import difflib
import tempfile
from array import array
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.base.errors import UsageError
from bench.base.gcprobe import Footprint, footprint
from bench.base.storage import write_json
from bench.core import scenarios
from bench.core.counting import event_means
from bench.core.groupsites import per_iteration
from bench.core.workload import make_request_class
from bench.stats.cases import change_sources
from bench.target.accesses import FunctionAccesses, read_accesses
from bench.target.diff import Move, describe_moves, find_moves
from bench.target.groups import Group, Revision, model_with_holders, read_groups
from bench.target.home import parse
from bench.target.program import Program, build
from bench.target.tree import SourceTree

# Untimed iterations the scenarios' event counts are taken over (requests per batch, arriving,
# finishing: exact for the seeded stream).
EVENT_STEPS = 20
# Table rows not defined at a revision that the text names before "and N more".
ABSENT_SHOWN = 12
# The prompt every footprint request is built with (bench.measure.steps uses the same).
PROMPT_TOKENS = 512


def req_classes(rev: Revision) -> set[str]:
    """Class Req and its bases: where `self` is the request."""
    out = {"Req"}
    for node in parse(rev.tree, rev.schedule_batch).body:
        if isinstance(node, ast.ClassDef) and node.name == "Req":
            out |= {ast.unparse(b).split(".")[-1] for b in node.bases}
    return out


def construction(rev: Revision) -> Footprint:
    """Building one of the revision's requests here (tensors as torch-free stand-ins)."""

    model = model_with_holders(rev)
    with tempfile.TemporaryDirectory(prefix="reqstate-diff-") as tmp:
        path = Path(tmp) / f"{rev.tree.strategy_name()}.json"
        write_json(path, model.to_json())
        cls = make_request_class(model=str(path))
    ids = array("q", range(PROMPT_TOKENS))
    return footprint(lambda i: cls(f"d{i}", ids, 1))


@dataclass(frozen=True)
class Side:
    rev: Revision
    group: Group
    functions: list[FunctionAccesses]
    program: Program
    built: Footprint
    per_scenario: dict[str, float]  # accesses per iteration (hot path, branch_share as preset)
    loads_per_scenario: dict[str, float]  # attribute loads and lookups per iteration


def side(
    rev: Revision, group: Group, built: Footprint, events: dict[str, dict[str, float]]
) -> Side:
    functions = read_accesses(rev.tree, group, req_classes(rev))
    program = build(group.name, functions, commit=rev.tree.commit, tree=rev.tree)

    def total(name: str, ev: dict[str, float], kind: str) -> float:
        sc = scenarios.get(name)
        return sum(
            per_iteration(program.program, sc.loop, ev, sc.branch_share, home_kind=kind).values()
        )

    per = {name: total(name, ev, "") for name, ev in events.items()}
    loads = {name: total(name, ev, group.home.kind) for name, ev in events.items()}
    return Side(rev, group, functions, program, built, per, loads)


def scenario_events() -> dict[str, dict[str, float]]:

    return {
        name: event_means(scenarios.get(name), seed=0, steps=EVENT_STEPS)
        for name in scenarios.DEFAULT_SET
    }


@dataclass(frozen=True)
class DiffReport:
    base: Revision
    head: Revision
    moves: list[Move]
    sides: list[tuple[Side, Side]]  # per move: (base, head)

    def to_json(self) -> dict[str, Any]:
        def one(s: Side) -> dict[str, Any]:
            return {
                "revision": s.rev.tree.label,
                "commit": s.rev.tree.commit,
                "group": s.group.to_json(),
                "construction": asdict(s.built),
                "functions": [
                    {
                        "function": f.function,
                        "where": f.where,
                        "accesses": f.count(),
                        "in_batch_loop": f.count(loop=True),
                        "lookups": f.lookups(s.group.home.kind),
                        "loads": f.loads(s.group.home.kind),
                        "on_hot_path": f in s.program.on_path,
                        "placed": s.program.words(f.function),
                    }
                    for f in s.functions
                ],
                "placement": s.program.coverage.to_json() if s.program.coverage else None,
                "accesses_per_iteration": s.per_scenario,
                "loads_per_iteration": s.loads_per_scenario,
            }

        return {
            "moves": [
                {"group": m.group, "describe": m.describe(), "fields": [list(p) for p in m.fields]}
                for m in self.moves
            ],
            "sides": [{"base": one(a), "head": one(b)} for a, b in self.sides],
        }

    def text(self) -> str:
        b, h = self.base.tree, self.head.tree
        lines = [f"base: {b.label}", f"head: {h.label}", ""]
        if self.moves:
            lines += ["moved:", *(f"  {line}" for line in describe_moves(self.moves))]
        else:
            for base_s, head_s in self.sides:
                lines.append(
                    f"not moved: {head_s.group.name} stays {head_s.group.home.words} "
                    f"(base: {base_s.group.home.describe()}; head: {head_s.group.home.describe()})"
                )
        first = self.sides[0]
        lines += ["", "building one request (this interpreter, tensors as stand-ins):"]
        lines.append(
            f"  {'revision':<24} {'attributes':>10} {'blocks':>7} {'tracked':>7} {'bytes':>7} "
            f"{'build us':>8}"
        )
        for s in first:
            fp = s.built
            lines.append(
                f"  {s.rev.tree.short:<24} {fp.attributes:>10} {fp.blocks:>7.1f} "
                f"{fp.tracked:>7.1f} {fp.bytes:>7.0f} {fp.construct_ns / 1e3:>8.2f}"
            )
        for pair in self.sides:
            group = pair[1].group.name
            lines += [
                "",
                f"functions touching {group} (static: accesses = field loads and stores, "
                "lookups = reaches of its holder, loads = attribute loads and getter calls; "
                "loop = inside a loop over the batch's requests):",
            ]
            for s in pair:
                lines.append(
                    f"  at {s.rev.tree.short} ({s.group.home.words}; frequencies "
                    f"{s.program.table}):"
                )
                lines.append(
                    f"    {'function':<58} {'acc':>4} {'loop':>4} {'lkp':>4} {'loads':>5}  "
                    "frequency"
                )
                for f in s.functions:
                    site = next(
                        (x for x in s.program.program.sites if x.function == f.function), None
                    )
                    placed = s.program.words(f.function)
                    freq = (
                        f"{site.frequency} ({', '.join(site.phases)})"
                        + (f" {placed}" if placed else "")
                        if site
                        else placed or "not replayed"
                    )
                    lines.append(
                        f"    {f.function + ' ' + f.where.rsplit('/', 1)[-1]:<58.58} "
                        f"{f.count():>4} {f.count(loop=True):>4} {f.lookups(s.group.home.kind):>4} "
                        f"{f.loads(s.group.home.kind):>5}  {freq}"
                    )
            lines += changed_lines(*pair)
            lines += placement_lines(*pair)
            lines += [
                "",
                f"  {group} per iteration on the modelled hot path (static x frequency; "
                "branches the reader cannot resolve taken for branch_share of the requests):",
                f"    {'scenario':<20} {'accesses':>21} {'loads and lookups':>21}",
            ]
            base_s, head_s = pair
            for name in base_s.per_scenario:
                acc = f"{base_s.per_scenario[name]:,.1f} -> {head_s.per_scenario[name]:,.1f}"
                lds = (
                    f"{base_s.loads_per_scenario[name]:,.1f} -> "
                    f"{head_s.loads_per_scenario[name]:,.1f}"
                )
                lines.append(f"    {name:<20} {acc:>21} {lds:>21}")
        return "\n".join(lines)


def _row(s: Side, f: FunctionAccesses) -> tuple[int, int, int, int, str]:
    kind = s.group.home.kind
    site = next((x for x in s.program.program.sites if x.function == f.function), None)
    return (
        f.count(),
        f.count(loop=True),
        f.lookups(kind),
        f.loads(kind),
        site.frequency if site else "not replayed",
    )


def changed_lines(base: Side, head: Side) -> list[str]:
    """Per function, what changed between the revisions: functions gone and new (a method
    whose class changed name paired by its method name), and changed counts or frequency."""
    old = {f.function: f for f in base.functions}
    new = {f.function: f for f in head.functions}
    gone = [n for n in old if n not in new]
    added = [n for n in new if n not in old]
    out = ["", "  what changed (accesses, loop, lookups, loads, frequency):"]
    for name in gone[:]:
        method = name.rsplit(".", 1)[-1]
        twins = [n for n in added if "." in n and n.rsplit(".", 1)[-1] == method]
        if "." in name and len(twins) == 1:
            gone.remove(name)
            added.remove(twins[0])
            a, b = _row(base, old[name]), _row(head, new[twins[0]])
            same = "the same accesses" if a[:4] == b[:4] else f"{a} -> {b}"
            out.append(f"    moved: {name} -> {twins[0]}: {same}")
    for name in old:
        if name in new and _row(base, old[name]) != _row(head, new[name]):
            out.append(f"    changed: {name}: {_row(base, old[name])} -> {_row(head, new[name])}")
    out += [f"    gone at head: {n} {_row(base, old[n])}" for n in gone]
    out += [f"    new at head: {n} {_row(head, new[n])}" for n in added]
    if len(out) == 2:
        out.append("    nothing: the same functions with the same accesses")
    return out


def placement_lines(base: Side, head: Side) -> list[str]:
    """What the replay placed at each side: its share, the functions new at head it could not
    place, and the typed rows each revision does not define (kept apart from known-cold ones)."""
    out = ["", "  placed by the replay (static field accesses outside known-cold functions):"]
    at_base = {f.function for f in base.functions}
    for s in (base, head):
        cov = s.program.coverage
        if cov is None:
            continue
        cold = cov.of("cold")
        unknown = cov.of("unknown")
        out.append(
            f"    at {s.rev.tree.short}: {cov.share:.0%} ({cov.accesses('table', 'moved')} of "
            f"{cov.accesses('table', 'moved', 'unknown')}); known cold {len(cold)} functions "
            f"({cov.accesses('cold')} accesses); not in the table {len(unknown)}"
        )
        if s is head:
            new = [p.function.function for p in unknown if p.function.function not in at_base]
            if new:
                out.append(f"      new at head, not in the table: {', '.join(new)}")
        if cov.absent_rows:
            shown = cov.absent_rows[:ABSENT_SHOWN]
            more = len(cov.absent_rows) - len(shown)
            out.append(
                f"      table rows not defined at {s.rev.tree.short} ({len(cov.absent_rows)}): "
                + ", ".join(shown)
                + (f", and {more} more (--json lists them)" if more else "")
            )
    return out


def _kept(base: Revision, head: Revision, group: str, moved: list[str]) -> tuple[Group, Group]:
    """The group at both revisions, or one line naming the closest name either has (a name
    that is there is never its own suggestion)."""

    found = [g for r in (base, head) for g in r.groups if g.name == group]
    if len(found) == 2:
        return found[0], found[1]
    names = sorted({*moved, *(g.name for r in (base, head) for g in r.groups)} - {group})
    close = difflib.get_close_matches(group, names, n=1, cutoff=0.3)
    missing = " and ".join(
        r.tree.short for r in (base, head) if all(g.name != group for g in r.groups)
    )
    raise UsageError(
        f"no state group {group!r} at {missing} (it moved nowhere between {base.tree.short} "
        f"and {head.tree.short})" + (f"; closest: {close[0]}" if close else "")
    )


def diff_report(base_spec: str, head_spec: str, *, group: str | None = None) -> DiffReport:
    base = read_groups(SourceTree.open(base_spec))
    head = read_groups(SourceTree.open(head_spec))
    moves = find_moves(base, head)
    if group is not None:
        chosen = [m for m in moves if m.group == group]
        if not chosen:
            # a group that stayed where it was: its accesses at both revisions, and what
            # changed (a refactor that moved the functions, not the fields)
            kept = _kept(base, head, group, [m.group for m in moves])
            built = (construction(base), construction(head))
            events = scenario_events()
            pair = (side(base, kept[0], built[0], events), side(head, kept[1], built[1], events))
            return DiffReport(base, head, [], [pair])
        moves = chosen
    if not moves:
        raise UsageError(
            f"no field changed home between {base.tree.label} and {head.tree.label}: looked "
            "for fields leaving Req.__init__ for a container, side table or lazy attribute (or "
            "the reverse) and moves between those homes"
        )
    built = (construction(base), construction(head))
    events = scenario_events()
    sides = [
        (side(base, m.base, built[0], events), side(head, m.head, built[1], events)) for m in moves
    ]
    return DiffReport(base, head, moves, sides)


def requests_of(target_path: Path) -> Footprint:
    """Building one request of a materialized target (its REQUEST_MODEL table) here."""

    cls = make_request_class(model=str(target_path.with_suffix(".reqmodel.json")))
    ids = array("q", range(PROMPT_TOKENS))
    return footprint(lambda i: cls(f"g{i}", ids, 1))


def group_summary(
    base: dict[str, Any], head: dict[str, Any], paths: tuple[Path, Path], scenario_names: list[str]
) -> dict[str, Any]:
    """What the gate says about a state group's change besides its timings: each side's home,
    the request each builds (measured here), and per scenario where the change lies (static
    attribute loads and lookups per iteration by function, bench.stats.cases)."""

    where = {}
    for name in scenario_names:
        scenario = scenarios.get(name)
        events = event_means(scenario, seed=0, steps=EVENT_STEPS)
        where[name] = [
            list(m)
            for m in change_sources(base, head, scenario.loop, events, scenario.branch_share)
        ]
    return {
        "group": head.get("group"),
        "base_home": base.get("home"),
        "head_home": head.get("home"),
        "requests": {
            side: asdict(requests_of(p)) for side, p in zip(("base", "head"), paths, strict=True)
        },
        "where": where,
        "placement": {"base": base.get("placement"), "head": head.get("placement")},
    }
