"""Real mode's traffic without SGLang: the warm-up's steady-state rule, the clients (sessions,
parallel sampling, aborts, the first cohort caught in flight, the order they hear of ends in),
the per-request feature draws, the stand-in's grammar-mask reading and the line tracer, each on
its own."""

from __future__ import annotations

import random
import textwrap
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bench.real.driver import steady
from bench.real.driver.client import Client
from bench.real.driver.coverage import LineTracer
from bench.real.driver.features import ORDER, Drawer, Features
from bench.real.driver.loop import Steering
from bench.real.driver.requests import Lengths, Workload, rid_of

# -- the warm-up's rule -------------------------------------------------------------------


def test_a_filling_pool_is_not_steady_and_a_full_evicting_one_is() -> None:
    w = steady.WINDOW
    filling = [0.3 + 0.001 * i for i in range(2 * w)]
    verdict = steady.judge(filling, [False] * (2 * w), horizon=400)
    assert not verdict.steady
    assert "occupancy" in verdict.why
    rng = random.Random(0)
    full = [0.999] * (2 * w)
    evicting = [rng.random() < 0.35 for _ in range(2 * w)]
    assert steady.judge(full, evicting, horizon=400).steady


def test_an_eviction_share_that_jumps_is_not_steady() -> None:
    w = steady.WINDOW
    occ = [0.999] * (2 * w)
    evicted = [False] * w + [True] * (w // 2) + [False] * (w - w // 2)
    verdict = steady.judge(occ, evicted, horizon=400)
    assert not verdict.steady
    assert "eviction" in verdict.why


def test_a_pool_that_never_fills_is_steady_once_its_occupancy_stops() -> None:
    w = steady.WINDOW
    assert steady.judge([0.47] * (2 * w), [False] * (2 * w), horizon=400).steady
    assert not steady.judge([0.47] * (2 * w - 1), [False] * (2 * w - 1), horizon=400).steady


# -- the per-request draws ----------------------------------------------------------------


def test_draws_give_each_feature_its_share_and_leave_the_others_when_one_changes() -> None:
    a = Drawer(Features(logprob=0.3, stop=0.5, abort=0.2), seed=7)
    b = Drawer(Features(logprob=0.3, stop=0.9, abort=0.2), seed=7)
    da = [a.draw() for _ in range(4000)]
    db = [b.draw() for _ in range(4000)]
    assert 0.27 < sum(d.logprob for d in da) / 4000 < 0.33
    assert 0.47 < sum(d.stop for d in da) / 4000 < 0.53
    assert [d.logprob for d in da] == [d.logprob for d in db]
    assert [d.abort_share for d in da] == [d.abort_share for d in db]
    assert sum(d.stop for d in db) > sum(d.stop for d in da)
    assert set(ORDER) >= {f for d in da for f in d.flags}


def test_request_ids_are_one_width_so_none_is_a_prefix_of_another() -> None:
    ids = [rid_of(i) for i in (1, 10, 100, 123456789)]
    assert len({len(i) for i in ids}) == 1
    assert not any(a != b and b.startswith(a) for a in ids for b in ids)


# -- the clients --------------------------------------------------------------------------


@dataclass
class FakeReq:
    rid: str
    origin_input_ids: array[int]
    output_ids: list[int] = field(default_factory=list)


@dataclass
class FakeFactory:
    """The parts of RequestFactory the client uses, without the revision's classes."""

    w: Workload
    made: int = 0
    sent: list[dict[str, Any]] = field(default_factory=list)

    def lengths(self, *, initial: bool = False) -> Lengths:
        self.made += 1
        ids = array("q", [3, 3 + self.made] + [7] * 30)
        return Lengths(ids + array("q", [9] * 10), 20, 10) if initial else Lengths(ids, 20)

    def turn(self, key: int, turn: int) -> tuple[array[int], int]:
        return array("q", [5] * 4), 12

    def history(self, key: int, depth: int) -> array[int]:
        return array("q", [6] * (16 * (depth - 1)))

    def request(self, rid: str, ids: array[int], max_new: int, drawn: Any, **kw: Any) -> Any:
        obj = {"rid": rid, "ids": array("q", ids), "max_new": max_new, "drawn": drawn, **kw}
        self.sent.append(obj)
        return obj

    def abort(self, rid: str) -> Any:
        obj = {"abort": rid}
        self.sent.append(obj)
        return obj


def _client(features: Features, running: int = 4) -> tuple[Client, FakeFactory]:
    w = Workload(running, "fixed:32", 0.0, "fixed:20", True, 32000, features=features)
    factory = FakeFactory(w)
    return Client(factory, running, lambda _obj: None), factory  # type: ignore[arg-type]


def test_a_session_s_next_turn_holds_the_last_prompt_its_output_and_a_message() -> None:
    client, factory = _client(Features(session=1.0, turns=3))
    client.boundary(1, [], {})
    assert client.busy == 4
    later = [o for o in factory.sent if "rid" in o]
    first = later[-1]
    req = FakeReq(first["rid"], first["ids"], output_ids=[11] * 20)
    factory.sent.clear()
    client.boundary(2, [(first["rid"], req)], {})
    (nxt,) = [o for o in factory.sent if "rid" in o]
    assert list(nxt["ids"]) == list(first["ids"]) + [11] * 20 + [5] * 4
    assert client.busy == 4  # the session keeps its slot


def test_a_parallel_group_sends_its_prefix_then_n_requests_of_the_same_prompt() -> None:
    client, factory = _client(Features(parallel=1.0, n=4), running=4)
    client.boundary(1, [], {})
    (prefix,) = factory.sent
    assert prefix["max_new"] == 0
    assert prefix["stream"] is False
    assert client.busy == 4
    factory.sent.clear()
    client.boundary(2, [(prefix["rid"], FakeReq(prefix["rid"], prefix["ids"]))], {})
    assert len(factory.sent) == 4
    assert all(list(o["ids"]) == list(prefix["ids"]) for o in factory.sent)
    assert len({o["rid"] for o in factory.sent}) == 4


def test_a_client_that_disconnects_sends_abortreq_after_its_share_and_leaves() -> None:
    client, factory = _client(Features(abort=1.0), running=2)
    client.boundary(1, [], {})
    reqs = {o["rid"]: FakeReq(o["rid"], o["ids"], [1] * 20) for o in factory.sent}
    client.boundary(2, [], reqs)
    aborts = [o["abort"] for o in factory.sent if "abort" in o]
    assert sorted(aborts) == sorted(reqs)
    factory.sent.clear()
    client.boundary(3, [(rid, reqs[rid]) for rid in aborts], {})
    assert len([o for o in factory.sent if "rid" in o]) == 2  # two new clients took the slots


def test_the_first_cohort_is_caught_in_flight() -> None:
    client, factory = _client(Features(session=0.5, turns=5), running=64)
    client.boundary(1, [], {})
    first = [o for o in factory.sent if "rid" in o]
    assert all(len(o["ids"]) >= 42 for o in first)  # prompt and the output generated so far
    deep = [o for o in first if len(o["ids"]) > 42]
    # a slot caught in flight holds a session with probability sT / (sT + 1 - s) = 5/6
    assert len(deep) > 32


def test_a_capped_request_is_told_where_its_eos_falls() -> None:
    client, factory = _client(Features(max_new_tokens=4096, ignore_eos=False), running=2)
    client.boundary(1, [], {})
    assert all(o["max_new"] == 4096 for o in factory.sent)
    assert sorted(client.eos_after.values()) == [20, 20]


@dataclass(eq=False)
class AddressedReq:
    """A finished request whose hash, a real Req's address, is chosen here."""

    rid: str
    address: int

    def __hash__(self) -> int:
        return self.address

    def finished(self) -> bool:
        return True


def test_the_client_hears_of_finished_requests_in_the_order_they_were_sent() -> None:
    """The driver keeps the live requests in a WeakSet, which iterates in their hashes' order:
    their addresses, which differ from one process to another. Whatever the addresses, two
    processes of one seed tell their clients of the same ends in the same order (the rids'),
    so they number and queue the next turns alike."""
    told = []
    for addresses in ([0, 1, 2, 4, 5, 6, 7], [7, 6, 5, 4, 2, 1, 0]):
        steering = Steering(None, None, None, None, None, None)  # type: ignore[arg-type]
        rids = [rid_of(i) for i in (0, 1, 2, 4, 5, 6, 7)]
        reqs = [AddressedReq(rid, a) for rid, a in zip(rids, addresses, strict=True)]
        for req in reqs:
            steering._live.add(req)
        steering._gone.append(rid_of(3))  # collected before a boundary saw it finished
        told.append([rid for rid, _req in steering._collect_finished()])
    assert told[0] == told[1] == [rid_of(i) for i in range(8)]


# -- the stand-in's grammar mask and the tracer -------------------------------------------


def test_a_bitmask_row_gives_exactly_the_tokens_it_allows() -> None:
    torch = pytest.importorskip("torch")
    from bench.real.driver.standin import _allowed_tokens

    row = torch.zeros(4, dtype=torch.int32)
    for token in (0, 5, 31, 33, 100):
        row[token // 32] |= 1 << (token % 32)
    assert _allowed_tokens(torch, row, 128).tolist() == [0, 5, 31, 33, 100]
    assert _allowed_tokens(torch, row, 64).tolist() == [0, 5, 31, 33]


def test_the_line_tracer_reports_executed_body_lines_and_reached_functions(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "sglang" / "srt" / "managers"
    pkg.mkdir(parents=True)
    (tmp_path / "sglang" / "srt" / "mem_cache").mkdir()
    (pkg / "m.py").write_text(
        textwrap.dedent(
            """
            def used(x):
                if x:
                    return 1
                return 2

            def unused():
                return 3
            """
        )
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("m", pkg / "m.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tracer = LineTracer(str(tmp_path / "sglang"))
    tracer.start()
    module.used(True)
    tracer.stop()
    report = tracer.report()["sglang/srt/managers/m.py"]
    assert report["covered"] == [3, 4]
    assert report["executable"] == [3, 4, 5, 8]
    assert report["reached"] == ["used:2"]
    assert sorted(report["functions"]) == ["unused:7", "used:2"]
