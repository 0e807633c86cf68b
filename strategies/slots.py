"""A declared field holding a __slots__ state object: no per-state dict, smaller and faster fields.

The request class declares `pd_hidden_slots_state = None`; the state class declares its ten
fields in __slots__, so a state is one GC-tracked object without an attribute dict.
"""

from __future__ import annotations

from typing import Any

from strategies._contract import FIELDS, set_fields

NAME = "slots"
DESCRIPTION = "declared field holding a __slots__ state object (no per-state __dict__)"
THREAD_SAFE_CREATE = False  # lazy check-then-set is not atomic
REQUEST_CLASS_FIELDS = {"pd_hidden_slots_state": None}


class SlotsState:
    __slots__ = FIELDS

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.meta = None
        self.src_indices = None
        self.dst_indices = None
        self.written = None
        self.capture_layer_ids = None
        self.current_src_indices = None
        self.current_start = None
        self.current_row_len = 0
        self.current_is_last = False
        self.owner_direct_sent = False


def get(req: Any) -> SlotsState:
    state = req.pd_hidden_slots_state
    if state is None:
        state = SlotsState()
        req.pd_hidden_slots_state = state
    return state


def peek(req: Any) -> SlotsState | None:
    return req.pd_hidden_slots_state


def update(req: Any, **fields: object) -> None:
    set_fields(get(req), fields)


def reset(req: Any) -> None:
    get(req).clear()


def release(req: Any) -> None:
    req.pd_hidden_slots_state = None


def live_states() -> int:
    return 0
