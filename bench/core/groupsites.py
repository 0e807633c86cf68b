"""A state group's accesses, replayed by the scheduler loop through a strategy's home.

The PD hidden study has call sites transcribed line for line (bench.core.callsites). Any other
group of a user's tree is measured from what its code does instead: per hot-path function, the
field accesses read with `ast` at the revision (bench.target.accesses), and how often the real
scheduler runs that function (bench.core.hotpath). A `GroupProgram` holds both; compiling it
for a strategy gives one function per scheduler loop that performs, per iteration, every access
of every function on that loop's hot path through the strategy's home:

    per_iteration          once per iteration (accesses inside a loop over the batch's
                           requests: once per batch request; the others on its first request)
    per_batch_request      once per request of the forward batch
    per_new_request        once per request that arrived this iteration
    per_finished_request   once per request that left this iteration
    per_prefill_chunk      once per prefill chunk (a prefill batch entry)
    per_inflight_request   once per request polled in the PD prefill inflight queue

An access goes through the home as written: a load `H.f`, a store `H.f = v`, an augmented
assignment `H.f += ...` (load and store), where H reaches the fields' holder from the request
(`req` for fields on the request, `req.kv` for a container, `get(req)` for a side table) either
afresh (`reach`) or through a local bound once (`local`, as `lp = req.logprob` then `lp.f`).
Accesses under a branch the reader cannot resolve (`if req.return_logprob:`) run for a share
of the requests, `branch_share` (a scenario parameter: an assumption, swept in the report);
those in its else arm run for the other 1 - branch_share.

Every strategy of a run compiles the same loops (the union of the run's programs), with empty
bodies where it has no access, so the loops themselves cost every strategy (control included)
alike and cancel in every figure net of control.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

FREQUENCIES: tuple[str, ...] = (
    "per_iteration",
    "per_batch_request",
    "per_new_request",
    "per_finished_request",
    "per_prefill_chunk",
    "per_inflight_request",
)
# Where a hot-path function runs (bench.core.hotpath): a colocated server's decode and extend
# (prefill) forwards, and the disaggregated prefill and decode nodes, which run their own event
# loops (disaggregation/prefill.py, decode.py). The harness's loops: `prefill` is a PD prefill
# node, `decode` a PD decode node, `colocated` a server mixing both forwards.
PHASES: tuple[str, ...] = ("decode", "extend", "pd_prefill", "pd_decode")
LOOP_PHASES: dict[str, frozenset[str]] = {
    "prefill": frozenset({"pd_prefill"}),
    "decode": frozenset({"pd_decode"}),
    "colocated": frozenset({"decode", "extend"}),
}
OPS: tuple[str, ...] = ("load", "store", "aug", "reach", "bind")
# The event list each frequency's accesses iterate over (GroupRunner.run's arguments).
_EVENT = {
    "per_iteration": "batch",
    "per_batch_request": "batch",
    "per_new_request": "new",
    "per_finished_request": "finished",
    "per_prefill_chunk": "chunks",
    "per_inflight_request": "inflight",
}


@dataclass(frozen=True)
class Access:
    """One field access as the code writes it."""

    field: str  # "" for a bare reach (the holder itself read, no field: `foo(req.logprob)`)
    op: str  # load | store | aug | reach (the holder alone) | bind (the holder into a local)
    via: str = "reach"  # reach: through the home afresh; local: a local bound by a reach
    loop: bool = False  # inside a loop over the batch's requests
    guard: str = ""  # the unresolved branch condition it runs under ("" = always)
    # in that condition's else arm: it runs for the other 1 - branch_share of the requests
    negated: bool = False

    @property
    def arm(self) -> str:
        """ "" (always), "if" (for branch_share of the requests) or "else" (for the rest)."""
        if not self.guard:
            return ""
        return "else" if self.negated else "if"


@dataclass(frozen=True)
class SiteProgram:
    """One hot-path function's accesses, and how often the scheduler runs it."""

    function: str  # Class.method, as at the revision
    where: str  # file:line at the revision
    frequency: str  # one of FREQUENCIES
    phases: tuple[str, ...]  # PHASES it runs in
    accesses: tuple[Access, ...]
    source: str = ""  # where the frequency was read (SGLang file:line at a commit)

    def runs_in(self, loop: str) -> bool:
        return bool(LOOP_PHASES.get(loop, frozenset()) & set(self.phases))

    def per_request(self) -> bool:
        """Accesses executed per request of the frequency's event list (all of them except a
        per-iteration function's accesses outside its loop over the batch)."""
        return self.frequency != "per_iteration"


