"""Synthetic SGLang scheduler loops driving one strategy through a scenario.

Three loops, each the order of operations of the real one (bytedance-iaas/sglang c96e68b62b):

prefill (disaggregated prefill node, prefill.py:1018-1053), per iteration:
    receive -> bootstrap queue; pop_bootstrapped: a request whose decode-side metadata has
    arrived (bootstrap_wait) and whose decode receive window fits (decode_pool_rows) is
    finalized (PD: 6 lookups; non-streaming: its hidden rows allocated, a failure aborts it,
    prefill.py:562-577) -> waiting; the chunked request's previous chunk is sent
    (prefill.py:1813); a batch of chunked_prefill_size tokens is formed (KV capacity
    permitting); forward: the capture-layer scan over the batch (forward_batch_info.py:660),
    hidden rows copied into the pool; batch result: _write_pd_hidden_rows_for_batch over ALL
    batch requests, finished prefills -> inflight + send_kv_chunk(last); every inflight
    request polled (1 lookup), Success after inflight_residence iterations -> release (11
    lookups, every request) -> kept keep_finished iterations -> dropped.
decode (decode node): admit to keep the running batch at B; scans_per_forward capture-layer
    scans over all B (no decode request ever has layers: every lookup misses, the get variant
    creates a state for each request on its first forward); one output token appended to each
    request's array('q'); finished requests released.
colocated: a decode batch with a chunk of prefill mixed into the same forward; the scan covers
    both; no hidden transfer.

Queues are not held at a target: they emerge from arrivals (fill = saturated, or a rate) and
residence times under the caps. The scheduler keeps its own record of every request
(`Tracked`); allocation, frees and device copies use it, so the loop is the same for every
strategy, including `control` whose call sites touch nothing. With verify=True the call sites'
answers are checked against the record.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bench.core.allocator import IntervalAllocator
from bench.core.arrivals import Arrival, request_stream
from bench.core.callsites import CallSites, check_pattern, compile_callsites
from bench.core.groupsites import GroupFunc, blocks, compile_program, program_of
from bench.core.hostpool import HostPool
from bench.core.scenarios import Scenario
from bench.core.workload import RequestSource
from strategies import Strategy

if TYPE_CHECKING:
    import torch

    from bench.core.rowpool import RowPool

# Queue lengths and counts sampled after every step (bench.runformat.schema.QueueSeries).
QUEUES = (
    "bootstrap",
    "waiting",
    "inflight",
    "decode_batch",
    "prefill_batch",
    "prefill_tokens",
    "admitted",
    "aborted",
)


_SCHEDULER_SERIAL = itertools.count()


class VerificationError(AssertionError):
    """A call site's answer disagrees with the harness's record (only with verify=True)."""


@dataclass(slots=True)
class Tracked:
    """The harness's own record of one request (the truth the call sites are checked against)."""

    req: Any
    prompt_len: int
    output_len: int
    meta: dict[str, Any] | None
    ready_step: int = 0  # the decode side's metadata can arrive from this iteration on
    prefilled: int = 0
    rows: list[int] | None = None  # hidden rows held: all (whole mode) or the current chunk's
    current: list[int] | None = None  # rows written by its last chunk, not yet sent
    window: int = 0  # decode receive rows reserved for it
    kv_tokens: int = 0  # prefill KV held
    done_step: int = -1  # KV transfer success
    hidden_done_step: int = -1  # whole mode: the worker reports the hidden rows sent
    failed: bool = False  # aborted (row allocation failed)
    generated: int = 0
    dst: list[int] = field(default_factory=list)
    held: list[Any] = field(default_factory=list)  # gc model: objects kept for its life

    @property
    def pd(self) -> bool:
        return self.meta is not None


def make_hidden(scenario: Scenario, pool: RowPool) -> torch.Tensor:
    """Stand-in for a forward's captured hidden states (chunk x width), on the pool's device."""
    import torch  # here, not at module level: the core is torch-free

    shape = (scenario.chunk_tokens, pool.shape.width)
    return torch.zeros(shape, dtype=pool.shape.dtype, device=pool.device)


