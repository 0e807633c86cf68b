"""The call sites: every path costs the lookups the PR's code costs (docs/SCENARIOS.md's table,
read at c96e68b62b), counted by running it; both access patterns behave the same."""

from __future__ import annotations

from typing import Any

import pytest

from bench.commands.scenario_docs import LOOKUPS_BY_PATH
from bench.core.arrivals import hidden_meta
from bench.core.callsites import PATTERNS, compile_callsites, render
from bench.core.counting import OpCounts, counted
from bench.core.scenarios import get
from strategies import Strategy, load_builtin
from strategies._contract import FIELD_DEFAULTS, FIELDS
from tests.helpers import new_request

PR = load_builtin("pr652")
STREAMING = get("prefill-dspark")
WHOLE = STREAMING.with_changes({"streaming": False})


def _counting(pattern: str) -> tuple[Any, OpCounts]:
    counts = OpCounts()
    return compile_callsites(counted(PR, counts), pattern), counts


def _lookups(counts: OpCounts, action: Any) -> int:
    before = counts.lookups
    action()
    return counts.lookups - before


def _finalized(sites: Any, streaming: bool) -> tuple[Any, dict[str, Any]]:
    req = new_request(PR, f"pd-{streaming}")
    scenario = STREAMING if streaming else WHOLE
    meta = hidden_meta(scenario, prompt_len=100, cached_prefix=20)  # hidden rows 20..100
    src = None if streaming else list(range(80))
    sites.bootstrap_finalize(req, meta, src, list(range(500, 580)), meta["target_layer_ids"])
    return req, meta


def _expected(pattern: str) -> dict[tuple[str, str], int]:
    column = 3 if pattern == "per_field" else 4
    return {(row[0], row[2]): int(row[column]) for row in LOOKUPS_BY_PATH}


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_path_costs_what_the_code_costs(pattern: str) -> None:
    want = _expected(pattern)
    sites, counts = _counting(pattern)
    got: dict[tuple[str, str], int] = {}

    req = new_request(PR, "fin")
    meta = hidden_meta(STREAMING, prompt_len=100, cached_prefix=20)
    got[("bootstrap finalize", "PD request, once")] = _lookups(
        counts, lambda: sites.bootstrap_finalize(req, meta, None, [1], meta["target_layer_ids"])
    )
    got[("capture-layer scan", "each request until one has layers, every forward")] = _lookups(
        counts, lambda: sites.capture_layers_get([req])
    )

    for streaming, path in (
        (True, "PD request, streaming"),
        (False, "PD request, whole hidden range"),
    ):
        pd, _ = _finalized(sites, streaming)
        rows = list(range(1000, 1064)) if streaming else None
        got[("write hidden rows (filter + loop)", path)] = _lookups(
            counts, lambda pd=pd, rows=rows: sites.write_hidden_rows([(pd, 0, 64, rows)], True)
        )
        got[("send_kv_chunk", "PD request with a current hidden chunk")] = _lookups(
            counts, lambda pd=pd: sites.send_kv_chunk(pd, False, True)
        )
        if not streaming:
            sites.write_hidden_rows([(pd, 64, 36, None)], True)
            sites.send_kv_chunk(pd, True, True)
            got[("inflight poll, hidden done", "PD request with its whole hidden range, once")] = (
                _lookups(counts, lambda pd=pd: sites.release_on_hidden_done(pd, True))
            )

    plain = new_request(PR, "plain")
    got[("write hidden rows (filter + loop)", "non-PD request, capturing batch")] = _lookups(
        counts, lambda: sites.write_hidden_rows([(plain, 0, 8, None)], True)
    )
    got[("write hidden rows (filter only)", "non-PD request, batch without capture")] = _lookups(
        counts, lambda: sites.write_hidden_rows([(plain, 0, 8, None)], False)
    )
    got[("send_kv_chunk", "non-PD, middle chunk")] = _lookups(
        counts, lambda: sites.send_kv_chunk(plain, False, True)
    )
    got[("send_kv_chunk", "non-PD, last chunk, PD_HIDDEN state type")] = _lookups(
        counts, lambda: sites.send_kv_chunk(plain, True, True)
    )
    got[("send_kv_chunk", "non-PD, last chunk, no PD_HIDDEN state type")] = _lookups(
        counts, lambda: sites.send_kv_chunk(plain, True, False)
    )
    got[("inflight poll (hidden done?)", "every inflight request, every iteration")] = _lookups(
        counts, lambda: sites.release_on_hidden_done(plain, False)
    )
    got[("release at completion", "every request, PD or not")] = _lookups(
        counts, lambda: sites.release_metadata(plain)
    )
    assert got == want


