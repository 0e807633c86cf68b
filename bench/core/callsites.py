"""The scheduler's call sites that touch PD-hidden state, written once for every strategy.

Each body below is a template: `$S` stands for "the state of `req`" and `$CACHE` for the line
that looks it up into a local. Compiling a template for a strategy and an access pattern gives
ordinary Python functions (as torch.utils.benchmark compiles its statements):

    per_field  `$S` -> `get(req)`   the state is looked up again for every field (the PR)
    cached     `$S` -> `state`      looked up once per call site into a local (the review)

so the lookup counts are exactly those written here, the same for every strategy, and the only
thing that differs between strategies is `get`/`peek`. Lookup counts mirror WORKLOAD.md's
table; `lookup_counts()` reads them off the templates so tests and docs cannot drift from them.
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strategies import Strategy

PATTERNS: tuple[str, ...] = ("per_field", "cached")

_TEMPLATES: dict[str, str] = {
    # Once per request: copy the decode side's plan into the state.
    "bootstrap_finalize": """
def bootstrap_finalize(req, meta, src_indices, dst_indices, layer_ids):
    $CACHE
    $S.capture_layer_ids = [int(x) for x in layer_ids]
    $S.meta = dict(meta)
    $S.src_indices = src_indices
    $S.dst_indices = dst_indices
    $S.written = None if $S.meta["streaming"] else [False] * $S.meta["hidden_len"]
    $S.current_src_indices = None
    $S.current_start = None
    $S.current_row_len = 0
    $S.current_is_last = False
    $S.owner_direct_sent = False
""",
    # Per prefill chunk: filter the batch, then record each request's chunk of hidden rows.
    # entries: (req, chunk_start, chunk_len, batch_offset, new_rows); new_rows are this chunk's
    # freshly allocated rows when streaming (src_indices is None), else None. Returns, per
    # request written, (req, pool row indices, first batch row, end batch row) for the copy.
    "write_hidden_rows": """
def write_hidden_rows(entries):
    selected = []
    for entry in entries:
        req = entry[0]
        $CACHE
        if $S.meta is not None and not $S.owner_direct_sent and $S.capture_layer_ids:
            selected.append(entry)
    done = []
    for req, chunk_start, chunk_len, batch_offset, new_rows in selected:
        $CACHE
        hidden_start = $S.meta["hidden_start"]
        hidden_end = hidden_start + $S.meta["hidden_len"]
        write_start = max(chunk_start, hidden_start)
        write_end = min(chunk_start + chunk_len, hidden_end)
        if write_end <= write_start:
            continue
        lo = write_start - hidden_start
        hi = write_end - hidden_start
        src = $S.src_indices
        if src is None:
            if new_rows is None:
                continue
            $S.src_indices = new_rows
            write_indices = new_rows
        else:
            write_indices = src[lo:hi]
        $S.current_start = write_start
        $S.current_row_len = hi - lo
        $S.current_src_indices = write_indices
        $S.current_is_last = write_end >= hidden_end
        written = $S.written
        if written is not None:
            written[lo:hi] = [True] * (hi - lo)
        row_lo = batch_offset + write_start - chunk_start
        done.append((req, write_indices, row_lo, row_lo + $S.current_row_len))
        if $S.current_is_last and written is not None and not all(written):
            raise RuntimeError(f"{req.rid}: last chunk written but hidden rows are missing")
    return done
""",
    # Per request per chunk (and at the last chunk): build the KV/hidden transfer payload.
    "send_kv_chunk": """
def send_kv_chunk(req):
    $CACHE
    if $S.meta is None:
        return None
    written = $S.written
    payload = {
        "rid": req.rid,
        "start": $S.current_start,
        "rows": $S.current_row_len,
        "src": $S.current_src_indices,
        "dst": $S.dst_indices,
        "layers": $S.capture_layer_ids,
        "hidden_size": $S.meta["hidden_size"],
        "window": $S.meta["window_rows"],
        "last": $S.current_is_last,
    }
    if $S.current_is_last:
        payload["complete"] = written is None or all(written)
        $S.current_src_indices = None
        $S.current_start = None
        $S.current_row_len = 0
    return payload
""",
    # Streaming only: send this chunk's hidden rows straight from the owner, then free them.
    "owner_direct_send": """
