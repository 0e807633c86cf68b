"""A synthetic SGLang-like prefill scheduler loop driving one strategy through the lifecycle.

    arrivals -> bootstrap queue -> bootstrap finalize -> waiting queue -> chunked prefill
    (forward: capture-layer scan, hidden-row capture into the pool, send/flush) -> inflight
    queue (polled every iteration; rows released when the hidden send is done) -> KV transfer
    done -> release -> kept one or two iterations (last batch / overlap queue) -> dropped.

The scheduler keeps its own record of every request (`Tracked`): rows, chunk progress, due
steps. Pool allocation, frees and device copies use that record, so the loop is correct for
every strategy, including `control`, whose call sites touch nothing. The call sites do the state
work the real code does; with `verify=True` their answers are checked against the record.

The population is held at `live_requests` at every step: the queues start pre-filled at their
steady-state sizes and each completion is replaced by an arrival.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bench.core.allocator import IntervalAllocator
from bench.core.callsites import PATTERNS, CallSites, compile_callsites
from bench.core.hostpool import HostPool
from bench.core.workload import DEFAULT_REQUEST_ATTRS, Arrival, StreamParams, make_request_class
from bench.core.workload import request_stream as make_stream
from strategies import Strategy

if TYPE_CHECKING:
    import torch

    from bench.rowpool import RowPool

# Requests waiting for prefill at steady state: enough that every batch fills its token budget.
WAITING_TARGET = 8
# Live requests held in the scheduler: the top of SGLang's max_running_requests default range
# (WORKLOAD.md "Scale": 2048-4096 per data-parallel worker). The one default every entry point
# (run configuration, gate, profiler) uses.
DEFAULT_LIVE_REQUESTS = 4096


@dataclass(frozen=True, kw_only=True)
class SchedulerParams:
    """One scheduler configuration. Defaults follow WORKLOAD.md where it gives a number."""

    live_requests: int = DEFAULT_LIVE_REQUESTS
    chunked_prefill_size: int = 8192
    pd_fraction: float = 0.5
    streaming: bool = False
    pattern: str = "per_field"
    seed: int = 0
    # Share of live requests sitting in the bootstrap queue (the rest are mostly inflight).
    bootstrap_share: float = 0.25
    # Iterations from a request's last chunk until its hidden send is done and rows can go.
    hidden_done_steps: int = 2
    # Iterations the scheduler keeps a finished request referenced (last batch, overlap queue).
    keep_finished_steps: int = 2
    request_attrs: int = DEFAULT_REQUEST_ATTRS
    token_ids_per_request: int = 64

    def __post_init__(self) -> None:
        if self.live_requests < WAITING_TARGET + 2:
            raise ValueError(f"live_requests must be at least {WAITING_TARGET + 2}")
        if self.chunked_prefill_size <= 0:
            raise ValueError("chunked_prefill_size must be positive")
        if self.pattern not in PATTERNS:
            raise ValueError(f"unknown access pattern {self.pattern!r}")
        if not 0.0 <= self.bootstrap_share < 1.0:
            raise ValueError("bootstrap_share must be within [0, 1)")

    @property
    def bootstrap_target(self) -> int:
        return int(self.live_requests * self.bootstrap_share)

    @property
    def inflight_target(self) -> int:
        return self.live_requests - self.bootstrap_target - WAITING_TARGET


@dataclass(slots=True)
class Tracked:
    """The harness's own record of one request (the truth the call sites are checked against)."""

    req: Any
    prompt_len: int
    meta: dict[str, Any] | None
    rows: list[int] | None = None  # all hidden rows (whole mode) or this chunk's (streaming)
    prefilled: int = 0
    hidden_due_step: int = -1
    dst: list[int] = field(default_factory=list)


def make_hidden(params: SchedulerParams, pool: RowPool) -> torch.Tensor:
    import torch  # here, not at module level: the instruction gate runs without torch

    shape = (params.chunked_prefill_size, pool.shape.width)
    return torch.zeros(shape, dtype=pool.shape.dtype, device=pool.device)


class VerificationError(AssertionError):
    """A call site's answer disagrees with the harness's record (only with verify=True)."""


