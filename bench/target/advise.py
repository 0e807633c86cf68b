"""`python -m bench target advise PATH[@REV] --group NAME`: the review question of the seed PR
asked of any state group. The group is written in every candidate home (bench.target.homes:
fields on Req, slots container eager and lazy, dict container, lazy attribute, declared
attribute, a weak side table, a dict by request id), each with the revision's own accesses on
the hot path and the revision's Req around it with the group moved into that home (each
candidate builds its own Req; control, which every net figure is taken against, builds the
current home's, so a figure net of control holds the home's accesses and the difference its
Req makes to building a request). The current home is measured as written. Every other home is
measured as two ports of the code:

    as ported          each access reaches the holder through the home afresh, as the current
                       code reaches it (a group now on Req: `get(req).f` per field access in a
                       side table, the per-field worst case)
    once per function  the holder looked up once per function invocation (per request in a
                       loop over the batch's, per arm of a branch the reader cannot resolve),
                       the fields then accessed on the local: the `cached` pattern

(fields on Req and a one-field attribute of the request reach nothing: one port). Each home is
ranked per scenario by the better of its ports, both shown, with the ranked port's difference
from the current home paired per round and its interval (bench.stats.cases.difference, as the
run report's verdicts): "same" where that interval includes zero, else better or worse. Also:
share of the forward, construction µs, bytes and GC-tracked objects per request. The run folder
(report.html, summary.md) is kept.
"""

from __future__ import annotations

import re
import shlex
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import suites
from bench.base.errors import UsageError
from bench.base.storage import DEFAULT_REPORTS_DIR
from bench.config.budget import budget_changes
from bench.core.groupsites import Access, GroupProgram
from bench.orchestration.sequence import execute, finish, new_run_folder, start
from bench.stats.cases import difference
from bench.stats.rounds import Rounds
from bench.target.accesses import read_accesses
from bench.target.groups import Group, Revision, model_with_holders, read_groups
from bench.target.homes import CANDIDATES, WORDS, current_home, home_metadata, write_home
from bench.target.placement import refusal
from bench.target.program import build
from bench.target.report import req_classes
from bench.target.select import group_by_name
from bench.target.tree import SourceTree
from strategies._contract import AS_WRITTEN

if TYPE_CHECKING:
    from bench.stats.cases import Case, Cost, RequestRow
    from bench.stats.derive import NetCost
    from bench.stats.rounds import Rounds

# A home's strategy NAME: the group's stem, then the home (then `_cached` for its port looked
# up once per function; at most 18 + 1 + 10 + 7 = 36 of the 40 a NAME may have).
_MAX_STEM = 18

# The suite advise runs and reads: the step suite (each home's cost per scheduler iteration).
READS = "step"

# How a candidate's code reaches the group: the current home as the revision writes it, every
# other home as ported (each access through the home afresh) and looked up once per function.
WRITTEN, PORTED, CACHED = "as_written", "ported", "cached"
PORT_WORDS = {
    WRITTEN: "as written",
    PORTED: "as ported (each access through the home afresh)",
    CACHED: "looked up once per function",
}
# Homes that reach the fields as `req` itself: nothing to look up, one port.
_NO_LOOKUP = frozenset({"inline", "lazy_scalar", "declared_scalar"})
_SCALAR_HOMES = ("inline", "lazy_scalar", "declared_scalar")


def _stem(group: Group) -> str:

    stem = re.sub(r"[^a-z0-9_]+", "_", group.name.lower()).strip("_")
    if not stem or not stem[0].isalpha():
        stem = "g_" + stem
    return stem[:_MAX_STEM]


@dataclass(frozen=True)
class Candidate:
    name: str
    home: str
    path: Path
    current: bool
    meta: dict[str, Any]
    port: str = WRITTEN  # WRITTEN (the current home), PORTED or CACHED


