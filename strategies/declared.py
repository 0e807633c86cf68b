"""A declared field: the request class has `pd_hidden_state = None`; plain attribute access.

Like dynattr but without getattr's default argument: the class-level None makes the read a
normal attribute load that falls back to the class. The state is still created lazily, so the
same check-then-set race applies.
"""

from __future__ import annotations

from typing import Any

from strategies._contract import PDHiddenReqState, set_fields

NAME = "declared"
DESCRIPTION = "request class declares pd_hidden_state = None; plain attribute access"
THREAD_SAFE_CREATE = False  # lazy check-then-set is not atomic
REQUEST_CLASS_FIELDS = {"pd_hidden_state": None}


def get(req: Any) -> PDHiddenReqState:
    state = req.pd_hidden_state
    if state is None:
        state = PDHiddenReqState()
        req.pd_hidden_state = state
    return state


def peek(req: Any) -> PDHiddenReqState | None:
    return req.pd_hidden_state


def update(req: Any, **fields: object) -> None:
    set_fields(get(req), fields)


def reset(req: Any) -> None:
    get(req).clear()


def release(req: Any) -> None:
    req.pd_hidden_state = None


def live_states() -> int:
    return 0
