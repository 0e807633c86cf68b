"""A state group in a home, written as a strategy module the harness can measure.

`write_home(...)` writes, into a folder, `<name>.py` (a strategy of the group: GROUP, HOME,
ACCESSES, REQUEST_MODEL; strategies/_contract.py) and `<name>.reqmodel.json` (the revision's
Req with the group moved into that home: its fields removed from wherever they were, then
added where the home keeps them). Candidate homes (`target advise` measures each):

    inline           the fields in Req.__init__                         req.f
    slots            a slots dataclass built in Req.__init__            req.G.f
    slots_lazy       the same, None until the first access creates it   (req.G or get(req)).f
    dict             a dict dataclass (an instance __dict__), eager     req.G.f
    lazy_attr        attached on first access, getattr(req, G, None)    (getattr(...) or get(req)).f
    declared         `G = None` declared on class Req, attached lazily  (req.G or get(req)).f
    weak_table       a WeakKeyDictionary keyed by the request, entries removed at release
    rid_dict         a dict keyed by req.rid, entries removed at release

A one-field group that is an attribute of the request itself (a lazy scalar such as
`pd_rebootstrap_in_progress`) keeps its own form: read with getattr(req, f, default).
"""

from __future__ import annotations

import re
from ast import literal_eval
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.base.storage import write_atomic, write_json
from bench.core.groupsites import GroupProgram
from bench.core.holders import Holder
from bench.core.reqmodel import Attr, RequestModel
from bench.target.groups import Group, GroupField
from bench.target.template import ending, get_is_req, lazy_get, literal, module_text

if TYPE_CHECKING:
    from bench.target.tree import SourceTree

CANDIDATES: tuple[str, ...] = (
    "inline",
    "slots",
    "slots_lazy",
    "dict",
    "lazy_attr",
    "declared",
    "weak_table",
    "rid_dict",
)
WORDS = {
    "inline": "fields on Req",
    "slots": "slots container, built in __init__",
    "slots_lazy": "slots container, created on first access",
    "dict": "dict container (instance __dict__), built in __init__",
    "lazy_attr": "lazy attribute (getattr(req, G, None)), created on first access",
    "declared": "declared class attribute, created on first access",
    "weak_table": "WeakKeyDictionary side table, removed at release",
    "weak_kept": "WeakKeyDictionary side table, no removal (entries go with the request)",
    "rid_dict": "dict keyed by rid, removed at release",
    "dict_lazy": "dict container, created on first access",
    "lazy_scalar": "lazy attribute on the request itself (getattr with a default)",
    "declared_scalar": "declared class attribute on the request itself",
}
_HOME_KIND = {
    "inline": "inline",
    "slots": "container",
    "dict": "container",
    "slots_lazy": "container_lazy",
    "dict_lazy": "container_lazy",
    "lazy_attr": "lazy_attribute",
    "declared": "declared_attribute",
    "weak_table": "side_table",
    "weak_kept": "side_table",
    "rid_dict": "side_table",
    "lazy_scalar": "lazy_attribute",
    "declared_scalar": "declared_attribute",
}


def current_home(group: Group) -> str:
    """The candidate name of where the group lives at its revision."""
    h = group.home
    scalar = not h.cls and group.names == (h.attribute,)
    if h.kind == "inline":
        return "inline"
    if h.kind == "container":
        return "slots" if h.layout == "slots" else "dict"
    if h.kind == "container_lazy":
        return "slots_lazy" if h.layout == "slots" else "dict_lazy"
    if h.kind == "lazy_attribute":
        return "lazy_scalar" if scalar else "lazy_attr"
    if h.kind == "declared_attribute":
        return "declared_scalar" if scalar else "declared"
    if h.key == "rid":
        return "rid_dict"
    return "weak_table" if h.removal or h.mapping_type != "WeakKeyDictionary" else "weak_kept"


def holder_attribute(group: Group) -> str:
    """The request attribute a holder of the group lives under."""
    if group.home.attribute:
        return group.home.attribute
    stem = re.sub(r"[^a-z0-9_]", "", group.name.lower()).strip("_") or "state"
    return f"{stem}_state"


