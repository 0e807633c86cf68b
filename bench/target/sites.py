"""The call sites of a revision: per function, how the code touches the PD hidden state.

Read with `ast` from every file that names the state (its getter, its scan helper, or its
fields on Req), per innermost function:

    lookups      calls that look a request's state up (the getter; for a lazy or declared
                 attribute also `req.NAME` reads and getattr(req, NAME, ...))
    accesses     reads and writes of the state's fields (`getter(req).meta`, `state.meta` for a
                 local bound to a lookup, `req.pd_hidden_meta` for fields on Req)
    scans        calls to the capture-layer scan over a list of requests
    batch_field  reads and writes of a batch-level capture-layer field (`batch.X_capture_layer_ids`)

and, separately, what ForwardBatch.init_new does on every forward: scan the batch's requests,
or read a batch-level field. These are static counts (what the source says), not executed
counts: a function with error or pipeline-parallel branches counts those too.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass
from typing import Any

from bench.target.home import StateHome, parse
from bench.target.tree import SourceTree, skip_file

# A receiver whose source text ends like this is a batch, not a request.
_BATCH_SUFFIXES = ("batch",)
CAPTURE_FIELD = "capture_layer_ids"


@dataclass(frozen=True)
class FunctionSites:
    file: str
    function: str  # Class.method or function
    line: int
    lookups: int = 0
    accesses: int = 0
    writes: int = 0
    scans: int = 0
    batch_field: int = 0
    batch_field_writes: int = 0

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def touches(self) -> bool:
        return bool(self.lookups or self.accesses or self.scans or self.batch_field)

    @property
    def pattern(self) -> str:
        """per_field: a lookup for every field access; cached: fewer lookups than accesses;
        direct: fields on the request, no lookup."""
        if not self.lookups:
            return "direct"
        return "per_field" if self.lookups >= self.accesses else "cached"


@dataclass(frozen=True)
class ForwardScan:
    """What ForwardBatch.init_new does about capture layers on every forward."""

    kind: str  # scan | batch_field | none | not_found
    file: str = ""
    line: int = 0
    call: str = ""  # the scan call or the field read, as written
    creates: bool = False  # the scan goes through the get-or-create getter
    setters: tuple[str, ...] = ()  # batch_field: functions that set the field (file:function)
    prefill_only: bool = False  # batch_field: only prefill-side code sets it

    def describe(self) -> str:
        if self.kind == "scan":
            how = "get-or-create: creates a state for every request it visits until one has layers"
            return (
                f"scans the batch's requests on every forward: {self.call} "
                f"({self.file}:{self.line}; {how if self.creates else 'lookups that never create'})"
            )
        if self.kind == "batch_field":
            who = ", ".join(self.setters) or "nothing found"
            return (
                f"reads a batch-level field on every forward: {self.call} ({self.file}:{self.line}); "
                f"set by {who}"
            )
        if self.kind == "none":
            return f"no capture-layer lookup in ForwardBatch.init_new ({self.file}:{self.line})"
        return "ForwardBatch.init_new not found"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "setters": list(self.setters), "describe": self.describe()}


def _is_batch(node: ast.expr) -> bool:
    return ast.unparse(node).lower().endswith(_BATCH_SUFFIXES)


def call_aliases(module: ast.Module, name: str) -> set[str]:
    """Names a function is called by in this module (its own, and `import ... as` aliases)."""
    out = {name}
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name == name:
                    out.add(a.asname or a.name)
    return out


def _other_class_fields(module: ast.Module) -> set[str]:
    """Names that classes of this module (other than Req) declare: an access to such a name
    may be that class's own field (decode.py's DecodeRequest has pd_hidden_dst_indices)."""
    names: set[str] = set()
    for cls in (n for n in ast.walk(module) if isinstance(n, ast.ClassDef)):
        if cls.name == "Req":
            continue
        for node in ast.walk(cls):
            targets: list[ast.expr] = []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            elif isinstance(node, ast.Assign):
                targets = list(node.targets)
            for t in targets:
                if isinstance(t, ast.Name) and isinstance(node, ast.AnnAssign):
                    names.add(t.id)  # a dataclass field
                elif (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                ):
                    names.add(t.attr)
    return names


class _Counter(ast.NodeVisitor):
    """Counts per innermost function."""

    def __init__(self, rel: str, module: ast.Module, home: StateHome) -> None:
        self.rel = rel
        self.home = home
        self.getters = call_aliases(module, home.getter) if home.getter else set()
        self.scanners = call_aliases(module, home.scan_helper) if home.scan_helper else set()
        self.fields = set(home.fields.values())
        self.by_req = home.layout == "fields_on_req"
        self.ambiguous = _other_class_fields(module) & self.fields if self.by_req else set()
        self.stack: list[tuple[str, int]] = []
        self.counts: dict[tuple[str, int], dict[str, int]] = {}
        self.locals: list[set[str]] = []
        self.classes: list[str] = []

    # -- scopes -------------------------------------------------------------------------

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.name == "Req" and self.by_req:
            return  # Req's own __init__ assigns the fields: not a call site
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer = [self.stack[-1][0]] if self.stack else self.classes[-1:]
        name = ".".join([*outer, node.name])
        self.stack.append((name, node.lineno))
        self.locals.append(set())
        self.generic_visit(node)
        self.locals.pop()
        self.stack.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def _bump(self, key: str, by: int = 1) -> None:
        if not self.stack:
            return  # module level
        entry = self.counts.setdefault(self.stack[-1], {})
        entry[key] = entry.get(key, 0) + by

    # -- what counts --------------------------------------------------------------------

    def _is_lookup(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            if func.split(".")[-1] in self.getters:
                return True
            if (
                self.home.attribute
                and func == "getattr"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value == self.home.attribute
            ):
                return True
        if (
            self.home.attribute
            and isinstance(node, ast.Attribute)
            and node.attr == self.home.attribute
            and not (isinstance(node.value, ast.Name) and node.value.id == "self")
        ):
            return True
        return False

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.stack and self._is_lookup(node.value):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.locals[-1].add(t.id)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = ast.unparse(node.func)
        if self._is_lookup(node):
            self._bump("lookups")
        elif func.split(".")[-1] in self.scanners:
            self._bump("scans")
        elif (
            self.by_req
            and func in ("getattr", "setattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in self.fields
            and not _is_batch(node.args[0])
        ):
            self._bump("accesses")
            if func == "setattr":
                self._bump("writes")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        store = isinstance(node.ctx, ast.Store)
        if node.attr.endswith(CAPTURE_FIELD) and _is_batch(node.value):
            self._bump("batch_field")
            if store:
                self._bump("batch_field_writes")
        elif self.by_req:
            if (
                node.attr in self.fields
                and node.attr not in self.ambiguous
                and not (isinstance(node.value, ast.Name) and node.value.id == "self")
            ):
                self._bump("accesses")
                if store:
                    self._bump("writes")
        elif node.attr in self.fields and (
            self._is_lookup(node.value)
            or (
                isinstance(node.value, ast.Name)
                and self.locals
                and node.value.id in self.locals[-1]
            )
        ):
            self._bump("accesses")
            if store:
                self._bump("writes")
        elif self._is_lookup(node):
            self._bump("lookups")
        self.generic_visit(node)

    def results(self) -> list[FunctionSites]:
        return [
            FunctionSites(self.rel, name, line, **counts)
            for (name, line), counts in self.counts.items()
        ]


def _candidate_files(tree: SourceTree, home: StateHome) -> list[str]:
    needles: list[str] = []
    if home.layout == "fields_on_req":
        needles = [home.prefix + "meta", home.prefix + CAPTURE_FIELD]
        found: set[str] = set()
        for needle in needles:
            found.update(tree.grep(needle))
        return sorted(found)
    found = set(tree.grep(home.getter))
    if home.scan_helper:
        found.update(tree.grep(home.scan_helper))
    if home.attribute:
        found.update(tree.grep(home.attribute))
    return sorted(found)


def read_sites(tree: SourceTree, home: StateHome) -> list[FunctionSites]:
    """Every function that touches the state, in file and line order."""
    out: list[FunctionSites] = []
    for rel in _candidate_files(tree, home):
        if skip_file(rel):
            continue
        module = parse(tree, rel)
        counter = _Counter(rel, module, home)
        counter.visit(module)
        # the getter itself is the state's implementation, not a call site
        out += [
            f
            for f in counter.results()
            if f.touches and not (rel == home.module and f.function == home.getter)
        ]
    return sorted(out, key=lambda f: (f.file, f.line))


def forward_scan(tree: SourceTree, home: StateHome, sites: list[FunctionSites]) -> ForwardScan:
    """What ForwardBatch.init_new does about capture layers."""
    for rel in tree.grep("class ForwardBatch"):
        if skip_file(rel):
            continue
        module = parse(tree, rel)
        for cls in (n for n in module.body if isinstance(n, ast.ClassDef)):
            if cls.name != "ForwardBatch":
                continue
            init = next(
                (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "init_new"),
                None,
            )
            if init is None:
                continue
            scanners = call_aliases(module, home.scan_helper) if home.scan_helper else set()
            for node in ast.walk(init):
                if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in scanners:
                    return ForwardScan(
                        "scan", rel, node.lineno, ast.unparse(node), creates=home.scan_creates
                    )
            for node in ast.walk(init):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr.endswith(CAPTURE_FIELD)
                    and isinstance(node.ctx, ast.Load)
                    and _is_batch(node.value)
                ):
                    setters = [
                        f for f in sites if f.batch_field_writes and "init_new" not in f.function
                    ]
                    return ForwardScan(
                        "batch_field",
                        rel,
                        node.lineno,
                        ast.unparse(node),
                        setters=tuple(f"{f.file}:{f.function}" for f in setters),
                        prefill_only=bool(setters)
                        and all("prefill" in f.file.rsplit("/", 1)[-1] for f in setters),
                    )
            return ForwardScan("none", rel, init.lineno)
    return ForwardScan("not_found")
