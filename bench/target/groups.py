"""State groups of a revision: sets of per-request fields and where they live, read with `ast`.

A group is a set of fields a request carries and their home (strategies/_contract.py
HOME_KINDS):

    inline              attributes of Req.__init__ (its mixins' included): a common prefix of
                        3 or more fields (`mamba_`), or a list given by the user
    container           an object Req.__init__ builds and keeps in one attribute
                        (`self.logprob = ReqLogprob(...)`): a slots dataclass, a dict dataclass
                        or a plain class, read from its class definition
    container_lazy      the same attribute None in __init__ and the object assigned later
    side_table          a module-level mapping keyed by the request (a WeakKeyDictionary or a
                        dict; by the request or its rid) with a getter that creates the state
    lazy_attribute      read with getattr(req, NAME, default) and assigned outside __init__
    declared_attribute  declared in class Req's body (`NAME = None`)

Each field has its name, its kind (bench.core.reqmodel's kinds) and its default as the code
writes it. Every name read here is checked to be a Python identifier where it is read
(bench.target.home.identifier: the strategy modules written from a group hold these names as
code); one that is not, such as the string of a `getattr(req, "a b", None)`, is refused in one
line naming its file and line. `read_groups` lists them; `find_group` picks one by name or raises GroupNotFound
naming the closest (one line, exit 2).
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from bench.base.errors import UsageError
from bench.core.holders import Holder, call_name
from bench.core.reqmodel import Attr, RequestModel
from bench.target.home import (
    MIN_FIELDS,
    Getter,
    classify_getter,
    creates_state,
    first_param,
    function_lines,
    identifier,
    module_mappings,
    parse,
    removal_function,
    req_class_body,
)
from bench.target.inspection import find_schedule_batch, read_request_model
from bench.target.tree import SourceTree, skip_file
from strategies._contract import FIELDS, PD_HIDDEN, GroupSchema

# A prefix names a group when at least this many inline fields share it.
MIN_PREFIX_FIELDS = 3
# A container class holds at least this many fields (a one-field wrapper is a value).
MIN_CONTAINER_FIELDS = 2
# The receivers a call site's request goes by (`req.x`, `r.x`, `self.req.x`, `reqs[i].x`, ...).
REQ_NAME = re.compile(r"^(r|req|reqs|request|requests|\w+_req|\w+_reqs)$")
# Names that match but, in SGLang, hold the tokenizer's input message, not a Req
# (TokenizedGenerateReqInput: `recv_req.top_logprobs_num` in Scheduler.handle_generate_request).
NOT_REQ = frozenset({"recv_req", "recv_reqs", "tokenized_req"})
HOME_WORDS = {
    "inline": "fields on Req",
    "container": "container",
    "container_lazy": "lazy container",
    "side_table": "side table",
    "lazy_attribute": "lazy attribute",
    "declared_attribute": "declared attribute",
}
# Server front-end code whose `req` is an HTTP request object, not the scheduler's Req.
_FRONT_END = re.compile(r"/(entrypoints|parser|openai_api)/")
_SCALAR = {"none", "int", "float", "bool", "str"}
_DEFAULT_OF_KIND = {
    "list": "[]",
    "dict": "{}",
    "set": "set()",
    "int": "0",
    "float": "0.0",
    "bool": "False",
    "str": "''",
}


class GroupNotFound(UsageError):
    """No group of that name at this revision (one line naming the closest)."""


@dataclass(frozen=True)
class GroupField:
    name: str  # as written at its home (`top_logprobs_num`, `pd_hidden_meta`, `meta`)
    kind: str  # bench.core.reqmodel kinds: none int bool list object ...
    default: str  # the default as the code writes it (source text)
    line: int = 0

    @property
    def default_expr(self) -> str:
        """An expression the harness can build the default from: the literal, a fresh empty
        container, or None for anything else (an object, a tensor: a stand-in)."""
        try:
            value = ast.literal_eval(self.default)
        except (ValueError, SyntaxError):
            return _DEFAULT_OF_KIND.get(self.kind, "None")
        if isinstance(value, (type(None), bool, int, float, str)):
            return repr(value)
        return _DEFAULT_OF_KIND.get(self.kind, "None")


@dataclass(frozen=True)
class Home:
    kind: str  # one of strategies._contract.HOME_KINDS
    file: str = ""
    line: int = 0
    attribute: str = ""  # container, lazy, declared: the request attribute
    cls: str = ""  # the container / state class
    layout: str = ""  # container: slots | dict | struct
    frozen: bool = False
    mapping: str = ""  # side table: the module-level name
    mapping_type: str = ""  # WeakKeyDictionary | dict
    getter: str = ""  # side table / lazy / declared holder: the get-or-create function
    removal: str = ""  # side table: the function that removes an entry
    key: str = ""  # side table: "req" (the request object) or "rid"
    prefix: str = ""  # inline: the fields' common prefix

    @property
    def words(self) -> str:
        return HOME_WORDS[self.kind]

    def describe(self) -> str:
        at = f" ({self.file}:{self.line})" if self.file else ""
        if self.kind == "inline":
            # a prefix group is lexical: fields that share a name's start, not a structure
            return (
                "fields on Req" + (f" (lexical prefix {self.prefix}*)" if self.prefix else "") + at
            )
        if self.kind in ("container", "container_lazy"):
            lazy = ", None until assigned" if self.kind == "container_lazy" else ""
            frozen = ", frozen" if self.frozen else ""
            return f"req.{self.attribute}: {self.cls} ({self.layout}{frozen}{lazy}){at}"
        if self.kind == "side_table":
            removal = f", removal {self.removal}()" if self.removal else ", no removal"
            return (
                f"side table {self.mapping} ({self.mapping_type} by {self.key or 'req'}), "
                f"getter {self.getter}(){removal}{at}"
            )
        holder = f" holding a {self.cls}" if self.cls else ""
        if self.kind == "lazy_attribute":
            return f"lazy attribute getattr(req, {self.attribute!r}, ...){holder}{at}"
        return f"declared attribute Req.{self.attribute}{holder}{at}"

    def same_place(self, other: Home) -> bool:
        """The same home: kind, attribute, class, layout, mapping and its key."""

        def place(h: Home) -> tuple[str, ...]:
            return (h.kind, h.attribute, h.cls, h.layout, h.mapping, h.mapping_type, h.key)

        return place(self) == place(other)


@dataclass(frozen=True)
class Group:
    name: str
    home: Home
    fields: tuple[GroupField, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def field(self, name: str) -> GroupField | None:
        return next((f for f in self.fields if f.name == name), None)

    def schema(self) -> GroupSchema:
        return GroupSchema(
            self.name,
            tuple((f.name, f.default_expr) for f in self.fields),
            source=self.home.describe(),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "home": {k: v for k, v in asdict(self.home).items() if v not in ("", 0, False)}
            | {"kind": self.home.kind, "describe": self.home.describe()},
            "fields": [asdict(f) for f in self.fields],
        }


@dataclass(frozen=True)
class Revision:
    """What a revision holds: its Req (as a request model), the names Req's class body
    declares, and its groups."""

    tree: SourceTree
    schedule_batch: str
    model: RequestModel
    class_body: dict[str, int]
    groups: tuple[Group, ...]
    containers: dict[str, ContainerClass] = field(default_factory=dict)

    def group(self, name: str) -> Group:
        for g in self.groups:
            if g.name == name:
                return g
        names = [g.name for g in self.groups]
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.4)
        hint = f"closest: {close[0]}" if close else f"groups here: {', '.join(names[:12])}"
        raise GroupNotFound(f"{self.tree.label}: no state group {name!r} ({hint})")

    def inline_attrs(self) -> dict[str, Attr]:
        return {a.name: a for a in self.model.attrs}


# -- container classes ----------------------------------------------------------------------


@dataclass(frozen=True)
class ContainerClass:
    name: str
    file: str
    line: int
    layout: str  # slots | dict | struct
    frozen: bool
    fields: tuple[GroupField, ...]

    def names_(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def holder(self) -> Holder:
        """The class as a request model's nested object (bench.core.holders)."""
        tracked = sum(1 for f in self.fields if f.kind in ("list", "dict", "set"))
        return Holder(
            len(self.fields),
            self.layout,
            tracked_children=0,
            frozen=self.frozen,
            source=f"{self.file}:{self.line}, {self.layout} ({tracked} fields default to a "
            "fresh container)",
            names=tuple((f.name, f.default_expr) for f in self.fields),
        )


