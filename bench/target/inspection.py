"""`python -m bench target inspect PATH[@REV]`: what a revision of an SGLang tree holds, read
with `ast` only (sglang is never imported; a revision's files are read with `git show`).

    the request class   Req in .../managers/schedule_batch.py (mixins followed across the
                        tree's files): attributes, GC-tracked values, keyword parameters
    the state's home    fields on Req, a side table, a lazy or a declared attribute (home.py)
    the call sites      per function, state lookups and field accesses (sites.py), side by side
                        with the harness's model of the same path (bench.core.callsites), every
                        difference flagged; and whether ForwardBatch.init_new scans the batch's
                        requests on every forward or reads a batch-level field

Names read from the tree are checked to be Python identifiers where they are read (home.py's
`identifier`): the strategy module generated from an inspection holds them as code.

An Inspection also says how the harness measures the revision (`profile`): which access
pattern each modelled call site follows, whether the per-forward scan exists, and what the
model cannot express ("not modelled at REV: ...").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Any

from bench.base.errors import UsageError
from bench.core import reqmodel
from bench.core.callsites import MODELLED_FROM, MODELLED_SITES, written_accesses
from bench.core.reqmodel import RequestModel
from bench.target.home import StateHome, find_home, identifier
from bench.target.sites import ForwardScan, FunctionSites, forward_scan, read_sites
from bench.target.tree import SourceTree, skip_file

SCHEDULE_BATCH = "sglang/srt/managers/schedule_batch.py"
# How the harness runs the capture-layer scan for a revision (bench.core.scheduler):
#   every_forward   ForwardBatch.init_new scans the batch's requests on every forward
#   prefill_batch   a batch-level field set once per prefill batch by a scan on the prefill
#                   node; decode forwards read the field (no per-request lookups)
#   none            no scan at all
FORWARD_SCANS = ("every_forward", "prefill_batch", "none")


class TreeFiles:
    """bench.core.reqmodel.Files over one revision of a tree."""

    def __init__(self, tree: SourceTree) -> None:
        self.tree = tree

    def read_text(self, path: Any) -> str:
        return self.tree.read(PurePosixPath(path).as_posix())

    def is_file(self, path: Any) -> bool:
        return self.tree.exists(PurePosixPath(path).as_posix())


def find_schedule_batch(tree: SourceTree) -> str:
    found = [p for p in tree.files(".py") if p.endswith(SCHEDULE_BATCH) and not skip_file(p)]
    if not found:
        raise UsageError(f"{tree.label}: no {SCHEDULE_BATCH} (is this an SGLang source tree?)")
    return min(found, key=len)


def read_request_model(tree: SourceTree, schedule_batch: str, name: str) -> RequestModel:
    """The revision's Req as a request model; its attribute and parameter names checked to be
    Python identifiers (the request class is generated from them: NotAnIdentifier, one line)."""
    try:
        model = reqmodel.import_req(
            PurePosixPath(schedule_batch),
            name,
            origin=f"{schedule_batch} at {tree.label}",
            files=TreeFiles(tree),
        )
    except reqmodel.ImportReqError as exc:
        raise UsageError(f"{tree.label}: {exc}") from None
    for a in model.attrs:
        identifier(tree, a.where or schedule_batch, a.line, a.name, "Req attribute")
    for p in model.params:
        identifier(tree, schedule_batch, 0, p.name, "Req.__init__ parameter")
    return model


@dataclass(frozen=True)
class SiteRow:
    """One modelled call site, side by side with the revision."""

    site: str
    functions: tuple[str, ...]  # the real functions found at the revision
    where: str
    lookups: int | None  # None: not found at the revision
    accesses: int | None
    pattern: str  # what the revision does: per_field | cached | direct | missing
    at_source: int  # accesses at MODELLED_FROM
    modelled: int  # accesses written in the harness's template
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    """How the harness measures this revision."""

    site_patterns: dict[str, str]  # harness call site -> per_field | cached
    forward_scan: str  # one of FORWARD_SCANS
    capture: str  # get (the scan creates states) | peek
    not_modelled: tuple[str, ...] = ()


@dataclass(frozen=True)
class Inspection:
    tree: SourceTree
    schedule_batch: str
    model: RequestModel
    home: StateHome
    sites: list[FunctionSites]
    forward: ForwardScan
    rows: list[SiteRow]
    unmodelled: list[FunctionSites]
    profile: Profile
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        t = self.tree
        return {
            "tree": {
                "path": str(t.path),
                "rev": t.rev,
                "commit": t.commit,
                "short": t.short,
                "label": t.label,
                "dirty": t.dirty,
            },
            "request_class": {
                "file": self.schedule_batch,
                "attributes": len(self.model.attrs),
                "tracked_values": self.model.tracked(),
                "keyword_parameters": len(self.model.params),
                "histogram": self.model.histogram(),
                "followed": list(self.model.inlined),
                "notes": list(self.model.notes),
            },
            "state_home": {**self.home.to_json(), "describe": self.home.describe()},
            "call_sites": [asdict(s) | {"pattern": s.pattern} for s in self.sites],
            "forward_batch": self.forward.to_json(),
            "harness_model": {
                "modelled_from": MODELLED_FROM,
                "sites": [asdict(r) for r in self.rows],
                "not_modelled_functions": [f"{f.file}:{f.function}" for f in self.unmodelled],
            },
            "profile": asdict(self.profile),
            "notes": self.notes,
        }


def _rows(home: StateHome, sites: list[FunctionSites], fwd: ForwardScan) -> list[SiteRow]:
    by_name: dict[str, list[FunctionSites]] = {}
    for f in sites:
        by_name.setdefault(f.function.rsplit(".", 1)[-1], []).append(f)
    rows = []
    for m in MODELLED_SITES:
        names = m.functions
        if m.role == "scan":
            if home.scan_helper:
                names = (home.scan_helper,)
            elif fwd.kind == "batch_field":
                names = tuple(s.rsplit(":", 1)[-1].rsplit(".", 1)[-1] for s in fwd.setters)
        found = [f for n in names for f in by_name.get(n, [])]
        flags: list[str] = []
        if not found:
            rows.append(
                SiteRow(
                    m.site,
                    (),
                    "",
                    None,
                    None,
                    "missing",
                    m.accesses_at_source,
                    written_accesses(m.site),
                    (f"not found at this revision (looked for {', '.join(names)})",),
                )
            )
            continue
        lookups = sum(f.lookups for f in found)
        accesses = sum(f.accesses for f in found)
        if m.role == "scan":
            accesses = max(accesses, lookups)  # a scan reads one field per lookup
        if accesses != m.accesses_at_source and m.role != "scan":
            flags.append(
                f"{accesses} state accesses here, {m.accesses_at_source} at {MODELLED_FROM} "
                f"where the model was written ({written_accesses(m.site)} on the path it models)"
            )
        merged = FunctionSites(found[0].file, found[0].function, found[0].line, lookups, accesses)
        rows.append(
            SiteRow(
                m.site,
                tuple(f"{f.file}:{f.function}" for f in found),
                found[0].where,
                lookups,
                accesses,
                merged.pattern,
                m.accesses_at_source,
                written_accesses(m.site),
                tuple(flags),
            )
        )
    return rows


def _profile(home: StateHome, rows: list[SiteRow], fwd: ForwardScan) -> Profile:
    patterns: dict[str, str] = {}
    not_modelled: list[str] = []
    for r in rows:
        if r.site.startswith("capture_layers"):
            continue
        # a site missing at this revision keeps the form the PR wrote it in
        default = "direct" if home.layout == "fields_on_req" else "per_field"
        patterns[r.site] = r.pattern if r.pattern != "missing" else default
    if fwd.kind in ("scan", "not_found"):
        forward = "every_forward"  # not found: as the PR has it (a note says so)
    elif fwd.kind == "batch_field":
        forward = "prefill_batch" if fwd.prefill_only or not fwd.setters else "every_forward"
        if not fwd.prefill_only and fwd.setters:
            not_modelled.append(
                "the batch-level capture-layer field is set outside the prefill node "
                f"({', '.join(fwd.setters)}): modelled as a scan on every forward"
            )
    else:
        forward = "none"
    if home.layout == "fields_on_req":
        not_modelled.append(
            f"attribute names: the fields are {home.prefix}<field> on Req; the harness names "
            "them <field> (same count, position and kinds)"
        )
    if home.missing:
        not_modelled.append(f"fields absent at this revision: {', '.join(home.missing)}")
    for r in rows:
        if r.pattern == "missing":
            not_modelled.append(f"{r.site}: {r.flags[0]}; measured as the PR wrote it")
    return Profile(
        site_patterns=patterns,
        forward_scan=forward,
        capture="get" if home.scan_creates or home.layout != "side_table" else "peek",
        not_modelled=tuple(not_modelled),
    )


def inspect_tree(tree: SourceTree, *, model_name: str | None = None) -> Inspection:
    schedule_batch = find_schedule_batch(tree)
    model = read_request_model(tree, schedule_batch, model_name or tree.strategy_name())
    home = find_home(tree, model, schedule_batch)
    sites = read_sites(tree, home)
    fwd = forward_scan(tree, home, sites)
    rows = _rows(home, sites, fwd)
    modelled = {f for r in rows for f in r.functions}
    internal = {home.getter, home.scan_helper, home.removal} - {""}
    unmodelled = [
        f
        for f in sites
        if f"{f.file}:{f.function}" not in modelled
        and f.function.rsplit(".", 1)[-1] not in internal
        and not f.function.endswith("init_new")
    ]
    notes = []
    if fwd.kind == "not_found":
        notes.append(
            "ForwardBatch.init_new not found: the per-forward scan is modelled as in the PR"
        )
    return Inspection(
        tree,
        schedule_batch,
        model,
        home,
        sites,
        fwd,
        rows,
        unmodelled,
        _profile(home, rows, fwd),
        notes,
    )


# -- text -----------------------------------------------------------------------------------


def describe(ins: Inspection) -> str:
    """What `bench target inspect` prints."""
    m = ins.model
    hist = ", ".join(f"{k} {n}" for k, n in m.histogram().items())
    t = ins.tree
    lines = [
        f"tree: {t.label}" + (f" (commit {t.commit})" if t.commit else ""),
        f"request class: Req in {ins.schedule_batch}: {len(m.attrs)} attributes ({hist}); "
        f"{m.tracked()} GC-tracked values at construction; {len(m.params)} keyword parameters"
        + (f"; followed {', '.join(m.inlined)}" if m.inlined else ""),
        f"state home: {ins.home.describe()}",
        f"forward batch: {ins.forward.describe()}",
        "",
        "call sites (static counts: what the source says; lookups = getter calls, accesses = "
        "field reads and writes):",
    ]
    width = max([40, *(len(f"{f.file}:{f.function}") for f in ins.sites)])
    lines.append(f"  {'function':<{width}} {'line':>5} {'lookups':>7} {'accesses':>8}  pattern")
    for f in ins.sites:
        extra = []
        if f.scans:
            extra.append(f"{f.scans} scan call{'s' if f.scans > 1 else ''}")
        if f.batch_field:
            extra.append(f"batch field x{f.batch_field}")
        lines.append(
            f"  {f.file + ':' + f.function:<{width}} {f.line:>5} {f.lookups:>7} {f.accesses:>8}  "
            f"{f.pattern}" + (f" ({', '.join(extra)})" if extra else "")
        )
    lines += [
        "",
        f"the harness's model of the same paths (written from {MODELLED_FROM}):",
        f"  {'model site':<24} {'here':>5} {'at source':>9} {'model':>5}  pattern here  "
        "function here",
    ]
    for r in ins.rows:
        here = "-" if r.accesses is None else str(r.accesses)
        lines.append(
            f"  {r.site:<24} {here:>5} {r.at_source:>9} {r.modelled:>5}  {r.pattern:<12}  "
            f"{', '.join(r.functions) or '(none)'}"
        )
        lines += [f"    ! {flag}" for flag in r.flags]
    if ins.unmodelled:
        lines.append("  ! functions touching the state that the model does not run:")
        lines += [
            f"      {f.file}:{f.function} ({f.lookups} lookups, {f.accesses} accesses)"
            for f in ins.unmodelled
        ]
    p = ins.profile
    lines += [
        "",
        "measured as: "
        + ", ".join(f"{k} {v}" for k, v in p.site_patterns.items())
        + f"; capture-layer scan {p.forward_scan} ({p.capture})",
    ]
    lines += [f"not modelled at {t.short}: {n}" for n in p.not_modelled]
    lines += [f"note: {n}" for n in ins.notes]
    return "\n".join(lines)
