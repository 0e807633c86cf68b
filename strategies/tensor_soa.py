"""Structure of arrays: scalar fields in preallocated torch tensors indexed by a request slot.

Like SGLang's req_pool_idx: the request carries a slot number (declared `pd_state_slot = -1`);
the four scalar fields live in CPU tensors indexed by that slot and the six list/dict fields in
Python side lists. get() hands out one small proxy object per live slot whose properties read
and write the arrays, so every field access is a tensor element access (the cost this strategy
exists to show). A slot is wiped to defaults whenever it is (re)allocated, so reuse never leaks
the previous request's values. Slot allocation holds a lock, so racing creators agree.
"""

from __future__ import annotations

import threading
from typing import Any

from strategies._contract import set_fields

NAME = "tensor_soa"
DESCRIPTION = "scalar fields in preallocated torch tensors indexed by a request slot"
THREAD_SAFE_CREATE = True  # slot allocation holds a lock
REQUEST_CLASS_FIELDS = {"pd_state_slot": -1}

# Slots preallocated up front; the arrays double when full. 4096 = the top of SGLang's
# max_running_requests default range, so a default run never grows.
_INITIAL_SLOTS = 4096
# current_start is `int | None`; None is stored as this sentinel (no real offset is negative).
_NONE_START = -1

_LIST_FIELDS = (
    "meta",
    "src_indices",
    "dst_indices",
    "written",
    "capture_layer_ids",
    "current_src_indices",
)


class _Arrays:
    def __init__(self, capacity: int) -> None:
        import torch  # here: discovering the strategies (bench list, reports) needs no torch

        self.start = torch.full((capacity,), _NONE_START, dtype=torch.int64)
        self.row_len = torch.zeros(capacity, dtype=torch.int64)
        self.is_last = torch.zeros(capacity, dtype=torch.bool)
        self.direct_sent = torch.zeros(capacity, dtype=torch.bool)
        self.lists: dict[str, list[Any]] = {f: [None] * capacity for f in _LIST_FIELDS}
        self.proxies: list[SoaState | None] = [None] * capacity
        self.free: list[int] = list(range(capacity - 1, -1, -1))
        self.capacity = capacity

    def grow(self) -> None:
        import torch

        old = self.capacity
        new = old * 2
        for name in ("start", "row_len", "is_last", "direct_sent"):
            t = getattr(self, name)
            grown = torch.empty(new, dtype=t.dtype)
            grown[:old] = t
            setattr(self, name, grown)
        for values in self.lists.values():
            values.extend([None] * (new - old))
        self.proxies.extend([None] * (new - old))
        self.free.extend(range(new - 1, old - 1, -1))
        self.capacity = new

    def wipe(self, slot: int) -> None:
        self.start[slot] = _NONE_START
        self.row_len[slot] = 0
        self.is_last[slot] = False
        self.direct_sent[slot] = False
        for values in self.lists.values():
            values[slot] = None


# The arrays are created with the first state (_allocate): every other path reads them only for a
# request that already has a slot, so the hot path is unchanged and importing this module does
# not import torch.
_arrays: _Arrays
_lock = threading.Lock()


def _table() -> _Arrays:
    global _arrays
    try:
        return _arrays
    except NameError:
        _arrays = _Arrays(_INITIAL_SLOTS)
        return _arrays


def _list_field(name: str) -> property:
    def fget(self: SoaState) -> Any:
        return _arrays.lists[name][self.slot]

    def fset(self: SoaState, value: Any) -> None:
        _arrays.lists[name][self.slot] = value

    return property(fget, fset)


class SoaState:
    """Proxy over one slot of the arrays; the fields of the contract as properties."""

    __slots__ = ("__weakref__", "slot")

    def __init__(self, slot: int) -> None:
        self.slot = slot

    meta = _list_field("meta")
    src_indices = _list_field("src_indices")
    dst_indices = _list_field("dst_indices")
    written = _list_field("written")
    capture_layer_ids = _list_field("capture_layer_ids")
    current_src_indices = _list_field("current_src_indices")

    @property
    def current_start(self) -> int | None:
        value = int(_arrays.start[self.slot])
        return None if value == _NONE_START else value

    @current_start.setter
    def current_start(self, value: int | None) -> None:
        _arrays.start[self.slot] = _NONE_START if value is None else value

    @property
    def current_row_len(self) -> int:
        return int(_arrays.row_len[self.slot])

    @current_row_len.setter
    def current_row_len(self, value: int) -> None:
        _arrays.row_len[self.slot] = value

    @property
    def current_is_last(self) -> bool:
        return bool(_arrays.is_last[self.slot])

    @current_is_last.setter
    def current_is_last(self, value: bool) -> None:
        _arrays.is_last[self.slot] = value

    @property
    def owner_direct_sent(self) -> bool:
        return bool(_arrays.direct_sent[self.slot])

    @owner_direct_sent.setter
    def owner_direct_sent(self, value: bool) -> None:
        _arrays.direct_sent[self.slot] = value


def _allocate(req: Any) -> SoaState:
    _table()
    with _lock:
        slot = req.pd_state_slot
        if slot >= 0:  # another thread won the race
            state = _arrays.proxies[slot]
            assert state is not None
            return state
        if not _arrays.free:
            _arrays.grow()
        slot = _arrays.free.pop()
        _arrays.wipe(slot)
        state = SoaState(slot)
        _arrays.proxies[slot] = state
        req.pd_state_slot = slot
        return state


def get(req: Any) -> SoaState:
    slot = req.pd_state_slot
    if slot < 0:
        return _allocate(req)
    state = _arrays.proxies[slot]
    assert state is not None
    return state


def peek(req: Any) -> SoaState | None:
    slot = req.pd_state_slot
    return None if slot < 0 else _arrays.proxies[slot]


def update(req: Any, **fields: object) -> None:
    set_fields(get(req), fields)


def reset(req: Any) -> None:
    _arrays.wipe(get(req).slot)


def release(req: Any) -> None:
    with _lock:
        slot = req.pd_state_slot
        if slot < 0:
            return
        _arrays.wipe(slot)
        _arrays.proxies[slot] = None
        _arrays.free.append(slot)
        req.pd_state_slot = -1


def live_states() -> int:
    arrays = globals().get("_arrays")
    return 0 if arrays is None else arrays.capacity - len(arrays.free)