def owner_direct_send(req):
    $CACHE
    if $S.owner_direct_sent or $S.current_src_indices is None:
        return None
    rows = $S.current_src_indices
    last = $S.current_is_last
    payload = ("direct", req.rid, $S.current_start, $S.current_row_len, $S.meta["window_rows"])
    $S.src_indices = None
    $S.current_src_indices = None
    $S.current_start = None
    $S.current_row_len = 0
    $S.current_is_last = False
    $S.owner_direct_sent = last
    return rows, payload
""",
    # Every loop iteration, for every inflight request: are hidden rows still held?
    "hidden_rows_held": """
def hidden_rows_held(req):
    return get(req).src_indices is not None
""",
    # Once, at the end: take the rows to free and clear the ten fields.
    "release_and_clear": """
def release_and_clear(req):
    $CACHE
    rows = $S.src_indices
    $S.meta = None
    $S.src_indices = None
    $S.dst_indices = None
    $S.written = None
    $S.capture_layer_ids = None
    $S.current_src_indices = None
    $S.current_start = None
    $S.current_row_len = 0
    $S.current_is_last = False
    $S.owner_direct_sent = False
    return rows
""",
    # Every forward: which capture layers does this batch need? The PR's helper is
    # get-or-create, so a batch without PD-hidden requests creates an empty state for each.
    "capture_layers_get": """
def capture_layers_get(reqs):
    for req in reqs:
        layers = get(req).capture_layer_ids
        if layers is not None:
            return layers
    return None
""",
    "capture_layers_peek": """
def capture_layers_peek(reqs):
    for req in reqs:
        state = peek(req)
        if state is not None:
            layers = state.capture_layer_ids
            if layers is not None:
                return layers
    return None
""",
}

_CACHE_RE = re.compile(r"^(\s*)\$CACHE\n", re.MULTILINE)


def render(name: str, pattern: str) -> str:
    """The source of one call site for one access pattern."""
    if pattern not in PATTERNS:
        raise ValueError(f"unknown access pattern {pattern!r}; choose from {', '.join(PATTERNS)}")
    body = _TEMPLATES[name]
    if pattern == "cached":
        body = _CACHE_RE.sub(r"\1state = get(req)\n", body)
        return body.replace("$S", "state").lstrip("\n")
    return _CACHE_RE.sub("", body).replace("$S", "get(req)").lstrip("\n")


def lookup_counts(pattern: str) -> dict[str, int]:
    """State lookups written in each call site (per request, per invocation, worst path)."""
    return {
        name: len(re.findall(r"\bget\(req\)|\bpeek\(req\)", render(name, pattern)))
        for name in _TEMPLATES
    }


@dataclass(frozen=True)
class CallSites:
    """The compiled call sites of one strategy under one access pattern."""

    strategy: str
    pattern: str
    bootstrap_finalize: Callable[..., None]
    write_hidden_rows: Callable[..., list[Any]]
    send_kv_chunk: Callable[[Any], dict[str, Any] | None]
    owner_direct_send: Callable[[Any], tuple[list[int], tuple[Any, ...]] | None]
    hidden_rows_held: Callable[[Any], bool]
    release_and_clear: Callable[[Any], list[int] | None]
    capture_layers_get: Callable[[list[Any]], list[int] | None]
    capture_layers_peek: Callable[[list[Any]], list[int] | None]


def _none(*_args: object) -> None:
    return None


def _no_writes(_entries: object) -> list[Any]:
    return []


def _not_held(_req: object) -> bool:
    return False


# What each call site returns when no state is kept: nothing written, no rows held.
_NULL_FUNCS: dict[str, Callable[..., Any]] = {
    **dict.fromkeys(_TEMPLATES, _none),
    "write_hidden_rows": _no_writes,
    "hidden_rows_held": _not_held,
}


def null_callsites(strategy: Strategy, pattern: str) -> CallSites:
    """Call sites that touch no state: the harness's own cost (for HOLDS_STATE = False)."""
    return CallSites(strategy=strategy.name, pattern=pattern, **_NULL_FUNCS)


def compile_callsites(strategy: Strategy, pattern: str) -> CallSites:
    """The call sites for one strategy and access pattern (null ones if it holds no state)."""
    if not strategy.holds_state:
        return null_callsites(strategy, pattern)
    namespace: dict[str, Any] = {"get": strategy.get, "peek": strategy.peek}
    funcs: dict[str, Any] = {}
    for name in _TEMPLATES:
        source = render(name, pattern)
        filename = f"<callsite {name}:{strategy.name}:{pattern}>"
        # Registered with linecache so tracebacks and profilers can show the generated lines.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), namespace)
        funcs[name] = namespace[name]
    return CallSites(strategy=strategy.name, pattern=pattern, **funcs)
