"""The contract every storage strategy fulfils, and the pieces strategies share.

A strategy is a module. It stores the ten PD-hidden fields of the PR (hidden_state.py at
bytedance-iaas/sglang 32990a0560) for a request and
exposes the same small surface, so that every difference the harness measures is a difference
of storage, not of behaviour:

    NAME: str                      unique, short, [a-z0-9_]
    DESCRIPTION: str               one line
    THREAD_SAFE_CREATE: bool       True when two threads racing get() on one request can never
                                   create two states (so no update is ever lost)
    get(req) -> state              get-or-create; the state has the ten fields as attributes
    peek(req) -> state | None      the state if it exists; never creates
    update(req, **fields) -> None  get-or-create, then set the named fields
    reset(req) -> None             get-or-create, then put every field back to its default
    release(req) -> None           end of the request's life: nothing of its state stays
                                   reachable from the strategy afterwards (or, with
                                   RELEASE_KEEPS_STATE, once the request is collected)
    live_states() -> int           states the strategy's own tables hold (0 for strategies
                                   that keep state on the request itself)

Optional, to shape the request class so construction cost and per-request memory are real:

    REQUEST_INIT_FIELDS: Mapping[str, object]   attributes set in every request's __init__
    REQUEST_CLASS_FIELDS: Mapping[str, object]  class-level attributes (declared defaults)
    HOLDS_STATE: bool = True        False only for `control`, which stores nothing
    RELEASE_KEEPS_STATE: bool = False  True when release() removes nothing and the state goes
                                    only when the request object is collected (the PR as
                                    written, `pr652`); conformance then checks collection

Optional, for the code of a user's revision (`--target PATH@REV` writes such modules:
bench/target/materialize.py), so that it is measured as that revision runs:

    REQUEST_MODEL: str              a request model table (.json, beside the module) its
                                    requests are built from: the revision's own Req
    SITE_PATTERNS: Mapping[str, str]  per call site (bench.core.callsites), per_field, cached or
                                    direct (fields on the request itself, no lookup): the access
                                    pattern `as_written`, the only one it is run with
    FORWARD_SCAN: str = "every_forward"  where the capture-layer scan runs: every_forward (every
                                    ForwardBatch.init_new), prefill_batch (once per prefill batch;
                                    decode forwards read a batch-level field), none
    CAPTURE: str                    get | peek: the scan creates states (get) or not (peek)
    TARGET: Mapping[str, object]    where the code came from (path, revision, commit, layout)

A strategy of another state group than PD hidden (`--target ... --group NAME`, `target advise`:
bench/target/homes.py writes such modules) stores that group's fields instead of the ten, and
the scheduler replays the group's accesses through it instead of the PD hidden call sites:

    GROUP: Mapping[str, object]     {"name": ..., "fields": {field: default expression}}; the
                                    group's schema (PD hidden when absent)
    HOME: Mapping[str, object]      where the fields live: {"kind": ..., "reach": EXPR, ...};
                                    EXPR is how a call site reaches the fields' holder from
                                    `req` (`req` itself for fields on the request)
    ACCESSES: Mapping[str, object]  the access program (bench.core.groupsites.GroupProgram):
                                    per hot-path function, its field accesses and frequency
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

# The ten fields and their defaults (PDHiddenReqState, python/sglang/srt/disaggregation/
# hidden_state.py at bytedance-iaas/sglang 32990a0560). List-valued fields
# default to None: the real code assigns fresh lists at bootstrap, never shares a default.
FIELD_DEFAULTS: Mapping[str, object] = MappingProxyType(
    {
        "meta": None,
        "src_indices": None,
        "dst_indices": None,
        "written": None,
        "capture_layer_ids": None,
        "current_src_indices": None,
        "current_start": None,
        "current_row_len": 0,
        "current_is_last": False,
        "owner_direct_sent": False,
    }
)
FIELDS: tuple[str, ...] = tuple(FIELD_DEFAULTS)

REQUIRED_ATTRS: tuple[str, ...] = ("NAME", "DESCRIPTION", "THREAD_SAFE_CREATE")
REQUIRED_FUNCS: tuple[str, ...] = ("get", "peek", "update", "reset", "release", "live_states")
OPTIONAL_MAPPINGS: tuple[str, ...] = ("REQUEST_INIT_FIELDS", "REQUEST_CLASS_FIELDS")
# Every upper-case name a strategy module may define (anything else is a misspelling).
OPTIONAL_ATTRS: tuple[str, ...] = (
    *OPTIONAL_MAPPINGS,
    "HOLDS_STATE",
    "RELEASE_KEEPS_STATE",
    "REQUEST_MODEL",
    "SITE_PATTERNS",
    "FORWARD_SCAN",
    "CAPTURE",
    "TARGET",
    "GROUP",
    "HOME",
    "ACCESSES",
)
FORWARD_SCANS: tuple[str, ...] = ("every_forward", "prefill_batch", "none")
# The call sites a SITE_PATTERNS mapping names (bench.core.callsites holds their code) and the
# patterns it may give them.
SITE_NAMES: tuple[str, ...] = (
    "clear_state",
    "bootstrap_finalize",
    "write_hidden_rows",
    "send_kv_chunk",
    "release_on_hidden_done",
    "release_metadata",
)
# direct: the fields are the request's own attributes (`req.meta`, no lookup at all)
DIRECT = "direct"
SITE_PATTERN_VALUES: tuple[str, ...] = ("per_field", "cached", DIRECT)
# Where a state group's fields may live (HOME["kind"]; bench/target/homes.py writes each):
#   inline             attributes set in Req.__init__ (req.f)
#   container          an object built in Req.__init__ (req.G.f): slots or dict dataclass
#   container_lazy     req.G is None until the first access creates it
#   lazy_attribute     not on the class at all: getattr(req, G, None), attached on first access
#   declared_attribute G = None declared on class Req, attached on first access
#   side_table         a module-level mapping keyed by the request (weak or strong) or its id
HOME_KINDS: tuple[str, ...] = (
    "inline",
    "container",
    "container_lazy",
    "lazy_attribute",
    "declared_attribute",
    "side_table",
)
# The design the review of PR #652 suggested: a lazy attribute, looked up once per call site
# (the strategy and access pattern the reports compare the PR with).
REVIEW_DESIGN: tuple[str, str] = ("dynattr", "cached")
# The access pattern of a strategy with SITE_PATTERNS: each call site as its revision wrote it.
AS_WRITTEN = "as_written"
# The PR's own access pattern (the state looked up again for every field): the headline
# figures of the baseline and the other built-in designs use it.
PR_PATTERN = "per_field"


class PDHiddenReqState:
    """The PR's state object: a plain class, one instance per request (GC-tracked, has a dict)."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] | None = None
        self.src_indices: list[int] | None = None
        self.dst_indices: list[int] | None = None
        self.written: list[bool] | None = None
        self.capture_layer_ids: list[int] | None = None
        self.current_src_indices: list[int] | None = None
        self.current_start: int | None = None
        self.current_row_len: int = 0
        self.current_is_last: bool = False
        self.owner_direct_sent: bool = False

    def clear(self) -> None:
        """Back to defaults: the ten writes of the PR's release path."""
        self.meta = None
        self.src_indices = None
        self.dst_indices = None
        self.written = None
        self.capture_layer_ids = None
        self.current_src_indices = None
        self.current_start = None
        self.current_row_len = 0
        self.current_is_last = False
        self.owner_direct_sent = False


