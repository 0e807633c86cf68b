"""A side table's state module rebuilt from what `ast` read, never executed from the tree.

The PD hidden study measures a side-table revision through its own state module: the state
class, the module-level mapping, the get-or-create getter and the removal. By default the harness
runs none of the tree's code: `replay_source` writes that module anew from the revision's file as
`ast` reads it:

    the state class   its fields in order, with their defaults as the code writes them (a
                      literal, a fresh empty list, dict or set; anything else None); a dataclass
                      again a dataclass with the same options (slots, frozen, ...), a plain
                      class an __init__ assigning the fields, with __slots__ where it has them
    the mapping       a weakref.WeakKeyDictionary, a WeakValueDictionary or a dict, as declared
    the getter        the revision's function itself, re-emitted from its syntax tree once
    the removal       every node of it is known to be one of a small set (ALLOWED): its
                      parameters and locals, the mapping's get/setdefault/pop and subscripts,
                      a call of the state class without arguments, comparisons, if, return,
                      try/except KeyError, del; so each keeps its lookups and branches, the
                      shape the benchmark measures

Anything else (another call, a loop, a lock, a base class, a decorator that is not dataclass,
a msgspec Struct, arguments to the state class) cannot be replayed: ReplayRefused, one line naming
the file and line and `--trust-target-code`, which executes the revision's own file instead
(bench/target/materialize.py).
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Any

from bench.base.errors import UsageError
from bench.target.groups import GroupField, kind_of, read_container
from bench.target.home import StateHome, identifier, parse
from bench.target.tree import SourceTree

TRUST_FLAG = "--trust-target-code"
# dataclass() options a replayed state class keeps (literal True/False only).
DATACLASS_OPTIONS = frozenset(
    {
        "init",
        "repr",
        "eq",
        "order",
        "unsafe_hash",
        "frozen",
        "match_args",
        "kw_only",
        "slots",
        "weakref_slot",
    }
)
MAPPING_EXPR = {
    "WeakKeyDictionary": "weakref.WeakKeyDictionary()",
    "WeakValueDictionary": "weakref.WeakValueDictionary()",
    "dict": "{}",
}
# The methods of the mapping a replayed function may call.
MAPPING_METHODS = frozenset({"get", "setdefault", "pop"})
# The exceptions a replayed function may catch.
CAUGHT = frozenset({"KeyError", "LookupError"})
# The syntax a replayed function may hold; each is further constrained in _Checker, and the
# function as emitted (annotations gone) is walked once more: one FunctionDef (its own), every
# other node of these kinds.
STATEMENTS: tuple[type[ast.stmt], ...] = (
    ast.Assign,
    ast.AnnAssign,
    ast.If,
    ast.Return,
    ast.Expr,
    ast.Pass,
    ast.Delete,
    ast.Try,
)
EXPRESSIONS: tuple[type[ast.expr], ...] = (
    ast.Name,
    ast.Constant,
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.IfExp,
    ast.NamedExpr,
    ast.Call,
    ast.Subscript,
    ast.Attribute,
    ast.Tuple,
)
COMPARISONS: tuple[type[ast.cmpop], ...] = (
    ast.Is,
    ast.IsNot,
    ast.In,
    ast.NotIn,
    ast.Eq,
    ast.NotEq,
)
ALLOWED: tuple[type[ast.AST], ...] = (
    ast.FunctionDef,
    ast.arguments,
    ast.arg,
    ast.ExceptHandler,
    *STATEMENTS,
    *EXPRESSIONS,
    *COMPARISONS,
    ast.Load,
    ast.Store,
    ast.Del,
    ast.Not,
    ast.And,
    ast.Or,
)


class ReplayRefused(UsageError):
    """A state module whose shape the replay cannot rebuild (one line, exit 2)."""


@dataclass(frozen=True)
class Replay:
    source: str  # the module's text
    notes: tuple[str, ...]  # what the replay does not carry over ("not modelled at REV")


def _refuse(tree: SourceTree, rel: str, line: int, what: str) -> ReplayRefused:
    return ReplayRefused(
        f"{tree.label}: {rel}:{line}: {what}; the harness replays a side table's module from "
        f"what ast reads and cannot replay this ({TRUST_FLAG} executes the revision's own file "
        "in the harness's process instead)"
    )


class _Checker:
    """Every node of one function is of the replayable kind (ReplayRefused otherwise)."""

    def __init__(
        self, tree: SourceTree, rel: str, fn: ast.FunctionDef, mapping: str, state_class: str
    ) -> None:
        self.tree, self.rel, self.fn = tree, rel, fn
        self.mapping, self.state_class = mapping, state_class
        args = fn.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self._no(fn, f"{fn.name}() takes *args, **kwargs or keyword-only parameters")
        if any(not isinstance(d, ast.Constant) for d in args.defaults):
            raise self._no(fn, f"{fn.name}() has a parameter default that is not a literal")
        if fn.decorator_list:
            raise self._no(fn.decorator_list[0], f"{fn.name}() is decorated")
        self.params = {a.arg for a in args.args}
        self.locals = {
            n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        } | {h.name for h in ast.walk(fn) if isinstance(h, ast.ExceptHandler) and h.name}
        for name in sorted(self.params | self.locals):
            identifier(tree, rel, fn.lineno, name, f"name in {fn.name}()")

    def _no(self, node: ast.AST, what: str) -> ReplayRefused:
        return _refuse(self.tree, self.rel, getattr(node, "lineno", self.fn.lineno), what)

    def check(self) -> None:
        for stmt in self.fn.body:
            self._stmt(stmt)

    def _stmt(self, node: ast.stmt) -> None:
        if not isinstance(node, STATEMENTS):
            raise self._no(node, f"{self.fn.name}() holds {type(node).__name__.lower()} code")
        if isinstance(node, ast.Assign):
            for t in node.targets:
                self._target(t)
            self._expr(node.value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is None or not isinstance(node.target, ast.Name):
                raise self._no(node, f"{self.fn.name}() holds an annotation without a value")
            self._expr(node.value)
        elif isinstance(node, ast.If):
            self._expr(node.test)
            for s in (*node.body, *node.orelse):
                self._stmt(s)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self._expr(node.value)
        elif isinstance(node, ast.Expr):
            if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                self._expr(node.value)  # a docstring, or a call of the mapping
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                if not self._subscript_of_mapping(t):
                    raise self._no(node, f"{self.fn.name}() deletes something else than an entry")
                self._expr(t.slice)  # type: ignore[attr-defined]
        elif isinstance(node, ast.Try):
            for h in node.handlers:
                names = (
                    h.type.elts
                    if isinstance(h.type, ast.Tuple)
                    else [h.type]
                    if h.type is not None
                    else []
                )
                if not names or any(
                    not isinstance(n, ast.Name) or n.id not in CAUGHT for n in names
                ):
                    raise self._no(h, f"{self.fn.name}() catches something else than KeyError")
            for s in (
                *node.body,
                *(s for h in node.handlers for s in h.body),
                *node.orelse,
                *node.finalbody,
            ):
                self._stmt(s)

    def _subscript_of_mapping(self, node: ast.expr) -> bool:
        return (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == self.mapping
        )

    def _target(self, node: ast.expr) -> None:
        if isinstance(node, ast.Name):
            return
        if self._subscript_of_mapping(node):
            self._expr(node.slice)  # type: ignore[attr-defined]
            return
        raise self._no(node, f"{self.fn.name}() assigns to something else than a local or entry")

    def _expr(self, node: ast.expr) -> None:
        fn = self.fn.name
        if not isinstance(node, EXPRESSIONS):
            raise self._no(node, f"{fn}() holds a {type(node).__name__.lower()} expression")
        if isinstance(node, ast.Name):
            if node.id not in self.params | self.locals | {self.mapping, self.state_class}:
                raise self._no(node, f"{fn}() reads {node.id}, which the replay does not define")
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (type(None), bool, int, str)):
                raise self._no(node, f"{fn}() holds a {type(node.value).__name__} literal")
        elif isinstance(node, ast.Compare):
            for e in (node.left, *node.comparators):
                self._expr(e)
            for op in node.ops:
                if not isinstance(op, COMPARISONS):
                    raise self._no(node, f"{fn}() compares with {type(op).__name__}")
        elif isinstance(node, ast.BoolOp):
            for e in node.values:
                self._expr(e)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.Not):
                raise self._no(node, f"{fn}() holds a {type(node.op).__name__} operation")
            self._expr(node.operand)
        elif isinstance(node, ast.IfExp):
            for e in (node.test, node.body, node.orelse):
                self._expr(e)
        elif isinstance(node, ast.NamedExpr):
            self._expr(node.value)
        elif isinstance(node, ast.Tuple):
            for e in node.elts:
                self._expr(e)
        elif isinstance(node, ast.Subscript):
            if not self._subscript_of_mapping(node):
                raise self._no(node, f"{fn}() indexes something else than {self.mapping}")
            self._expr(node.slice)
        elif isinstance(node, ast.Attribute):
            # an attribute of a parameter (the request's rid) or of a local (a state's field)
            if not (
                isinstance(node.value, ast.Name)
                and node.value.id in self.params | self.locals
                and isinstance(node.ctx, ast.Load)
                and not node.attr.startswith("_")
            ):
                raise self._no(node, f"{fn}() reads the attribute {ast.unparse(node)}")
        elif isinstance(node, ast.Call):
            self._call(node)

    def _call(self, node: ast.Call) -> None:
        fn = self.fn.name
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self._no(node, f"{fn}() calls {ast.unparse(node.func)} with keywords or *args")
        func = node.func
        if isinstance(func, ast.Name) and func.id == self.state_class:
            if node.args:
                raise self._no(node, f"{fn}() builds a {self.state_class} with arguments")
            return
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == self.mapping
            and func.attr in MAPPING_METHODS
        ):
            for a in node.args:
                self._expr(a)
            return
        raise self._no(node, f"{fn}() calls {ast.unparse(func)}")


class _NoAnnotations(ast.NodeTransformer):
    """The function without its annotations (they name the tree's types, never needed)."""

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.returns = None
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.Assign:
        assert node.value is not None  # checked
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)


