"""The hot-path frequency map, measured: from a counting pass (bench/real/driver/calls.py), how
often the real scheduler calls each of its functions, per phase (a colocated server's decode
and extend iterations), classified into bench.core.groupsites.FREQUENCIES by which event count
explains the calls best:

    per_iteration         1 per iteration
    per_batch_request     the batch's requests
    per_new_request       requests that arrived at the iteration's start
    per_finished_request  requests that finished in it
    per_prefill_chunk     the extend batch's requests (a chunk each)

For each, the calls of every iteration of the phase are fitted as rate x events (least squares
through the origin); the class whose fit leaves the least of the calls unexplained wins, its
rate (calls per event) is reported. Where two classes explain the calls alike (a decode-bound
batch holds B requests in every iteration, so "once per iteration" and "once per batch request"
both fit a function called B times), the one whose rate is nearest one call per event wins. Then the map is set beside bench/core/hotpath.py's rows:
agree, differ, missing at this revision (not called in the counted iterations, with whether the
revision defines it), new (called at least once per iteration, not in the table).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.base.storage import write_json
from bench.core import hotpath
from bench.core.hotpath import HotFunction, MeasuredMap
from bench.real.measure import KINDS

PHASE_OF_MODE = {"DECODE": "decode", "EXTEND": "extend", "MIXED": "extend"}
# Explained share below which a function's calls follow no single event (a branch, a poll).
MIN_EXPLAINED = 0.5
# Modules whose functions count as the scheduler's hot path when they are new to the table.
SCHEDULER_MODULES = (
    "sglang/srt/managers/", "sglang/srt/mem_cache/", "sglang/srt/disaggregation/",
    "sglang/srt/model_executor/forward_batch_info.py", "sglang/srt/sampling/",
)  # fmt: skip


def _events(record: dict[str, Any]) -> dict[str, float]:
    """Each class's event count in one iteration, in the order ties are decided: in an extend
    iteration the batch's requests are its prefill chunks, and the table calls them so."""
    batch = float(record["batch"])
    if record["mode"] in KINDS["extend"]:
        first = {"per_iteration": 1.0, "per_prefill_chunk": batch, "per_batch_request": batch}
    else:
        first = {"per_iteration": 1.0, "per_batch_request": batch, "per_prefill_chunk": 0.0}
    return {
        **first,
        "per_new_request": float(record["received"]),
        "per_finished_request": float(record["finished"]),
    }


@dataclass(frozen=True)
class Fit:
    frequency: str
    rate: float  # calls per event
    explained: float  # 1 - residual / total, of the calls' squares
    calls_per_iteration: float


def classify(calls: list[float], events: list[dict[str, float]]) -> Fit | None:
    """The frequency class that explains a function's per-iteration calls best."""
    total = sum(c * c for c in calls)
    if not total:
        return None
    best: Fit | None = None
    for freq in events[0]:
        xs = [e[freq] for e in events]
        sxx = sum(x * x for x in xs)
        if not sxx:
            continue
        rate = sum(c * x for c, x in zip(calls, xs, strict=True)) / sxx
        resid = sum((c - rate * x) ** 2 for c, x in zip(calls, xs, strict=True))
        fit = Fit(freq, rate, 1 - resid / total, sum(calls) / len(calls))
        if best is None or _score(fit) > _score(best) + 1e-12:
            best = fit
    return best


def _score(fit: Fit) -> float:
    """What is explained, less a small price for a rate far from one call per event (it
    decides only between fits that explain the calls alike; equal scores keep the earlier,
    simpler class: an extend batch's requests are its chunks)."""
    return fit.explained - 0.002 * abs(math.log(fit.rate)) if fit.rate > 0 else -1.0