# Default expressions a group's field may have: literals and fresh empty containers (each
# evaluation builds a new one, as a dataclass default factory does).
_FRESH = {"[]": list, "{}": dict, "set()": set, "list()": list, "dict()": dict}


def default_value(expr: str) -> object:
    """The value of a field's default expression (a literal, or a fresh empty container)."""
    if expr in _FRESH:
        return _FRESH[expr]()
    try:
        return ast.literal_eval(expr)
    except (ValueError, SyntaxError):
        raise ValueError(f"default {expr!r}: a literal or an empty container expected") from None


@dataclass(frozen=True)
class GroupSchema:
    """A state group: per-request fields, each with its default as an expression, in order.
    The built-in strategies store PD_HIDDEN; a strategy of a user's tree may store any group
    (GROUP)."""

    name: str
    fields: tuple[tuple[str, str], ...]  # (field, default expression)
    source: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f for f, _ in self.fields)

    def defaults(self) -> dict[str, object]:
        """Every field's default, fresh containers each call."""
        return {f: default_value(expr) for f, expr in self.fields}

    @classmethod
    def from_mapping(cls, raw: Mapping[str, object]) -> GroupSchema:
        fields = raw.get("fields")
        if not isinstance(fields, Mapping) or not fields:
            raise ValueError("GROUP must hold a non-empty 'fields' mapping")
        for f, expr in fields.items():
            if not (isinstance(f, str) and f.isidentifier() and isinstance(expr, str)):
                raise ValueError("GROUP fields must map identifiers to default expressions")
            default_value(expr)
        return cls(str(raw.get("name", "group")), tuple(fields.items()), str(raw.get("source", "")))

    def to_mapping(self) -> dict[str, object]:
        return {"name": self.name, "fields": dict(self.fields), "source": self.source}


# The project's own study: the ten fields above, a GroupSchema like any other group.
PD_HIDDEN = GroupSchema(
    "pd_hidden",
    tuple((f, repr(v)) for f, v in FIELD_DEFAULTS.items()),
    source="PDHiddenReqState, hidden_state.py at bytedance-iaas/sglang 32990a0560",
)


def set_fields(state: object, fields: Mapping[str, object], group: GroupSchema = PD_HIDDEN) -> None:
    """Write named fields onto a state object, refusing names outside the group."""
    names = group.names
    for name, value in fields.items():
        if name not in names:
            label = "PD-hidden" if group is PD_HIDDEN else group.name
            raise TypeError(f"unknown {label} field {name!r}; fields are: {', '.join(names)}")
        setattr(state, name, value)
