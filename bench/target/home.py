"""Where a revision keeps the per-request PD hidden state, read with `ast` (never imported).

Four layouts are recognised:

    fields on Req        the ten fields are attributes set in Req.__init__, under a common
                         prefix (`self.pd_hidden_meta = None`, ...): the code before the PR
    side table           a class holding the ten fields, and a getter that looks a request up
                         in a module-level mapping (`_states.get(req)`, a WeakKeyDictionary or a
                         dict) and creates the state on a miss: the PR (hidden_state.py)
    lazy attribute       a getter that reads `getattr(req, NAME, None)` and assigns
                         `req.NAME = State()` on a miss: the review's suggestion
    declared attribute   the same with `NAME = None` declared in class Req's body and read as
                         `req.NAME`

What was found, with file and line, is a StateHome; `find_home` raises HomeNotFound (one line
naming what it looked for) when none fits. Every name read here (classes, functions, mappings, the
attribute a getter reads with getattr) is checked to be a Python identifier where it is read: the
harness writes these names into the strategy modules it generates, so a name that is not one
(`getattr(req, "a b; ...", None)`) is refused in one line naming its file and line
(NotAnIdentifier, exit 2).
"""

from __future__ import annotations

import ast
import keyword
from dataclasses import dataclass, field
from typing import Any

from bench.base.errors import UsageError
from bench.core.reqmodel import RequestModel
from bench.target.tree import SourceTree, skip_file
from strategies._contract import FIELDS

LAYOUTS = ("fields_on_req", "side_table", "lazy_attribute", "declared_attribute")
LAYOUT_WORDS = {
    "fields_on_req": "fields on Req",
    "side_table": "side table",
    "lazy_attribute": "lazy attribute",
    "declared_attribute": "declared attribute",
}
# A layout is recognised when at least this many of the ten fields are found (a revision may
# have renamed or dropped one or two; the report names those).
MIN_FIELDS = 8
# Mapping constructors a side table may use.
MAPPINGS = {
    "WeakKeyDictionary": "WeakKeyDictionary",
    "weakref.WeakKeyDictionary": "WeakKeyDictionary",
    "dict": "dict",
    "{}": "dict",
    "WeakValueDictionary": "WeakValueDictionary",
    "weakref.WeakValueDictionary": "WeakValueDictionary",
}
# Modules a state module may import for the harness to load it from the revision's file.
STDLIB_OK = frozenset(
    {
        "__future__",
        "weakref",
        "typing",
        "dataclasses",
        "collections",
        "threading",
        "enum",
        "functools",
        "itertools",
        "logging",
        "contextlib",
        "abc",
        "types",
        "copy",
        "math",
        "array",
    }
)


class HomeNotFound(UsageError):
    """No recognised layout at this revision."""


class NotAnIdentifier(UsageError):
    """A name read from a tree that is not a Python identifier (one line, exit 2)."""


def is_identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def identifier(tree: SourceTree, rel: str, line: int, name: str, what: str) -> str:
    """`name` when it is a Python identifier (not a keyword), else NotAnIdentifier naming the
    file and line it was read at: every name the target layer reads from a tree ends up in the
    code it generates, so anything else is refused where it is read."""
    if not is_identifier(name):
        at = f"{rel}:{line}" if line else rel
        raise NotAnIdentifier(
            f"{tree.label}: {at}: {what} {name!r} is not a Python identifier; the "
            "harness writes the names it reads into the code it generates and refuses this one"
        )
    return name