def _only(tree: SourceTree, rel: str, module: ast.Module, kind: type, name: str) -> Any:
    """The module's one top-level definition of `name` (a second one is refused: which of the
    two runs depends on more than ast reads)."""
    found = [n for n in module.body if isinstance(n, kind) and getattr(n, "name", "") == name]
    if len(found) > 1:
        raise _refuse(tree, rel, found[1].lineno, f"{name} is defined twice")
    return found[0]


def _replayed_function(
    tree: SourceTree, rel: str, fn: ast.FunctionDef, mapping: str, state_class: str
) -> str:
    _Checker(tree, rel, fn, mapping, state_class).check()
    clean = _NoAnnotations().visit(ast.parse(ast.unparse(fn)).body[0])
    nodes = list(ast.walk(clean))
    odd = next((n for n in nodes if not isinstance(n, ALLOWED)), None)
    if odd is not None or sum(isinstance(n, ast.FunctionDef) for n in nodes) != 1:
        what = type(odd).__name__.lower() if odd is not None else "a nested function"
        raise _refuse(tree, rel, fn.lineno, f"{fn.name}() holds {what}")
    return f"# {rel}:{fn.lineno}, {fn.name}() as written\n" + ast.unparse(
        ast.fix_missing_locations(clean)
    )


def _slots_literal(cls: ast.ClassDef) -> tuple[str, ...] | None:
    """The names a class's `__slots__` literal lists (None: no literal __slots__)."""
    for node in cls.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            names = (value,) if isinstance(value, str) else tuple(value)
            return names if all(isinstance(n, str) for n in names) else None
    return None