def _decorator(cls: ast.ClassDef) -> tuple[bool, dict[str, Any]]:
    """(is a dataclass, its keyword arguments)."""
    for d in cls.decorator_list:
        call = d if isinstance(d, ast.Call) else None
        name = ast.unparse(call.func if call else d)
        if name.split(".")[-1] == "dataclass":
            kw = {}
            for k in call.keywords if call else []:
                if k.arg and isinstance(k.value, ast.Constant):
                    kw[k.arg] = k.value.value
            return True, kw
    return False, {}


def kind_of(node: ast.expr | None) -> tuple[str, str]:
    """(kind, default source text) of a default expression."""
    if node is None:
        return "none", "None"
    text = ast.unparse(node)
    if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "field":
        for k in node.keywords:
            if k.arg == "default":
                return kind_of(k.value)
            if k.arg == "default_factory":
                factory = ast.unparse(k.value)
                kind = {"list": "list", "dict": "dict", "set": "set"}.get(factory, "object")
                return kind, _DEFAULT_OF_KIND.get(kind, text)
        return "none", "None"
    if isinstance(node, ast.Constant):
        v = node.value
        if v is None:
            return "none", text
        return {bool: "bool", int: "int", float: "float", str: "str"}.get(type(v), "object"), text
    if isinstance(node, ast.List):
        return "list", text
    if isinstance(node, ast.Dict):
        return "dict", text
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return kind_of(node.operand)[0], text
    if isinstance(node, ast.Call):
        fn = ast.unparse(node.func)
        simple = {"list": "list", "dict": "dict", "set": "set", "array": "array"}
        if fn in simple:
            return simple[fn], text
        if fn.startswith("torch."):
            return "tensor", text
    return "object", text


