"""Every registered strategy implements the same semantics (plus one external module)."""

from __future__ import annotations

import copy
import gc
import sys
import threading
import weakref

import pytest

from conftest import ALL_STRATEGIES
from strategies import Strategy, load_external
from strategies._contract import FIELD_DEFAULTS, FIELDS
from tests.helpers import FIXTURES, Liveness, new_request

EXTERNAL = load_external(str(FIXTURES / "ext_strategy.py"))

VALUES: dict[str, object] = {
    "meta": {"hidden_start": 3, "hidden_len": 5},
    "src_indices": [7, 8, 9],
    "dst_indices": [1, 2, 3],
    "written": [True, False, True],
    "capture_layer_ids": [40, 41, 42],
    "current_src_indices": [8],
    "current_start": 12,
    "current_row_len": 4,
    "current_is_last": True,
    "owner_direct_sent": True,
}
assert set(VALUES) == set(FIELDS)


SUBJECTS = [*ALL_STRATEGIES, EXTERNAL]


@pytest.fixture(params=SUBJECTS, ids=[s.name for s in SUBJECTS])
def subject(request: pytest.FixtureRequest) -> Strategy:
    """Every built-in strategy, plus one external module loaded from a file path."""
    s: Strategy = request.param
    # Side tables need explicit release: a test that forgot one shows up in the next test.
    assert s.live_states() == 0
    return s


def _fields(state: object) -> dict[str, object]:
    return {f: getattr(state, f) for f in FIELDS}


def _stateful(s: Strategy) -> None:
    if not s.holds_state:
        pytest.skip(f"{s.name} holds no state (HOLDS_STATE = False); see test_control_*")


def test_defaults(subject: Strategy) -> None:
    _stateful(subject)
    req = new_request(subject)
    assert _fields(subject.get(req)) == dict(FIELD_DEFAULTS)
    subject.release(req)


def test_identity(subject: Strategy) -> None:
    _stateful(subject)
    req = new_request(subject)
    assert subject.get(req) is subject.get(req)
    assert subject.peek(req) is subject.get(req)
    subject.release(req)


def test_states_are_per_request(subject: Strategy) -> None:
    _stateful(subject)
    a, b = new_request(subject, "a"), new_request(subject, "b")
    subject.update(a, current_row_len=5)
    assert subject.get(a) is not subject.get(b)
    assert subject.get(b).current_row_len == 0
    subject.release(a)
    subject.release(b)


def test_update_then_get(subject: Strategy) -> None:
    _stateful(subject)
    req = new_request(subject)
    subject.update(req, **VALUES)
    assert _fields(subject.get(req)) == VALUES
    subject.release(req)


def test_update_refuses_unknown_field(subject: Strategy) -> None:
    _stateful(subject)
    req = new_request(subject)
    with pytest.raises(TypeError, match="unknown PD-hidden field"):
        subject.update(req, not_a_field=1)
    subject.release(req)


def test_reset_restores_defaults(subject: Strategy) -> None:
    _stateful(subject)
    req = new_request(subject)
    subject.update(req, **VALUES)
    subject.reset(req)
    assert _fields(subject.get(req)) == dict(FIELD_DEFAULTS)
    subject.release(req)


def test_peek_never_creates(subject: Strategy) -> None:
    req = new_request(subject)
    before = subject.live_states()
    first = subject.peek(req)
    assert subject.peek(req) is first
    assert subject.live_states() == before
    if subject.request_init_fields:
        # eager strategies (fat_req): the state exists from construction, with defaults
        assert first is not None
        assert _fields(first) == dict(FIELD_DEFAULTS)
    else:
        assert first is None


def test_release_leaves_nothing_reachable(subject: Strategy) -> None:
    _stateful(subject)
    req = new_request(subject)
    subject.update(req, **copy.deepcopy(VALUES))
    payload = Liveness(subject.get(req).src_indices)
    state = Liveness(subject.get(req))
    subject.release(req)
    if subject.release_keeps_state:
        # the PR as written: release removes nothing; collecting the request does (below)
        assert subject.live_states() == 1
        assert subject.peek(req) is not None
        assert state.alive()
    else:
        assert subject.live_states() == 0
    if not subject.request_init_fields and not subject.release_keeps_state:
        assert subject.peek(req) is None
        assert not state.alive()
        assert not payload.alive()
        subject.release(req)  # the get() above created a fresh state
    del req
    assert not state.alive()
    assert not payload.alive()
    assert subject.live_states() == 0