def _default(f: GroupField) -> str:
    """A field's default as an expression the replay can build: the literal, a fresh empty
    container, or None (a literal Python cannot write back, such as 1e999, is None too)."""
    expr = f.default_expr
    if expr == "set()":
        return expr
    try:
        ast.literal_eval(expr)
    except (ValueError, SyntaxError):
        return "None"
    return expr


def _built(f: GroupField) -> bool:
    """A field whose default is code the replay does not run (None in the replay)."""
    return _default(f) == "None" and f.default != "None"


def _dataclass_options(tree: SourceTree, rel: str, cls: ast.ClassDef) -> dict[str, bool] | None:
    """The dataclass decorator's options (None: not a dataclass); anything but literal
    True/False for the options the replay knows is refused."""
    decorators = cls.decorator_list
    found = [
        d for d in decorators if ast.unparse(getattr(d, "func", d)).split(".")[-1] == "dataclass"
    ]
    if len(decorators) > len(found) or len(found) > 1:
        raise _refuse(tree, rel, cls.lineno, f"class {cls.name} has a decorator besides dataclass")
    if not found:
        return None
    d = found[0]
    if not isinstance(d, ast.Call):
        return {}
    options: dict[str, bool] = {}
    for k in d.keywords:
        if (
            k.arg not in DATACLASS_OPTIONS
            or not isinstance(k.value, ast.Constant)
            or not isinstance(k.value.value, bool)
        ):
            raise _refuse(tree, rel, d.lineno, f"class {cls.name}'s dataclass() options")
        options[k.arg] = k.value.value
    if d.args:
        raise _refuse(tree, rel, d.lineno, f"class {cls.name}'s dataclass() options")
    return options


