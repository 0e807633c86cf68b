"""The steering of one real scheduler: called at each iteration boundary (the first receive of
the revision's event loop, bench.real.driver.ipc), untimed, it closes the iteration just run,
queues the next one's arrivals and ends the run.

States: `warmup` (until the batch has churned through `warmup_iterations`; the server's own
warm-up is then answered with FreezeGCReq, which the revision handles with gc.freeze() as its
HTTP server asks after warm-up, python/sglang/srt/entrypoints/http_server.py:2357-2399 at
sgl-project/sglang d55f1c28e2), then `measure` (`values` x `iterations` iterations recorded),
then the run ends by raising Finished out of the event loop (a BaseException: the revision's
`except Exception` around its loop does not catch it).

An iteration's figure is its wall time between two boundaries less the stand-in model's time;
the boundary's own work (building and encoding arrivals) lies outside both.
"""

from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.base.timing import now_ns
from bench.real.driver.calls import CallCounter
from bench.real.driver.ipc import Channel
from bench.real.driver.phases import Phases
from bench.real.driver.requests import RequestFactory


def turn(window: str) -> None:
    """Say this process is at a window's start (or at its end), and wait for the harness to
    let it go on (a line on stdin): the lockstep protocol of bench.real.lockstep."""
    sys.stderr.write(f"@window {window}\n")
    sys.stderr.flush()
    if window != "end":
        sys.stdin.readline()


class Finished(BaseException):
    """The run is complete (or failed): unwinds the revision's event loop."""


@dataclass
class Plan:
    warmup_iterations: int
    values: int
    iterations: int  # per value
    freeze_gc: bool = True
    # Lockstep (bench.real.lockstep): before each window of `iterations`, wait for the harness's
    # turn, so that processes of other revisions measure their window i moments apart while
    # this one sleeps, never at the same time.
    lockstep: bool = False

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


@dataclass
class Steering:
    factory: RequestFactory
    channel: Channel
    phases: Phases
    plan: Plan
    encode: Callable[[Any], bytes]
    freeze_request: Callable[[], Any] | None  # the revision's FreezeGCReq, if it has one
    on_measure: Callable[[], None] = lambda: None  # called as measurement starts
    on_finish: Callable[[], None] = lambda: None
    scheduler: Any = None
    counter: CallCounter | None = None  # the untimed counting pass: calls per iteration
    release: Callable[[Any], None] | None = None  # an injected state home's release (inject.py)
    state: str = "warmup"
    iteration: int = 0
    records: list[Record] = field(default_factory=list)
    warmup_ns: list[int] = field(default_factory=list)
    finished: int = 0
    sent: int = 0
    notes: list[str] = field(default_factory=list)
    _t0: int = 0
    _gc_ns: int = 0
    _gc_count: list[int] = field(default_factory=lambda: [0, 0, 0])
    _gc_start: int = 0
    _sent_bytes: int = 0
    _finished_mark: int = 0
    _received: int = 0
    _live: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)

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
        live = self._live

        def __init__(req: Any, *args: Any, **kwargs: Any) -> None:
            original(req, *args, **kwargs)
            live.add(req)

        setattr(req_class, "__init__", __init__)  # noqa: B010 (a class's own method, replaced)

    def _count_live(self) -> int:
        done = [r for r in self._live if r.finished()]
        for r in done:
            self._live.discard(r)
            if self.release is not None:
                self.release(r)
        self.finished += len(done)
        return len(self._live) + len(self.channel.pending)

    # -- the boundary -----------------------------------------------------------------------

    def boundary(self) -> None:
        t_end = now_ns()
        if self.counter is not None:
            self.counter.stop()
        self._count_live()
        if self.iteration:
            self._close(t_end)
        self.iteration += 1
        if self.state == "warmup" and self.iteration > self.plan.warmup_iterations:
            self.state = "measure"
            self.on_measure()
        elif self.state == "measure" and len(self.records) >= self.plan.measured:
            self.on_finish()
            if self.plan.lockstep:
                turn("end")
            raise Finished()
        if self.state == "warmup" and self.iteration == self.plan.warmup_iterations:
            self._freeze()
        self._received = self._arrivals()
        self._sent_bytes = self.channel.sent_bytes
        self._gc_ns = 0
        self._gc_count = [0, 0, 0]
        if self.counter is not None and self.state == "measure":
            self.counter.start()
        if self.plan.lockstep and self.state == "measure":
            if len(self.records) % self.plan.iterations == 0:
                turn(str(len(self.records) // self.plan.iterations))
        self._t0 = now_ns()

    def _close(self, t_end: int) -> None:
        total = t_end - self._t0
        phases = self.phases.take(total)
        net = total - phases["stand_in"]
        done = self.finished - self._finished_mark
        self._finished_mark = self.finished
        if self.state == "warmup":
            self.warmup_ns.append(net)
            return
        batch = getattr(self.scheduler, "last_batch", None)
        mode = "idle"
        size = 0
        if batch is not None:
            fm = getattr(batch, "forward_mode", None)
            mode = getattr(fm, "name", str(fm))
            size = len(getattr(batch, "reqs", ()) or ())
        if self.counter is not None:
            self.counter.cut()
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

    def _arrivals(self) -> int:
        """Queue what arrives for the next iteration: as many as keep `running` requests live
        (the first cohort mid-flight, see RequestFactory); returns how many."""
        want = max(0, self.factory.w.running - len(self._live) - len(self.channel.pending))
        initial = self.sent == 0
        for _ in range(want):
            req, _prompt, _output = self.factory.make(initial=initial)
            self.channel.pending.append(self.encode(req))
            self.sent += 1
        return want
