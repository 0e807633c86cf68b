"""`bench gate --target PATH --base REV [--head REV]`: the harness is fixed, the user's tree
is measured at two revisions.

Both revisions become strategy modules (bench.target.materialize, named `gate_base` and
`gate_head`), measured by this tree's harness, as written (pattern `as_written`). The gated
names carry the strategy `target`:

    step/target/scenario=<s>/pattern=as_written
    lookup/target/op=get_hit/live=<n>/regime=warm

Wall clock: every round is one worker process holding the base, the head and the head's A/A
copy (`gate_head_aa`, the head materialized a second time, with its own request model, as the
base has), interleaved value by value in a shuffled order and built in an order rotated by
round (each side at each position alike), so value i of every side covers the same scheduler
steps moments apart. Instruction mode: callgrind counts of the target in this tree,
each side in its own heap layouts, the A/A copy (the head again) in other layouts; then, for
the benchmarks that moved most, the functions where the instructions moved (bench.gate.attribution).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.base.errors import DataError
from bench.base.names import BenchName
from bench.base.storage import ROOT, read_json
from bench.config.runconfig import RunConfig
from bench.gate import attribution
from bench.gate.config import GateConfig
from bench.gate.instructions import Side, gate_benchmarks, measure_sides
from bench.gate.wall import progress
from bench.gate.wall import worker_config as plain
from bench.target.materialize import Target
from bench.target.placement import MIN_REPLAYED
from bench.target.report import group_summary
from bench.target.select import materialize_targets

TARGET = "target"  # the strategy name in gated benchmark names
BASE, HEAD = "gate_base", "gate_head"
AA = f"{HEAD}_aa"
SIDE_OF = {BASE: "base", HEAD: "candidate", AA: "aa"}
# Benchmarks whose functions gate.md lists (the regressions, else the largest changes).
ATTRIBUTED = 2


@dataclass(frozen=True)
class Revisions:
    base: Target
    head: Target
    # The head materialized again: the wall gate's A/A side, built as the base is (its own
    # module and request model), where a twin (the head's module executed again) shared the
    # head's request model. What had set the base apart in A/A gates was the build order
    # (bench.suites.gate.run.build_order); with both, the A/A column of tests/test_groups.py's
    # A/A gate reads 3.9-7.5%, as far as its lookup change moves (2026-12-07).
    aa: Target | None = None

    def meta(self, scenario_names: list[str] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "base": self.base.tree.label,
            "candidate": self.head.tree.label,
            "targets": {"base": self.base.metadata(), "candidate": self.head.metadata()},
        }
        if self.head.group is not None and self.base.group is not None:
            out["group"] = group_summary(
                self.base.metadata(),
                self.head.metadata(),
                (self.base.path, self.head.path),
                scenario_names or [],
            )
        return out


def target_config(cfg: GateConfig) -> GateConfig:
    """The gated set for a target: one strategy (the revision), as written."""
    return replace(cfg, strategies=(TARGET,), patterns=("as_written",))


def inline_revisions(revs: Revisions) -> list[str]:
    """The revisions that keep the group as fields on Req: there a get returns the request
    itself and times no work, so a lookup ratio against it is a ratio over nothing (moving
    two fields into a slots container read +890% on get_hit while the decode iteration
    moved +0.7%); the step rows carry what the scheduler pays."""
    return [
        t.tree.label
        for t in (revs.base, revs.head)
        if t.group is not None and t.group.get("home_kind") == "inline"
    ]


def without_void_lookups(cfg: GateConfig, revs: Revisions) -> tuple[GateConfig, str | None]:
    """The gated set with the lookup rows left out where a revision's get does no work, and
    the note gate.md gives for it (None: nothing left out)."""
    inline = inline_revisions(revs)
    if not inline or not cfg.lookup_ops:
        return cfg, None
    note = (
        f"lookup rows not gated: at {', '.join(inline)} the group's fields are on Req, so a "
        "get returns the request and times no work; the step rows are the verdict"
    )
    return replace(cfg, lookup_ops=()), note


def prepare(
    path: str,
    base_rev: str,
    head_rev: str | None,
    folder: Path,
    *,
    group: str | None = None,
    min_replayed: float = MIN_REPLAYED,
    trust: bool = False,
) -> Revisions:
    """Both revisions as strategy modules in `folder` (an unrecognised revision, a group that
    cannot be found: exit 2), of the state group `group` (bench.target.select: what moved
    between them by default)."""

    specs = [f"{path}@{base_rev}", path if head_rev is None else f"{path}@{head_rev}"]
    base, head, aa = materialize_targets(
        [*specs, specs[1]],
        folder,
        group=group,
        names=[BASE, HEAD, AA],
        min_replayed=min_replayed,
        trust=trust,
    )
    return Revisions(base, head, aa)


def _rename(name: str, strategy: str) -> str:
    return str(BenchName.parse(name).with_strategy(strategy))


def worker_config(cfg: GateConfig, revs: Revisions) -> RunConfig:

    config = replace(
        plain(cfg),
        strategies=(BASE, HEAD, AA),
        external=tuple(str(t.path) for t in (revs.base, revs.head, revs.aa) if t is not None),
        patterns=("per_field",),  # built-ins only; the revisions run as written
    )
    return config


def measure_wall(cfg: GateConfig, revs: Revisions) -> dict[str, dict[str, list[float]]]:
    """{side: {gated name: values}}: one worker process per round, all three sides in it."""
    from bench.orchestration.runner import run_worker

    values: dict[str, dict[str, list[float]]] = {"base": {}, "candidate": {}, "aa": {}}
    wanted = set(cfg.benchmarks("wall"))
    config = worker_config(cfg, revs)
    with tempfile.TemporaryDirectory(prefix="reqstate-gate-") as tmp:
        cfg_path = Path(tmp) / "config.json"
        cfg_path.write_text(config.to_json(), encoding="utf-8")
        for r in range(cfg.rounds):
            out = Path(tmp) / f"round{r}.json"
            rc, tail = run_worker("gate", cfg_path, out, r, lambda _f, _l: None, cwd=ROOT)
            if rc != 0 or not out.exists():
                last = tail.strip().splitlines()[-1] if tail.strip() else f"exit status {rc}"
                raise DataError(f"the gate worker failed: {last}")
            data = read_json(out)
            if data.get("failures"):
                raise DataError("; ".join(data["failures"].values()))
            for name, b in data["benchmarks"].items():
                bench = BenchName.parse(name)
                side = SIDE_OF.get(bench.strategy)
                gated = _rename(name, TARGET)
                if side is not None and gated in wanted:
                    values[side].setdefault(gated, []).extend(b["values"])
            progress(f"[gate] round {r + 1}/{cfg.rounds}: base, head and its A/A copy measured")
    return values


def _sides(cfg: GateConfig, revs: Revisions, benchmarks: list[str]) -> dict[str, Any]:

    k = cfg.instr_heap_shifts

    def side(strategy: str, target: Target, shifts: range) -> Side:
        names = {b: _rename(b, strategy) for b in benchmarks}
        return Side(ROOT, shifts, names=names, external=(str(target.path),))

    return {
        "base": side(BASE, revs.base, range(k)),
        "candidate": side(HEAD, revs.head, range(k)),
        "aa": side(HEAD, revs.head, range(k, 2 * k)),
    }


def measure_instructions(cfg: GateConfig, revs: Revisions) -> dict[str, dict[str, list[float]]]:

    benchmarks = gate_benchmarks(cfg)
    return measure_sides(cfg, _sides(cfg, revs, list(benchmarks)), benchmarks)


def where(cfg: GateConfig, revs: Revisions, judgements: list[Any]) -> list[dict[str, Any]]:
    """Instruction mode: for the regressions (else the largest changes), the functions whose
    instructions per iteration moved most between the two revisions."""

    benchmarks = gate_benchmarks(cfg)
    flagged = [j for j in judgements if j.verdict == "regression"]
    chosen = flagged or sorted(judgements, key=lambda j: abs(j.change_pct), reverse=True)
    python = attribution.perf_python()
    sides = _sides(cfg, revs, list(benchmarks))
    renames = {
        f"{t.name}_state.py": f"{t.state_module.rsplit('/', 1)[-1]}@{t.tree.short}"
        for t in (revs.base, revs.head)
        if t.state_module
    }
    out = []
    for j in chosen[:ATTRIBUTED]:
        iters, live = benchmarks[j.benchmark]
        progress(f"[gate] where the change is: {j.benchmark}")
        costs = {
            side: attribution.per_iteration(
                sides[side],
                j.benchmark,
                iters,
                live=live,
                seed=cfg.seed,
                python=python,
                renames=renames,
            )
            for side in ("base", "candidate")
        }
        pairs = attribution.movers(costs["base"], costs["candidate"])
        note = f"{j.change_pct:+.2f}%; " + (
            "Python functions from perf trampolines"
            if python
            else "C functions only: no Python >= 3.12 here for the Python view "
            "(set REQSTATE_PERF_PYTHON)"
        )
        out.append(
            {
                "benchmark": j.benchmark,
                "note": note,
                "functions": [
                    {
                        "name": b.name,
                        "python": b.python,
                        "base": b.instructions,
                        "head": h.instructions,
                    }
                    for b, h in pairs
                ],
            }
        )
    return out