# Methods that change how a state's attributes are read, written or built.
_HOOKS = frozenset(
    {"__getattr__", "__getattribute__", "__setattr__", "__delattr__", "__new__", "__post_init__"}
)


def _class_attributes(cls: ast.ClassDef, dataclass_: bool) -> list[GroupField]:
    """`x = value` in the class body (and, in a plain class, `x: T = value`): class
    attributes, not fields of the instances."""
    out: list[GroupField] = []
    for node in cls.body:
        if isinstance(node, ast.Assign):
            targets, value = list(node.targets), node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None and not dataclass_:
            targets, value = [node.target], node.value
        else:
            continue
        for t in targets:
            if isinstance(t, ast.Name) and not t.id.startswith("__"):
                kind, text = kind_of(value)
                out.append(GroupField(t.id, kind, text, node.lineno))
    return out


def _state_class(tree: SourceTree, rel: str, cls: ast.ClassDef) -> tuple[list[str], list[str]]:
    """The state class's lines, and the fields whose default the replay cannot build."""
    name = cls.name
    if cls.keywords or any(ast.unparse(b) != "object" for b in cls.bases):
        raise _refuse(tree, rel, cls.lineno, f"class {name} has a base class")
    options = _dataclass_options(tree, rel, cls)
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            node.decorator_list or node.name in _HOOKS
        ):
            what = "decorated method" if node.decorator_list else "method"
            raise _refuse(tree, rel, node.lineno, f"class {name} has the {what} {node.name}()")
    if options is not None and any(
        isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in cls.body
    ):
        raise _refuse(tree, rel, cls.lineno, f"dataclass {name} defines its own __init__()")
    container = read_container(cls, rel)
    if container.layout == "struct":
        raise _refuse(tree, rel, cls.lineno, f"class {name} is a msgspec Struct")
    shared = _class_attributes(cls, options is not None)
    if options is None:  # a plain class: only what __init__ assigns is a field
        only_init = copy.copy(cls)
        only_init.body = [
            n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"
        ]
        container = read_container(only_init, rel)
    fields = list(container.fields)
    for f in (*shared, *fields):
        identifier(tree, rel, f.line, f.name, f"field of {name}")
    built = [f.name for f in (*shared, *fields) if _built(f)]
    lines = [f"class {name}:"]
    if options is not None:
        args = ", ".join(f"{k}={v!r}" for k, v in options.items())
        lines.insert(0, f"@dataclasses.dataclass({args})")
    else:
        slots = _slots_literal(cls)
        if slots is None and container.layout == "slots":
            raise _refuse(tree, rel, cls.lineno, f"class {name}'s __slots__ is not a literal")
        if slots is not None:
            for slot in slots:
                identifier(tree, rel, cls.lineno, slot, f"slot of {name}")
            lines.append(f"    __slots__ = {slots!r}")
    lines += [f"    {f.name} = {_default(f)}" for f in shared]
    if options is not None:
        for f in fields:
            default = _default(f)
            if default in ("[]", "{}", "set()"):
                factory = {"[]": "list", "{}": "dict", "set()": "set"}[default]
                default = f"dataclasses.field(default_factory={factory})"
            lines.append(f"    {f.name}: object = {default}")
    else:
        if len(lines) > 1:
            lines.append("")
        lines.append("    def __init__(self):")
        lines += [f"        self.{f.name} = {_default(f)}" for f in fields] or ["        pass"]
    if lines[-1].endswith(":"):
        lines.append("    pass")
    return lines, built