class SyntheticScheduler:
    def __init__(
        self,
        strategy: Strategy,
        params: SchedulerParams,
        pool: RowPool | HostPool,
        *,
        verify: bool = False,
        sites: CallSites | None = None,
        hidden: torch.Tensor | range | None = None,
    ) -> None:
        self.strategy = strategy
        self.params = params
        self.pool = pool
        self.device = pool.device
        self.verify = verify and strategy.holds_state
        self.sites = sites or compile_callsites(strategy, params.pattern)
        self.allocator = IntervalAllocator(pool.shape.rows)
        self.req_cls = make_request_class(strategy, n_attrs=params.request_attrs)
        stream_params = StreamParams(
            seed=params.seed,
            pd_fraction=params.pd_fraction,
            streaming=params.streaming,
            token_ids_per_request=params.token_ids_per_request,
            max_prompt_tokens=min(16384, pool.shape.rows),
        )
        self._stream: Iterator[Arrival] = make_stream(self.req_cls, stream_params)
        self._rng = random.Random(params.seed)
        # Stand-in for the forward's captured hidden states: allocated once, reused each step
        # (schedulers measured side by side may share one).
        if hidden is None:
            assert not isinstance(pool, HostPool), "a HostPool needs hidden=host_hidden(...)"
            hidden = make_hidden(params, pool)
        self.hidden: Any = hidden  # a device tensor, or a range for a HostPool
        self.bootstrap: deque[Tracked] = deque()
        self.waiting: deque[Tracked] = deque()
        self.inflight: deque[Tracked] = deque()
        self.chunked: Tracked | None = None
        self.finished: deque[list[Tracked]] = deque()
        self.step_no = 0
        self.completed = 0
        self.tokens_prefilled = 0
        self._prefill_population()

    # -- population -------------------------------------------------------------------------

    @property
    def live(self) -> int:
        return (
            len(self.bootstrap)
            + len(self.waiting)
            + len(self.inflight)
            + (1 if self.chunked is not None else 0)
        )

    def _arrive(self) -> Tracked:
        a = next(self._stream)
        return Tracked(req=a.req, prompt_len=a.prompt_len, meta=a.meta)

    def _prefill_population(self) -> None:
        """Start at steady state: inflight (hidden already sent), waiting, then bootstrap."""
        p = self.params
        for _ in range(p.inflight_target):
            t = self._arrive()
            if t.meta is not None:  # bootstrapped, prefilled, hidden rows already sent
                self.sites.bootstrap_finalize(t.req, t.meta, None, [], t.meta["target_layer_ids"])
                self.sites.release_and_clear(t.req)
            self.inflight.append(t)
        for _ in range(WAITING_TARGET):
            self.bootstrap.append(self._arrive())
            self._finalize_oldest()
        for _ in range(p.bootstrap_target):
            self.bootstrap.append(self._arrive())

    def _dst(self, t: Tracked) -> list[int]:
        assert t.meta is not None
        base = self._rng.randrange(1 << 20)
        t.dst = list(range(base, base + t.meta["window_rows"]))
        return t.dst

    # -- lifecycle stages -------------------------------------------------------------------

    def _finalize_oldest(self) -> bool:
        """Bootstrap finalize of the oldest request; False when its rows are not free yet."""
        t = self.bootstrap[0]
        if t.meta is not None:
            src = None
            if not self.params.streaming:
                src = self.allocator.alloc(t.meta["hidden_len"])
                if src is None:
                    return False  # head-of-line waits for rows, as the real queue does
                t.rows = src
            self.sites.bootstrap_finalize(
                t.req, t.meta, src, self._dst(t), t.meta["target_layer_ids"]
            )
        self.bootstrap.popleft()
        self.waiting.append(t)
        return True

    def _form_batch(self) -> list[tuple[Tracked, int, int, int]]:
        """Up to chunked_prefill_size tokens: the chunked request first, then waiting ones."""
        budget = self.params.chunked_prefill_size
        batch: list[tuple[Tracked, int, int, int]] = []
        offset = 0
        while budget > 0:
            if self.chunked is not None:
                t, self.chunked = self.chunked, None
            elif self.waiting:
                t = self.waiting.popleft()
            else:
                break
            take = min(t.prompt_len - t.prefilled, budget)
            batch.append((t, t.prefilled, take, offset))
            t.prefilled += take
            offset += take
            budget -= take
            if t.prefilled < t.prompt_len:
                self.chunked = t  # continues in the next batch
        self.tokens_prefilled += offset
        return batch

    def _chunk_writes(
        self, batch: list[tuple[Tracked, int, int, int]]
    ) -> tuple[list[tuple[Any, int, int, int, list[int] | None]], dict[int, tuple]]:
        """Entries for the call site, and the truth of what each PD request writes."""
        entries = []
        truth: dict[int, tuple[list[int], int, int]] = {}
        for t, start, length, offset in batch:
            new_rows = None
            if t.meta is not None:
                h0 = t.meta["hidden_start"]
                h1 = h0 + t.meta["hidden_len"]
                w0, w1 = max(start, h0), min(start + length, h1)
                if w1 > w0:
                    if self.params.streaming:
                        new_rows = self.allocator.alloc(w1 - w0)
                        if new_rows is None:
                            raise RuntimeError("row pool exhausted in streaming mode")
                        t.rows = new_rows
                        indices = new_rows
                    else:
                        assert t.rows is not None
                        indices = t.rows[w0 - h0 : w1 - h0]
                    row_lo = offset + w0 - start
                    truth[id(t.req)] = (indices, row_lo, row_lo + w1 - w0)
            entries.append((t.req, start, length, offset, new_rows))
        return entries, truth

    def _prefill(self) -> None:
        batch = self._form_batch()
        if not batch:
            return
        reqs = [t.req for t, *_ in batch]
        # forward-batch init: both variants of "which capture layers does this batch need?"
        self.sites.capture_layers_get(reqs)
        self.sites.capture_layers_peek(reqs)
        entries, truth = self._chunk_writes(batch)
        done = self.sites.write_hidden_rows(entries)
        if self.verify:
            got = {id(r): (list(ix), lo, hi) for r, ix, lo, hi in done}
            if got != {k: (list(v[0]), v[1], v[2]) for k, v in truth.items()}:
                raise VerificationError(f"write_hidden_rows disagrees at step {self.step_no}")
        for indices, row_lo, row_hi in truth.values():
            self.pool.write(indices, self.hidden[row_lo:row_hi])
        for t, start, length, _ in batch:
            if self.params.streaming and t.meta is not None and id(t.req) in truth:
                sent = self.sites.owner_direct_send(t.req)
                if self.verify and (sent is None or sent[0] != t.rows):
                    raise VerificationError(f"owner_direct_send rows of {t.req.rid}")
                assert t.rows is not None
                self.allocator.free(t.rows)
                t.rows = None
            self.sites.send_kv_chunk(t.req)
            if start + length >= t.prompt_len:
                t.hidden_due_step = self.step_no + self.params.hidden_done_steps
                self.inflight.append(t)

    def _poll_inflight(self) -> None:
        step = self.step_no
        for t in self.inflight:
            held = self.sites.hidden_rows_held(t.req)
            if self.verify and held != (t.rows is not None):
                raise VerificationError(f"hidden_rows_held of {t.req.rid}: {held}")
            if t.rows is not None and step >= t.hidden_due_step:
                rows = self.sites.release_and_clear(t.req)
                if self.verify and rows != t.rows:
                    raise VerificationError(f"release_and_clear rows of {t.req.rid}")
                self.allocator.free(t.rows)
                t.rows = None

    def _complete(self) -> None:
        done: list[Tracked] = []
        while len(self.inflight) > self.params.inflight_target:
            head = self.inflight[0]
            if head.rows is not None:  # KV can't finish before the hidden rows are released
                break
            self.inflight.popleft()
            self.strategy.release(head.req)
            done.append(head)
        self.completed += len(done)
        self.finished.append(done)
        while len(self.finished) > self.params.keep_finished_steps:
            self.finished.popleft()  # the last references go: requests are dropped here

    # -- one iteration ----------------------------------------------------------------------

    def step(self) -> None:
        """One scheduler loop iteration."""
        self.step_no += 1
        while self.live < self.params.live_requests:
            self.bootstrap.append(self._arrive())
        while len(self.bootstrap) > self.params.bootstrap_target:
            if not self._finalize_oldest():
                break
        self._prefill()
        self._poll_inflight()
        self._complete()

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()

    def close(self) -> None:
        """Release every live request and its rows (strategies with side tables need it)."""
        live = [*self.bootstrap, *self.waiting, *self.inflight]
        if self.chunked is not None:
            live.append(self.chunked)
        for t in live:
            self.strategy.release(t.req)
            if t.rows is not None:
                self.allocator.free(t.rows)
                t.rows = None
        for queue in (self.bootstrap, self.waiting, self.inflight):
            queue.clear()
        self.chunked = None
        self.finished.clear()