@dataclass(frozen=True)
class Written:
    name: str
    path: Path
    home: str  # a CANDIDATES name (or the revision's own form)
    model: RequestModel


def _attr_of(f: GroupField, line: int) -> Attr:

    value: Any = None
    if f.kind in ("int", "float", "bool", "str"):
        try:
            value = literal_eval(f.default)
        except (ValueError, SyntaxError):
            value = None
    return Attr(name=f.name, kind=f.kind, line=line, source=f.default, value=value)


def moved_model(model: RequestModel, group: Group, home: str, name: str) -> RequestModel:
    """The revision's Req with the group's fields in `home`."""
    attr = holder_attribute(group)
    drop = set(group.names) if group.home.kind == "inline" else set()
    if group.home.kind in ("container", "container_lazy"):
        drop.add(group.home.attribute)
    at = next((i for i, a in enumerate(model.attrs) if a.name in drop), len(model.attrs))
    kept = [a for a in model.attrs if a.name not in drop]
    at = min(at, len(kept))
    line = model.attrs[at].line if at < len(model.attrs) else 0
    add: list[Attr] = []
    holders = dict(model.holders)
    cls = _class_name(group)
    if home == "inline":
        add = [_attr_of(f, line) for f in group.fields]
    elif home in ("slots", "dict"):
        add = [Attr(name=attr, kind="object", line=line, source=f"{cls}()")]
        holders[cls] = Holder(
            len(group.fields),
            "slots" if home == "slots" else "dict",
            source=f"{group.name} as a {home} container",
            names=tuple((f.name, f.default_expr) for f in group.fields),
        )
    elif home in ("slots_lazy", "dict_lazy"):
        add = [Attr(name=attr, kind="none", line=line, source="None")]
    model = replace(
        model,
        name=name,
        attrs=(*kept[:at], *add, *kept[at:]),
        holders=tuple(holders.items()),
        notes=(*model.notes, f"group {group.name}: {WORDS.get(home, home)}"),
    )
    return model


def _class_name(group: Group) -> str:
    if group.home.cls:
        return group.home.cls
    words = re.split(r"[^A-Za-z0-9]+", group.name)
    return "".join(w.capitalize() for w in words if w) + "State"


def _state_class(group: Group, slots: bool) -> list[str]:
    lines = ["class _State:"]
    if slots:
        lines.append(f"    __slots__ = {literal(group.names)}")
    lines += ["", "    def __init__(self):"]
    lines += [f"        self.{f.name} = {f.default_expr}" for f in group.fields]
    return lines


def _reset(target: str, group: Group) -> list[str]:
    return ["def reset(req):", f"    s = {target}"] + [
        f"    s.{f.name} = {f.default_expr}" for f in group.fields
    ]


@dataclass
class _Body:
    """What one home writes beyond the shared constants: its blocks, the imports they need,
    the HOME mapping's reach, and constants of its own."""

    blocks: list[list[str]]
    reach: str
    imports: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    home: dict[str, Any] = field(default_factory=dict)


def _inline(group: Group, home: str, attr: str) -> _Body:
    note = "  # the fields are the request's own"
    return _Body([get_is_req(note), _reset("req", group), ending("pass")], "req")


def _scalar(group: Group, home: str, attr: str) -> _Body:
    (f,) = group.fields
    body = _Body(
        [get_is_req(), ["def reset(req):", f"    req.{f.name} = {f.default_expr}"], ending("pass")],
        "req",
    )
    if home == "lazy_scalar":
        body.home["lazy_defaults"] = {f.name: f.default_expr}
    else:
        body.extra["REQUEST_CLASS_FIELDS"] = {f.name: None}
    return body


def _container(group: Group, home: str, attr: str) -> _Body:
    return _Body(
        [
            ["def get(req):", f"    return req.{attr}"],
            ["peek = get"],
            _reset(f"req.{attr}", group),
            ending("pass  # the container goes with the request"),
        ],
        f"req.{attr}",
    )