def replay_source(tree: SourceTree, home: StateHome) -> Replay:
    """The side table's module (`home.module`) as the harness rebuilds it; ReplayRefused (one
    line) where ast cannot read its shape."""
    rel = home.module
    module = parse(tree, rel)
    cls: ast.ClassDef = _only(tree, rel, module, ast.ClassDef, home.state_class)
    mapping_line = home.lines.get(home.mapping, 0)
    if home.mapping_type not in MAPPING_EXPR:
        raise _refuse(tree, rel, mapping_line, f"{home.mapping} is a {home.mapping_type}")
    class_lines, built = _state_class(tree, rel, cls)
    getter = _replayed_function(
        tree,
        rel,
        _only(tree, rel, module, ast.FunctionDef, home.getter),
        home.mapping,
        home.state_class,
    )
    removal = (
        _replayed_function(
            tree,
            rel,
            _only(tree, rel, module, ast.FunctionDef, home.removal),
            home.mapping,
            home.state_class,
        )
        if home.removal
        else ""
    )
    weak = home.mapping_type.startswith("Weak")
    at = tree.short
    doc = (
        f"{rel} at {at}, replayed by reqstate-bench from what ast read (bench/target/replay.py):"
        f"\nthe state class {home.state_class}, the mapping {home.mapping}, {home.getter}()"
        + (f" and {home.removal}()" if home.removal else "")
        + ". The revision's file itself is never executed; --trust-target-code runs it instead."
    )
    head = [
        '"""' + doc.replace("\\", "/").replace('"""', "'''") + '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    imports = [
        *(["import dataclasses"] if class_lines[0].startswith("@dataclasses") else []),
        *(["import weakref"] if weak else []),
    ]
    parts = [
        *head,
        *([*imports, "", ""] if imports else [""]),
        f"# {rel}:{cls.lineno}",
        *class_lines,
        "",
        "",
        f"# {rel}:{mapping_line}",
        f"{home.mapping} = {MAPPING_EXPR[home.mapping_type]}",
        "",
        "",
        getter,
    ]
    if removal:
        parts += ["", "", removal]
    notes = []
    if built:
        notes.append(
            f"{home.state_class} fields built by code the replay does not run ("
            f"{', '.join(built)}): None in the replayed state module"
        )
    return Replay("\n".join(parts) + "\n", tuple(notes))


__all__ = ["TRUST_FLAG", "Replay", "ReplayRefused", "replay_source"]