def read_container(cls: ast.ClassDef, file: str) -> ContainerClass:
    """A container class's layout and fields, as its definition writes them."""
    is_dc, kw = _decorator(cls)
    bases = {ast.unparse(b).split(".")[-1] for b in cls.bases}
    fields: list[GroupField] = []
    slots = False
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if "ClassVar" in ast.unparse(node.annotation):
                continue
            kind, default = kind_of(node.value)
            if node.value is None:  # required: given by the caller
                ann = ast.unparse(node.annotation)
                kind = "int" if ann == "int" else "bool" if ann == "bool" else "none"
                default = {"int": "0", "bool": "False"}.get(kind, "None")
            fields.append(GroupField(node.target.id, kind, default, node.lineno))
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
        ):
            slots = True
    if not is_dc and "Struct" not in bases:
        init = next(
            (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
        )
        seen = {f.name for f in fields}
        for sub in ast.walk(init) if init else ():
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(sub, ast.Assign):
                targets, value = list(sub.targets), sub.value
            elif isinstance(sub, ast.AnnAssign):
                targets, value = [sub.target], sub.value
            for t in targets:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                    and t.attr not in seen
                ):
                    seen.add(t.attr)
                    kind, default = kind_of(value)
                    if isinstance(value, ast.Name):
                        kind, default = "none", "None"  # a parameter: its value is the caller's
                    fields.append(GroupField(t.attr, kind, default, t.lineno))
    if "Struct" in bases:
        layout = "struct"
    elif kw.get("slots") or slots:
        layout = "slots"
    else:
        layout = "dict"
    return ContainerClass(
        cls.name, file, cls.lineno, layout, bool(kw.get("frozen", False)), tuple(fields)
    )


def checked_container(tree: SourceTree, c: ContainerClass) -> ContainerClass:
    """The class, once its name and its fields' names are known to be identifiers."""
    identifier(tree, c.file, c.line, c.name, "class")
    for f in c.fields:
        identifier(tree, c.file, f.line, f.name, f"field of {c.name}")
    return c


def _module_file(tree: SourceTree, importer: str, module: str, level: int) -> str | None:
    """The file of an imported module inside the tree (absolute imports from the package root
    the importer sits in; relative ones from its folder)."""
    if level:
        base = PurePosixPath(importer).parents[level - 1]
        rel = base.joinpath(*module.split(".")) if module else base
    else:
        parts = PurePosixPath(importer).parts
        top = module.split(".")[0]
        if top not in parts:
            return None
        root = PurePosixPath(*parts[: parts.index(top)])
        rel = root.joinpath(*module.split("."))
    for candidate in (f"{rel}.py", f"{rel}/__init__.py"):
        if tree.exists(candidate):
            return candidate
    return None


def _find_class(
    tree: SourceTree, file: str, module: ast.Module, name: str
) -> tuple[ast.ClassDef, str] | None:
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node, file
    for node in module.body:
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            other = _module_file(tree, file, node.module or "", node.level)
            if other is None:
                return None
            for sub in parse(tree, other).body:
                if isinstance(sub, ast.ClassDef) and sub.name == name:
                    return sub, other
    return None