def once_per_function(program: GroupProgram) -> GroupProgram:
    """`program` looked up once per function: in each function, the first access of each
    block the replay runs separately (a per-iteration function's accesses outside its loop over
    the batch's requests or inside it, per request; those always run and each arm of a branch
    the reader cannot resolve) binds the holder into a local, and every access of the block
    goes through that local; a bind of the code after the first of its block is dropped."""
    sites = []
    for s in program.sites:
        bound: set[tuple[bool, str]] = set()
        accesses: list[Access] = []
        for a in s.accesses:
            block = (s.per_request() or a.loop, a.arm)
            if a.op == "bind" and block in bound:
                continue
            bound.add(block)
            accesses.append(replace(a, via="local"))
        sites.append(replace(s, accesses=tuple(accesses)))
    return replace(program, sites=tuple(sites))


def ports(home: str, current: str, program: GroupProgram) -> list[tuple[str, GroupProgram]]:
    """The ports of the group's code a home is measured with: the current home as written;
    another home as ported and, where that differs (a home that looks the holder up, code
    that does not already bind it once per function), looked up once per function."""
    if home == current:
        return [(WRITTEN, program)]
    out = [(PORTED, program)]
    cached = once_per_function(program)
    if home not in _NO_LOOKUP and cached != program:
        out.append((CACHED, cached))
    return out


def candidate_homes(group: Group, only: Sequence[str] = ()) -> list[str]:
    """The homes advise measures for `group`, the current one first; `only`: those named
    (and the current one). UsageError for a name that is not a candidate of the group."""
    now = current_home(group)
    pool: tuple[str, ...] = CANDIDATES
    if now in ("lazy_scalar", "declared_scalar"):  # a one-field attribute of the request
        pool = _SCALAR_HOMES
    for h in only:
        if h not in pool and h != now:
            raise UsageError(
                f"--home {h!r}: not a candidate home of group {group.name!r}; "
                f"choose from {', '.join(pool)}"
            )
    return [now, *(h for h in pool if h != now and (not only or h in only))]


def write_candidates(
    rev: Revision, group: Group, folder: Path, only: Sequence[str] = ()
) -> list[Candidate]:
    """Every candidate home of the group in each of its ports (the current home first, as
    written), written into `folder`; `only`: the homes named (bench.target.homes.CANDIDATES)."""

    homes = candidate_homes(group, only)
    functions = read_accesses(rev.tree, group, req_classes(rev))
    prog = build(group.name, functions, commit=rev.tree.commit, tree=rev.tree)
    assert prog.coverage is not None
    refused = refusal(rev.tree.label, group.name, prog.coverage, 0.0)
    if refused or not prog.program.sites:
        raise UsageError(
            (refused or f"{rev.tree.label}: group {group.name!r} has no access to replay")
            + ": nothing to advise on"
        )
    if prog.coverage.share < 1.0:
        unplaced = ", ".join(p.function.function for p in prog.coverage.of("unknown"))
        print(
            f"advise: the replay places {prog.coverage.share:.0%} of the group's accesses "
            f"outside known-cold functions; not in the table (not measured): {unplaced}",
            file=sys.stderr,
        )
    now = homes[0]
    model = model_with_holders(rev)
    stem = _stem(group)
    out = []
    for home in homes:
        for port, program in ports(home, now, prog.program):
            name = f"{stem}_{home}" + ("_cached" if port == CACHED else "")
            words = WORDS.get(home, home)
            meta: dict[str, Any] = {
                **home_metadata(rev.tree.label, rev.tree, group, home, program),
                "home": words
                + (" (the current home)" if home == now else "")
                + (f", {PORT_WORDS[CACHED]}" if port == CACHED else ""),
                "home_kind": "inline" if home == "inline" else "container",
                "current": home == now,
                "candidate": home,
                "port": port,
                "placement": prog.coverage.to_json() if prog.coverage else None,
                "not_modelled": [
                    f"{f.function} ({f.where}): {prog.words(f.function) or 'not replayed'}"
                    for f in prog.off_path
                ],
            }
            w = write_home(
                folder,
                group,
                home,
                name,
                model,
                program,
                description=f"{group.name} at {rev.tree.short}: {words}, {PORT_WORDS[port]}",
                target=meta,
            )
            out.append(Candidate(name, home, w.path, home == now, meta, port))
    return out


