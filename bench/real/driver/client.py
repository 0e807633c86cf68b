"""The clients of a real scheduler: what they send at each iteration boundary.

A closed loop of `running` clients, each holding one slot: a client sends a request and, when it
ends, either leaves (a new client takes the slot: a fresh request) or, in a multi-turn session,
sends its next turn, whose prompt is its previous prompt, the output it received and a new
message (so the radix cache matches what the last turn left in it). A parallel-sampling group
of n holds n slots: the tokenizer manager first sends its prompt once with max_new_tokens 0 and
stream off (to cache the prefix), waits for it, then sends n requests of the same prompt with
their own ids (_handle_batch_request at python/sglang/srt/managers/tokenizer_manager.py:
1880-1936 at sgl-project/sglang d55f1c28e2). A client that disconnects sends AbortReq once it
has received its share of the output, and leaves.

Pure bookkeeping over the revision's Req objects (their rid, output_ids, finished()); the
revision's own objects are built by bench.real.driver.requests.RequestFactory.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.real.driver.features import Drawer, Drawn
from bench.real.driver.requests import RequestFactory, rid_of


@dataclass
class Trajectory:
    """One client's conversation."""

    drawn: Drawn
    turns_left: int  # turns still to send after the current one
    prompt: array[int]  # the current turn's prompt
    max_new_tokens: int = 0
    key: int = 0  # its first request's index: the seed of its later turns
    turn: int = 1
    rid: str = ""
    aborted: bool = False


@dataclass
class Client:
    factory: RequestFactory
    running: int
    send: Callable[[Any], None]  # queues one of the revision's objects on the wire
    drawer: Drawer = field(init=False)
    index: int = 0  # request ids handed out
    busy: int = 0  # slots held: trajectories alive, waiting for their prefix or thinking
    sent: int = 0  # generate requests sent
    aborts_sent: int = 0
    by_rid: dict[str, Trajectory] = field(default_factory=dict)
    prefix: dict[str, list[Trajectory]] = field(default_factory=dict)  # rid -> its group
    thinking: list[tuple[int, Trajectory]] = field(default_factory=list)  # (ready at, traj)
    # rid -> the output length after which the stand-in samples the EOS (a cap was sent)
    eos_after: dict[str, int] = field(default_factory=dict)
    iteration: int = 0

    def __post_init__(self) -> None:
        self.drawer = Drawer(self.factory.w.features, self.factory.w.seed)

    # -- at a boundary ----------------------------------------------------------------------

    def boundary(
        self, iteration: int, finished: Iterable[tuple[str, Any]], live: Mapping[str, Any]
    ) -> int:
        """React to the requests that finished since the last boundary ((rid, the request, or
        None where it is already gone)), send aborts, next turns and new requests; returns how
        many generate requests were sent."""
        self.iteration = iteration
        before = self.sent
        for rid, req in finished:
            self._finished(rid, req)
        ready = [t for at, t in self.thinking if at <= iteration]
        self.thinking = [(at, t) for at, t in self.thinking if at > iteration]
        for traj in ready:
            self._send_turn(traj)
        self._aborts(live)
        initial = self.index == 0
        while self.busy < self.running:
            self._new(initial)
        return self.sent - before

    def _finished(self, rid: str, req: Any) -> None:
        group = self.prefix.pop(rid, None)
        if group is not None:  # the prefix is cached: the group's n requests go now
            for member in group:
                self._send_turn(member)
            return
        traj = self.by_rid.get(rid)
        if traj is None:
            return
        del self.by_rid[rid]
        self.eos_after.pop(traj.rid, None)
        if traj.aborted or traj.turns_left <= 0 or req is None:
            self.busy -= 1
            return
        output = array("q", list(getattr(req, "output_ids", []) or []))
        traj.turn += 1
        message, traj.max_new_tokens = self.factory.turn(traj.key, traj.turn)
        traj.prompt = traj.prompt + output + message
        traj.turns_left -= 1
        think = self.factory.w.features.think_iterations
        if think > 0:
            self.thinking.append((self.iteration + think, traj))
        else:
            self._send_turn(traj)

    def _aborts(self, live: Mapping[str, Any]) -> None:
        for rid, traj in self.by_rid.items():
            share = traj.drawn.abort_share
            if share is None or traj.aborted:
                continue
            req = live.get(rid)
            if req is None:
                continue
            at = max(1, int(share * traj.max_new_tokens))
            if len(getattr(req, "output_ids", ()) or ()) >= at:
                traj.aborted = True
                self.send(self.factory.abort(rid))
                self.aborts_sent += 1

    # -- sending ----------------------------------------------------------------------------

    def _next_rid(self) -> str:
        rid = rid_of(self.index)
        self.index += 1
        return rid

    def _new(self, initial: bool) -> None:
        drawn = self.drawer.draw()
        if initial:
            self._in_flight(drawn)
        lengths = self.factory.lengths(initial=initial)
        n = drawn.n if drawn.n <= self.running else 1
        key = self.index
        trajs = [
            Trajectory(drawn, drawn.turns - 1, lengths.ids, lengths.output_len, key * 64 + k)
            for k in range(n)
        ]
        if initial and drawn.turns > 1:
            # the first cohort's sessions are caught at a uniform turn, holding the turns before
            depth = 1 + (self.index * 2654435761 + 97) % drawn.turns
            for traj in trajs:
                traj.prompt = traj.prompt + self.factory.history(traj.key, depth)
                traj.turn = depth
                traj.turns_left = drawn.turns - depth
        self.busy += n
        if n == 1:
            self._send_turn(trajs[0])
            return
        rid = self._next_rid()
        self.prefix[rid] = trajs
        # the tokenizer manager's copy of the request: its own features, no output, no stream
        self.send(self.factory.request(rid, lengths.ids, 0, drawn, room=self.sent, stream=False))
        self.sent += 1

    def _in_flight(self, drawn: Drawn) -> None:
        """The first cohort as a long-running server holds it: a session lasts `turns` times as
        long as a single request, so a slot caught in flight holds a session with probability
        sT / (sT + 1 - s), not s (length-biased, as every inspection of a queue is)."""
        f = self.factory.w.features
        if f.session <= 0 or f.turns <= 1:
            return
        weight = f.session * f.turns
        p = weight / (weight + 1 - f.session)
        u = ((self.index * 2246822519 + 3266489917) % (1 << 32)) / (1 << 32)
        drawn.turns = f.turns if u < p else 1

    def _send_turn(self, traj: Trajectory) -> None:
        traj.rid = self._next_rid()
        self.by_rid[traj.rid] = traj
        cap = self.factory.w.features.max_new_tokens
        if cap:
            self.eos_after[traj.rid] = min(traj.max_new_tokens, cap)
        obj = self.factory.request(
            traj.rid, traj.prompt, cap or traj.max_new_tokens, traj.drawn, room=self.sent
        )
        self.send(obj)
        self.sent += 1