@dataclass(frozen=True)
class GroupProgram:
    group: str
    sites: tuple[SiteProgram, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "sites": [
                {
                    **{k: v for k, v in asdict(s).items() if k != "accesses"},
                    "phases": list(s.phases),
                    "accesses": [list(asdict(a).values()) for a in s.accesses],
                }
                for s in self.sites
            ],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> GroupProgram:
        sites = []
        for s in raw["sites"]:
            accesses = tuple(Access(*a) for a in s["accesses"])
            for a in accesses:
                if a.op not in OPS:
                    raise ValueError(f"access program: unknown op {a.op!r}")
            if s["frequency"] not in FREQUENCIES:
                raise ValueError(f"access program: unknown frequency {s['frequency']!r}")
            sites.append(
                SiteProgram(
                    function=str(s["function"]),
                    where=str(s.get("where", "")),
                    frequency=str(s["frequency"]),
                    phases=tuple(s["phases"]),
                    accesses=accesses,
                    source=str(s.get("source", "")),
                )
            )
        return cls(str(raw.get("group", "")), tuple(sites))


def blocks(programs: Iterable[GroupProgram], loop: str) -> tuple[tuple[str, bool], ...]:
    """The loop blocks a run's programs need in one scheduler loop: (frequency, per request),
    in a fixed order. Every strategy compiles these same blocks."""
    need: set[tuple[str, bool]] = set()
    for p in programs:
        for s in p.sites:
            if not s.runs_in(loop):
                continue
            for a in s.accesses:
                need.add((s.frequency, s.per_request() or a.loop))
    return tuple(sorted(need, key=lambda b: (FREQUENCIES.index(b[0]), b[1])))


@dataclass(frozen=True)
class Reach:
    """How a strategy's call sites reach the fields' holder from `req` (HOME['reach']), and
    scalar lazy attributes (fields read with getattr(req, f, default))."""

    expr: str  # "req", "req.kv", "get(req)", "(getattr(req, 'lp', None) or get(req))"
    lazy_defaults: Mapping[str, str]  # field -> default expression, for getattr reads

    @classmethod
    def of(cls, home: Mapping[str, Any]) -> Reach:
        return cls(str(home.get("reach", "req")), dict(home.get("lazy_defaults", {}) or {}))

    def counting(self) -> Reach:
        """Every reach through `get(req)` (counted as a lookup), none for fields on the request."""
        return Reach("req" if self.expr == "req" else "get(req)", self.lazy_defaults)


def _body(site: SiteProgram, reach: Reach, per_request: bool, arm: str) -> list[str]:
    """The lines that perform one function's accesses (those of one block: `per_request`
    selects a per-iteration function's loop accesses or the others; `arm` those that always
    run "", those under an unresolved condition "if", or in its else arm "else")."""
    lines: list[str] = []
    bound = False
    for a in site.accesses:
        if (site.per_request() or a.loop) != per_request or a.arm != arm:
            continue
        holder = reach.expr
        if a.op == "bind" or (a.via == "local" and not bound):
            lines.append(f"_l = {reach.expr}")
            bound = True
            if a.op == "bind":
                continue
        if a.via == "local":
            holder = "_l"
        f = a.field
        if a.op == "reach" or not f:
            lines.append(holder)
        elif f in reach.lazy_defaults and holder == "req":
            # a lazy attribute on the request itself: read with a default, written directly
            if a.op in ("load", "aug"):
                lines.append(f"getattr(req, {f!r}, {reach.lazy_defaults[f]})")
            if a.op in ("store", "aug"):
                lines.append(f"req.{f} = _V[{f!r}]")
        elif a.op == "load":
            lines.append(f"{holder}.{f}")
        elif a.op == "store":
            lines.append(f"{holder}.{f} = _V[{f!r}]")
        else:  # aug: the holder reached once, the field loaded and stored
            lines += [f"_h = {holder}", f"_h.{f} = _h.{f}"]
    if lines:
        lines.insert(0, f"# {site.function} ({site.where})")
    return lines


def render(
    program: GroupProgram | None, reach: Reach, loop: str, layout: Sequence[tuple[str, bool]]
) -> str:
    """The source of one loop's iteration function for one strategy."""
    sites = [s for s in program.sites if s.runs_in(loop)] if program else []
    out = ["def group_iteration(batch, new, finished, chunks, inflight, share):"]
    for frequency, per_request in layout:
        plain, taken, other = (
            [
                ln
                for s in sites
                if s.frequency == frequency
                for ln in _body(s, reach, per_request, arm)
            ]
            for arm in ("", "if", "else")
        )
        event = _EVENT[frequency]
        if per_request:
            # an unresolved branch is taken by the first `share` of the requests; its else arm
            # by the others (code restructured into if/else is charged once, not twice)
            out += [
                f"    cut = int(share * len({event}) + 0.5)",
                f"    for i, req in enumerate({event}):",
                *(f"        {ln}" for ln in plain or ["pass"]),
                "        if i < cut:",
                *(f"            {ln}" for ln in taken or ["pass"]),
                "        else:",
                *(f"            {ln}" for ln in other or ["pass"]),
            ]
        else:  # a per-iteration function's accesses outside its loop: on the first request
            out += [
                f"    if {event}:",
                f"        req = {event}[0]",
                *(f"        {ln}" for ln in plain or ["pass"]),
                "        if share >= 0.5:",
                *(f"            {ln}" for ln in taken or ["pass"]),
                "        else:",
                *(f"            {ln}" for ln in other or ["pass"]),
            ]
    out.append("    return None")
    return "\n".join(out) + "\n"


GroupFunc = Callable[[list[Any], list[Any], list[Any], list[Any], list[Any], float], None]


def compile_program(
    name: str,
    program: GroupProgram | None,
    home: Mapping[str, Any],
    get: Callable[[Any], Any],
    values: Mapping[str, object],
    loop: str,
    layout: Sequence[tuple[str, bool]],
    *,
    counting: bool = False,
) -> GroupFunc | None:
    """One strategy's iteration function for one loop, or None when the run replays no group
    accesses in it (`layout` empty). `values`: what a store writes into each field (the
    field's default: no allocation in the timed loop)."""
    if not layout:
        return None
    reach = Reach.of(home)
    if counting:
        reach = reach.counting()
    source = render(program, reach, loop, layout)
    filename = f"<group {program.group if program else '-'}:{name}:{loop}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"get": get, "_V": dict(values)}
    exec(compile(source, filename, "exec"), namespace)
    func: GroupFunc = namespace["group_iteration"]
    return func


def program_of(raw: Mapping[str, Any] | None) -> GroupProgram | None:
    return GroupProgram.from_json(raw) if raw is not None else None


def per_iteration(
    program: GroupProgram,
    loop: str,
    events: Mapping[str, float],
    share: float,
    *,
    home_kind: str = "",
) -> dict[str, float]:
    """Static accesses per iteration by function, for one loop: each function's accesses times
    its frequency (`events`: mean batch requests, new, finished, chunks, inflight per iteration;
    guarded accesses times `share`, those in an else arm times 1 - share). With `home_kind`, attribute loads and lookups instead
    (`req.f` one, `req.kv.f` two, a local bind one): what a move between homes changes. What
    the report lists as where a change comes from."""
    reach = 0 if home_kind in ("", "inline") else 1
    out: dict[str, float] = {}
    for s in program.sites:
        if not s.runs_in(loop):
            continue
        total = 0.0
        for a in s.accesses:
            n = events.get(_EVENT[s.frequency], 0.0) if (s.per_request() or a.loop) else 1.0
            if home_kind:
                if a.op in ("reach", "bind") or not a.field:
                    cost = reach
                else:
                    cost = 1 + (reach if a.via == "reach" else 0)
            else:
                cost = 1 if a.field else 0
            total += n * cost * {"": 1.0, "if": share, "else": 1.0 - share}[a.arm]
        out[s.function] = out.get(s.function, 0.0) + total
    return out
