"""The pre-review code: the ten fields are plain attributes set in every request's __init__.

The request *is* the state, so get() and peek() return the request itself. In the cached access
pattern the call sites read `req.<field>` directly, which is what the pre-review code did; the
per-field pattern adds one function call per field on top of that.
"""

from __future__ import annotations

from typing import Any

from strategies._contract import FIELD_DEFAULTS, set_fields

NAME = "fat_req"
DESCRIPTION = "pre-review code: ten attributes set in every request's __init__, used or not"
THREAD_SAFE_CREATE = True  # nothing is created lazily
REQUEST_INIT_FIELDS = FIELD_DEFAULTS


def get(req: Any) -> Any:
    return req


def peek(req: Any) -> Any:
    return req


def update(req: Any, **fields: object) -> None:
    set_fields(req, fields)


def reset(req: Any) -> None:
    # ten direct stores, as the pre-review release path wrote them (no generic setattr loop)
    req.meta = None
    req.src_indices = None
    req.dst_indices = None
    req.written = None
    req.capture_layer_ids = None
    req.current_src_indices = None
    req.current_start = None
    req.current_row_len = 0
    req.current_is_last = False
    req.owner_direct_sent = False


def release(req: Any) -> None:
    reset(req)


def live_states() -> int:
    return 0
