"""The scheduler's call sites that touch PD-hidden state, written once for every strategy.

Each body below mirrors a function of the PR's prefill.py / hidden_state.py /
forward_batch_info.py (bytedance-iaas/sglang c96e68b62b; file:line next to each), field reads
and writes in the same order, so the number of state lookups on every path is the code's. It is
a template: `$S` stands for "the state of `req`" and `$CACHE` for the line that looks it up
into a local. Compiling a template for a strategy and an access pattern gives ordinary Python
functions (as torch.utils.benchmark compiles its statements):

    per_field  `$S` -> `get(req)`   the state is looked up again for every field (the PR)
    cached     `$S` -> `state`      looked up once per call site into a local (the review)

so the only thing that differs between strategies is `get`/`peek`. What each path costs in
lookups is measured by tests/test_callsites.py and tabled in docs/SCENARIOS.md. The device
work (row allocation, pool copies) is the scheduler's, from its own record; these functions do
the state work and return what the real code derives from the state.
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from strategies import Strategy
from strategies._contract import AS_WRITTEN, DIRECT, SITE_NAMES

PATTERNS: tuple[str, ...] = ("per_field", "cached")


def patterns_for(
    strategy: Strategy, patterns: tuple[str, ...], others: Sequence[Strategy] = ()
) -> tuple[str, ...]:
    """The access patterns a strategy is measured with: a revision's code only as written
    (`as_written`: each call site with the revision's own pattern), the others as asked; a
    strategy that holds no state (control, the reference every net figure is taken against)
    under every pattern the run's other strategies are measured with."""
    if strategy.is_target:
        return (AS_WRITTEN,)
    if strategy.holds_state or not others:
        return patterns
    builtins = any(o.holds_state and not o.is_target for o in others)
    targets = any(o.is_target for o in others)
    return (*(patterns if builtins else ()), *((AS_WRITTEN,) if targets else ())) or patterns


def check_pattern(strategy: Strategy, pattern: str) -> None:
    """ValueError (one line) for a pattern the strategy cannot be run with."""
    if pattern == AS_WRITTEN:
        if strategy.holds_state and not strategy.is_target:
            raise ValueError(
                f"{strategy.name}: pattern {AS_WRITTEN} is for a revision's code (--target)"
            )
    elif pattern not in PATTERNS:
        raise ValueError(f"unknown access pattern {pattern!r}; choose from {', '.join(PATTERNS)}")


_TEMPLATES: dict[str, str] = {
    # prefill.py:99-109, clear_pd_hidden_request_state: ten writes.
    "clear_state": """
def clear_state(req):
    $CACHE
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
""",
    # prefill.py:534-587, _finalize_pd_hidden_bootstrap (success path): once per PD request.
    # src_indices: the rows allocated for the whole hidden range (None when streaming).
    "bootstrap_finalize": """
def bootstrap_finalize(req, meta, src_indices, dst_indices, layer_ids):
    $CACHE
    streaming = bool(meta.get("streaming_hidden", False))
    $S.capture_layer_ids = [int(x) for x in layer_ids]
    $S.meta = dict(meta)
    $S.src_indices = src_indices
    $S.dst_indices = dst_indices
    $S.written = None if streaming else [False] * meta["hidden_len"]
    $S.owner_direct_sent = False
""",
    # hidden_state.py:35-41 via forward_batch_info.py:660, every ForwardBatch.init_new:
    # get-or-create until a request has layers; a fresh list each call.
    "capture_layers_get": """
def capture_layers_get(reqs):
    for req in reqs:
        layer_ids = get(req).capture_layer_ids
        if layer_ids:
            return [int(x) for x in layer_ids]
    return None
""",
    # The proposal: the same scan without creating a state for every request it visits.
    "capture_layers_peek": """
def capture_layers_peek(reqs):
    for req in reqs:
        state = peek(req)
        if state is not None:
            layer_ids = state.capture_layer_ids
            if layer_ids:
                return [int(x) for x in layer_ids]
    return None
""",
    # prefill.py:1181-1340, _write_pd_hidden_rows_for_batch, for ALL requests of a batch
    # result. entries: (req, chunk_start, chunk_len, new_rows); new_rows are the rows the
    # scheduler allocated for this chunk when streaming (None if that allocation failed).
    # capturing: the forward captured hidden states (some request of the batch has layers);
    # otherwise the code returns after the filter (prefill.py:1222). Returns, per request
    # written, (req, pool rows, first chunk-relative row, end chunk-relative row).
    "write_hidden_rows": """
def write_hidden_rows(entries, capturing):
    needs_pd_hidden = []
    for entry in entries:
        req = entry[0]
        $CACHE
        if ($S.src_indices or $S.capture_layer_ids) and not $S.owner_direct_sent:
            needs_pd_hidden.append(entry)
    if not capturing:
        return []
    done = []
    for req, chunk_start, chunk_len, new_rows in entries:
        $CACHE
        meta = $S.meta or {}
        streaming = bool(meta.get("streaming_hidden", False))
        if $S.owner_direct_sent:
            continue
        src_indices = $S.src_indices
        if not src_indices and not streaming:
            continue
        hidden_start = int(meta.get("hidden_start", 0))
        hidden_len = int(meta.get("hidden_len", len(src_indices or [])))
        chunk_end = chunk_start + chunk_len
        write_start = max(chunk_start, hidden_start)
        write_end = min(chunk_end, hidden_start + hidden_len)
        if write_end <= write_start:
            continue
        local_start = write_start - hidden_start
        local_end = write_end - hidden_start
        rows = local_end - local_start
        if not streaming:
            write_indices = src_indices[local_start:local_end]
        prev_current_start = $S.current_start
        prev_current_row_len = int($S.current_row_len or 0)
        if prev_current_start is not None and prev_current_row_len > 0:
            if prev_current_start != write_start:
                raise RuntimeError(f"{req.rid}: previous hidden chunk was never sent")
        if streaming:
            write_indices = new_rows
            if write_indices is None:
                continue  # fail_pd_hidden_transfer (prefill.py:1319): the scheduler aborts it
            $S.src_indices = write_indices
        $S.current_start = write_start
        $S.current_row_len = rows
        $S.current_src_indices = write_indices
        $S.current_is_last = write_end >= hidden_start + hidden_len
        written = $S.written
        if written is not None:
            written[local_start:local_end] = [True] * rows
        done.append((req, write_indices, write_start - chunk_start, write_end - chunk_start))
    return done
""",
    # prefill.py:1854-2041, send_kv_chunk: once per chunk per request (middle chunks of the
    # chunked request at the next iteration, prefill.py:1813; the last chunk, prefill.py:1475).
    # hidden_state_type: PD_HIDDEN is in the server's state_types (a DSpark server).
    # Returns (current chunk meta or None, PD hidden payload or None).
    "send_kv_chunk": """
def send_kv_chunk(req, last_chunk, hidden_state_type):
    $CACHE
    current_src = $S.current_src_indices
    current_start = $S.current_start
    current_row_len = int($S.current_row_len or 0)
    has_current = current_src is not None and current_row_len > 0
    streaming = bool(($S.meta or {}).get("streaming_hidden", False))
    payload = None
    if (last_chunk or has_current) and hidden_state_type:
        if $S.owner_direct_sent:
            payload = []
        else:
            src_indices = $S.src_indices
            if src_indices is None and $S.capture_layer_ids:
                raise RuntimeError(f"{req.rid}: hidden rows not materialized before transfer")
            if has_current:
                payload = current_src
            elif not src_indices:
                payload = []
            else:
                written = $S.written
                if written is not None and not all(written):
                    raise RuntimeError(f"{req.rid}: hidden rows incomplete before transfer")
                payload = src_indices
    chunk_meta = None
    if has_current:
        rows = current_src if streaming else $S.src_indices
        chunk_meta = (current_start, current_row_len, bool($S.current_is_last), rows)
    if has_current and streaming:
        $S.src_indices = None
    $S.current_src_indices = None
    $S.current_start = None
    $S.current_row_len = 0
    $S.current_is_last = False
    return chunk_meta, payload
""",
    # prefill.py:155-169, maybe_release_pd_hidden_rows_on_hidden_done: every inflight request
    # on every poll (prefill.py:1588). hidden_done: the transfer worker reported the hidden
    # rows sent (and freed them). Returns whether it cleared the state.
    "release_on_hidden_done": """
def release_on_hidden_done(req, hidden_done):
    indices = get(req).src_indices
    if not indices or not hidden_done:
        return False
    clear_state(req)
    return True
""",
    # prefill.py:112-142, maybe_release_metadata_buffer: every request that leaves the
    # inflight queue (prefill.py:1648-1655), PD or not. Returns the rows it would free.
    "release_metadata": """
def release_metadata(req):
    indices = get(req).src_indices
    if indices:
        clear_state(req)
        return indices
    clear_state(req)
    return None
""",
}

_CACHE_RE = re.compile(r"^(\s*)\$CACHE\n", re.MULTILINE)

# Where the templates come from: the functions each transcribes, and how many state accesses
# (field reads and writes, each through its own lookup in the PR) those functions make there.
# `bench target inspect` holds a user's revision to this table: a count that differs means the
# code changed since the model was written (or the model leaves out a path: error and
# pipeline-parallel branches are not modelled).
MODELLED_FROM = "bytedance-iaas/sglang c96e68b62b"


@dataclass(frozen=True)
class ModelledSite:
    site: str  # template name
    functions: tuple[str, ...]  # the real functions it transcribes (prefill.py, hidden_state.py)
    accesses_at_source: int  # state accesses those functions make at MODELLED_FROM
    role: str = "site"  # "scan": the capture-layer scan (its real name follows the revision)


MODELLED_SITES: tuple[ModelledSite, ...] = (
    ModelledSite("clear_state", ("clear_pd_hidden_request_state",), 10),  # prefill.py:99-109
    ModelledSite("bootstrap_finalize", ("_finalize_pd_hidden_bootstrap",), 11),  # :534-587
    ModelledSite("write_hidden_rows", ("_write_pd_hidden_rows_for_batch",), 16),  # :1181-1340
    ModelledSite("send_kv_chunk", ("send_kv_chunk", "_pd_hidden_payload"), 15),  # :1854-2041
    ModelledSite(
        "release_on_hidden_done", ("maybe_release_pd_hidden_rows_on_hidden_done",), 1
    ),  # :155-169
    ModelledSite("release_metadata", ("maybe_release_metadata_buffer",), 1),  # :112-142
    ModelledSite(
        "capture_layers_get", ("get_pd_hidden_capture_layer_ids",), 1, role="scan"
    ),  # hidden_state.py:35-41
)


assert set(SITE_NAMES) <= set(_TEMPLATES), "a call site of the contract has no template"


def written_accesses(name: str) -> int:
    """State accesses written in a template (fields through `$S`, plus direct lookups)."""
    body = _TEMPLATES[name]
    return body.count("$S.") + len(re.findall(r"\b(?:get|peek)\(req\)\.", body))


def render(name: str, pattern: str) -> str:
    """The source of one call site for one access pattern (`direct`: the fields are the
    request's own attributes, read as `req.meta` with no lookup: a revision that keeps them
    on Req)."""
    if pattern not in (*PATTERNS, DIRECT):
        raise ValueError(f"unknown access pattern {pattern!r}; choose from {', '.join(PATTERNS)}")
    body = _TEMPLATES[name]
    if pattern == "cached":
        body = _CACHE_RE.sub(r"\1state = get(req)\n", body)
        return body.replace("$S", "state").lstrip("\n")
    if pattern == DIRECT:
        body = _CACHE_RE.sub("", body).replace("$S", "req")
        return re.sub(r"\bget\(req\)", "req", body).lstrip("\n")
    return _CACHE_RE.sub("", body).replace("$S", "get(req)").lstrip("\n")


def written_lookups(pattern: str) -> dict[str, int]:
    """State lookups written in each call site's source (paths differ: the tests count each
    path by running it)."""
    return {
        name: len(re.findall(r"\bget\(req\)|\bpeek\(req\)", render(name, pattern)))
        for name in _TEMPLATES
    }


@dataclass(frozen=True)
class CallSites:
    """The compiled call sites of one strategy under one access pattern."""

    strategy: str
    pattern: str
    clear_state: Callable[[Any], None]
    bootstrap_finalize: Callable[..., None]
    capture_layers_get: Callable[[list[Any]], list[int] | None]
    capture_layers_peek: Callable[[list[Any]], list[int] | None]
    write_hidden_rows: Callable[[list[Any], bool], list[Any]]
    send_kv_chunk: Callable[[Any, bool, bool], tuple[Any, Any]]
    release_on_hidden_done: Callable[[Any, bool], bool]
    release_metadata: Callable[[Any], list[int] | None]

    def capture_layers(self, variant: str) -> Callable[[list[Any]], list[int] | None]:
        """The capture-layer scan of a scenario: 'get' (the code) or 'peek' (a proposal)."""
        return self.capture_layers_get if variant == "get" else self.capture_layers_peek


def _none(*_args: object) -> None:
    return None


def _no_writes(*_args: object) -> list[Any]:
    return []


def _not_cleared(*_args: object) -> bool:
    return False


def _nothing_sent(*_args: object) -> tuple[None, None]:
    return None, None


# What each call site returns when no state is kept: nothing written, nothing held.
_NULL_FUNCS: dict[str, Callable[..., Any]] = {
    **dict.fromkeys(_TEMPLATES, _none),
    "write_hidden_rows": _no_writes,
    "send_kv_chunk": _nothing_sent,
    "release_on_hidden_done": _not_cleared,
}


def null_callsites(strategy: Strategy, pattern: str) -> CallSites:
    """Call sites that touch no state: the harness's own cost (for HOLDS_STATE = False)."""
    return CallSites(strategy=strategy.name, pattern=pattern, **_NULL_FUNCS)


def compile_callsites(strategy: Strategy, pattern: str) -> CallSites:
    """The call sites for one strategy and access pattern (null ones if it holds no state).
    `as_written`: each call site with the pattern the strategy's revision uses there."""
    check_pattern(strategy, pattern)
    if not strategy.holds_state or strategy.program is not None:
        # control, or a strategy of another state group: its accesses are replayed by the
        # group program (bench.core.groupsites), not through the PD hidden call sites
        return null_callsites(strategy, pattern)
    namespace: dict[str, Any] = {"get": strategy.get, "peek": strategy.peek}
    funcs: dict[str, Any] = {}
    for name in _TEMPLATES:
        site_pattern = pattern
        if pattern == AS_WRITTEN:
            site_pattern = strategy.site_patterns.get(name, "per_field")
            if name.startswith("capture_layers") and DIRECT in strategy.site_patterns.values():
                site_pattern = DIRECT  # the scan reads the request's own field too
        source = render(name, site_pattern)
        filename = f"<callsite {name}:{strategy.name}:{site_pattern}>"
        # Registered with linecache so tracebacks and profilers can show the generated lines.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), namespace)
        funcs[name] = namespace[name]
    return CallSites(strategy=strategy.name, pattern=pattern, **funcs)
