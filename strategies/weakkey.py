"""The PR cleaned up: the same WeakKeyDictionary as `pr652` (the PR as written), with the
removal and single-lookup reset a reviewer would ask for.

Each entry costs a weak reference with a removal callback; a miss creates the state. The
get-or-create is two dictionary operations, so two threads racing on a miss can each create a
state and the later store wins (an update made through the other one is lost).
"""

from __future__ import annotations

import weakref
from typing import Any

from strategies._contract import PDHiddenReqState, set_fields

NAME = "weakkey"
DESCRIPTION = "the PR cleaned up: WeakKeyDictionary with explicit removal and a one-lookup reset"
THREAD_SAFE_CREATE = False  # check-then-store is not atomic

_states: weakref.WeakKeyDictionary[Any, PDHiddenReqState] = weakref.WeakKeyDictionary()


def get(req: Any) -> PDHiddenReqState:
    state = _states.get(req)
    if state is None:
        state = PDHiddenReqState()
        _states[req] = state
    return state


def peek(req: Any) -> PDHiddenReqState | None:
    return _states.get(req)


def update(req: Any, **fields: object) -> None:
    set_fields(get(req), fields)


def reset(req: Any) -> None:
    get(req).clear()


def release(req: Any) -> None:
    _states.pop(req, None)


def live_states() -> int:
    return len(_states)