def _poisson(rng: random.Random, rate: float) -> int:
    """Arrivals in one iteration at `rate` per iteration (Knuth; normal beyond 30)."""
    if rate > 30:
        return max(0, round(rng.gauss(rate, math.sqrt(rate))))
    limit, k, p = math.exp(-rate), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


class SchedulerLoop:
    """What every loop shares: the request stream, the call sites, finished requests kept for
    a few iterations, queue samples, and closing down."""

    def __init__(
        self,
        strategy: Strategy,
        scenario: Scenario,
        pool: RowPool | HostPool,
        *,
        pattern: str = "per_field",
        seed: int = 0,
        verify: bool = False,
        hidden: Any = None,
        sites: CallSites | None = None,
        requests: RequestSource | None = None,
        group_layout: tuple[tuple[str, bool], ...] | None = None,
        counting: bool = False,
        gc_model: bool = False,
    ) -> None:
        check_pattern(strategy, pattern)
        self.strategy = strategy
        self.scenario = scenario
        self.pattern = pattern
        self.pool = pool
        self.verify = verify and strategy.holds_state
        self.sites = sites or compile_callsites(strategy, pattern)
        # A revision's own code decides how it scans (strategy.capture); else the scenario.
        self.scan = self.sites.capture_layers(strategy.capture or scenario.capture)
        # Where the scan runs (strategies/_contract.py FORWARD_SCAN): every forward, or once per
        # prefill batch (a batch-level field the decode forwards read), or nowhere.
        self.scans_here = strategy.forward_scan == "every_forward" or (
            strategy.forward_scan == "prefill_batch" and scenario.loop == "prefill"
        )
        self.allocator = IntervalAllocator(pool.shape.rows)
        self.req_cls = (requests or RequestSource()).make(strategy)
        # Request ids unique across every scheduler in this process (rid_dict keys by them).
        rid_prefix = f"s{next(_SCHEDULER_SERIAL)}"
        self._stream: Iterator[Arrival] = request_stream(
            self.req_cls, scenario, seed, rid_prefix=rid_prefix
        )
        self._rng = random.Random(seed + 1)
        self.hidden: Any = hidden
        self.finished: deque[list[Tracked]] = deque()
        self._retiring: list[Tracked] = []
        self._batches: deque[list[list[int]]] = deque()
        self.step_no = 0
        self.completed = 0
        self.aborted = 0
        self.admitted = 0
        self._step_aborts = 0
        self._prefill_batch = 0
        # Another state group's accesses (bench.core.groupsites), replayed once per iteration
        # in the blocks every strategy of the run shares (group_layout; its own without one).
        program = program_of(strategy.program)
        layout = group_layout
        if layout is None:
            layout = blocks([program] if program else [], scenario.loop)
        self.group: GroupFunc | None = compile_program(
            strategy.name,
            program,
            strategy.home,
            strategy.get,
            strategy.group.defaults(),
            scenario.loop,
            layout,
            counting=counting,
        )
        self._new: list[Any] = []  # requests built this iteration
        # The gc suite's allocation model (docs/SCENARIOS.md "GC model"): objects an iteration
        # allocates and frees, objects kept per request, objects kept for the server's life.
        self.gc_model = gc_model
        self._transient: list[list[int]] | None = None
        self._server: deque[list[int]] = deque(maxlen=self.scenario.server_objects_capacity or 1)

    # -- shared pieces ----------------------------------------------------------------------

    def _next(self) -> Tracked:
        a = next(self._stream)
        if self.group is not None:
            self._new.append(a.req)
        return Tracked(req=a.req, prompt_len=a.prompt_len, output_len=a.output_len, meta=a.meta)

    def _group_accesses(
        self,
        batch: list[Any],
        finished: list[Tracked],
        chunks: list[Any],
        inflight: list[Any],
    ) -> None:
        """This iteration's accesses of the run's state group (none for PD hidden runs)."""
        if self.group is not None:
            done = [t.req for t in finished]
            self.group(batch, self._new, done, chunks, inflight, self.scenario.branch_share)
            self._new = []  # no reference kept past the iteration

    def _arrivals(self) -> int:
        """Requests arriving this iteration at the scenario's rate (not for 'fill')."""
        rate = self.scenario.arrival
        assert not isinstance(rate, str)
        return _poisson(self._rng, rate)

    def _finish(self, done: list[Tracked]) -> None:
        """End of life: the strategy's release now; the requests stay referenced until
        keep_finished iterations later (last batch, overlap result queue)."""
        for t in done:
            self.strategy.release(t.req)
        if self.gc_model and self.scenario.server_objects_capacity:
            k = self.scenario.server_objects_per_request
            for _ in done:  # what the radix cache keeps of it
                self._server.extend([j] for j in range(k))
        self.completed += len(done)
        self._retiring.extend(done)

    def _retire(self) -> None:
        """Once per iteration: age the finished requests; the oldest are dropped; the
        iteration's own objects go."""
        self._transient = None
        self.finished.append(self._retiring)
        self._retiring = []
        while len(self.finished) > self.scenario.keep_finished:
            self.finished.popleft()  # the last references go: requests are dropped here

    def _bookkeeping(self, batch_requests: int) -> None:
        """The batch objects the real scheduler builds every iteration (per batch request:
        scenario.batch_objects_per_request GC-tracked objects), referenced as long as the batch
        is (keep_finished iterations: last batch, overlap result queue). They are the same for
        every strategy; they give the collector what it meets in production: a steady flow of
        young objects, some of which survive a collection."""
        n = batch_requests * self.scenario.batch_objects_per_request
        self._batches.append([[i] for i in range(n)])
        while len(self._batches) > self.scenario.keep_finished + 1:
            self._batches.popleft()
        if self.gc_model:
            s = self.scenario
            k = batch_requests * s.iteration_objects_per_request + s.iteration_objects_fixed
            self._transient = [[i] for i in range(k)]  # gone when the iteration ends

    def _keep_per_request(self, batch: list[Tracked]) -> None:
        """The gc model: objects each batch request keeps for the rest of its life."""
        k = self.scenario.request_objects_per_iteration
        if self.gc_model and k:
            for t in batch:
                t.held.extend([j] for j in range(k))

    def _scan(self, reqs: list[Any]) -> list[int] | None:
        if not self.scans_here:
            return None
        layers = None
        scans = (
            self.scenario.scans_per_forward if self.strategy.forward_scan == "every_forward" else 1
        )
        for _ in range(scans):
            layers = self.scan(reqs)
        return layers

    def step(self) -> None:
        """One scheduler loop iteration."""
        self._iterate()

    def _iterate(self) -> None:
        raise NotImplementedError

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()
            self.worker_tick()

    def begin_history(self, steps: int) -> None:
        """Before `steps` untimed iterations interleaved with the process's other schedulers
        (run_history): what must turn over in them to leave a long-running server's layout."""

    def end_history(self) -> None:
        """After them: the loop runs as measured."""

    def worker_tick(self) -> None:
        """What the transfer worker thread does between iterations (not the scheduler
        thread's time: a step recorder calls it outside the timed step)."""

    def queue_sample(self) -> dict[str, int]:
        """This iteration's queue lengths (taken after the step, never timed)."""
        raise NotImplementedError

    def live_tracked(self) -> list[Tracked]:
        raise NotImplementedError

    def close(self) -> None:
        """Release every live request and its rows (strategies with side tables need it)."""
        for t in self.live_tracked():
            self.strategy.release(t.req)
            if t.rows is not None:
                self.allocator.free(t.rows)
                t.rows = None
        self.finished.clear()
        self._retiring = []
        self._batches.clear()
        self._new = []
        self._transient = None
        self._server.clear()


