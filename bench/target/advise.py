"""`python -m bench target advise PATH[@REV] --group NAME`: the review question of the seed PR
asked of any state group. The group is written in every candidate home (bench.target.homes:
fields on Req, slots container eager and lazy, dict container, lazy attribute, declared
attribute, a weak side table, a dict by request id), each with the revision's own access
counts on the hot path and the revision's Req around it, measured by the step suite beside
control (every strategy of the run builds the current home's Req, so every figure net of
control is the home's own cost), and ranked per scenario: net µs per iteration with its
interval, share of the forward, construction µs, bytes and GC-tracked objects per request.
The current home is marked. The run folder (report.html, summary.md) is kept.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.base.errors import UsageError
from bench.target.groups import Group, Revision
from bench.target.homes import CANDIDATES, WORDS, current_home, home_metadata, write_home

# A home's strategy NAME: the group's stem, then the home.
_MAX_STEM = 18

# The suite advise runs and reads: the step suite (each home's cost per scheduler iteration).
READS = "step"


def _stem(group: Group) -> str:
    import re

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


def write_candidates(rev: Revision, group: Group, folder: Path) -> list[Candidate]:
    """Every candidate home of the group (its current one first), written into `folder`."""
    from bench.target.accesses import read_accesses
    from bench.target.groups import model_with_holders
    from bench.target.program import build
    from bench.target.report import req_classes

    functions = read_accesses(rev.tree, group, req_classes(rev))
    prog = build(group.name, functions, commit=rev.tree.commit)
    if not prog.program.sites:
        raise UsageError(
            f"{rev.tree.label}: group {group.name!r} has no access on the modelled hot path "
            f"({len(prog.off_path)} functions touch it elsewhere): nothing to advise on"
        )
    now = current_home(group)
    homes = [now, *(h for h in CANDIDATES if h != now)]
    scalar = now in ("lazy_scalar", "declared_scalar")
    if scalar:  # a one-field attribute of the request: its own forms, and on Req
        homes = [now, *(h for h in ("inline", "lazy_scalar", "declared_scalar") if h != now)]
    model = model_with_holders(rev)
    stem = _stem(group)
    out = []
    for home in homes:
        name = f"{stem}_{home}"
        meta: dict[str, Any] = {
            **home_metadata(rev.tree.label, rev.tree, group, home, prog.program),
            "home": WORDS.get(home, home) + (" (the current home)" if home == now else ""),
            "home_kind": "inline" if home == "inline" else "container",
            "current": home == now,
            "not_modelled": [
                f"{f.function} ({f.where}): not on the modelled hot path" for f in prog.off_path
            ],
        }
        w = write_home(
            folder,
            group,
            home,
            name,
            model,
            prog.program,
            description=f"{group.name} at {rev.tree.short}: {WORDS.get(home, home)}",
            target=meta,
        )
        out.append(Candidate(name, home, w.path, home == now, meta))
    return out


def ranked_table(run_dir: Path, candidates: list[Candidate]) -> str:
    """Per scenario, every home ranked by its net cost per iteration."""
    from bench.report.load import load_run
    from bench.report.scenarios.model import cases, request_rows
    from bench.report.scenarios.prose import net_text, pct

    run = load_run(run_dir)
    requests = {r.strategy: r for r in request_rows(run)}
    lines = []
    width = max((len(WORDS.get(c.home, c.home)) for c in candidates), default=4)
    for case in cases(run):
        rows = []
        for c in candidates:
            cost = case.cost(c.name, "as_written")
            if cost is not None and cost.net is not None:
                rows.append((cost.net.median, c, cost))
        rows.sort(key=lambda r: r[0])
        lines += [
            "",
            f"{case.title} (forward {case.forward_ms:,.0f} ms):",
            f"  {'home':<{width}} {'net per iteration [95% CI]':>30} {'share':>9} {'build us':>8} "
            f"{'bytes':>6} {'tracked':>7}",
        ]
        for _median, c, cost in rows:
            r = requests.get(c.name)
            built = (
                f"{r.construct_ns / 1e3:>8.2f} {r.bytes:>6.0f} {r.tracked_objects:>7.1f}"
                if r
                else f"{'-':>8} {'-':>6} {'-':>7}"
            )
            assert cost.net is not None
            lines.append(
                f"{' *' if c.current else '  '}{WORDS.get(c.home, c.home):<{width}} "
                f"{net_text(cost):>30} {pct(cost.share(cost.net.median)):>9} {built}"
            )
    lines += [
        "",
        "* the current home; net: per iteration minus control, paired per round (every "
        "strategy builds the current home's Req, so a home's own construction is in its figure)",
    ]
    return "\n".join(lines)


def advise(args: Any) -> int:
    from bench import suites
    from bench.base.storage import DEFAULT_REPORTS_DIR
    from bench.config.budget import budget_changes
    from bench.orchestration.sequence import execute, finish, new_run_folder, start
    from bench.target.groups import read_groups
    from bench.target.select import group_by_name
    from bench.target.tree import SourceTree

    rev = read_groups(SourceTree.open(args.spec))
    group = group_by_name(rev, args.group)
    run_dir = new_run_folder(Path(args.output_dir or DEFAULT_REPORTS_DIR))
    candidates = write_candidates(rev, group, run_dir / "targets")
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
    print(
        f"advise: {group.name} ({len(group.fields)} fields) at {rev.tree.label}, now "
        f"{group.home.describe()}; {len(candidates)} homes",
        file=sys.stderr,
    )
    finished = execute(run_dir, manifest, config)
    if isinstance(finished, int):
        return finished
    print(ranked_table(run_dir, candidates))
    return finish(run_dir, selfcheck=False, quiet=True)
