"""The pre-review code: the ten fields are plain attributes set in every request's __init__.

The request *is* the state, so get() and peek() return the request itself. In the cached access
pattern the call sites read `req.<field>` directly, which is what the pre-review code did; the
per-field pattern adds one function call per field on top of that.
"""

from __future__ import annotations

from typing import Any

from strategies._contract import FIELD_DEFAULTS, clear_fields, set_fields

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
    clear_fields(req)


def release(req: Any) -> None:
    clear_fields(req)


def live_states() -> int:
    return 0
