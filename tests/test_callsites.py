"""The call sites: lookup counts as in WORKLOAD.md, and both access patterns behave the same."""

from __future__ import annotations

from typing import Any

import pytest

from bench.core.callsites import PATTERNS, compile_callsites, lookup_counts, render
from bench.core.workload import StreamParams, dspark_meta
from strategies import Strategy
from strategies._contract import FIELD_DEFAULTS, FIELDS
from tests.helpers import new_request

# WORKLOAD.md, "Where the state is touched": approximate lookups per call when the state is
# looked up once per field. The templates must stay within these bands.
PER_FIELD_BANDS = {
    "bootstrap_finalize": (9, 13),
    "write_hidden_rows": (13, 18),
    "send_kv_chunk": (12, 17),
    "owner_direct_send": (10, 14),
    "hidden_rows_held": (1, 1),
    "release_and_clear": (11, 11),
    "capture_layers_get": (1, 1),
    "capture_layers_peek": (1, 1),
}


def test_per_field_lookup_counts_follow_workload() -> None:
    counts = lookup_counts("per_field")
    assert set(counts) == set(PER_FIELD_BANDS)
    for name, (lo, hi) in PER_FIELD_BANDS.items():
        assert lo <= counts[name] <= hi, (name, counts[name])
    # WORKLOAD.md: roughly 25-30 lookups per request per chunk (write + send)
    assert 25 <= counts["write_hidden_rows"] + counts["send_kv_chunk"] <= 30


def test_cached_pattern_looks_up_once_per_call_site() -> None:
    counts = lookup_counts("cached")
    assert counts["write_hidden_rows"] == 2  # once in the filter loop, once in the write loop
    assert all(n == 1 for name, n in counts.items() if name != "write_hidden_rows")


def test_unknown_pattern_refused() -> None:
    with pytest.raises(ValueError, match="unknown access pattern"):
        render("send_kv_chunk", "sometimes")


def _lifecycle(strategy: Strategy, pattern: str, *, streaming: bool) -> list[Any]:
    """Drive one request through every call site; return what the call sites returned."""
    sites = compile_callsites(strategy, pattern)
    req = new_request(strategy, f"life-{streaming}")
    other = new_request(strategy, "bystander")
    p = StreamParams(streaming=streaming)
    meta = dspark_meta(p, prompt_len=100, cached_prefix=20)  # hidden rows 20..100
    trace: list[Any] = []
    writes: list[tuple[list[int], int, int]] = []
    next_row = 1000

    src = None if streaming else list(range(80))
    sites.bootstrap_finalize(req, meta, src, list(range(500, 580)), (40, 41, 42))
    trace.append(sites.capture_layers_peek([other, req]))
    for chunk_start, chunk_len in ((0, 64), (64, 36)):
        rows = None
        if streaming:
            n = min(chunk_start + chunk_len, 100) - max(chunk_start, 20)
            rows = list(range(next_row, next_row + n))
            next_row += n
        entries = [(other, 0, 8, 0, None), (req, chunk_start, chunk_len, 8, rows)]
        done = sites.write_hidden_rows(entries)
        for _r, indices, lo, hi in done:
            assert len(indices) == hi - lo
            writes.append((list(indices), lo, hi))
        trace.append([r.rid for r, *_ in done])
        if streaming:
            sent = sites.owner_direct_send(req)
            trace.append(sent)
        trace.append(sites.send_kv_chunk(req))
        trace.append(sites.hidden_rows_held(req))
    trace.append(sites.capture_layers_get([other, req]))
    trace.append(sites.release_and_clear(req))
    trace.append(writes)
    if strategy.holds_state:
        trace.append({f: getattr(strategy.get(req), f) for f in FIELDS})
    strategy.release(req)
    strategy.release(other)
    return trace


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streaming"])
def test_patterns_behave_identically(strategy: Strategy, streaming: bool) -> None:
    traces = [_lifecycle(strategy, p, streaming=streaming) for p in PATTERNS]
    if strategy.holds_state:
        assert traces[0] == traces[1]
        final = traces[0][-1]
        assert final == dict(FIELD_DEFAULTS)  # release_and_clear cleared all ten fields
        writes = traces[0][-2]
        # hidden rows 20..100 land in two chunks: 44 rows then 36 rows, at the right batch rows
        assert [(lo, hi) for _, lo, hi in writes] == [(28, 72), (8, 44)]
        if not streaming:
            assert writes[0][0] == list(range(0, 44))
            assert writes[1][0] == list(range(44, 80))
    else:
        assert traces[0][-1] == []  # null call sites: no writes recorded
    assert strategy.live_states() == 0