@dataclass(frozen=True)
class StateHome:
    layout: str  # one of LAYOUTS
    fields: dict[str, str]  # contract field -> its name at the revision
    missing: tuple[str, ...] = ()  # contract fields the revision lacks
    module: str = ""  # file of the state class and getter (side table, lazy, declared)
    state_class: str = ""
    getter: str = ""  # get-or-create function
    mapping: str = ""  # side table: the module-level name
    mapping_type: str = ""  # WeakKeyDictionary | dict | ...
    attribute: str = ""  # lazy / declared: the request attribute holding the state
    prefix: str = ""  # fields on Req: the common prefix (pd_hidden_)
    removal: str = ""  # a function that removes a request's entry, if the module has one
    scan_helper: str = ""  # the module's capture-layer scan over a list of requests
    scan_creates: bool = False  # the scan goes through the get-or-create getter
    imports: tuple[str, ...] = ()  # the state module's imports outside TYPE_CHECKING
    foreign_imports: tuple[str, ...] = ()  # of those, what is not standard library
    lines: dict[str, int] = field(default_factory=dict)  # what -> line in its file

    @property
    def words(self) -> str:
        return LAYOUT_WORDS[self.layout]

    @property
    def loadable(self) -> bool:
        """The state module can be loaded from the revision's file (standard library only)."""
        return bool(self.module) and not self.foreign_imports

    def describe(self) -> str:
        where = f" in {self.module}" if self.module else ""
        if self.layout == "fields_on_req":
            text = f"fields on Req: {len(self.fields)} attributes named {self.prefix}<field>"
        elif self.layout == "side_table":
            text = (
                f"side table{where}: {self.getter}() looks requests up in {self.mapping} "
                f"({self.mapping_type}) and creates a {self.state_class} on a miss"
            )
            text += f"; removal: {self.removal}()" if self.removal else "; no removal"
        elif self.layout == "lazy_attribute":
            text = (
                f"lazy attribute{where}: {self.getter}() reads getattr(req, "
                f"{self.attribute!r}, None) and attaches a {self.state_class} on a miss"
            )
        else:
            text = (
                f"declared attribute{where}: Req declares {self.attribute} = None; "
                f"{self.getter}() attaches a {self.state_class} on a miss"
            )
        if self.missing:
            text += f" (fields not found: {', '.join(self.missing)})"
        return text

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if v not in ("", (), {}, None)}
        out["layout_words"] = self.words
        out["missing"] = list(self.missing)
        out["imports"] = list(self.imports)
        out["foreign_imports"] = list(self.foreign_imports)
        return out


# -- helpers --------------------------------------------------------------------------------


def parse(tree: SourceTree, rel: str) -> ast.Module:
    try:
        return ast.parse(tree.read(rel), filename=rel)
    except SyntaxError as exc:
        raise UsageError(
            f"{tree.label}: {rel} is not valid Python ({exc.msg} at line {exc.lineno})"
        ) from None


def _class_fields(cls: ast.ClassDef) -> dict[str, int]:
    """Names a class holds: `self.x = ...` in __init__, annotated or assigned class body names
    (dataclasses), with their lines."""
    found: dict[str, int] = {}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.setdefault(node.target.id, node.lineno)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    found.setdefault(t.id, node.lineno)
        elif isinstance(node, ast.FunctionDef) and node.name == "__init__":
            for sub in ast.walk(node):
                targets: list[ast.expr] = []
                if isinstance(sub, ast.Assign):
                    targets = list(sub.targets)
                elif isinstance(sub, ast.AnnAssign):
                    targets = [sub.target]
                for t in targets:
                    if (
                        isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name)
                        and t.value.id == "self"
                    ):
                        found.setdefault(t.attr, t.lineno)
    return found


def _imports(module: ast.Module) -> tuple[list[str], list[str]]:
    """Top-level module names imported outside `if TYPE_CHECKING:`, and those that are not in
    STDLIB_OK."""
    names: list[str] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                test = ast.unparse(node.test)
                if test in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                    visit(node.orelse)
                    continue
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Import):
                names.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                names.append(("." * node.level) + (node.module or ""))
            elif isinstance(node, ast.Try):
                visit(node.body)
                for h in node.handlers:
                    visit(h.body)

    visit(module.body)
    names = list(dict.fromkeys(names))
    foreign = [n for n in names if n.startswith(".") or n.split(".")[0] not in STDLIB_OK]
    return names, foreign


def module_mappings(module: ast.Module) -> dict[str, tuple[str, int]]:
    """Module-level names bound to a mapping: name -> (mapping type, line)."""
    out: dict[str, tuple[str, int]] = {}
    for node in module.body:
        value: ast.expr | None = None
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            value, targets = node.value, list(node.targets)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            value, targets = node.value, [node.target]
        if value is None:
            continue
        if isinstance(value, ast.Call):
            kind = MAPPINGS.get(ast.unparse(value.func))
        elif isinstance(value, ast.Dict) and not value.keys:
            kind = "dict"
        else:
            kind = None
        if kind is None:
            continue
        for t in targets:
            if isinstance(t, ast.Name):
                out[t.id] = (kind, node.lineno)
    return out


def first_param(fn: ast.FunctionDef) -> str | None:
    args = fn.args.args
    return args[0].arg if args else None