@dataclass
class Measured:
    """A counting pass's result: per function and phase, its fit."""

    revision: str
    preset: str
    iterations: dict[str, int]  # phase -> iterations counted
    functions: dict[str, dict[str, Any]]  # key -> {qualname, file, line, fits: {phase: Fit}}
    defined: dict[str, bool] = field(default_factory=dict)  # hotpath name -> at this revision

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Measured:
        funcs = {
            k: {**v, "fits": {p: Fit(**f) for p, f in v["fits"].items()}}
            for k, v in raw["functions"].items()
        }
        return cls(raw["revision"], raw["preset"], raw["iterations"], funcs, raw.get("defined", {}))

    def by_name(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for f in self.functions.values():
            out.setdefault(f["qualname"], []).append(f)
        return out

    def as_table(self, commit: str | None) -> MeasuredMap:
        """The rows target mode's replay reads (bench.core.hotpath.MeasuredMap)."""
        rows = []
        for name, fs in sorted(self.by_name().items()):
            f = max(fs, key=lambda x: sum(ft.calls_per_iteration for ft in x["fits"].values()))
            fits = {p: ft for p, ft in f["fits"].items() if ft.explained >= MIN_EXPLAINED}
            if not fits:
                continue
            phases = tuple(sorted(fits))
            first = fits[phases[0]].frequency
            per_phase = tuple(
                sorted((p, ft.frequency) for p, ft in fits.items() if ft.frequency != first)
            )
            rows.append(
                HotFunction(
                    name,
                    first,
                    phases,
                    f"{f['file']}:{f['line']}",
                    f"measured ({self.preset}): "
                    + ", ".join(
                        f"{p} {ft.rate:.2f} per {ft.frequency[4:]}" for p, ft in fits.items()
                    ),
                    "",
                    per_phase,
                )
            )
        return MeasuredMap(
            self.revision,
            commit,
            self.preset,
            dict(self.iterations),
            tuple(rows),
            tuple(sorted(self.by_name())),
        )


def build(out: dict[str, Any], *, revision: str, preset: str) -> Measured:
    """From a driver's counting output (calls per iteration beside its records)."""
    records = out["records"]
    calls = out["calls"]
    by_phase: dict[str, list[int]] = {}
    for i, rec in enumerate(records):
        phase = PHASE_OF_MODE.get(rec["mode"])
        if phase is not None:
            by_phase.setdefault(phase, []).append(i)
    functions: dict[str, dict[str, Any]] = {}
    for key, (qualname, file, line) in out["functions"].items():
        fits: dict[str, Fit] = {}
        for phase, idx in by_phase.items():
            ys = [float(calls[i].get(key, 0)) for i in idx]
            fit = classify(ys, [_events(records[i]) for i in idx])
            if fit is not None:
                fits[phase] = fit
        if fits:
            functions[key] = {"qualname": qualname, "file": file, "line": line, "fits": fits}
    return Measured(
        revision,
        preset,
        {p: len(i) for p, i in by_phase.items()},
        functions,
        dict(out.get("defined", {})),
    )


# -- beside the table -----------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    name: str
    status: str  # agree | differ | missing | new
    table: str  # the typed row's frequency in the measured phases ('' for new)
    measured: str  # e.g. 'decode per_batch_request 1.00, extend per_iteration 1.00'
    where: str  # file:line at the revision ('' when not called)


def _describe(fits: dict[str, Fit]) -> str:
    return ", ".join(
        f"{p} {ft.frequency} {ft.rate:.2f}"
        + ("" if ft.explained >= MIN_EXPLAINED else f" (fit {ft.explained:.0%})")
        for p, ft in sorted(fits.items())
    )


def compare(measured: Measured, *, new_limit: int = 20) -> list[Row]:
    """hotpath.py's rows (in the phases counted) beside the measured map."""
    names = measured.by_name()
    phases = set(measured.iterations)
    rows: list[Row] = []
    for h in hotpath.HOT_PATH:
        wanted = {p: h.frequency_in(p) for p in h.phases if p in phases}
        if not wanted:
            continue
        table = ", ".join(f"{p} {f}" for p, f in sorted(wanted.items()))
        found = names.get(h.name)
        if not found:
            defined = measured.defined.get(h.name)
            if defined is False:
                why = "not defined at this revision"
                moved = _same_method(h.name, names)
                if moved is not None:
                    why += f"; as {moved['qualname']}: {_describe(moved['fits'])}"
            else:
                why = "not called" + (f" (only {h.condition})" if h.condition else "")
            rows.append(Row(h.name, "missing", table, why, ""))
            continue
        f = max(found, key=lambda x: sum(ft.calls_per_iteration for ft in x["fits"].values()))
        fits: dict[str, Fit] = f["fits"]
        # compared where the function was called; a phase of the table's it never ran in is
        # said in the measured column
        compared = {p: freq for p, freq in wanted.items() if p in fits}
        same = bool(compared) and all(
            fits[p].frequency == freq and fits[p].explained >= MIN_EXPLAINED
            for p, freq in compared.items()
        )
        silent = [p for p in wanted if p not in fits]
        text = _describe(fits) + (f"; not called in {', '.join(silent)}" if silent else "")
        status = "agree" if same else "differ"
        rows.append(Row(h.name, status, table, text, f"{f['file']}:{f['line']}"))
    known = {h.name for h in hotpath.HOT_PATH}
    fresh = []
    for name, fs in names.items():
        if name in known or "<" in name:
            continue
        f = max(fs, key=lambda x: sum(ft.calls_per_iteration for ft in x["fits"].values()))
        if not f["file"].startswith(SCHEDULER_MODULES):
            continue
        per_it = max(ft.calls_per_iteration for ft in f["fits"].values())
        if per_it >= 1.0:
            fresh.append(
                (per_it, Row(name, "new", "", _describe(f["fits"]), f"{f['file']}:{f['line']}"))
            )
    fresh.sort(key=lambda x: -x[0])
    rows += [r for _, r in fresh[:new_limit]]
    return rows


def _same_method(name: str, names: dict[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
    """A measured function of another class with the same method name (a method that moved:
    SchedulerBatchResultProcessor's were SchedulerOutputProcessorMixin's before sgl-project/
    sglang #25637), the most called one."""
    method = name.rpartition(".")[2]
    if "." not in name:
        return None
    found = [
        f for q, fs in names.items() if q.rpartition(".")[2] == method and q != name for f in fs
    ]
    if not found:
        return None
    return max(found, key=lambda x: sum(ft.calls_per_iteration for ft in x["fits"].values()))


def lines(measured: Measured, rows: list[Row]) -> list[str]:
    """The comparison as the terminal and docs show it."""
    counted = ", ".join(f"{n} {p} iterations" for p, n in sorted(measured.iterations.items()))
    out = [
        f"hot-path frequency map of {measured.revision}, measured ({measured.preset}: {counted}), "
        f"beside bench/core/hotpath.py ({hotpath.COMMIT}):",
        "",
    ]
    w = max([24, *(len(r.name) for r in rows)])
    out.append(f"{'function':<{w}}  {'status':<7}  {'hotpath.py':<40}  measured")
    for r in rows:
        where = f"  [{r.where}]" if r.where else ""
        out.append(f"{r.name:<{w}}  {r.status:<7}  {r.table:<40}  {r.measured}{where}")
    counts = {s: sum(r.status == s for r in rows) for s in ("agree", "differ", "missing", "new")}
    out += [
        "",
        ", ".join(f"{n} {s}" for s, n in counts.items())
        + f" (new: the {sum(r.status == 'new' for r in rows)} most called)",
    ]
    return out


def markdown(measured: Measured, rows: list[Row]) -> str:
    counted = ", ".join(f"{n} {p} iterations" for p, n in sorted(measured.iterations.items()))
    out = [
        f"Measured at {measured.revision} ({measured.preset}: {counted}), beside "
        f"bench/core/hotpath.py ({hotpath.COMMIT}).",
        "",
        "| function | status | hotpath.py | measured (calls per event) | where |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(f"| `{r.name}` | {r.status} | {r.table} | {r.measured} | {r.where} |")
    return "\n".join(out) + "\n"


def changes_digest(changes: Mapping[str, Any] | None) -> str:
    if not changes:
        return ""
    return hashlib.sha256(json.dumps(dict(changes), sort_keys=True).encode()).hexdigest()[:8]


def store(measured: Measured, source: Any, changes: Mapping[str, Any] | None = None) -> Path:
    """Kept in the user's cache by revision, preset and --set values; and as the revision's
    plain map (where target mode's replay and hot-path selection find it) when it is
    hotpath.MAP_PRESET's without changes, or the revision has none yet: a later count of another
    preset no longer replaces it."""
    key = source.commit or source.label
    own = hotpath.measured_path(key, measured.preset, changes_digest(changes))
    plain = hotpath.measured_path(key)
    own.parent.mkdir(parents=True, exist_ok=True)
    table = measured.as_table(source.commit)
    paths = [own]
    if (measured.preset == hotpath.MAP_PRESET and not changes) or not plain.is_file():
        paths.append(plain)
    for path in paths:
        write_json(path, table.to_json())
        write_json(path.with_suffix(".counts.json"), measured.to_json())
    return own


def load(path: Path) -> Measured:
    return Measured.from_json(json.loads(path.read_text(encoding="utf-8")))
