"""The nested objects a real `Req` builds (its time stats, logprob holder, KV info, sampling
params, ...), as stand-ins with the real shape: field count, storage (an instance `__dict__`,
`__slots__`, or a msgspec.Struct of scalars, which the cyclic GC does not track), what each
builds beside itself, and whether every request shares one object (an enum member).

Read from the sources named in each entry; a request model without an entry for a call (a
user's tree in target mode) gets the generic small object bench.core.workload always had.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import msgspec


class _Model(Protocol):
    """What holders_of reads of a request model (bench.core.reqmodel.RequestModel)."""

    @property
    def name(self) -> str: ...

    @property
    def holders(self) -> tuple[tuple[str, Any], ...]: ...


@dataclass(frozen=True)
class Holder:
    """One nested object class as a Req builds it with the minimal constructor arguments."""

    fields: int  # instance fields (dataclass fields, base class's included)
    layout: str  # "dict" (instance __dict__), "slots", "struct" (msgspec.Struct, scalars only)
    tracked_children: int = 0  # GC-tracked objects its default factories build per instance
    untracked_children: int = 0  # empty dicts its default factories build (not GC-tracked)
    frozen: bool = False  # a frozen dataclass: object.__setattr__ per field
    shared: bool = False  # the same object for every request (an enum member)
    source: str = ""
    # The fields by name with their default expressions, when read from a tree's class
    # definition (bench.target.groups): the stand-in then has the real names, so a call site
    # replayed through it reads `req.logprob.top_logprobs_num`.
    names: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "names"}
        return out | {"names": [list(n) for n in self.names]}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Holder:
        names = tuple((str(a), str(b)) for a, b in raw.get("names", []))
        return cls(**{k: v for k, v in raw.items() if k != "names"}, names=names)


LAYOUTS = ("dict", "slots", "struct")

_FORK = "bytedance-iaas/sglang c96e68b62b"
_WHEEL = "sglang 0.5.23 wheel"
_TS_BASE = "ReqTimeStatsBase: 5 fields, trace_ctx = field(default_factory=TraceNullContext)"

# By request model, then by the call the model's attribute source starts with.
HOLDERS: dict[str, dict[str, Holder]] = {
    "fork-c96e68b62b": {
        "ReqLogprob": Holder(
            14, "slots", source=f"{_FORK} schedule_batch.py:682-700, dataclass(slots=True)"
        ),
        "SchedulerReqTimeStats.new_from_obj": Holder(
            31,
            "dict",
            tracked_children=1,
            source=f"{_FORK} observability/req_time_stats.py:574-625 (26 fields) + {_TS_BASE} "
            "(225-238)",
        ),
        "SamplingParams": Holder(
            30, "struct", source=f"{_FORK} sampling/sampling_params.py:75, msgspec.Struct"
        ),
    },
    "sglang-0.5.23": {
        "CacheRequestHandle": Holder(
            2,
            "dict",
            frozen=True,
            source=f"{_WHEEL} mem_cache/base_prefix_cache.py:45-48, dataclass(frozen=True)",
        ),
        "ReqKvInfo": Holder(
            18,
            "slots",
            untracked_children=1,
            source=f"{_WHEEL} schedule_batch.py:950-1030, dataclass(slots=True); "
            "component_evicted_seqlens = field(default_factory=dict)",
        ),
        "get_return_hidden_states_mode": Holder(
            0,
            "dict",
            shared=True,
            source=f"{_WHEEL} schedule_batch.py:183-195: a CaptureHiddenMode member (IntEnum)",
        ),
        "ReqLogprob": Holder(
            17, "slots", source=f"{_WHEEL} schedule_batch.py:923-947, dataclass(slots=True)"
        ),
        "SchedulerReqTimeStats.new_from_obj": Holder(
            37,
            "dict",
            tracked_children=1,
            source=f"{_WHEEL} observability/req_time_stats.py:612-660 (32 fields) + {_TS_BASE} "
            "(230-243)",
        ),
        "SamplingParams": Holder(
            33, "struct", source=f"{_WHEEL} sampling/sampling_params.py:140, msgspec.Struct"
        ),
    },
}


def holders_of(model: _Model | str) -> dict[str, Holder]:
    """The nested objects a model's Req builds: the shipped table's (by the model's name), and
    those the model read from its own tree (target mode)."""
    if isinstance(model, str):
        return HOLDERS.get(model, {})
    return {**HOLDERS.get(model.name, {}), **dict(model.holders)}


def call_name(source: str) -> str:
    """The call an attribute's source starts with: 'ReqLogprob(top_logprobs_num=...)' ->
    'ReqLogprob'; a required parameter's name for sampling params."""
    return source.split("(", 1)[0].strip()


class CaptureModeStandIn(enum.IntEnum):
    """Stand-in for CaptureHiddenMode: requests share its members."""

    NULL = 0
    LAST = 1
    FULL = 2


class _NullContextStandIn:
    """Stand-in for TraceNullContext, built per time-stats object (a default factory)."""


_CLASSES: dict[tuple[str, str, Holder], Any] = {}


def stand_in(model: str, call: str, holder: Holder) -> Any:
    """A factory (called with no arguments, or max_new_tokens=... for sampling params) for the
    holder, built once per (model, call); for a shared holder, the shared object itself is
    returned by calling it."""
    key = (model, call, holder)
    if key in _CLASSES:
        return _CLASSES[key]
    name = call.split(".")[0] + "StandIn"
    names = [f"f{i}" for i in range(holder.fields)]
    exprs = ["0"] * len(names)
    if holder.names:
        names = [n for n, _ in holder.names]
        exprs = [e for _, e in holder.names]
    factory: Any
    if holder.shared:
        member = CaptureModeStandIn.NULL

        def factory(**_: Any) -> Any:
            return member

    elif holder.layout == "struct":
        fields: list[tuple[str, Any, Any]] = [
            ("max_new_tokens", int, 0),
            *((n, int, 0) for n in names[1:]),
        ]
        if holder.names:
            fields = [(n, Any, None) for n in names]
        factory = msgspec.defstruct(name, fields, kw_only=True, omit_defaults=True)
    else:
        lines = ["def __init__(self, **_):"]
        setter = "object.__setattr__(self, {n!r}, {v})" if holder.frozen else "self.{n} = {v}"
        lines += ["    " + setter.format(n=n, v=e) for n, e in zip(names, exprs, strict=True)]
        child = 0
        for _ in range(holder.tracked_children):
            lines.append("    " + setter.format(n=f"c{child}", v="_NullContextStandIn()"))
            child += 1
        for _ in range(holder.untracked_children):
            lines.append("    " + setter.format(n=f"c{child}", v="{}"))
            child += 1
        if len(lines) == 1:
            lines.append("    pass")
        namespace: dict[str, Any] = {"_NullContextStandIn": _NullContextStandIn}
        exec(compile("\n".join(lines) + "\n", f"<{name}>", "exec"), namespace)
        body: dict[str, Any] = {"__init__": namespace["__init__"], "__module__": __name__}
        if holder.layout == "slots":
            body["__slots__"] = tuple(names) + tuple(f"c{i}" for i in range(child))
        factory = type(name, (), body)
    _CLASSES[key] = factory
    return factory