# -- Req's own __init__ (annotations and assignments the request model does not keep) --------


def _req_init(module: ast.Module) -> ast.FunctionDef | None:
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == "Req":
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef) and sub.name == "__init__":
                    return sub
    return None


def _annotations(init: ast.FunctionDef | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for sub in ast.walk(init) if init else ():
        if (
            isinstance(sub, ast.AnnAssign)
            and isinstance(sub.target, ast.Attribute)
            and isinstance(sub.target.value, ast.Name)
            and sub.target.value.id == "self"
        ):
            out.setdefault(sub.target.attr, ast.unparse(sub.annotation))
    return out


def is_request(node: ast.expr) -> bool:
    """A receiver that names a request (`req`, `r`, `self.req`, `reqs[i]`, `batch.reqs[i]`)."""
    if isinstance(node, ast.Subscript):
        node = node.value
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return bool(REQ_NAME.match(name)) and name not in NOT_REQ


# -- the search -----------------------------------------------------------------------------


def _containers(
    tree: SourceTree,
    sb: str,
    module: ast.Module,
    attrs: dict[str, Attr],
    annotations: dict[str, str],
) -> tuple[list[Group], dict[str, ContainerClass]]:
    groups: list[Group] = []
    classes: dict[str, ContainerClass] = {}
    candidates: dict[str, tuple[str, str]] = {}  # attribute -> (class, kind)
    for a in attrs.values():
        if a.kind == "object" and "(" in a.source and not a.where:
            call = a.source.split("(", 1)[0].strip().split(".")
            name = call[-2] if len(call) > 1 and call[-1][:1].islower() else call[-1]
            candidates[a.name] = (name, "container")
        elif a.kind == "none":
            ann = annotations.get(a.name, "")
            m = re.fullmatch(r"Optional\[(\w+)\]|(\w+) \| None|(\w+)", ann)
            name = next((x for x in m.groups() if x), "") if m else ""
            if name[:1].isupper() and name not in ("List", "Dict", "Any"):
                candidates[a.name] = (name, "container_lazy")
    for attr, (cls_name, kind) in candidates.items():
        found = _find_class(tree, sb, module, cls_name)
        if found is None:
            continue
        container = checked_container(tree, read_container(*found))
        if len(container.fields) < MIN_CONTAINER_FIELDS:
            continue
        classes[container.name] = container
        home = Home(
            kind,
            container.file,
            container.line,
            attribute=attr,
            cls=container.name,
            layout=container.layout,
            frozen=container.frozen,
        )
        groups.append(Group(attr, home, container.fields))
    return groups, classes


def _prefixes(attrs: dict[str, Attr], taken: set[str], sb: str) -> list[Group]:
    """Inline groups: every `_`-delimited prefix shared by 3 or more attributes, except one
    naming the same fields as a longer prefix. Nested prefixes are both kept (`cached_` and
    `cached_tokens_`: either can be gated); `bench target groups` shows the nesting once
    (nested_in)."""
    members: dict[str, list[str]] = {}
    for name in attrs:
        if name in taken:
            continue
        parts = name.split("_")
        for i in range(1 if parts[0] else 2, len(parts)):
            members.setdefault("_".join(parts[:i]) + "_", []).append(name)
    groups = []
    for prefix, names in members.items():
        if len(names) < MIN_PREFIX_FIELDS:
            continue
        longer = [p for p in members if p != prefix and p.startswith(prefix)]
        if any(set(members[p]) == set(names) for p in longer):
            continue  # a longer prefix names the same fields
        fields = tuple(inline_field(attrs[n]) for n in names)
        # where the group is defined: its first field in Req's own file; a mixin's line number
        # is not a line of that file (only the mixin's file name is recorded)
        own = [n for n in names if not attrs[n].where]
        first = min(own or names, key=lambda n: attrs[n].line)
        where = sb if not attrs[first].where else f"mixin {attrs[first].where}"
        home = Home("inline", where, attrs[first].line, prefix=prefix)
        groups.append(Group(prefix, home, fields))
    return groups


def inline_field(a: Attr) -> GroupField:
    default = repr(a.value) if a.kind in _SCALAR and a.value is not None else a.source
    if a.kind == "none":
        default = "None"
    return GroupField(a.name, a.kind, default, a.line)


def inline_group(rev: Revision, names: list[str], name: str = "") -> Group:
    """A group of the user's own choosing: Req attributes listed by name."""
    attrs = rev.inline_attrs()
    missing = [n for n in names if n not in attrs]
    if missing:
        close = difflib.get_close_matches(missing[0], list(attrs), n=1, cutoff=0.6)
        hint = f" (closest: {close[0]})" if close else ""
        raise GroupNotFound(f"{rev.tree.label}: Req.__init__ has no attribute {missing[0]!r}{hint}")
    fields = tuple(inline_field(attrs[n]) for n in names)
    return Group(name or names[0], Home("inline", "", fields[0].line), fields)


def _getter_homes(tree: SourceTree, body: dict[str, int]) -> list[Group]:
    """Homes reached through a get-or-create getter in a module beside its state class: a
    side table (a module-level mapping keyed by the request or its rid), or a holder attached
    to the request (getattr(req, NAME, None): lazy; `NAME = None` on class Req: declared)."""
    out: list[Group] = []
    files = (
        set(tree.grep("WeakKeyDictionary("))
        | set(tree.grep(".rid]"))
        | set(tree.grep("getattr(req", "class "))
        | {f for name in body for f in tree.grep(f".{name} = ", "class ")}
    )
    for rel in sorted(files):
        if skip_file(rel) or _FRONT_END.search(rel):
            continue
        module = parse(tree, rel)
        mappings = module_mappings(module)
        classes = [n for n in module.body if isinstance(n, ast.ClassDef)]
        for fn in (n for n in module.body if isinstance(n, ast.FunctionDef)):
            for cls in classes:
                g = classify_getter(fn, cls.name, mappings)
                key = "req"
                if g is None and mappings:
                    g = _rid_getter(fn, cls.name, mappings)
                    key = "rid"
                if g is None:
                    continue
                g = g.checked(tree, rel)
                state = checked_container(tree, read_container(cls, rel))
                if not state.fields:
                    continue
                pd = len(set(state.names_()) & set(FIELDS)) >= MIN_FIELDS
                if g.kind == "side_table":
                    removal = removal_function(module, g.mapping)
                    if removal:
                        line = function_lines(module)[removal]
                        identifier(tree, rel, line, removal, "removal")
                    home = Home(
                        "side_table",
                        rel,
                        fn.lineno,
                        cls=cls.name,
                        layout=state.layout,
                        mapping=g.mapping,
                        mapping_type=mappings[g.mapping][0],
                        getter=fn.name,
                        removal=removal,
                        key=key,
                    )
                    name = PD_HIDDEN.name if pd else (g.mapping.strip("_") or cls.name)
                else:
                    kind = "declared_attribute" if g.attribute in body else "lazy_attribute"
                    home = Home(
                        kind,
                        rel,
                        fn.lineno,
                        attribute=g.attribute,
                        cls=cls.name,
                        layout=state.layout,
                        getter=fn.name,
                    )
                    name = PD_HIDDEN.name if pd else g.attribute
                out.append(Group(name, home, state.fields))
    return out


def _rid_getter(fn: ast.FunctionDef, state_class: str, mappings: dict[str, Any]) -> Any:
    """A get-or-create over a dict keyed by the request's rid (`_states.get(req.rid)`)."""

    param = first_param(fn)
    if param is None or not creates_state(fn, state_class):
        return None
    want = f"{param}.rid"
    for n in ast.walk(fn):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id in mappings
            and n.args
            and ast.unparse(n.args[0]) == want
        ):
            return Getter("side_table", fn.name, fn.lineno, mapping=n.func.value.id)
    return None


