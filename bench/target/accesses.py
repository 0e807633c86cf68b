"""How a revision's code touches one state group: per function, every field access, read with
`ast` (static: what the source says, every branch included).

An access is a load, a store or an augmented assignment of a group field, reached from a
request the way the group's home allows:

    inline              req.f                     one attribute load
    container (lazy)    req.G.f                   two: reaching the holder, then the field;
                        lp = req.G; lp.f          a reach into a local, then the field
    side table          getter(req).f             a getter call (a lookup), then the field
    lazy / declared     getattr(req, G, None).f   likewise; a scalar lazy attribute is its own
                        getattr(req, f, default)  field, read with a default

and it sits inside a loop over the batch's requests or not (`for req in batch.reqs`, a
comprehension over `reqs`), under a branch the reader cannot resolve or not (its condition's
text). Receivers are recognised by name (req, r, reqs[i], self.req, new_req, ...; `self` inside
class Req and its mixins), so a local of another type named `req` would be counted too, and a
request passed under another name is missed: the counts are the source's, read mechanically.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from bench.core.groupsites import Access
from bench.target.groups import Group, is_request
from bench.target.home import parse
from bench.target.sites import call_aliases
from bench.target.tree import SourceTree, skip_file

# A loop whose iterable's text matches this iterates over the batch's requests.
_BATCH_ITER = re.compile(r"req|queue|batch|running", re.IGNORECASE)


@dataclass(frozen=True)
class FunctionAccesses:
    file: str
    function: str  # Class.method or function
    line: int
    accesses: tuple[Access, ...]

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def count(self, *, loop: bool | None = None) -> int:
        """Field accesses (loads, stores, augmented assignments), in the batch loop or not."""
        return sum(1 for a in self.accesses if a.field and (loop is None or a.loop == loop))

    def lookups(self, home_kind: str) -> int:
        """Holder reaches as written: one per field access through the home afresh, one per
        local bound, one per holder read on its own; none for fields on the request."""
        if home_kind == "inline":
            return 0
        return sum(1 for a in self.accesses if a.op in ("reach", "bind") or a.via == "reach")

    def loads(self, home_kind: str) -> int:
        """Attribute loads and getter calls as written (`req.f` one, `req.kv.f` two, `lp.f`
        one, the bind `lp = req.kv` one)."""
        per = 0 if home_kind == "inline" else 1
        return sum(1 if (not a.field or a.via == "local") else 1 + per for a in self.accesses)


class _Reader(ast.NodeVisitor):
    def __init__(self, rel: str, module: ast.Module, group: Group, req_classes: set[str]) -> None:
        self.rel = rel
        self.group = group
        self.home = group.home
        self.fields = set(group.names)
        self.req_classes = req_classes
        self.classes: list[str] = []
        self.stack: list[tuple[str, int]] = []
        self.found: dict[tuple[str, int], list[Access]] = {}
        self.loops: list[bool] = []
        self.guards: list[tuple[str, bool]] = []  # (condition, in its else arm)
        self.locals: list[set[str]] = []
        self.aug_targets: set[int] = set()
        self.counted: set[int] = set()  # reaches already counted with their field access
        self.getters = call_aliases(module, group.home.getter) if group.home.getter else set()

    # -- scopes --------------------------------------------------------------------------

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if self.classes and self.classes[-1] == "Req" and node.name == "__init__":
            return  # construction: measured by building the request, not replayed
        outer = [self.stack[-1][0]] if self.stack else self.classes[-1:]
        self.stack.append((".".join([*outer, node.name]), node.lineno))
        saved = (self.loops, self.guards)
        self.loops, self.guards = [], []
        self.locals.append(set())
        self.generic_visit(node)
        self.locals.pop()
        self.loops, self.guards = saved
        self.stack.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def _in_req(self) -> bool:
        return bool(self.classes) and self.classes[-1] in self.req_classes

    def _request(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name) and node.id == "self":
            return self._in_req()
        return is_request(node)

    # -- loops and branches ------------------------------------------------------------

    def _loop(self, iter_node: ast.expr, body: list[ast.AST]) -> None:
        self.loops.append(bool(_BATCH_ITER.search(ast.unparse(iter_node))))
        for node in body:
            self.visit(node)
        self.loops.pop()

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self._loop(node.iter, [node.target, *node.body])
        for n in node.orelse:
            self.visit(n)

    visit_AsyncFor = visit_For  # type: ignore[assignment]

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        gens = node.generators
        self.visit(gens[0].iter)
        batch = any(_BATCH_ITER.search(ast.unparse(g.iter)) for g in gens)
        self.loops.append(batch)
        for g in gens:
            self.visit(g.target)
            for cond in g.ifs:
                self.visit(cond)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                self.visit(getattr(node, part))
        self.loops.pop()

    visit_ListComp = _comprehension
    visit_SetComp = _comprehension
    visit_GeneratorExp = _comprehension
    visit_DictComp = _comprehension

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        cond = ast.unparse(node.test)[:80]
        self.guards.append((cond, False))
        for n in node.body:
            self.visit(n)
        self.guards.pop()
        if node.orelse:
            self.guards.append((cond, True))
            for n in node.orelse:
                self.visit(n)
            self.guards.pop()

    def visit_Assert(self, node: ast.Assert) -> None:
        self.visit(node.test)  # the message is evaluated only when the assertion fails

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.visit(node.test)
        cond = ast.unparse(node.test)[:80]
        self.guards.append((cond, False))
        self.visit(node.body)
        self.guards[-1] = (cond, True)
        self.visit(node.orelse)
        self.guards.pop()

    # -- what counts -------------------------------------------------------------------

    def _add(self, field: str, op: str, via: str) -> None:
        if not self.stack:
            return  # module level
        loop = any(self.loops)
        guard, negated = self.guards[-1] if self.guards else ("", False)
        self.found.setdefault(self.stack[-1], []).append(
            Access(field, op, via, loop, guard, negated)
        )

    def _op(self, node: ast.Attribute) -> str:
        if id(node) in self.aug_targets:
            return "aug"
        return "store" if isinstance(node.ctx, (ast.Store, ast.Del)) else "load"

    def _reach(self, node: ast.expr) -> bool:
        """Does this expression reach the group's holder from a request?"""
        home = self.home
        if home.getter and (
            isinstance(node, ast.Call)
            and ast.unparse(node.func).split(".")[-1] in self.getters
            and bool(node.args)
        ):
            return True  # the home's get-or-create getter (a side table, a lazy holder)
        if home.kind in ("container", "container_lazy", "declared_attribute"):
            return (
                isinstance(node, ast.Attribute)
                and node.attr == home.attribute
                and self._request(node.value)
            )
        if home.kind == "side_table":
            return (
                isinstance(node, ast.Call)
                and ast.unparse(node.func).split(".")[-1] == home.getter
                and bool(node.args)
            )
        if home.kind == "lazy_attribute":
            return (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value == home.attribute
                and self._request(node.args[0])
            ) or (
                isinstance(node, ast.Attribute)
                and node.attr == home.attribute
                and self._request(node.value)
            )
        return False

    def _scalar(self) -> bool:
        """A group that is one attribute on the request itself (lazy or declared)."""
        return (
            self.home.kind in ("lazy_attribute", "declared_attribute")
            and not self.home.cls
            and self.group.names == (self.home.attribute,)
        )

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Attribute):
            self.aug_targets.add(id(node.target))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if (
            self.locals
            and not self._scalar()
            and self.home.kind != "inline"
            and self._reach(node.value)
        ):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if names:
                self.locals[-1].update(names)
                self._add("", "bind", "reach")  # one reach into a local
                for t in node.targets:
                    if not isinstance(t, ast.Name):
                        self.visit(t)
                self._visit_reach_parts(node.value)
                return
        self.generic_visit(node)

    def _visit_reach_parts(self, node: ast.expr) -> None:
        """Visit a reach's own sub-expressions (its arguments) without counting it again."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.visit(child)

    def visit_Call(self, node: ast.Call) -> None:
        if (
            self._scalar()
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr")
        ):
            if (
                len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value == self.home.attribute
                and self._request(node.args[0])
            ):
                self._add(
                    self.home.attribute, "store" if node.func.id == "setattr" else "load", "reach"
                )
                for a in node.args[2:]:
                    self.visit(a)
                return
        if (
            self.home.kind == "inline"
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr")
        ):
            if (
                len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in self.fields
                and self._request(node.args[0])
            ):
                self._add(
                    node.args[1].value, "store" if node.func.id == "setattr" else "load", "reach"
                )
                for a in node.args[2:]:
                    self.visit(a)
                return
        if not self._scalar() and isinstance(node, ast.Call) and self._reach(node):
            if id(node) not in self.counted:
                self._add("", "reach", "reach")
            self._visit_reach_parts(node)
            return
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        home = self.home
        if self._scalar():
            if node.attr == home.attribute and self._request(node.value):
                self._add(node.attr, self._op(node), "reach")
                return
            self.generic_visit(node)
            return
        if home.kind == "inline":
            if node.attr in self.fields and self._request(node.value):
                self._add(node.attr, self._op(node), "reach")
                return
            self.generic_visit(node)
            return
        if node.attr in self.fields:
            if self._reach(node.value):
                self._add(node.attr, self._op(node), "reach")
                self.counted.add(id(node.value))
                self._visit_reach_parts(node.value)
                return
            if (
                isinstance(node.value, ast.Name)
                and self.locals
                and node.value.id in self.locals[-1]
            ):
                self._add(node.attr, self._op(node), "local")
                return
        if self._reach(node) and id(node) not in self.counted:
            self._add("", "reach", "reach")  # the holder itself (passed on, tested, assigned)
            self._visit_reach_parts(node)
            return
        self.generic_visit(node)

    def results(self) -> list[FunctionAccesses]:
        return [
            FunctionAccesses(self.rel, name, line, tuple(acc))
            for (name, line), acc in self.found.items()
            if acc
        ]


def _needles(group: Group) -> list[str]:
    home = group.home
    if home.kind == "side_table":
        return [home.getter]
    if home.kind == "inline":
        return list(group.names)
    return [home.attribute, *([home.getter] if home.getter else [])]


def read_accesses(tree: SourceTree, group: Group, req_classes: set[str]) -> list[FunctionAccesses]:
    """Every function that touches the group at this revision, in file and line order."""
    files: set[str] = set()
    for needle in _needles(group):
        files.update(tree.grep(needle))
    out: list[FunctionAccesses] = []
    for rel in sorted(files):
        if skip_file(rel):
            continue
        module = parse(tree, rel)
        reader = _Reader(rel, module, group, req_classes)
        reader.visit(module)
        out += reader.results()
    # the getter itself is the home's implementation, not a call site
    if group.home.getter:
        out = [f for f in out if f.function.rsplit(".", 1)[-1] != group.home.getter]
    return sorted(out, key=lambda f: (f.file, f.line))
