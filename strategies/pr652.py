"""The PR as written (bytedance-iaas/sglang PR #652, hidden_state.py at c96e68b62b).

A PDHiddenReqState per request in a module-level weakref.WeakKeyDictionary, created on a miss
by get_pd_hidden_req_state(req). Unlike the cleaned-up `weakkey` strategy:

- nothing removes an entry: release() keeps it, and it leaves only when the request object is
  garbage-collected (the dictionary's weak reference callback);
- reset is clear_pd_hidden_request_state (prefill.py:99-109): ten writes, each through its own
  lookup;
- the module has no non-creating accessor; peek() here is the proposal a reviewer would add
  (a plain .get), used only by the scheduler's `capture=peek` variant and the lookup suite.

The call sites the scheduler runs are the PR's own for every strategy (bench/core/callsites.py),
including the capture-layer helper that returns a fresh list (`if layer_ids:`).
"""

from __future__ import annotations

import weakref
from typing import Any

from strategies._contract import PDHiddenReqState, set_fields

NAME = "pr652"
DESCRIPTION = (
    "the PR as written: WeakKeyDictionary, no removal (entries go when the request is collected)"
)
THREAD_SAFE_CREATE = False  # check-then-store is not atomic
RELEASE_KEEPS_STATE = True  # release() removes nothing; collection of the request does

_pd_hidden_req_states: weakref.WeakKeyDictionary[Any, PDHiddenReqState] = (
    weakref.WeakKeyDictionary()
)


def get(req: Any) -> PDHiddenReqState:
    """get_pd_hidden_req_state (hidden_state.py:27-32)."""
    state = _pd_hidden_req_states.get(req)
    if state is None:
        state = PDHiddenReqState()
        _pd_hidden_req_states[req] = state
    return state


def peek(req: Any) -> PDHiddenReqState | None:
    return _pd_hidden_req_states.get(req)


def update(req: Any, **fields: object) -> None:
    set_fields(get(req), fields)


def reset(req: Any) -> None:
    """clear_pd_hidden_request_state: every field through its own lookup."""
    get(req).meta = None
    get(req).src_indices = None
    get(req).dst_indices = None
    get(req).written = None
    get(req).capture_layer_ids = None
    get(req).current_src_indices = None
    get(req).current_start = None
    get(req).current_row_len = 0
    get(req).current_is_last = False
    get(req).owner_direct_sent = False


def release(req: Any) -> None:
    """The PR has no removal: the entry stays until the request is collected."""


def live_states() -> int:
    return len(_pd_hidden_req_states)