def test_the_scan_creates_a_state_for_every_request_it_visits_and_peek_none() -> None:
    counts = OpCounts()
    sites = compile_callsites(counted(PR, counts), "per_field")
    reqs = [new_request(PR, f"d{i}") for i in range(10)]
    assert sites.capture_layers_get(reqs) is None
    assert (counts.lookups, counts.created) == (10, 10)
    assert sites.capture_layers_peek([new_request(PR, f"p{i}") for i in range(10)]) is None
    assert (counts.lookups, counts.created) == (20, 10)


def test_capture_scan_returns_a_fresh_list_like_the_pr() -> None:
    sites = compile_callsites(PR, "per_field")
    req, meta = _finalized(sites, True)
    first, second = sites.capture_layers_get([req]), sites.capture_layers_get([req])
    assert first == meta["target_layer_ids"]
    assert first is not second


def test_unknown_pattern_refused() -> None:
    with pytest.raises(ValueError, match="unknown access pattern"):
        render("send_kv_chunk", "sometimes")


def _lifecycle(strategy: Strategy, pattern: str, *, streaming: bool) -> list[Any]:
    """Drive one PD request and a bystander through every call site; return what they said."""
    sites = compile_callsites(strategy, pattern)
    req = new_request(strategy, f"life-{streaming}")
    other = new_request(strategy, "bystander")
    scenario = STREAMING if streaming else WHOLE
    meta = hidden_meta(scenario, prompt_len=100, cached_prefix=20)
    src = None if streaming else list(range(80))
    sites.bootstrap_finalize(req, meta, src, list(range(500, 580)), meta["target_layer_ids"])
    trace: list[Any] = [sites.capture_layers_peek([other, req])]
    next_row = 1000
    for chunk_start, chunk_len in ((0, 64), (64, 36)):
        rows = None
        if streaming:
            n = min(chunk_start + chunk_len, 100) - max(chunk_start, 20)
            rows = list(range(next_row, next_row + n))
            next_row += n
        entries = [(other, 0, 8, None), (req, chunk_start, chunk_len, rows)]
        done = sites.write_hidden_rows(entries, True)
        trace.append([(r.rid, list(ix), lo, hi) for r, ix, lo, hi in done])
        last = chunk_start + chunk_len >= 100
        trace.append(sites.send_kv_chunk(req, last, True))
        trace.append(sites.send_kv_chunk(other, last, True))
        trace.append(sites.release_on_hidden_done(req, last))
    trace.append(sites.capture_layers_get([other, req]))
    trace.append(sites.release_metadata(req))
    if strategy.holds_state:
        trace.append({f: getattr(strategy.get(req), f) for f in FIELDS})
    strategy.release(req)
    strategy.release(other)
    return trace


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streaming"])
def test_patterns_behave_identically(strategy: Strategy, streaming: bool) -> None:
    traces = [_lifecycle(strategy, p, streaming=streaming) for p in PATTERNS]
    if not strategy.holds_state:
        assert traces[0][1] == []  # null call sites: no writes recorded
        return
    assert traces[0] == traces[1]
    assert traces[0][-1] == dict(FIELD_DEFAULTS)  # cleared at release
    writes = traces[0][1] + traces[0][5]
    # hidden rows 20..100 land in two chunks: 44 rows then 36, at the right chunk rows
    assert [(lo, hi) for _, _, lo, hi in writes] == [(20, 64), (0, 36)]
    if not streaming:
        assert writes[0][1] == list(range(0, 44))
        assert writes[1][1] == list(range(44, 80))