def creates_state(fn: ast.FunctionDef, state_class: str) -> bool:
    return any(
        isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[-1] == state_class
        for n in ast.walk(fn)
    )


@dataclass(frozen=True)
class Getter:
    kind: str  # side_table | lazy_attribute | declared_attribute
    name: str
    line: int
    mapping: str = ""
    attribute: str = ""
    attribute_line: int = 0  # where getattr(req, NAME, ...) names the attribute

    def checked(self, tree: SourceTree, rel: str) -> Getter:
        """Itself, once its names are known to be identifiers (NotAnIdentifier otherwise)."""
        identifier(tree, rel, self.line, self.name, "getter")
        if self.mapping:
            identifier(tree, rel, self.line, self.mapping, "mapping")
        if self.attribute:
            what = "attribute read with getattr" if self.attribute_line else "attribute"
            identifier(tree, rel, self.attribute_line or self.line, self.attribute, what)
        return self


def classify_getter(
    fn: ast.FunctionDef, state_class: str, mappings: dict[str, tuple[str, int]]
) -> Getter | None:
    """A get-or-create function over its first parameter, or None."""
    param = first_param(fn)
    if param is None or not creates_state(fn, state_class):
        return None
    for n in ast.walk(fn):
        if not isinstance(n, (ast.Call, ast.Subscript)):
            continue
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            owner = n.func.value
            if (
                isinstance(owner, ast.Name)
                and owner.id in mappings
                and n.func.attr in ("get", "setdefault")
                and n.args
                and isinstance(n.args[0], ast.Name)
                and n.args[0].id == param
            ):
                return Getter("side_table", fn.name, fn.lineno, mapping=owner.id)
        if (
            isinstance(n, ast.Subscript)
            and isinstance(n.value, ast.Name)
            and n.value.id in mappings
            and isinstance(n.slice, ast.Name)
            and n.slice.id == param
            and isinstance(n.ctx, ast.Load)
        ):
            return Getter("side_table", fn.name, fn.lineno, mapping=n.value.id)
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id == "getattr"
            and len(n.args) >= 2
            and isinstance(n.args[0], ast.Name)
            and n.args[0].id == param
            and isinstance(n.args[1], ast.Constant)
            and isinstance(n.args[1].value, str)
        ):
            return Getter(
                "lazy_attribute",
                fn.name,
                fn.lineno,
                attribute=n.args[1].value,
                attribute_line=n.lineno,
            )
    # declared: reads param.X, creates the state and assigns it to param.X
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == param
                ):
                    return Getter("declared_attribute", fn.name, fn.lineno, attribute=t.attr)
    return None


def _scan_helper(module: ast.Module, getter: str, mapping: str) -> tuple[str, bool, int] | None:
    """A module function that loops over its parameter and looks each element up: the
    capture-layer scan. (name, goes through the get-or-create getter, line)."""
    for fn in module.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name == getter:
            continue
        param = first_param(fn)
        for loop in ast.walk(fn):
            if not (
                isinstance(loop, ast.For)
                and isinstance(loop.iter, ast.Name)
                and loop.iter.id == param
                and isinstance(loop.target, ast.Name)
            ):
                continue
            var = loop.target.id
            for n in ast.walk(loop):
                if not isinstance(n, ast.Call) or not n.args:
                    continue
                arg = n.args[0]
                if not (isinstance(arg, ast.Name) and arg.id == var):
                    continue
                func = ast.unparse(n.func)
                if func == getter:
                    return fn.name, True, fn.lineno
                if mapping and func in (f"{mapping}.get",):
                    return fn.name, False, fn.lineno
                if func == "getattr":
                    return fn.name, False, fn.lineno
    return None


def removal_function(module: ast.Module, mapping: str) -> str:
    """A function that removes a request's entry from the side table (pop or del)."""
    for fn in module.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        for n in ast.walk(fn):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == mapping
                and n.func.attr == "pop"
            ):
                return fn.name
            if isinstance(n, ast.Delete) and any(
                isinstance(t, ast.Subscript)
                and isinstance(t.value, ast.Name)
                and t.value.id == mapping
                for t in n.targets
            ):
                return fn.name
    return ""


def function_lines(module: ast.Module) -> dict[str, int]:
    """Module-level functions and their lines."""
    return {n.name: n.lineno for n in module.body if isinstance(n, ast.FunctionDef)}