def test_pr_as_written_states_vanish_with_their_requests() -> None:
    """pr652 never removes an entry: its states go only when their requests are collected."""
    from strategies import load_builtin

    pr = load_builtin("pr652")
    assert pr.release_keeps_state
    reqs = [new_request(pr, f"pr{i}") for i in range(50)]
    states = [weakref.ref(pr.get(r)) for r in reqs]
    for r in reqs:
        pr.release(r)
    gc.collect()
    assert pr.live_states() == 50
    assert all(s() is not None for s in states)
    del reqs, r
    gc.collect()
    assert pr.live_states() == 0
    assert not any(s() is not None for s in states)


def test_dropped_request_is_collected_after_release(subject: Strategy) -> None:
    req = new_request(subject)
    subject.get(req)
    subject.release(req)
    alive = Liveness(req)
    del req
    gc.collect()
    assert not alive.alive()
    assert subject.live_states() == 0


def test_churn_leaves_no_residue(subject: Strategy) -> None:
    cls = type(new_request(subject))
    gc.collect()
    baseline = len(gc.get_objects())
    for i in range(10_000):
        req = cls(f"c{i}", [i], 1)
        subject.update(req, current_row_len=i, src_indices=[i])
        subject.get(req).current_start = i
        subject.release(req)
    del req
    gc.collect()
    assert subject.live_states() == 0
    # no per-request residue: allow a little slack for interpreter caches
    assert len(gc.get_objects()) - baseline < 200


def test_racing_get_keeps_updates_when_declared_safe(subject: Strategy) -> None:
    """Two threads race get() on a fresh request, each writing a different field.

    Safe strategies never lose an update. The racy ones (THREAD_SAFE_CREATE = False) are
    documented to possibly lose the update made through a state that a concurrent creator
    replaced; even then the request ends with exactly one state holding at least one update.
    """
    _stateful(subject)
    cls = type(new_request(subject))
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    lost = 0
    try:
        for i in range(300):
            req = cls(f"race{i}", [i], 1)
            barrier = threading.Barrier(2)

            def writer(field: str, value: int, req: object = req, b: threading.Barrier = barrier):
                b.wait()
                setattr(subject.get(req), field, value)

            threads = [
                threading.Thread(target=writer, args=("current_row_len", 7)),
                threading.Thread(target=writer, args=("current_start", 9)),
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            state = subject.get(req)
            assert state is subject.get(req)
            got = (state.current_row_len == 7) + (state.current_start == 9)
            if subject.thread_safe_create:
                assert got == 2, f"{subject.name} declared safe but lost an update"
            else:
                assert got >= 1
                lost += got < 2
            subject.release(req)
        # the last request, held by the threads' targets: pr652 keeps states until collection
        del req, state, threads, writer
    finally:
        sys.setswitchinterval(old)
    gc.collect()
    assert subject.live_states() == 0


def test_control_holds_nothing() -> None:
    from strategies import resolve

    (control,) = resolve(["control"])
    req = new_request(control)
    control.update(req, **VALUES)
    assert control.peek(req) is None
    assert control.get(req) is control.get(new_request(control, "other"))  # one shared sink
    assert control.live_states() == 0
    assert not control.holds_state


def test_tensor_soa_slot_reuse_starts_from_defaults() -> None:
    from strategies import resolve

    (soa,) = resolve(["tensor_soa"])
    first = new_request(soa, "first")
    soa.update(first, **VALUES)
    slot = first.pd_state_slot
    soa.release(first)
    assert first.pd_state_slot == -1
    second = new_request(soa, "second")
    assert _fields(soa.get(second)) == dict(FIELD_DEFAULTS)
    assert second.pd_state_slot == slot  # the slot really was reused
    soa.release(second)


def test_tensor_soa_grows_past_initial_capacity() -> None:
    from strategies import resolve
    from strategies import tensor_soa as module

    (soa,) = resolve(["tensor_soa"])
    capacity = module._arrays.capacity
    cls = type(new_request(soa))
    reqs = [cls(f"g{i}", [i], 1) for i in range(capacity + 3)]
    for i, r in enumerate(reqs):
        soa.update(r, current_row_len=i, current_start=None if i % 2 else i)
    assert soa.live_states() == capacity + 3
    assert all(soa.get(r).current_row_len == i for i, r in enumerate(reqs))
    assert soa.get(reqs[1]).current_start is None
    assert soa.get(reqs[-1]).current_start == capacity + 2
    for r in reqs:
        soa.release(r)
    assert soa.live_states() == 0
