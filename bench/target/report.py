"""`bench target diff`: what a change between two revisions moved, what building a request
costs at each, and every function that touches the moved group at each, with how often the
real scheduler runs it (text for people, JSON for machines)."""

from __future__ import annotations

import ast
import tempfile
from array import array
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.base.errors import UsageError
from bench.base.gcprobe import Footprint
from bench.core import scenarios
from bench.core.groupsites import per_iteration
from bench.target.accesses import FunctionAccesses, read_accesses
from bench.target.diff import Move, describe_moves, find_moves
from bench.target.groups import Group, Revision, model_with_holders, read_groups
from bench.target.home import parse
from bench.target.program import Program, build
from bench.target.tree import SourceTree

# Untimed iterations the scenarios' event counts are taken over (requests per batch, arriving,
# finishing: exact for the seeded stream).
EVENT_STEPS = 20
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
    from bench.base.gcprobe import footprint
    from bench.base.storage import write_json
    from bench.core.workload import make_request_class

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
    program = build(group.name, functions, commit=rev.tree.commit)

    def total(name: str, ev: dict[str, float], kind: str) -> float:
        sc = scenarios.get(name)
        return sum(
            per_iteration(program.program, sc.loop, ev, sc.branch_share, home_kind=kind).values()
        )

    per = {name: total(name, ev, "") for name, ev in events.items()}
    loads = {name: total(name, ev, group.home.kind) for name, ev in events.items()}
    return Side(rev, group, functions, program, built, per, loads)


def scenario_events() -> dict[str, dict[str, float]]:
    from bench.core.counting import event_means

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
                    }
                    for f in s.functions
                ],
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
        lines = [f"base: {b.label}", f"head: {h.label}", "", "moved:"]
        lines += [f"  {line}" for line in describe_moves(self.moves)]
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
                    freq = (
                        f"{site.frequency} ({', '.join(site.phases)})"
                        if site
                        else "not on the modelled hot path"
                    )
                    lines.append(
                        f"    {f.function + ' ' + f.where.rsplit('/', 1)[-1]:<58.58} "
                        f"{f.count():>4} {f.count(loop=True):>4} {f.lookups(s.group.home.kind):>4} "
                        f"{f.loads(s.group.home.kind):>5}  {freq}"
                    )
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


def diff_report(base_spec: str, head_spec: str, *, group: str | None = None) -> DiffReport:
    base = read_groups(SourceTree.open(base_spec))
    head = read_groups(SourceTree.open(head_spec))
    moves = find_moves(base, head)
    if group is not None:
        chosen = [m for m in moves if m.group == group]
        if not chosen:
            import difflib

            names = [m.group for m in moves] or [g.name for g in head.groups]
            close = difflib.get_close_matches(group, names, n=1, cutoff=0.3)
            raise UsageError(
                f"no moved group {group!r} between {base.tree.short} and {head.tree.short}"
                + (f" (closest: {close[0]})" if close else "")
            )
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
    from bench.base.gcprobe import footprint
    from bench.core.workload import make_request_class

    cls = make_request_class(model=str(target_path.with_suffix(".reqmodel.json")))
    ids = array("q", range(PROMPT_TOKENS))
    return footprint(lambda i: cls(f"g{i}", ids, 1))


def group_summary(
    base: dict[str, Any], head: dict[str, Any], paths: tuple[Path, Path], scenario_names: list[str]
) -> dict[str, Any]:
    """What the gate says about a state group's change besides its timings: each side's home,
    the request each builds (measured here), and per scenario where the change lies (static
    attribute loads and lookups per iteration by function, bench.stats.cases)."""
    from bench.core.counting import event_means
    from bench.stats.cases import change_sources

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
    }
