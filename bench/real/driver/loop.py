"""The steering of one real scheduler: called at each iteration boundary (the first receive of
the revision's event loop, bench.real.driver.ipc), untimed, it closes the iteration just run,
queues the next one's arrivals (bench.real.driver.client) and ends the run.

States: `warmup` (the plan's minimum of iterations; the server's own warm-up is then answered
with FreezeGCReq, which the revision handles with gc.freeze() as its HTTP server asks after
warm-up, python/sglang/srt/entrypoints/http_server.py:2357-2399 at sgl-project/sglang
d55f1c28e2), `settle` (until the KV cache is in one regime, bench.real.driver.steady, or the
plan's limit), `hold` (in lockstep: until the iteration the harness names, the latest any
process of the group settled at, so every process measures the same iterations of the stream),
then `measure` (`values` x `iterations` iterations recorded), then the run ends by raising
Finished out of the event loop (a BaseException: the revision's `except Exception` around its
loop does not catch it).

An iteration's figure is its wall time between two boundaries less the stand-in model's time;
the boundary's own work (building and encoding arrivals) lies outside both. Every iteration,
warm-up included, records the pool's free and evictable tokens and the tokens evicted in it.
"""

from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.base.timing import now_ns
from bench.real.driver import marks, spec, standin, steady
from bench.real.driver.calls import CallCounter
from bench.real.driver.client import Client
from bench.real.driver.ipc import Channel
from bench.real.driver.phases import Phases


def turn(window: str) -> None:
    """Say this process is at a window's start (or at its end), and wait for the harness to
    let it go on (a line on stdin): the lockstep protocol of bench.real.process."""
    sys.stderr.write(f"@window {window}\n")
    sys.stderr.flush()
    if window != "end":
        sys.stdin.readline()


def settled_turn(iteration: int) -> int:
    """Say this process's cache is steady at `iteration` and wait for the harness to name the
    iteration every process of the group starts measuring at ('start K')."""
    sys.stderr.write(f"@steady {iteration}\n")
    sys.stderr.flush()
    line = sys.stdin.readline().split()
    return int(line[1]) if len(line) == 2 and line[0] == "start" else iteration


def _slot(req: Any) -> int | None:
    """A request's row of the request-to-token pool: `req.req_pool_idx`, or, since its KV
    fields moved into a container (sgl-project/sglang#29427), `req.kv.req_pool_idx`."""
    slot = getattr(req, "req_pool_idx", None)
    if slot is None:
        slot = getattr(getattr(req, "kv", None), "req_pool_idx", None)
    return slot if isinstance(slot, int) else None


def _rid(req: Any) -> str:
    rid = getattr(req, "rid", "")
    return rid if isinstance(rid, str) else str(rid)


class Finished(BaseException):
    """The run is complete (or failed): unwinds the revision's event loop."""


@dataclass
class Plan:
    warmup_iterations: int  # the minimum
    values: int
    iterations: int  # per value
    freeze_gc: bool = True
    # Lockstep (bench.real.process): before each window of `iterations`, wait for the harness's
    # turn, so that processes of other revisions measure their window i moments apart while
    # this one sleeps, never at the same time.
    lockstep: bool = False
    settle: bool = True  # warm up until the cache is steady (bench.real.driver.steady)
    settle_max_iterations: int = 8000
    settle_max_s: float = 240.0
    # Under a sampling profiler (bench.real.profile): seconds spun in a mark at each measured
    # boundary (bench.real.driver.marks); 0 when nothing samples the process.
    profile_gap_s: float = 0.0
    # In lockstep: iterations run at the start of each turn and not recorded, so that the
    # recorded ones follow this process's own iteration, as a scheduler's follows its own
    # (bench.real.interleave measured what the other processes' turns do otherwise).
    rewarm_iterations: int = 0

    @property
    def measured(self) -> int:
        return self.values * self.iterations