def _lazy_and_declared(
    tree: SourceTree, attrs: dict[str, Attr], body: dict[str, int], sb: str, held: set[str]
) -> list[Group]:
    """Attributes read with getattr(req, NAME, default) that Req.__init__ does not set, and the
    names declared in class Req's body."""
    reads: dict[str, tuple[str, int, ast.expr | None]] = {}
    for rel in tree.grep("getattr("):
        if skip_file(rel) or "/srt/" not in f"/{rel}" or _FRONT_END.search(rel):
            continue
        for node in ast.walk(parse(tree, rel)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) >= 2
                and is_request(node.args[0])
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                name = node.args[1].value
                if name in attrs or name in held or name.startswith("__"):
                    continue
                identifier(tree, rel, node.lineno, name, "attribute read with getattr")
                default = node.args[2] if len(node.args) > 2 else None
                reads.setdefault(name, (rel, node.lineno, default))
    out = []
    for name, (rel, line, default) in sorted(reads.items()):
        kind, text = kind_of(default)
        home_kind = "declared_attribute" if name in body else "lazy_attribute"
        home = Home(home_kind, rel, line, attribute=name)
        out.append(Group(name, home, (GroupField(name, kind, text, line),)))
    for name, line in sorted(body.items()):
        if name in reads or name in held or name.startswith("_") or name.isupper():
            continue
        home = Home("declared_attribute", sb, line, attribute=name)
        out.append(Group(name, home, (GroupField(name, "none", "None", line),)))
    return out


