"""No state at all: the harness's own overhead, to read other strategies' costs net of it.

get() returns one shared sink whose fields take writes and are never read back for meaning;
peek() always answers None. Nothing is created, kept or released.
"""

from __future__ import annotations

from typing import Any

from strategies._contract import FIELDS

NAME = "control"
DESCRIPTION = "no state at all: a shared write sink, measures the harness's own overhead"
THREAD_SAFE_CREATE = True  # nothing is created
HOLDS_STATE = False


class _Sink:
    __slots__ = FIELDS

    def __init__(self) -> None:
        # Defaults, so call sites that read before any write see well-typed values.
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


_SINK = _Sink()


def get(req: Any) -> _Sink:
    return _SINK


def peek(req: Any) -> None:
    return None


def update(req: Any, **fields: object) -> None:
    return None


def reset(req: Any) -> None:
    return None


def release(req: Any) -> None:
    return None


def live_states() -> int:
    return 0