def req_class_body(tree: SourceTree, schedule_batch: str) -> dict[str, int]:
    """Names declared in class Req's own body (class attributes), with their lines."""
    module = parse(tree, schedule_batch)
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == "Req":
            out: dict[str, int] = {}
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    out[stmt.target.id] = stmt.lineno
                elif isinstance(stmt, ast.Assign):
                    for t in stmt.targets:
                        if isinstance(t, ast.Name):
                            out[t.id] = stmt.lineno
            for name, line in out.items():
                identifier(tree, schedule_batch, line, name, "name declared in class Req")
            return out
    return {}


# -- the search -----------------------------------------------------------------------------


def _fields_on_req(model: RequestModel) -> StateHome | None:
    names = {a.name: a.line for a in model.attrs}
    best: tuple[int, str] = (0, "")
    for name in names:
        for f in FIELDS:
            if name.endswith(f) and name != f:
                prefix = name[: -len(f)]
                hits = sum(1 for g in FIELDS if prefix + g in names)
                best = max(best, (hits, prefix))
    hits, prefix = best
    if hits < MIN_FIELDS:
        return None
    fields = {f: prefix + f for f in FIELDS if prefix + f in names}
    return StateHome(
        layout="fields_on_req",
        fields=fields,
        missing=tuple(f for f in FIELDS if f not in fields),
        prefix=prefix,
        lines={f"Req.{n}": names[n] for n in fields.values()},
    )


def _side_home(tree: SourceTree, req_body: dict[str, int]) -> StateHome | None:
    """A state class holding the fields, and its get-or-create getter, in one module."""
    for rel in tree.grep("current_src_indices", "owner_direct_sent"):
        if skip_file(rel):
            continue
        module = parse(tree, rel)
        mappings = module_mappings(module)
        for cls in (n for n in module.body if isinstance(n, ast.ClassDef)):
            held = _class_fields(cls)
            present = [f for f in FIELDS if f in held]
            if len(present) < MIN_FIELDS or cls.name == "Req":
                continue
            for fn in (n for n in module.body if isinstance(n, ast.FunctionDef)):
                g = classify_getter(fn, cls.name, mappings)
                if g is None:
                    continue
                g = g.checked(tree, rel)
                identifier(tree, rel, cls.lineno, cls.name, "state class")
                kind = g.kind
                if kind == "lazy_attribute" and g.attribute in req_body:
                    kind = "declared_attribute"
                if kind == "declared_attribute" and g.attribute not in req_body:
                    kind = "lazy_attribute"  # attached without a declaration on Req
                scan = _scan_helper(module, g.name, g.mapping)
                names, foreign = _imports(module)
                lines = {f"class {cls.name}": cls.lineno, f"def {g.name}": g.line}
                if g.mapping:
                    lines[g.mapping] = mappings[g.mapping][1]
                if scan:
                    lines[f"def {scan[0]}"] = scan[2]
                if kind == "declared_attribute":
                    lines[f"Req.{g.attribute}"] = req_body[g.attribute]
                removal = removal_function(module, g.mapping) if g.mapping else ""
                if removal:
                    lines[f"def {removal}"] = function_lines(module)[removal]
                    identifier(tree, rel, lines[f"def {removal}"], removal, "removal")
                return StateHome(
                    layout=kind,
                    fields={f: f for f in present},
                    missing=tuple(f for f in FIELDS if f not in present),
                    module=rel,
                    state_class=cls.name,
                    getter=g.name,
                    mapping=g.mapping,
                    mapping_type=mappings[g.mapping][0] if g.mapping else "",
                    attribute=g.attribute,
                    removal=removal,
                    scan_helper=scan[0] if scan else "",
                    scan_creates=bool(scan and scan[1]),
                    imports=tuple(names),
                    foreign_imports=tuple(foreign),
                    lines=lines,
                )
    return None


def find_home(tree: SourceTree, model: RequestModel, schedule_batch: str) -> StateHome:
    home = _fields_on_req(model)
    if home is not None:
        return home
    home = _side_home(tree, req_class_body(tree, schedule_batch))
    if home is not None:
        return home
    raise HomeNotFound(
        f"{tree.label}: no per-request PD hidden state found: looked for the fields "
        f"{', '.join(FIELDS)} (at least {MIN_FIELDS}) on Req in {schedule_batch} under a "
        "common prefix, and for a class holding them with a get-or-create getter (a "
        "module-level mapping read with .get(req), getattr(req, NAME, None), or a declared "
        "Req attribute)"
    )
