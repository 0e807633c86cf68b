"""A revision of a user's tree as a strategy module the harness can measure.

`materialize(tree, folder)` inspects the revision (bench.target.inspection) and writes, in
`folder`:

    <name>.py              the strategy module (strategies/_contract.py, target-mode names)
    <name>.reqmodel.json   the revision's Req as a request model table
    <name>_state.py        side table: its state module, replayed from what ast read
                           (bench/target/replay.py); with trust, the revision's own file, byte
                           for byte
    <name>.inspect.json    what inspect found (the report's "not modelled at REV" comes from it)

Nothing of the tree runs by default. A side table's module is replayed: the harness writes its
state class, mapping, getter and removal anew from their syntax trees (refused in one line where
ast cannot read that shape). With `trust=True` (`--trust-target-code`, the user's decision) the
revision's own file is executed instead, in the harness's process, and refused (one line) when
it imports anything beyond the standard library outside `if TYPE_CHECKING:`; the metadata then
says "executed the revision's own <file>". Fields on Req, a lazy attribute and a declared
attribute are generated from what inspect found (a getter, a state class with the ten fields,
the attribute's name). Call sites follow the revision where the model can express it: the
access pattern of each call site, where the capture-layer scan runs and whether it creates.
The module is loaded like any strategy file (`--strategy path.py`), in workers and gates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.base.errors import UsageError
from bench.base.storage import write_atomic, write_json
from bench.core.reqmodel import Attr, RequestModel
from bench.target.accesses import read_accesses
from bench.target.groups import Group, Revision, model_with_holders
from bench.target.homes import current_home, home_metadata, write_home
from bench.target.inspection import Inspection, inspect_tree
from bench.target.placement import MIN_REPLAYED, refusal
from bench.target.program import build
from bench.target.replay import TRUST_FLAG, replay_source
from bench.target.report import req_classes
from bench.target.template import docstring, ending, get_is_req, lazy_get, literal, module_text
from bench.target.tree import SourceTree
from strategies._contract import FIELD_DEFAULTS, FIELDS


class TargetRefused(UsageError):
    """A revision the harness cannot run as written (one line, exit 2)."""


@dataclass(frozen=True)
class Target:
    """A materialized revision: its strategy file and what inspect found (the PD hidden
    study), or the state group it measures (`group`: the module's TARGET mapping)."""

    spec: str  # PATH or PATH@REV as given
    name: str  # the strategy NAME
    path: Path  # the strategy module file
    inspection: Inspection | None
    group: dict[str, Any] | None = None
    source_tree: SourceTree | None = None
    trusted: bool = False  # the side table's own module is executed (--trust-target-code)
    replay_notes: tuple[str, ...] = ()  # what the replayed state module does not carry over

    @property
    def tree(self) -> SourceTree:
        if self.inspection is not None:
            return self.inspection.tree
        assert self.source_tree is not None
        return self.source_tree

    @property
    def state_module(self) -> str:
        """The revision's file the state code came from ('' when generated)."""
        return self.inspection.home.module if self.inspection is not None else ""

    @property
    def state_code(self) -> str:
        """Where the state code that runs came from, in words (the manifest and reports)."""
        if self.inspection is None or self.inspection.home.layout != "side_table":
            return "generated from what ast read; nothing of the tree runs"
        module = self.inspection.home.module
        if self.trusted:
            return f"executed the revision's own {module} ({TRUST_FLAG})"
        return f"replayed from {module} as ast read it; the file is never executed"

    def metadata(self) -> dict[str, Any]:
        """What the manifest records about a target (path and full hash included)."""
        if self.group is not None:
            return dict(self.group)
        assert self.inspection is not None
        t = self.inspection.tree
        home = self.inspection.home.describe()
        if self.inspection.home.layout == "side_table":
            home += f"; state code {self.state_code}"
        return {
            "spec": self.spec,
            "path": str(t.path),
            "rev": t.rev,
            "commit": t.commit,
            "short": t.short,
            "dirty": t.dirty,
            "layout": self.inspection.home.layout,
            "home": home,
            "state_code": self.state_code,
            "trusted": self.trusted,
            "forward_batch": self.inspection.forward.describe(),
            "request_attributes": len(self.inspection.model.attrs),
            "request_tracked_values": self.inspection.model.tracked(),
            "not_modelled": [*self.inspection.profile.not_modelled, *self.replay_notes],
        }


def _model_for(ins: Inspection) -> RequestModel:
    """The revision's Req; with fields on Req, the fields renamed to the contract's names in
    place (same count, position and kinds: the call sites read `state.meta`)."""
    model = ins.model
    if ins.home.layout != "fields_on_req":
        return model
    renamed = {real: f for f, real in ins.home.fields.items()}
    attrs = tuple(replace(a, name=renamed[a.name]) if a.name in renamed else a for a in model.attrs)
    clash = {a.name for a in model.attrs if a.name in FIELDS and a.name not in renamed}
    if clash:
        raise TargetRefused(
            f"{ins.tree.label}: Req already has attributes named {sorted(clash)}; the fields "
            "cannot be given the contract's names"
        )
    return replace(model, attrs=attrs, notes=(*model.notes, "fields renamed to the contract's"))


def _update_reset(ins: Inspection) -> list[list[str]]:
    """update() and reset() of a module whose get(req) returns the state object."""
    return [
        ["def update(req, **fields):", "    set_fields(get(req), fields)"],
        ["def reset(req):", *_reset_body(ins, "get(req)")],
    ]


def _reset_body(ins: Inspection, state: str) -> list[str]:
    """reset(): the ten writes of the revision's clear function, in its pattern."""
    per_field = ins.profile.site_patterns.get("clear_state") == "per_field"
    body = [] if per_field else [f"    s = {state}"]
    for f in FIELDS:
        target = f"{state}.{f}" if per_field else f"s.{f}"
        body.append(f"    {target} = {literal(FIELD_DEFAULTS[f])}")
    return body


def _constants(
    ins: Inspection, name: str, description: str, extra: dict[str, Any]
) -> dict[str, Any]:
    p = ins.profile
    return {
        "NAME": name,
        "DESCRIPTION": description,
        "THREAD_SAFE_CREATE": ins.home.layout == "fields_on_req",
        "REQUEST_MODEL": f"{name}.reqmodel.json",
        "SITE_PATTERNS": dict(p.site_patterns),
        "FORWARD_SCAN": p.forward_scan,
        "CAPTURE": p.capture,
        **extra,
    }


def _state_class_source(ins: Inspection) -> list[str]:
    fields = [f"        self.{f} = {literal(FIELD_DEFAULTS[f])}" for f in FIELDS]
    cls = ins.home.state_class or "PDHiddenReqState"
    return [f"class {cls}:", "    def __init__(self):", *fields]


_SET_FIELDS = "from strategies._contract import set_fields"


def _fields_on_req(ins: Inspection, name: str, trusted: bool) -> tuple[list[list[str]], bool]:
    """The blocks of a revision whose fields are Req's own, and whether release keeps state."""
    return [
        get_is_req("  # the fields are the request's own attributes"),
        ["def update(req, **fields):", "    set_fields(req, fields)"],
        ["def reset(req):", *_reset_body(ins, "req")],
        ending("pass  # the fields go with the request"),
    ], False


def _side_table(ins: Inspection, name: str, trusted: bool) -> tuple[list[list[str]], bool]:
    """A side table: its state module (replayed, or with trust the revision's own file) loaded
    under a name of ours, its mapping and getter used as they are."""
    home = ins.home
    doc = (
        f"The revision's own module, executed from its file under a name of ours ({TRUST_FLAG})."
        if trusted
        else "The state module the harness replayed from what ast read "
        "(bench/target/replay.py),\n    loaded under a name of ours; no file of the tree is executed."
    )
    loader = [
        "def _load_state_module():",
        f"    {docstring(doc)}",
        f"    path = Path(__file__).with_name({literal(f'{name}_state.py')})",
        '    mod_name = f"{__name__}__state"',
        "    spec = importlib.util.spec_from_file_location(mod_name, path)",
        "    module = importlib.util.module_from_spec(spec)",
        "    sys.modules[mod_name] = module",
        "    spec.loader.exec_module(module)",
        "    return module",
    ]
    state = [
        "_state = _load_state_module()",
        f"_table = _state.{home.mapping}",
        f"get = _state.{home.getter}",
    ]
    release = (
        f"_state.{home.removal}(req)"
        if home.removal
        else "pass  # no removal at this revision: entries go with the request"
    )
    return [
        loader,
        state,
        ["def peek(req):", "    return _table.get(req)"],
        *_update_reset(ins),
        ending(release, "len(_table)"),
    ], not home.removal


def _attribute(ins: Inspection, name: str, trusted: bool) -> tuple[list[list[str]], bool]:
    """A lazy or a declared attribute holding the state object."""
    home = ins.home
    attr = home.attribute
    read = (
        f"getattr(req, {literal(attr)}, None)" if home.layout == "lazy_attribute" else f"req.{attr}"
    )
    getter = lazy_get(
        read,
        attr,
        home.state_class or "PDHiddenReqState",
        var="state",
        note=f"  # {home.getter} at {ins.tree.short}",
    )
    return [
        _state_class_source(ins),
        getter,
        *_update_reset(ins),
        ending(f"req.{attr} = None"),
    ], False


_IMPORTS = {
    "fields_on_req": (_SET_FIELDS,),
    "side_table": (
        "import importlib.util",
        "import sys",
        "from pathlib import Path",
        "",
        _SET_FIELDS,
    ),
}
_BODIES = {"fields_on_req": _fields_on_req, "side_table": _side_table}


def module_source(
    ins: Inspection, name: str, target: dict[str, Any], *, trusted: bool = False
) -> str:
    """The strategy module of a revision's PD hidden state as the revision holds it."""
    home = ins.home
    t = ins.tree
    description = f"{t.strategy_name().rsplit('_', 1)[0]} at {t.short}: {home.words}"
    blocks, keeps = _BODIES.get(home.layout, _attribute)(ins, name, trusted)
    extra: dict[str, Any] = {"RELEASE_KEEPS_STATE": keeps, "TARGET": target}
    if home.layout == "declared_attribute":
        extra["REQUEST_CLASS_FIELDS"] = {home.attribute: None}
    return module_text(
        f"{t.label}: {home.describe()}",
        "bench/target/materialize.py",
        imports=_IMPORTS.get(home.layout, (_SET_FIELDS,)),
        constants=_constants(ins, name, description, extra),
        blocks=blocks,
    )


def materialize(spec: str, folder: Path, *, name: str | None = None, trust: bool = False) -> Target:
    """Inspect PATH[@REV] and write its strategy module into `folder`; TargetRefused (one
    line) when its state code cannot be run here. A side table's module is replayed from what
    ast read (ReplayRefused, one line, where that shape cannot be replayed); `trust` (the
    user's --trust-target-code) executes the revision's own file instead."""
    tree = SourceTree.open(spec)
    name = name or tree.strategy_name()
    ins = inspect_tree(tree, model_name=name)
    home = ins.home
    side = home.layout == "side_table"
    if side and trust and not home.loadable:
        raise TargetRefused(
            f"{tree.label}: {home.module} imports {', '.join(home.foreign_imports)} outside "
            f"TYPE_CHECKING; with {TRUST_FLAG} the harness loads a side table's module from "
            "the revision's file and runs only standard-library imports (without it, the "
            "module is replayed from what ast read)"
        )
    replay = replay_source(tree, home) if side and not trust else None
    folder.mkdir(parents=True, exist_ok=True)
    target = Target(
        spec,
        name,
        folder / f"{name}.py",
        ins,
        trusted=side and trust,
        replay_notes=replay.notes if replay else (),
    )
    meta = target.metadata()
    model = _model_for(ins)
    write_json(folder / f"{name}.reqmodel.json", model.to_json())
    if side:
        state = replay.source if replay else tree.read(home.module)
        write_atomic(folder / f"{name}_state.py", state)
    write_json(folder / f"{name}.inspect.json", ins.to_json())
    write_atomic(target.path, module_source(ins, name, meta, trusted=target.trusted))
    return target


def load_metadata(strategy_target: Any) -> dict[str, Any]:
    """A target strategy's TARGET mapping as plain JSON values."""
    return json.loads(json.dumps(dict(strategy_target), default=str))


def materialize_group(
    spec: str,
    folder: Path,
    *,
    group: Group,
    rev: Revision,
    name: str | None = None,
    min_replayed: float = MIN_REPLAYED,
) -> Target:
    """A revision's state group, in the home the revision keeps it, as a strategy module: its
    Req (containers with their real shape), the group's fields, and its accesses on the
    modelled hot path (bench.target.program). Refused (one line, exit 2) when the replay places
    nothing, or less than `min_replayed` of the group's accesses outside known-cold functions
    (bench.target.placement), naming the functions it could not place."""

    tree = rev.tree
    name = name or tree.strategy_name()
    functions = read_accesses(tree, group, req_classes(rev))
    prog = build(group.name, functions, commit=tree.commit, tree=tree)
    assert prog.coverage is not None
    refused = refusal(tree.label, group.name, prog.coverage, min_replayed)
    if refused:
        raise TargetRefused(refused)
    home = current_home(group)
    guards = sorted({a.guard for s in prog.program.sites for a in s.accesses if a.guard})
    model = model_with_holders(rev)
    meta: dict[str, Any] = {
        **home_metadata(spec, tree, group, home, prog.program),
        "dirty": tree.dirty,
        "home": group.home.describe(),
        "home_kind": group.home.kind,
        "request_attributes": len(model.attrs),
        "request_tracked_values": model.tracked(),
        "frequencies": prog.table,
        "placement": prog.coverage.to_json(),
        "not_modelled": [
            *(
                [
                    f"{len(guards)} branch conditions the reader cannot resolve (e.g. "
                    f"{guards[0]!r}): their accesses run for branch_share of the requests"
                ]
                if guards
                else []
            ),
        ],
    }
    written = write_home(
        folder,
        group,
        home,
        name,
        model,
        prog.program,
        description=f"{tree.strategy_name().rsplit('_', 1)[0]} at {tree.short}: {group.name} "
        f"({group.home.words})",
        target=meta,
    )
    return Target(spec, name, written.path, None, group=meta, source_tree=tree)


__all__ = [
    "Attr",
    "Target",
    "TargetRefused",
    "load_metadata",
    "materialize",
    "materialize_group",
]