@dataclass
class Record:
    """One measured iteration."""

    ns: int  # wall time less the stand-in's
    phases: dict[str, int]
    mode: str  # the batch's forward mode (EXTEND, DECODE, MIXED, ...; idle: no batch)
    batch: int  # requests in the batch
    finished: int  # requests that finished in it
    received: int  # requests that arrived at its start
    gc_ns: int  # collector pauses inside it
    gc_collections: tuple[int, int, int]
    sent_bytes: int
    available: int = -1  # free tokens of the KV pool at its end (-1: not known)
    evictable: int = -1  # tokens the radix cache could evict at its end
    evicted: int = 0  # tokens evicted in it
    retracted: int = 0  # requests retracted in it
    # speculative decoding: requests the revision verified in it (their spec_verify_ct rose),
    # the tokens those requests gained, and the drafts the stand-in's draws accepted
    verified: int = 0
    verified_tokens: int = 0
    drawn: int = 0


@dataclass
class Steering:
    client: Client
    channel: Channel
    phases: Phases
    plan: Plan
    encode: Callable[[Any], bytes]
    freeze_request: Callable[[], Any] | None  # the revision's FreezeGCReq, if it has one
    on_measure: Callable[[], None] = lambda: None  # called as measurement starts
    on_finish: Callable[[], None] = lambda: None
    scheduler: Any = None
    counter: CallCounter | None = None  # the untimed counting pass: calls per iteration
    tracer: Any = None  # the untimed coverage pass (bench.real.driver.coverage)
    release: Callable[[Any], None] | None = None  # an injected state home's release (inject.py)
    state: str = "warmup"
    iteration: int = 0
    records: list[Record] = field(default_factory=list)
    warmup_ns: list[int] = field(default_factory=list)
    rewarm_ns: list[int] = field(default_factory=list)  # the turns' unrecorded iterations
    # per warm-up iteration: [free tokens, evictable tokens, tokens evicted, forward mode]
    warmup_trace: list[list[Any]] = field(default_factory=list)
    settled: dict[str, Any] = field(default_factory=dict)
    measure_start: int = 0
    pool_size: int = 0
    finished: int = 0
    notes: list[str] = field(default_factory=list)
    _t0: int = 0
    _gc_ns: int = 0
    _gc_count: list[int] = field(default_factory=lambda: [0, 0, 0])
    _gc_start: int = 0
    _sent_bytes: int = 0
    _finished_mark: int = 0
    _received: int = 0
    _evicted: int = 0
    _retracted: int = 0
    _settle_from: tuple[int, int] = (0, 0)  # (iteration, ns) the settle state began
    _hold_until: int = 0
    _rewarm_left: int = 0  # unrecorded iterations still to run in this turn
    _turn_at: int = -1  # the record count the last turn was taken at
    _live: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)
    _by_rid: weakref.WeakValueDictionary[str, Any] = field(
        default_factory=weakref.WeakValueDictionary
    )
    _gone: list[str] = field(default_factory=list)  # rids of requests collected
    _seen_done: set[str] = field(default_factory=set)  # rids counted finished
    # speculative decoding: per rid, (spec_verify_ct, output tokens) at the last boundary
    _spec_seen: dict[str, tuple[int, int]] = field(default_factory=dict)
    _verified: tuple[int, int, int] = (0, 0, 0)  # this iteration's (requests, tokens, drawn)

    @property
    def sent(self) -> int:
        return self.client.sent

    # -- hooks ------------------------------------------------------------------------------

    def gc_callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = now_ns()
        else:
            self._gc_ns += now_ns() - self._gc_start
            self._gc_count[int(info.get("generation", 2))] += 1

    def track_requests(self, req_class: type) -> None:
        """Know each request the revision builds (its Req.__init__ wrapped, before the
        Scheduler exists): at a boundary the live ones are those not finished(), a method every
        revision has, whatever route its finished requests take to release their cache."""
        original = req_class.__dict__["__init__"]
        live, by_rid, gone = self._live, self._by_rid, self._gone

        def __init__(req: Any, *args: Any, **kwargs: Any) -> None:
            original(req, *args, **kwargs)
            live.add(req)
            rid = getattr(req, "rid", None)
            if isinstance(rid, str):
                by_rid[rid] = req
                # a request released and dropped within one iteration (a PD prefill node's,
                # once its transfer succeeds) is gone before the next boundary could see it
                # finished: its collection says it left
                weakref.finalize(req, gone.append, rid)

        setattr(req_class, "__init__", __init__)  # noqa: B010 (a class's own method, replaced)

    def track_retractions(self, batch_class: type) -> None:
        """Count the requests each decode retraction sends back (ScheduleBatch.retract_decode,
        whose first result is the list retracted)."""
        original = batch_class.__dict__.get("retract_decode")
        if not callable(original):
            return
        steering = self

        def retract_decode(batch: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(batch, *args, **kwargs)
            first = out[0] if isinstance(out, tuple) and out else out
            steering._retracted += len(first) if isinstance(first, list) else 1
            return out

        setattr(batch_class, "retract_decode", retract_decode)  # noqa: B010

    def _track_evictions(self) -> None:
        """Count the tokens the scheduler's tree cache evicts: its own `evict` and
        `evict_for_alloc` (the allocator's entry since 2026; one may call the other, so only the
        outermost call counts), wrapped on the instance once the Scheduler exists. A result
        without a count of tokens counts one."""
        cache = getattr(self.scheduler, "tree_cache", None)
        if cache is None:
            return
        steering = self
        depth = [0]
        for name in ("evict", "evict_for_alloc"):
            method = getattr(cache, name, None)
            if not callable(method) or getattr(method, "_reqstate", False):
                continue

            def counted(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
                depth[0] += 1
                try:
                    out = _method(*args, **kwargs)
                finally:
                    depth[0] -= 1
                if not depth[0]:
                    n = getattr(out, "num_tokens_evicted", None)
                    steering._evicted += int(n) if isinstance(n, int) else 1
                return out

            counted._reqstate = True  # type: ignore[attr-defined]
            setattr(cache, name, counted)

    def _cache_state(self) -> tuple[int, int]:
        """(free tokens, evictable tokens) of the scheduler's pool now; -1 where unknown."""
        sched = self.scheduler
        free = evictable = -1
        alloc: Any = getattr(sched, "token_to_kv_pool_allocator", None)
        try:
            free = int(alloc.available_size())
            self.pool_size = self.pool_size or int(getattr(alloc, "size", 0) or 0)
        except Exception:
            pass
        try:
            evictable = int(sched.tree_cache.evictable_size())
        except Exception:
            pass
        return free, evictable

    def _eos_table(self) -> None:
        """Tell the stand-in where each capped request's EOS falls: per request-pool slot, its
        prompt's length plus the output drawn for it (untimed, at the boundary; a request
        admitted in the iteration about to run is told at the next boundary, so an EOS due on
        its first token comes one token late)."""
        import torch

        if standin.STATE.eos_at is None:
            pool = getattr(self.scheduler, "req_to_token_pool", None)
            size = int(getattr(pool, "size", 0) or 0) + 8
            standin.STATE.eos_at = torch.full((size,), 1 << 40, dtype=torch.int64)
        table = standin.STATE.eos_at
        table.fill_(1 << 40)  # a slot freed or retracted since keeps no stale EOS
        after = self.client.eos_after
        slots, ends = [], []
        for req in self._live:
            slot = _slot(req)
            target = after.get(getattr(req, "rid", ""))
            if slot is not None and target is not None and 0 <= slot < table.shape[0]:
                slots.append(int(slot))
                ends.append(len(req.origin_input_ids) + target)
        if slots:
            table[torch.tensor(slots, dtype=torch.int64)] = torch.tensor(ends, dtype=torch.int64)

    def _spec_keys(self) -> None:
        """Tell the stand-in's verify which request holds each request-pool slot (the key of its
        accept draws: bench.real.driver.spec), untimed, at the boundary."""
        import torch

        table = spec.STATE.keys
        if table is None:
            pool = getattr(self.scheduler, "req_to_token_pool", None)
            size = int(getattr(pool, "size", 0) or 0) + 8
            table = spec.STATE.keys = torch.zeros((size,), dtype=torch.int64)
        slots, keys = [], []
        for req in self._live:
            slot = _slot(req)
            if slot is not None and 0 <= slot < table.shape[0]:
                slots.append(slot)
                keys.append(spec.key_of(str(getattr(req, "rid", ""))))
        if slots:
            table[torch.tensor(slots, dtype=torch.int64)] = torch.tensor(keys, dtype=torch.int64)

    def _spec_progress(self) -> tuple[int, int, int]:
        """(requests verified, tokens they gained, drafts the stand-in's draws accepted) since
        the last boundary: each live request's spec_verify_ct and output length against the
        last boundary's (SGLang's own accept length is completion tokens / spec_verify_ct,
        python/sglang/srt/managers/tokenizer_manager.py:2794 at sgl-project/sglang
        d55f1c28e2); a request's first token, from its prefill, is no verify's."""
        seen, now = self._spec_seen, {}
        verified = tokens = 0
        for req in self._live:
            rid = str(getattr(req, "rid", ""))
            ct = int(getattr(req, "spec_verify_ct", 0) or 0)
            out = len(getattr(req, "output_ids", ()) or ())
            before = seen.get(rid)
            if before is not None and ct > before[0]:
                verified += ct - before[0]
                tokens += out - before[1]
            now[rid] = (ct, out)
        self._spec_seen = now
        drawn = spec.STATE.drawn
        spec.STATE.drawn = 0
        spec.STATE.verified = 0
        return verified, tokens, drawn

    def _collect_finished(self) -> list[tuple[str, Any]]:
        """(rid, request) of each request finished since the last boundary, in the order they
        were sent (their rids'); the request is None where it was collected before a boundary
        saw it finished.

        The order is the rids', not the live set's: a WeakSet iterates in the order of its
        members' hashes, a Req's is its address, and addresses differ from process to process
        (ASLR, and allocations that follow PYTHONHASHSEED's set and dict layouts). The client
        numbers a session's next turn and a parallel group's n requests in the order it is told
        of their ends, and the scheduler queues them in the order they arrive, so in any other
        order two processes of one seed served different batches within a few iterations."""
        done = sorted((r for r in self._live if r.finished()), key=_rid)
        out: list[tuple[str, Any]] = []
        for r in done:
            self._live.discard(r)
            if self.release is not None:
                self.release(r)
            rid = _rid(r)
            self._seen_done.add(rid)
            out.append((rid, r))
        gone, self._gone[:] = list(self._gone), []
        for rid in gone:
            if rid in self._seen_done:
                self._seen_done.discard(rid)
            else:
                out.append((rid, None))
        out.sort(key=lambda item: item[0])
        self.finished += len(out)
        return out

    # -- the boundary -----------------------------------------------------------------------

    def boundary(self) -> None:
        t_end = now_ns()
        if self.counter is not None:
            self.counter.stop()
        if self.tracer is not None:
            self.tracer.stop()
        if self.scheduler is not None and not self.iteration:
            self._track_evictions()
        if spec.STATE.model is not None:
            self._verified = self._spec_progress()
        done = self._collect_finished()
        if self.iteration:
            closed = len(self.records)
            self._close(t_end)
            if self.plan.profile_gap_s and len(self.records) > closed:
                marks.after(self.records[-1].mode, self.plan.profile_gap_s)
        if self.client.eos_after:
            self._eos_table()
        if spec.STATE.model is not None:
            self._spec_keys()
        self.iteration += 1
        self._advance()
        if self.state == "warmup" and self.iteration == self.plan.warmup_iterations:
            self._freeze()
        self._received = self.client.boundary(self.iteration, done, self._by_rid)
        self._sent_bytes = self.channel.sent_bytes
        self._gc_ns = 0
        self._gc_count = [0, 0, 0]
        self._evicted = 0
        self._retracted = 0
        if self.state == "measure":
            if self.counter is not None:
                self.counter.start()
            if self.tracer is not None:
                self.tracer.start()
            window = len(self.records)
            if self._rewarm_left > 0:
                pass  # still re-warming after this turn's start
            elif (
                self.plan.lockstep
                and window % self.plan.iterations == 0
                and window != self._turn_at
            ):
                turn(str(window // self.plan.iterations))
                self._turn_at = window
                self._rewarm_left = self.plan.rewarm_iterations
        self._t0 = now_ns()

    def _advance(self) -> None:
        """The state for the iteration about to start."""
        if self.state == "warmup" and self.iteration > self.plan.warmup_iterations:
            self.state = "settle"
            self._settle_from = (self.iteration, now_ns())
        if self.state == "settle":
            verdict = self._settle_verdict()
            if verdict is None:
                return
            self.settled = verdict
            start = settled_turn(self.iteration) if self.plan.lockstep else self.iteration
            self._hold_until = max(start, self.iteration)
            self.state = "hold"
        if self.state == "hold" and self.iteration >= self._hold_until:
            self.state = "measure"
            self.measure_start = self.iteration
            self.on_measure()
            if self.plan.profile_gap_s:
                marks.reqstate_measure_start(self.plan.profile_gap_s)
        elif self.state == "measure" and len(self.records) >= self.plan.measured:
            self.on_finish()
            if self.plan.lockstep:
                turn("end")
            raise Finished()

    def _settle_verdict(self) -> dict[str, Any] | None:
        """The settled state's description once the cache is steady or the limit is reached;
        None while it is still settling."""
        it0, ns0 = self._settle_from
        waited = self.iteration - it0
        if not self.plan.settle:
            return {"steady": None, "why": "fixed warm-up (settle off)", "at": self.iteration}
        size = self.pool_size or 0
        trace = self.warmup_trace
        occupancy = [1.0 - t[0] / size if size and t[0] >= 0 else 0.0 for t in trace]
        evicted = [t[2] > 0 for t in trace]
        v = steady.judge(occupancy, evicted, self.plan.measured)
        out = {
            "steady": v.steady,
            "why": v.why,
            "at": self.iteration,
            "settle_iterations": waited,
            "occupancy": round(v.occupancy, 4),
            "drift": round(v.drift, 4),
            "evicting": [round(v.evicting[0], 3), round(v.evicting[1], 3)],
        }
        if v.steady:
            return out
        over_time = (now_ns() - ns0) / 1e9 > self.plan.settle_max_s
        if waited >= self.plan.settle_max_iterations or over_time:
            limit = f"{waited} iterations" + (
                f", {self.plan.settle_max_s:.0f} s" if over_time else ""
            )
            out["why"] = f"not steady after {limit}: {v.why}"
            self.notes.append(f"the KV cache was not steady when measurement began: {out['why']}")
            return out
        return None

    def _close(self, t_end: int) -> None:
        total = t_end - self._t0
        phases = self.phases.take(total)
        net = total - phases["stand_in"]
        done = self.finished - self._finished_mark
        self._finished_mark = self.finished
        free, evictable = self._cache_state()
        batch = getattr(self.scheduler, "last_batch", None)
        mode = "idle"
        size = 0
        if batch is not None:
            fm = getattr(batch, "forward_mode", None)
            mode = getattr(fm, "name", str(fm))
            size = len(getattr(batch, "reqs", ()) or ())
        if self.state == "measure" and self._rewarm_left > 0:
            self._rewarm_left -= 1
            self.rewarm_ns.append(net)
            if self.counter is not None:
                self.counter.cut()
            if self.tracer is not None:
                self.tracer.cut()
            return
        if self.state != "measure":
            self.warmup_ns.append(net)
            self.warmup_trace.append([free, evictable, self._evicted, mode])
            return
        if self.counter is not None:
            self.counter.cut()
        if self.tracer is not None:
            self.tracer.cut()
        self.records.append(
            Record(
                ns=net,
                phases=phases,
                mode=mode,
                batch=size,
                finished=done,
                received=self._received,
                gc_ns=self._gc_ns,
                gc_collections=(self._gc_count[0], self._gc_count[1], self._gc_count[2]),
                sent_bytes=self.channel.sent_bytes - self._sent_bytes,
                available=free,
                evictable=evictable,
                evicted=self._evicted,
                retracted=self._retracted,
                verified=self._verified[0],
                verified_tokens=self._verified[1],
                drawn=self._verified[2],
            )
        )

    def _freeze(self) -> None:
        if not self.plan.freeze_gc:
            return
        if self.freeze_request is not None:
            self.channel.pending.append(self.encode(self.freeze_request()))
        else:
            gc.freeze()
            self.notes.append("gc.freeze() called by the driver: the revision has no FreezeGCReq")