class PrefillLoop(SchedulerLoop):
    """The disaggregated prefill node (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.hidden is None:
            assert not isinstance(self.pool, HostPool), "a HostPool needs hidden=host_hidden(...)"
            self.hidden = make_hidden(self.scenario, self.pool)
        self.bootstrap: deque[Tracked] = deque()
        self.waiting: deque[Tracked] = deque()
        self.inflight: list[Tracked] = []
        self.chunked: Tracked | None = None
        self._worker_frees: deque[tuple[int, list[int]]] = deque()  # (due step, rows)
        self._failing: list[Tracked] = []  # bootstrap finalize failed: aborted next iteration
        self.kv_used = 0
        self.decode_reserved = 0
        self.tokens_prefilled = 0
        self._prefill_tokens = 0  # tokens prefilled in the last iteration (<= chunk_tokens)
        s = self.scenario
        self._fill_tokens = s.chunk_tokens * (s.bootstrap_wait + 1)

    def live_tracked(self) -> list[Tracked]:
        live = [*self.bootstrap, *self.waiting, *self.inflight, *self._failing]
        return live + ([self.chunked] if self.chunked is not None else [])

    def queue_sample(self) -> dict[str, int]:
        return {
            "bootstrap": len(self.bootstrap),
            "waiting": len(self.waiting),
            "inflight": len(self.inflight),
            "prefill_batch": self._prefill_batch,
            "prefill_tokens": self._prefill_tokens,
            "admitted": self.admitted,
            "aborted": self._step_aborts,
        }

    # -- one iteration ----------------------------------------------------------------------

    def _iterate(self) -> None:
        self.step_no += 1
        self._step_aborts = 0
        self.admitted = 0
        self._new = []
        self._receive()
        self._abort_failed()
        self._pop_bootstrapped()
        self._send_previous_chunk()
        batch = self._form_batch()
        self._prefill_batch = len(batch)
        self._bookkeeping(len(batch))
        self._keep_per_request([t for t, *_ in batch])
        if batch:
            truth = self.scenario.hidden_transfer and any(t.pd for t, *_ in batch)
            if self.scans_here:
                capturing = self._scan([t.req for t, *_ in batch]) is not None
                if self.verify and capturing != truth:
                    raise VerificationError(f"capture scan at step {self.step_no}: {capturing}")
            else:  # no scan in this code: the batch knows (a batch-level field)
                capturing = truth
            self._process_result(batch, capturing)
        polled = [t.req for t in self.inflight] if self.group is not None else []
        done = self._process_inflight()
        if self.group is not None:
            reqs = [t.req for t, *_ in batch]
            self._group_accesses(reqs, done, reqs, polled)
        self._finish(done)
        self._retire()

    def _backlog_tokens(self) -> int:
        queued = sum(t.prompt_len for t in self.bootstrap) + sum(t.prompt_len for t in self.waiting)
        if self.chunked is not None:
            queued += self.chunked.prompt_len - self.chunked.prefilled
        return queued

    def _receive(self) -> None:
        if self.scenario.arrival == "fill":
            backlog = self._backlog_tokens()
            while backlog < self._fill_tokens:
                t = self._admit()
                backlog += t.prompt_len
        else:
            for _ in range(self._arrivals()):
                self._admit()

    def _admit(self) -> Tracked:
        t = self._next()
        t.ready_step = self.step_no + self.scenario.bootstrap_wait
        if t.meta is not None:
            t.window = int(t.meta["window_rows"])
        self.bootstrap.append(t)
        self.admitted += 1
        return t

    def _abort_failed(self) -> list[Tracked]:
        """handle_bootstrap_failure (prefill.py:1712-1746): release (11 lookups) and abort."""
        if not self._failing:
            return []
        failed, self._failing = self._failing, []
        for t in failed:
            self.sites.release_metadata(t.req)
            self.decode_reserved -= t.window
        self.aborted += len(failed)
        self._step_aborts += len(failed)
        self._finish(failed)
        return failed

    def _pop_bootstrapped(self) -> None:
        """Finalize every request whose decode-side metadata has arrived; others stay."""
        s = self.scenario
        keep: deque[Tracked] = deque()
        while self.bootstrap:
            t = self.bootstrap.popleft()
            if self.step_no < t.ready_step or (
                t.pd and self.decode_reserved + t.window > s.decode_pool_rows
            ):
                keep.append(t)  # still Bootstrapping (decode prealloc waits, decode.py:1254)
                continue
            if t.meta is not None and s.hidden_transfer:
                self.decode_reserved += t.window
                rows = None
                if not s.streaming:
                    rows = self.allocator.alloc(int(t.meta["hidden_len"]))
                    if rows is None:  # prefill.py:562-577: abort
                        t.failed = True
                        self._failing.append(t)
                        continue
                    t.rows = rows
                base = self._rng.randrange(1 << 20)
                t.dst = list(range(base, base + t.window))
                self.sites.bootstrap_finalize(
                    t.req, t.meta, rows, t.dst, t.meta["target_layer_ids"]
                )
            self.waiting.append(t)
        self.bootstrap = keep

    def _send_previous_chunk(self) -> None:
        """process_prefill_chunk (prefill.py:1813): the chunked request's last chunk goes out."""
        t = self.chunked
        if t is None:
            return
        chunk_meta, _payload = self.sites.send_kv_chunk(t.req, False, self.scenario.hidden_transfer)
        self._after_send(t, chunk_meta)

    def _form_batch(self) -> list[tuple[Tracked, int, int, int]]:
        """Up to chunk_tokens tokens (chunked_prefill_size // dp_size): the chunked request
        first, then waiting ones whose KV fits. (request, chunk start, chunk length, batch
        offset)."""
        s = self.scenario
        budget = s.chunk_tokens
        batch: list[tuple[Tracked, int, int, int]] = []
        offset = 0
        while budget > 0:
            if self.chunked is not None:
                t, self.chunked = self.chunked, None
            elif self.waiting and self.kv_used + self.waiting[0].prompt_len <= s.kv_capacity_tokens:
                t = self.waiting.popleft()
                t.kv_tokens = t.prompt_len
                self.kv_used += t.kv_tokens
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
        self._prefill_tokens = offset
        return batch

    def _chunk_rows(self, t: Tracked, start: int, length: int) -> int:
        if t.meta is None:
            return 0
        h0 = int(t.meta["hidden_start"])
        h1 = h0 + int(t.meta["hidden_len"])
        return max(0, min(start + length, h1) - max(start, h0))

    def _process_result(self, batch: list[tuple[Tracked, int, int, int]], capturing: bool) -> None:
        s = self.scenario
        streaming_pd = s.streaming and s.hidden_transfer
        entries = []
        for t, start, length, _offset in batch:
            new_rows = None
            if streaming_pd and t.pd and not t.failed:
                n = self._chunk_rows(t, start, length)
                if n:
                    new_rows = self.allocator.alloc(n)
                    if new_rows is None:  # fail_pd_hidden_transfer (prefill.py:1319)
                        t.failed = True
                    t.rows = new_rows
            entries.append((t.req, start, length, new_rows))
        done = self.sites.write_hidden_rows(entries, capturing)
        # The device copy follows the harness's record, the same for every strategy (control's
        # call sites report nothing); with verify the call sites' answer must match it.
        truth = self._writes(batch)
        if self.verify:
            got = {id(r): (list(ix), lo, hi) for r, ix, lo, hi in done}
            want = {key: (list(ix), lo, hi) for key, (ix, lo, hi, _base) in truth.items()}
            if got != want:
                raise VerificationError(f"write_hidden_rows disagrees at step {self.step_no}")
        for indices, lo, hi, base in truth.values():
            self.pool.write(indices, self.hidden[base + lo : base + hi])
        for t, *_ in batch:
            written = truth.get(id(t.req))
            t.current = written[0] if written else None
        for t, start, length, _offset in batch:
            if start + length < t.prompt_len:
                continue  # middle chunk: sent at the next iteration
            t.done_step = self.step_no + s.inflight_residence
            self.inflight.append(t)
            if t.failed:
                continue  # is_pd_hidden_transfer_failed: straight to the inflight queue
            chunk_meta, _payload = self.sites.send_kv_chunk(t.req, True, s.hidden_transfer)
            self._after_send(t, chunk_meta)
            if t.rows is not None and not s.streaming:
                t.hidden_done_step = self.step_no + s.ack_delay

    def _writes(
        self, batch: list[tuple[Tracked, int, int, int]]
    ) -> dict[int, tuple[list[int], int, int, int]]:
        """What each request's chunk writes into the pool, from the record: rows, chunk-relative
        range, batch offset (keyed by id of the request). The forward captures when the batch
        holds a finalized PD request, whatever a strategy (control) answers."""
        out: dict[int, tuple[list[int], int, int, int]] = {}
        if not self.scenario.hidden_transfer:
            return out
        for t, start, length, offset in batch:
            n = self._chunk_rows(t, start, length)
            if not n or t.failed or t.meta is None:
                continue
            h0 = int(t.meta["hidden_start"])
            lo = max(start, h0) - start
            if self.scenario.streaming:
                rows = list(t.rows or [])
            else:
                local = max(start, h0) - h0
                rows = (t.rows or [])[local : local + n]
            out[id(t.req)] = (rows, lo, lo + n, offset)
        return out

    def _after_send(self, t: Tracked, chunk_meta: Any) -> None:
        """Check what the send reported; streaming: a sent chunk's rows are freed by the
        transfer worker once the decode side ACKs it (hidden_events.py:414-436)."""
        if self.verify:
            want = None
            if t.current is not None:
                want = t.current if self.scenario.streaming else t.rows
            got = None if chunk_meta is None else chunk_meta[3]
            if got != want:
                raise VerificationError(f"send_kv_chunk of {t.req.rid}: {chunk_meta}")
        t.current = None
        if self.scenario.streaming and t.rows is not None:
            self._worker_frees.append((self.step_no + self.scenario.ack_delay, t.rows))
            t.rows = None

    def _process_inflight(self) -> list[Tracked]:
        """Poll every inflight request; those whose transfer ended are released and returned
        (the caller finishes them)."""
        step = self.step_no
        done: list[Tracked] = []
        undone: list[Tracked] = []
        for t in self.inflight:
            hidden_done = t.rows is not None and 0 <= t.hidden_done_step <= step
            cleared = self.sites.release_on_hidden_done(t.req, hidden_done)
            if self.verify and cleared != hidden_done:
                raise VerificationError(f"release_on_hidden_done of {t.req.rid}: {cleared}")
            if hidden_done:  # the transfer worker frees them (hidden_events.py:84-94)
                self._worker_frees.append((self.step_no, t.rows or []))
                t.rows = None
            if step >= t.done_step or t.failed:
                done.append(t)
            else:
                undone.append(t)
        self.inflight = undone
        for t in done:
            rows = self.sites.release_metadata(t.req)
            if self.verify and (rows or None) != (t.rows or None):
                raise VerificationError(f"release_metadata rows of {t.req.rid}: {rows}")
            if t.rows is not None:
                self.allocator.free(t.rows)
                t.rows = None
            self.kv_used -= t.kv_tokens
            self.decode_reserved -= t.window
            if t.failed:
                self.aborted += 1
                self._step_aborts += 1
        return done

    def worker_tick(self) -> None:
        """The transfer worker thread: frees rows whose chunk was ACKed (streaming) or whose
        hidden transfer finished (whole mode). Its Python work holds the GIL, but not inside the
        scheduler's iteration, so step recorders call it outside the timed step."""
        while self._worker_frees and self._worker_frees[0][0] <= self.step_no:
            self.allocator.free(self._worker_frees.popleft()[1])

    def close(self) -> None:
        super().close()
        while self._worker_frees:
            self.allocator.free(self._worker_frees.popleft()[1])
        self.bootstrap.clear()
        self.waiting.clear()
        self.inflight = []
        self._failing = []
        self.chunked = None


