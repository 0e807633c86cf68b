"""The review's suggestion: a lazily attached attribute, read with getattr(req, name, None).

The request class declares nothing; the first get() adds `pd_hidden_state` to the instance dict
(which also un-shares the instance's key-sharing dict layout). Check-then-set is not atomic, so
two threads racing on a miss can each create a state and the later one wins.
"""

from __future__ import annotations

from typing import Any

from strategies._contract import PDHiddenReqState, set_fields

NAME = "dynattr"
DESCRIPTION = "review's suggestion: lazy dynamic attribute read with getattr(req, name, None)"
THREAD_SAFE_CREATE = False  # getattr-then-setattr is not atomic


def get(req: Any) -> PDHiddenReqState:
    state = getattr(req, "pd_hidden_state", None)
    if state is None:
        state = PDHiddenReqState()
        req.pd_hidden_state = state
    return state


def peek(req: Any) -> PDHiddenReqState | None:
    return getattr(req, "pd_hidden_state", None)


def update(req: Any, **fields: object) -> None:
    set_fields(get(req), fields)


def reset(req: Any) -> None:
    get(req).clear()


def release(req: Any) -> None:
    req.pd_hidden_state = None


def live_states() -> int:
    return 0
