"""A plain dict keyed by the request id, with explicit release.

No weak references: an entry lives until release() pops it, so a request that is dropped
without release leaks its state (the scheduler must release on every exit path). The miss path
uses dict.setdefault, a single atomic operation under the GIL, so racing creators agree.
"""

from __future__ import annotations

from typing import Any

from strategies._contract import PDHiddenReqState, set_fields

NAME = "rid_dict"
DESCRIPTION = "dict keyed by request id; explicit release, no weak references"
THREAD_SAFE_CREATE = True  # dict.setdefault is atomic under the GIL

_states: dict[str, PDHiddenReqState] = {}


def get(req: Any) -> PDHiddenReqState:
    state = _states.get(req.rid)
    if state is None:
        state = _states.setdefault(req.rid, PDHiddenReqState())
    return state


def peek(req: Any) -> PDHiddenReqState | None:
    return _states.get(req.rid)


def update(req: Any, **fields: object) -> None:
    set_fields(get(req), fields)


def reset(req: Any) -> None:
    get(req).clear()


def release(req: Any) -> None:
    _states.pop(req.rid, None)


def live_states() -> int:
    return len(_states)