@dataclass(frozen=True)
class Ranked:
    """One home in one scenario case: its ports' costs, the one it is ranked by, and that
    port against the current home."""

    home: str
    current: bool
    costs: dict[str, Cost]  # port -> its cost (net of control)
    port: str  # the port ranked: the lower median net cost
    versus: NetCost | None  # that port minus the current home, paired per round (s)
    verdict: str  # current | better | worse | same (the interval includes zero) | "" (unpaired)

    @property
    def best(self) -> Cost:
        return self.costs[self.port]


def _verdict(diff: NetCost | None) -> str:
    if diff is None:
        return ""
    if not diff.significant:
        return "same"
    return "better" if diff.median < 0 else "worse"


def rank(case: Case, rounds: Rounds, candidates: Sequence[Candidate]) -> list[Ranked]:
    """Every home measured in `case`, cheapest first by the better of its ports (the median
    of its cost per iteration net of control), each against the current home paired per round
    (bench.stats.cases.difference: the same steps, moments apart, in the same process)."""

    costs: dict[str, dict[str, Cost]] = {}
    for c in candidates:
        cost = case.cost(c.name, AS_WRITTEN)
        if cost is not None and cost.net is not None:
            costs.setdefault(c.home, {})[c.port] = cost
    now = next((c.home for c in candidates if c.current), None)
    base = costs.get(now, {}).get(WRITTEN) if now is not None else None
    out = []
    for home, mine in costs.items():
        port = min(mine, key=lambda p: _median(mine[p]))
        if home == now:
            out.append(Ranked(home, True, mine, port, None, "current"))
            continue
        diff = None if base is None else difference(rounds, mine[port].bench, base.bench)
        out.append(Ranked(home, False, mine, port, diff, _verdict(diff)))
    out.sort(key=lambda r: _median(r.best))
    return out


def _median(cost: Cost) -> float:
    assert cost.net is not None
    return cost.net.median


def _lookups(cost: Cost | None) -> str:
    return "-" if cost is None or cost.lookups is None else f"{cost.lookups:,.0f}"