def read_groups(tree: SourceTree) -> Revision:
    """Every state group at a revision."""

    sb = find_schedule_batch(tree)
    model = read_request_model(tree, sb, tree.strategy_name())
    module = parse(tree, sb)
    attrs = {a.name: a for a in model.attrs}
    body = {
        k: v
        for k, v in req_class_body(tree, sb).items()
        if not any(isinstance(n, ast.FunctionDef) and n.name == k for n in ast.walk(module))
    }
    containers, classes = _containers(tree, sb, module, attrs, _annotations(_req_init(module)))
    taken = {g.home.attribute for g in containers}
    getters = _getter_homes(tree, body)
    held = {g.home.attribute for g in getters if g.home.attribute}
    groups = [
        *containers,
        *_prefixes(attrs, taken, sb),
        *getters,
        *_lazy_and_declared(tree, attrs, body, sb, held),
    ]
    seen: set[str] = set()
    unique = []
    for g in groups:
        if g.name in seen:
            g = Group(f"{g.name}@{g.home.kind}", g.home, g.fields)
        seen.add(g.name)
        unique.append(g)
    return Revision(tree, sb, model, body, tuple(unique), classes)


def model_with_holders(rev: Revision) -> RequestModel:
    """The revision's Req as a request model whose nested containers have their real shape
    (layout, field names and defaults, read from their classes), not the generic small
    object."""
    by_attr = {g.home.attribute: g.home.cls for g in rev.groups if g.home.kind == "container"}
    held: dict[str, Holder] = {}
    for a in rev.model.attrs:
        cls = rev.containers.get(by_attr.get(a.name, ""))
        if a.kind == "object" and cls is not None:
            held[call_name(a.source)] = cls.holder()
    return replace(rev.model, holders=tuple(held.items()))


def nested_in(group: Group, groups: tuple[Group, ...]) -> Group | None:
    """The longest other prefix group whose prefix starts this one's and whose fields hold all
    of its fields (`cached_` for `cached_tokens_`), or None."""
    if group.home.kind != "inline" or not group.home.prefix:
        return None
    mine = set(group.names)
    outer = [
        g
        for g in groups
        if g is not group
        and g.home.kind == "inline"
        and g.home.prefix
        and group.home.prefix.startswith(g.home.prefix)
        and mine <= set(g.names)
    ]
    return max(outer, key=lambda g: len(g.home.prefix), default=None)


def describe(rev: Revision) -> str:
    """What `bench target groups` prints (a prefix group nested in another shown once, under
    it: its fields are also the outer group's)."""
    t = rev.tree
    lines = [
        f"tree: {t.label}" + (f" (commit {t.commit})" if t.commit else ""),
        f"request class: Req in {rev.schedule_batch}: {len(rev.model.attrs)} attributes in "
        f"__init__, {len(rev.class_body)} declared in its class body",
        "",
        f"{'group':<34} {'fields':>6}  home",
    ]
    order = [
        "container",
        "container_lazy",
        "side_table",
        "inline",
        "lazy_attribute",
        "declared_attribute",
    ]
    for g in sorted(rev.groups, key=lambda g: (order.index(g.home.kind), g.name)):
        inner = nested_in(g, rev.groups)
        if inner is None:
            lines.append(f"{g.name:<34} {len(g.fields):>6}  {g.home.describe()}")
            continue
        depth, outer = 1, nested_in(inner, rev.groups)
        while outer is not None:
            depth, outer = depth + 1, nested_in(outer, rev.groups)
        lines.append(
            f"{'  ' * depth + g.name:<34} {len(g.fields):>6}  within {inner.name} "
            f"({len(g.fields)} of its {len(inner.fields)} fields)"
        )
    return "\n".join(lines)