def _lazy(group: Group, home: str, attr: str) -> _Body:
    read = f"getattr(req, {literal(attr)}, None)" if home == "lazy_attr" else f"req.{attr}"
    body = _Body(
        [
            _state_class(group, slots=home != "dict_lazy"),
            lazy_get(read, attr, "_State"),
            _reset("get(req)", group),
            ending(f"req.{attr} = None"),
        ],
        f"({read} or get(req))",
    )
    if home == "declared":
        body.extra["REQUEST_CLASS_FIELDS"] = {attr: None}
    return body


def _side_table(group: Group, home: str, attr: str) -> _Body:
    weak = home in ("weak_table", "weak_kept")
    key = "req" if weak else "req.rid"
    table = "weakref.WeakKeyDictionary()" if weak else "{}"
    getter = [
        "def get(req):",
        f"    s = _table.get({key})",
        "    if s is None:",
        "        s = _State()",
        f"        _table[{key}] = s",
        "    return s",
    ]
    return _Body(
        [
            _state_class(group, slots=True),
            [f"_table = {table}"],
            getter,
            ["def peek(req):", f"    return _table.get({key})"],
            _reset("get(req)", group),
            ending(f"_table.pop({key}, None)", "len(_table)"),
        ],
        "get(req)",
        imports=("import weakref",) if weak else (),
        home={"key": "req" if weak else "rid"},
    )


_BODIES = {
    "inline": _inline,
    "lazy_scalar": _scalar,
    "declared_scalar": _scalar,
    "slots": _container,
    "dict": _container,
    "slots_lazy": _lazy,
    "dict_lazy": _lazy,
    "lazy_attr": _lazy,
    "declared": _lazy,
    "weak_table": _side_table,
    "weak_kept": _side_table,
    "rid_dict": _side_table,
}
_UPDATE = [
    ["_SCHEMA = GroupSchema.from_mapping(GROUP)"],
    ["def update(req, **fields):", "    set_fields(get(req), fields, _SCHEMA)"],
]


def module_source(
    group: Group,
    home: str,
    name: str,
    program: GroupProgram,
    *,
    description: str,
    target: dict[str, Any] | None = None,
) -> str:
    """The strategy module of `group` in `home`."""
    attr = holder_attribute(group)
    body = _BODIES[home](group, home, attr)
    home_meta = {"kind": _HOME_KIND[home], "candidate": home, "attribute": attr}
    home_meta |= {"reach": body.reach, **body.home}
    constants = {
        "NAME": name,
        "DESCRIPTION": description,
        "THREAD_SAFE_CREATE": home in ("inline", "slots", "dict"),
        "RELEASE_KEEPS_STATE": home == "weak_kept",
        "REQUEST_MODEL": f"{name}.reqmodel.json",
        "GROUP": group.schema().to_mapping(),
        "HOME": home_meta,
        "ACCESSES": program.to_json(),
        **body.extra,
        **({"TARGET": target} if target else {}),
    }
    return module_text(
        f"{group.name} in a home: {WORDS.get(home, home)}",
        "bench/target/homes.py",
        imports=("from strategies._contract import GroupSchema, set_fields", *body.imports),
        constants=constants,
        blocks=[*_UPDATE, *body.blocks],
    )


def home_metadata(
    spec: str, tree: SourceTree, group: Group, home: str, program: GroupProgram
) -> dict[str, Any]:
    """What a written home's TARGET mapping says of its origin: the revision it was read at,
    the group, the home's layout and the group's accesses on the modelled hot path."""
    return {
        "spec": spec,
        "path": str(tree.path),
        "rev": tree.rev,
        "commit": tree.commit,
        "short": tree.short,
        "group": group.name,
        "fields": len(group.fields),
        "layout": WORDS.get(home, home),
        "program": program.to_json(),
    }


def write_home(
    folder: Path,
    group: Group,
    home: str,
    name: str,
    model: RequestModel,
    program: GroupProgram,
    *,
    description: str,
    target: dict[str, Any] | None = None,
) -> Written:
    """Write the strategy module and its request model table into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    moved = model if home == current_home(group) else moved_model(model, group, home, name)
    moved = replace(moved, name=name)
    write_json(folder / f"{name}.reqmodel.json", moved.to_json())
    path = folder / f"{name}.py"
    write_atomic(
        path, module_source(group, home, name, program, description=description, target=target)
    )
    return Written(name, path, home, moved)