class DecodeLoop(SchedulerLoop):
    """The decode node, and (colocated=True) a server mixing prefill chunks into decode."""

    def __init__(self, *args: Any, colocated: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.colocated = colocated
        self.running: list[Tracked] = []
        self.waiting: deque[Tracked] = deque()
        self.chunked: Tracked | None = None
        self._token = 1
        self._aging = False  # during the history: admitted requests arrive part-way
        self._start_stationary()

    def _start_stationary(self) -> None:
        """A full batch whose requests are part-way through their outputs, as in steady state
        (otherwise all B would finish together, and the run would measure a transient), each
        holding the output tokens it has generated so far."""
        for _ in range(self.scenario.decode_batch):
            self.running.append(self._part_way(self._next()))

    def _part_way(self, t: Tracked) -> Tracked:
        """A request some way through its output: a uniform share of it generated already."""
        t.generated = self._rng.randrange(t.output_len)
        t.req.output_ids.extend(itertools.repeat(self._token, t.generated))
        return t

    def begin_history(self, steps: int) -> None:
        """The batch built in one go (dense in the heap, and its states created together by
        the first scan) is replaced within `steps` iterations: each of its requests finishes at
        a uniform iteration of them, and each request admitted meanwhile arrives part-way
        through its output, as the stationary start's do. At the end every request of the batch
        was allocated in an iteration of its own, between the other schedulers' work, as in a
        server that has run for a while, and the batch's remaining lengths are still the
        stationary start's."""
        for t in self.running:
            t.output_len = min(t.output_len, t.generated + 1 + self._rng.randrange(steps))
        self._aging = True

    def end_history(self) -> None:
        self._aging = False

    def live_tracked(self) -> list[Tracked]:
        live = [*self.running, *self.waiting]
        return live + ([self.chunked] if self.chunked is not None else [])

    def queue_sample(self) -> dict[str, int]:
        return {
            "waiting": len(self.waiting),
            "decode_batch": len(self.running),
            "prefill_batch": self._prefill_batch,
            "admitted": self.admitted,
            "aborted": 0,
        }

    def _iterate(self) -> None:
        self.step_no += 1
        self.admitted = 0
        self._new = []
        prefill: list[Tracked] = []
        if self.colocated:
            self._receive_colocated()
            prefill = self._form_prefill()
        else:
            self._admit_decode()
        self._prefill_batch = len(prefill)
        reqs = [t.req for t in self.running] + [t.req for t in prefill]
        self._bookkeeping(len(reqs))
        self._keep_per_request(self.running)
        layers = self._scan(reqs)
        if self.verify and layers is not None:
            raise VerificationError(f"decode scan found layers at step {self.step_no}")
        token = self._token = (self._token * 1103515245 + 12345) & 0x7FFF
        finished: list[Tracked] = []
        still: list[Tracked] = []
        accepted = self.scenario.accepted_tokens_per_verify  # tokens per request per forward
        for t in self.running:
            if accepted == 1:
                t.req.output_ids.append(token)
            else:
                t.req.output_ids.extend([token] * accepted)
            t.generated += accepted
            (finished if t.generated >= t.output_len else still).append(t)
        for t in prefill:
            if t.prefilled >= t.prompt_len:  # prefill done: first token, then decode
                t.req.output_ids.append(token)
                t.generated = 1
                if self._aging:
                    self._part_way(t)
                (finished if t.generated >= t.output_len else still).append(t)
        self.running = still
        if self.group is not None:
            self._group_accesses(reqs, finished, [t.req for t in prefill], [])
        self._finish(finished)
        self._retire()

    def close(self) -> None:
        super().close()
        self.running = []
        self.waiting.clear()
        self.chunked = None

    def _admit_decode(self) -> None:
        s = self.scenario
        if s.arrival == "fill":
            n = s.decode_batch - len(self.running)
        else:
            n = min(self._arrivals(), s.decode_batch - len(self.running))
        for _ in range(max(0, n)):
            t = self._next()
            self.running.append(self._part_way(t) if self._aging else t)
        self.admitted = max(0, n)

    def _receive_colocated(self) -> None:
        s = self.scenario
        if s.arrival == "fill":
            queued = sum(t.prompt_len for t in self.waiting)
            while queued < s.chunk_tokens:
                t = self._next()
                self.waiting.append(t)
                queued += t.prompt_len
                self.admitted += 1
        else:
            for _ in range(self._arrivals()):
                self.waiting.append(self._next())
                self.admitted += 1

    def _form_prefill(self) -> list[Tracked]:
        """A chunk of prefill mixed into the decode forward, while the running batch has room."""
        s = self.scenario
        budget = s.chunk_tokens
        batch: list[Tracked] = []
        while budget > 0:
            if self.chunked is not None:
                t, self.chunked = self.chunked, None
            elif self.waiting and len(self.running) + len(batch) < s.decode_batch:
                t = self.waiting.popleft()
            else:
                break
            take = min(t.prompt_len - t.prefilled, budget)
            t.prefilled += take
            budget -= take
            batch.append(t)
            if t.prefilled < t.prompt_len:
                self.chunked = t
        return batch


def warmup_steps(scenario: Scenario) -> int:
    """Untimed iterations before a scheduler is measured: long enough for every queue to be in
    steady state, at least 10. A prefill node starts empty: the first arrivals all become ready
    together after bootstrap_wait and drain for as long again before the bootstrap queue holds
    its steady share, then a request's inflight life follows."""
    if scenario.loop != "prefill":
        return 10  # decode loops start with a stationary batch
    s = scenario
    return 10 + 2 * s.bootstrap_wait + s.inflight_residence + s.ack_delay + s.keep_finished


# Untimed iterations, interleaved over every scheduler of the process, in which a decode batch
# built in one go is replaced (DecodeLoop.begin_history): without them a process's values rose
# as that dense batch was replaced during the timed rounds. Why this construction and length,
# measured against longer plain histories: docs/REGIMES.md, "The steady layout".
DECODE_HISTORY_STEPS = 64


def history_steps(scenario: Scenario) -> int:
    """Untimed interleaved iterations before a scheduler is measured (after warmup_steps, which
    runs each scheduler alone). A decode batch turns over in DECODE_HISTORY_STEPS; a prefill
    node's live requests (bootstrap queue, inflight, kept) turn over within their longest stay,
    and the warm-up has seen it once, alone: once more, interleaved."""
    if scenario.loop != "prefill":
        return DECODE_HISTORY_STEPS
    s = scenario
    return 2 * s.bootstrap_wait + s.inflight_residence + s.ack_delay + s.keep_finished


def run_history(schedulers: list[SchedulerLoop], steps: int, rng: random.Random) -> None:
    """`steps` iterations of every scheduler, one at a time in a fresh shuffled order per
    iteration position, untimed: each scheduler's allocations land between the others', as
    the measured rounds' do (bench.measure.steps.interleave_steps)."""
    for sched in schedulers:
        sched.begin_history(steps)
    order = list(schedulers)
    for _ in range(steps):
        rng.shuffle(order)
        for sched in order:
            sched.step()
            sched.worker_tick()
    for sched in schedulers:
        sched.end_history()


def make_scheduler(
    strategy: Strategy,
    scenario: Scenario,
    pool: RowPool | HostPool,
    **kwargs: Any,
) -> SchedulerLoop:
    """The loop a scenario runs: prefill, decode, or colocated."""
    if scenario.loop == "prefill":
        return PrefillLoop(strategy, scenario, pool, **kwargs)
    return DecodeLoop(strategy, scenario, pool, colocated=scenario.loop == "colocated", **kwargs)