def ranked_lines(
    cases: Sequence[Case],
    rounds: Rounds,
    candidates: Sequence[Candidate],
    requests: dict[str, RequestRow],
) -> list[str]:
    """Per scenario case, the homes ranked (rank): both ports' net cost per iteration with
    their intervals and counted lookups, the ranked port, its paired difference from the
    current home and the verdict, its share of the forward, and the home's request."""
    from bench.report.scenarios.prose import interval_us, net_text, pct

    width = max((len(c.home) for c in candidates), default=4)
    lines = []
    for case in cases:
        lines += [
            "",
            f"{case.title} (forward {case.forward_ms:,.0f} ms):",
            f"     {'home':<{width}} {'as ported [95% CI]':>26} {'once per function':>26} "
            f"{'lookups/it':>15} {'ranked':>6} {'vs current, paired [95% CI]':>28} "
            f"{'':<6} {'share':>9} {'build us':>8} {'bytes':>6} {'tracked':>7}",
        ]
        for i, r in enumerate(rank(case, rounds, candidates), 1):
            ported = r.costs.get(WRITTEN) or r.costs.get(PORTED)
            cached = r.costs.get(CACHED)
            req = requests.get(r.best.strategy)
            built = (
                f"{req.construct_ns / 1e3:>8.2f} {req.bytes:>6.0f} {req.tracked_objects:>7.1f}"
                if req
                else f"{'-':>8} {'-':>6} {'-':>7}"
            )
            lookups = f"{_lookups(ported)} / {_lookups(cached)}" if cached else _lookups(ported)
            versus = "" if r.versus is None else interval_us(r.versus)
            best = r.best
            assert best.net is not None
            lines.append(
                f"{' *' if r.current else '  '}{i:>2} {r.home:<{width}} "
                f"{net_text(ported) if ported else '-':>26} "
                f"{net_text(cached) if cached else '-':>26} {lookups:>15} "
                f"{'cached' if r.port == CACHED else 'ported' if r.port == PORTED else 'as is':>6} "
                f"{versus:>28} {r.verdict:<6} {pct(best.share(best.net.median)):>9} {built}"
            )
    homes = dict.fromkeys(c.home for c in candidates)
    legend = (
        "* the current home, as written. Every other home as ported (each access through the "
        "home afresh, as the current code reaches it) and, where it looks the holder up, once per "
        "function (one lookup per function invocation, the fields then accessed on a local), "
        "ranked by the better of the two (`ranked`); vs current: that port minus the current "
        "home, paired per round, `same` where its interval includes zero. Net: per iteration "
        "minus control, paired per round (each home builds its own Req, control the current "
        "home's, so the difference in building a request is in each figure). lookups/it: state "
        "lookups per iteration (counted), as ported / once per function. Homes: "
        + "; ".join(f"{h} = {WORDS.get(h, h)}" for h in homes)
        + "."
    )
    return [*lines, "", *textwrap.wrap(legend, 100)]


def ranked_table(run_dir: Path, candidates: list[Candidate]) -> str:
    """Per scenario, every home ranked by the better of its ports' net cost per iteration."""
    from bench.report.load import load_run
    from bench.report.scenarios.model import cases, request_rows

    run = load_run(run_dir)
    data = run.suite(READS)
    rounds = data.net_rounds if data is not None else Rounds({})
    requests = {r.strategy: r for r in request_rows(run)}
    return "\n".join(ranked_lines(cases(run), rounds, candidates, requests))


def advise(args: Any) -> int:

    rev = read_groups(SourceTree.open(args.spec))
    group = group_by_name(rev, args.group)
    only = tuple(dict.fromkeys(h for g in (getattr(args, "home", None) or ()) for h in g))
    candidate_homes(group, only)  # an unknown --home: one line, before a folder is made
    run_dir = new_run_folder(Path(args.output_dir or DEFAULT_REPORTS_DIR))
    candidates = write_candidates(rev, group, run_dir / "targets", only)
    current = candidates[0]
    config = suites.default_config()
    if args.quick:
        config = config.quick()
    config = config.with_suite(READS, time_requests=True)
    changes: dict[str, Any] = {
        "suites": (READS,),
        "strategies": (*(c.name for c in candidates), "control"),
        "external": tuple(str(c.path) for c in candidates),
        "baseline": current.name,
        "request_model": str(current.path.with_suffix(".reqmodel.json")),
        "aa_twins": 0 if args.no_aa else config.aa_twins,
    }
    if args.scenario:
        changes["scenarios"] = tuple(dict.fromkeys(x for g in args.scenario for x in g))
    changes.update(budget_changes(args))
    try:
        config = replace(config, **changes)
        config.validate()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    command = "python -m bench " + " ".join(shlex.quote(a) for a in args.argv)
    targets = {c.name: c.meta for c in candidates}
    manifest = start(config, run_dir, command, targets=targets)
    homes = len({c.home for c in candidates})
    print(
        f"advise: {group.name} ({len(group.fields)} fields) at {rev.tree.label}, now "
        f"{group.home.describe()}; {homes} homes in {len(candidates)} ports",
        file=sys.stderr,
    )
    finished = execute(run_dir, manifest, config)
    if isinstance(finished, int):
        return finished
    print(ranked_table(run_dir, candidates))
    return finish(run_dir, selfcheck=False, quiet=True)
