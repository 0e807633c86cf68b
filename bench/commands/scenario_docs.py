"""The scenarios as text: `python -m bench scenarios` (one line each), `--explain NAME` (every
parameter with its value and source) and `--markdown` (docs/SCENARIOS.md, kept equal to this
output by a test)."""

from __future__ import annotations

from bench.core.arrivals import SHAREGPT_CLIP, SHAREGPT_MEAN_TOKENS, SHAREGPT_SIGMA, mean_length
from bench.core.scenarios import DEFAULT_SET, PARAMS, PRESETS, Scenario, format_value

# Lookups of the PR's state per request per call, by path, read from the code at c96e68b62b
# (per_field = as written; cached = the review's one lookup per call site). The call-site
# templates reproduce them; tests/test_callsites.py counts every path by running it.
LOOKUPS_BY_PATH: tuple[tuple[str, str, str, int, int], ...] = (
    ("bootstrap finalize", "prefill.py:534-587", "PD request, once", 6, 1),
    (
        "capture-layer scan",
        "forward_batch_info.py:660, hidden_state.py:35-41",
        "each request until one has layers, every forward",
        1,
        1,
    ),
    ("write hidden rows (filter + loop)", "prefill.py:1181-1340", "PD request, streaming", 14, 2),
    (
        "write hidden rows (filter + loop)",
        "prefill.py:1181-1340",
        "PD request, whole hidden range",
        12,
        2,
    ),
    (
        "write hidden rows (filter + loop)",
        "prefill.py:1181-1340",
        "non-PD request, capturing batch",
        5,
        2,
    ),
    (
        "write hidden rows (filter only)",
        "prefill.py:1190-1222",
        "non-PD request, batch without capture",
        2,
        1,
    ),
    ("send_kv_chunk", "prefill.py:1854-2041", "PD request with a current hidden chunk", 12, 1),
    ("send_kv_chunk", "prefill.py:1854-2041", "non-PD, middle chunk", 8, 1),
    ("send_kv_chunk", "prefill.py:1854-2041", "non-PD, last chunk, PD_HIDDEN state type", 11, 1),
    ("send_kv_chunk", "prefill.py:1854-2041", "non-PD, last chunk, no PD_HIDDEN state type", 8, 1),
    (
        "inflight poll (hidden done?)",
        "prefill.py:155-169, called at :1588",
        "every inflight request, every iteration",
        1,
        1,
    ),
    (
        "inflight poll, hidden done",
        "prefill.py:155-169",
        "PD request with its whole hidden range, once",
        11,
        2,
    ),
    (
        "release at completion",
        "prefill.py:112-142, called at :1648-1655",
        "every request, PD or not",
        11,
        2,
    ),
)


# Queue figures of presets checked against published ones (mean, p99 measured by
# tests/test_scheduler.py::test_queues_match_the_published_figures, which keeps these equal).
CALIBRATION: tuple[tuple[str, str, str, str, str], ...] = (
    ("prefill-dspark-dp8", "inflight", "0.46", "2", "#11648: #transferring-req 1-5"),
    ("prefill-dspark-dp8", "waiting", "0", "0", "#11648: #queue-req 0-7"),
    ("prefill-dspark-dp8", "bootstrap", "0", "0", "#11648: #unbootstrapped-req 0"),
    ("stress-transfer-stall", "inflight", "150", "150", "#5450: ~150 per rank"),
    ("stress-transfer-stall", "bootstrap", "340", "340", "#5450: ~340 per rank"),
)


def _short(s: Scenario) -> str:
    if s.loop == "prefill":
        shape = (
            f"PD {s.pd_fraction:g}, {s.prompts} prompts, chunk {s.chunk_tokens}"
            + (f" ({s.chunked_prefill_size} / dp {s.dp_size})" if s.dp_size > 1 else "")
            + ", "
            f"residence {s.inflight_residence}, bootstrap wait {s.bootstrap_wait}"
        )
    elif s.loop == "decode":
        shape = (
            f"B = {s.decode_batch}, {s.scans_per_forward} scan(s) per forward, {s.outputs} outputs"
        )
    else:
        shape = f"B = {s.decode_batch} + {s.chunk_tokens}-token prefill chunks, {s.prompts}"
    return f"{shape}; forward {s.forward_ms:g} ms"


def listing() -> str:
    width = max(len(n) for n in PRESETS)
    lines = []
    for name, s in PRESETS.items():
        mark = "*" if name in DEFAULT_SET else " "
        lines.append(f"{mark} {name:<{width}}  {s.loop:<9} {s.description} ({_short(s)})")
    lines.append("* = in the default set. Details: python -m bench scenarios --explain NAME")
    return "\n".join(lines)


def explain(s: Scenario) -> str:
    lines = [f"{s.name}: {s.description}"]
    width = max(len(k) for k in PARAMS)
    for key in PARAMS:
        value = format_value(getattr(s, key))
        lines.append(f"  {key:<{width}}  {value:<10}  {s.sources.get(key, '')}")
    return "\n".join(lines)


def _md_cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


_ASSUMPTIONS_MD = """
## Assumptions, and the sweeps that test them

- `cached_prefix_max_frac` 0.5: no published distribution of decode-side prefix hits;
  `--sweep cached_prefix_max_frac=0,0.25,0.5,0.9` shows its effect.
- `decode_pool_rows` 16384: the decode side's receive pool is assumed sized like the
  prefill pool; it caps PD requests in flight at about pool / hidden_len;
  `--sweep decode_pool_rows=16384,65536,262144`.
- ShareGPT's length spread (sigma 1.0): only the means are published.
- `batch_objects_per_request` 2: objects a batch request's round leaves alive until its
  next round, estimated from the code (a new `Range`, schedule_batch.py:1154, and a new
  `prefix_indices` tensor from match_prefix, schedule_batch.py:1245-1252): a lower bound,
  since per-batch lists and tensors' Python wrappers are not counted;
  `--sweep batch_objects_per_request=0,2,8,32`. The rest of an iteration's allocations are
  the GC model's (below), each an estimate with its own sweep.
- `accepted_tokens_per_verify` 1: DSpark accepts several draft tokens per verify, so a
  decode request finishes in fewer forwards and more requests are admitted and released
  per iteration than one token per forward implies; no acceptance length is published for
  this deployment: `--sweep accepted_tokens_per_verify=1,2,4` on decode-dspark.
- decode-dspark's 90 ms forward is a step time derived from throughput, an upper bound on
  the forward (it includes exposed host time): its shares of a forward are lower bounds.
- `kv_capacity_tokens` 500,000 and `ack_delay` 1: assumptions (no published figure);
  the first only binds when inflight requests pile up (stress presets).
- `stress-decode-max` reuses decode-dspark's 90 ms forward: a real 4,096-request forward
  is slower, so its share of a forward is an upper bound.
- `stress-transfer-stall`'s waits are set so the queues reach the published per-rank
  lengths (#5450: ~340 bootstrapping, ~150 inflight) at ~2 requests per 8k chunk.
"""


_GC_MODEL_MD = """## GC model

What the gc suite's scheduler allocates and keeps, so that CPython's collector runs as it
does in SGLang's scheduler process. Code read at sgl-project/sglang d55f1c28e2
(2026-08-18); object counts are GC-tracked objects (containers, class instances, tensor
wrappers; ints, floats, strings and dicts of atomic values are not tracked).

**The long-lived heap.** `background_objects` 1,080,000 (gc suite option,
`--background-objects N`): sgl-project/sglang PR #30693 measured ~1.08M gen-2 objects in
the scheduler process alone, "dominated by static import-graph objects"; issue #30596
counts ~2.5-2.7M across the tokenizer manager, scheduler and detokenizer and full
collections of ~400-430 ms at that population. That count is the whole process, imports
included, so the harness builds its heap until the worker process tracks 1,080,000 objects
in all (`gc.get_objects()`): what the process already tracks (~165k with torch imported,
counted before building) is part of it, and the rest is units of a dict holding a list, a
small class instance, a list and a tensor-wrapper stand-in, in a tuple that is tracked too
(6 objects a unit, counted as it is built; bench/base/gcprobe.py). The count reached, within
a unit of the target, is recorded per worker process (gc.extra.json, `heaps`) and shown
beside the GC figures. It is built once per worker, and the forked children inherit it.

**The arms.** `enabled`: CPython's default thresholds (700, 10, 10): `--gc-threshold` is
applied by `gc.set_threshold` only in the engine's main process
(entrypoints/engine.py:1750-1751, inside `_set_envs_and_config`, which spawns the
scheduler at engine.py:1747), so the scheduler runs the defaults. `frozen`: `gc.freeze()`
after warm-up, SGLang's default since PR #34999 (commit 9be3044b9c, 2026-08-16: the HTTP
server posts `/freeze_gc` after its warm-up request, http_server.py:2357-2399; the freeze
itself, utils/common.py:4013-4022, runs no collection first; no switch turns it off).
`raised`: the youngest threshold raised 16x to (11,200, 10, 10), an assumption (SGLang's
`--gc-threshold` has no default, server_args.py:1252).

**What an iteration allocates, and how long it lives** (each a scenario parameter, an
estimate with a sweep; the full rows are in the presets above):

- freed within the iteration: `iteration_objects_per_request` (decode 3: the normalised
  `[[t] for t in ids]` lists, batch_result_processor.py:933-938, and two array slices per
  streamed request, output_streamer.py:401,416; prefill 1) and `iteration_objects_fixed`
  (decode 45: the ForwardBatch and its lists, forward_batch_info.py:704-950, the tensors of
  prepare_for_decode, schedule_batch.py:3078-3080, the stream accumulator's 26 lists,
  output_streamer.py:265-266, the BatchTokenIDOutput; prefill 38). Freed by reference
  counting, they start a young collection only when they are alive at once past the
  threshold: CPython counts allocations minus deallocations.
- kept as long as the request: `request_objects_per_iteration` (0 by default: plain
  output ids extend one `array('q')`, schedule_batch.py:865; with top-logprobs, 2 lists per
  request per token, batch_result_processor.py:943-987:
  `--sweep request_objects_per_iteration=0,2,4`).
- kept for the server's life: `server_objects_per_request` (5: the radix-cache node split
  and leaf a finished request inserts, mem_cache/radix_cache.py:458).

**Full-collection pauses** are timed with 1,500 and 4,096 live requests holding state over
the heap: ~1,500 is where PR #36366 reports automatic gen-2 collections pausing the
scheduler 100-350 ms "every few decode steps"; 4,096 the high end of
max_running_requests per DP worker. Each strategy's extra pause is modelled, not measured:
its tracked objects per request (counted exactly, net of a bare request, signed: a state
that removes objects reads negative) times the live requests times the per-object cost of
that collection (each process's measured pause over the objects it traversed, pooled over
processes; the interval is that cost's spread, not the pause's). The model is checked
against the measurement: the measured pause's slope per tracked object from 1,500 to 4,096
live requests (the two sizes paired within each process, pooled over processes, with a
two-level bootstrap interval; the nearest measured sizes when those are not measured),
which the verdict compares with the pooled per-object cost: within the slope's interval,
or by how much not. The noise floor is the A/A twin's difference in the measured full
pauses; its counted objects equal the baseline's by construction and bound nothing.
"""


def _intro() -> list[str]:
    """The page's head and the presets table."""
    out = [
        "# Scenarios",
        "",
        "<!-- Generated by `python -m bench scenarios --markdown`; tests/test_scenarios.py keeps",
        "     this file equal to the code (bench/core/scenarios.py). Edit the code, not this. -->",
        "",
        "A scenario is everything one synthetic scheduler faces: which loop runs, what arrives,",
        "how long requests wait and reside, how large batches are, and how long a model forward",
        'takes (the denominator of "share of a forward"). Queue lengths are not parameters:',
        "they emerge from arrivals x residence times under the caps, and every run records their",
        "mean and p99. Every number below carries its source; a number without one is marked as",
        "an assumption, and the report shows how much the verdict depends on it with a sweep",
        "(`python -m bench run --sweep KEY=V1,V2,...`).",
        "",
        "Evidence is bytedance-iaas/sglang at c96e68b62b (the head of the branch the PR landed",
        "on): prefill.py and decode.py are in python/sglang/srt/disaggregation/. Issue and PR",
        "numbers (#N) are sgl-project/sglang's; arithmetic on published figures says",
        '"inferred".',
        "",
        "## Presets",
        "",
        "| preset | loop | in default set | what it is |",
        "|---|---|---|---|",
    ]
    for name, s in PRESETS.items():
        out.append(
            f"| `{name}` | {s.loop} | {'yes' if name in DEFAULT_SET else 'no'} | {_md_cell(s.description)}; {_md_cell(_short(s))} |"
        )
    return out


def _loops() -> list[str]:
    """The loops, arrivals, lengths, and the lookups per call site."""
    out = [
        "",
        "`python -m bench run --scenario NAME[,NAME]` selects presets; `--set KEY=VALUE` changes a",
        "parameter in every selected preset (the manifest records it and the report says",
        '"modified preset"); `--sweep KEY=V1,V2,...` measures each preset at every value (the',
        "value becomes part of the benchmark names).",
        "",
        "## The loops",
        "",
        "- **prefill** (disaggregated prefill node, prefill.py:1018-1053), per iteration: receive",
        "  into the bootstrap queue; finalize every request whose decode-side metadata has arrived",
        "  (`bootstrap_wait`) and whose decode receive window fits (`decode_pool_rows`; decode.py:1232,",
        "  1254); a PD request in whole-range mode allocates its hidden rows here and is aborted when",
        "  that fails (prefill.py:562-577); send the chunked request's previous chunk",
        "  (prefill.py:1813); form a batch of `chunked_prefill_size // dp_size` tokens (SGLang",
        "  divides the chunk by dp_size under DP attention, server_args.py:5643) while the prefill KV fits",
        "  (`kv_capacity_tokens`); forward: the capture-layer scan (forward_batch_info.py:660) and",
        "  the hidden rows copied into the row pool; batch result: `_write_pd_hidden_rows_for_batch`",
        "  over all batch requests, finished prefills into the inflight queue with",
        "  `send_kv_chunk(last)`; poll every inflight request; transfer success after",
        "  `inflight_residence` iterations, then release (every request) and drop after",
        "  `keep_finished` iterations. Streamed chunk rows are freed by the transfer worker",
        "  `ack_delay` iterations after they are sent (hidden_events.py:414-436), outside the",
        "  scheduler's timed iteration.",
        "- **decode** (decode node): admit to keep the running batch at `decode_batch`; every",
        "  forward runs `scans_per_forward` capture-layer scans over all B requests; no decode",
        "  request ever has capture layers (decode.py keeps its own state), so every scan visits all",
        "  B, and the get variant creates a state for each request on its first forward;",
        "  `accepted_tokens_per_verify` output tokens are appended to each request's `array('q')`",
        "  per forward; finished requests are released.",
        "- **colocated**: a decode batch with a chunk of prefill mixed into the same forward; the",
        "  scan covers both; no hidden transfer.",
        "",
        "Arrivals: `fill` keeps just enough prompt tokens queued to fill every batch (a saturated",
        "server; prefill: `chunk x (bootstrap_wait + 1)` tokens in the bootstrap and",
        "waiting queues; decode: every finished request replaced at once); a number is a Poisson",
        "rate in requests per iteration.",
        "",
        "Lengths: `random-Nk` is sglang bench_serving's random dataset, uniform integers in",
        "`[max(prompt_range_ratio x N, 1), N]` (range ratio 0.0 by default, so the mean is about",
        "N/2; with a range ratio of 1.0 every prompt is N tokens, about 2 random-4k prompts per 8k",
        "chunk); `sharegpt` is log-normal with the published means",
        f"({SHAREGPT_MEAN_TOKENS['prompts']} in, {SHAREGPT_MEAN_TOKENS['outputs']} out; sgl-project/sglang#2805), sigma {SHAREGPT_SIGMA:g} (an",
        f"assumption), clipped to {list(SHAREGPT_CLIP)}.",
        "",
        "## Lookups of the PR's state, by call site and path",
        "",
        "Per request per call; `per_field` is the PR as written, `cached` the review's one lookup",
        "per call site. The call-site templates (bench/core/callsites.py) reproduce these counts",
        "and tests/test_callsites.py checks each path by running it.",
        "",
        "| call site | code | path | per_field | cached |",
        "|---|---|---|---:|---:|",
    ]
    for site, where, path, per_field, cached in LOOKUPS_BY_PATH:
        out.append(f"| {site} | {where} | {path} | {per_field} | {cached} |")
    return out


def _presets_and_parameters() -> list[str]:
    """Every preset's parameters with their sources, and what each parameter means."""
    out: list[str] = []
    out += ["", "## Every preset, every parameter", ""]
    for name, s in PRESETS.items():
        out += [
            f"### `{name}`",
            "",
            _md_cell(s.description),
            "",
            "| parameter | value | source |",
            "|---|---|---|",
        ]
        for key in PARAMS:
            out.append(
                f"| `{key}` | {format_value(getattr(s, key))} | {_md_cell(s.sources.get(key, ''))} |"
            )
        mean_in = mean_length(s.prompts, range_ratio=s.prompt_range_ratio, role="prompts")
        out += [
            "",
            f"Mean prompt {mean_in:,.0f} tokens: about {s.chunk_tokens / mean_in:,.1f} requests per prefill chunk.",
            "",
        ]
    out += [
        "## Parameters",
        "",
        "| parameter | meaning | allowed |",
        "|---|---|---|",
    ]
    for key, p in PARAMS.items():
        allowed = p.allowed() + (" or fill" if key == "arrival" else "")
        out.append(f"| `{key}` | {_md_cell(p.doc)} | {_md_cell(allowed)} |")
    return out


def _assumptions() -> list[str]:
    """The assumptions and the sweeps that test them."""
    return _ASSUMPTIONS_MD.split("\n")


def _gc_model() -> list[str]:
    """The GC model: the heap, the arms, what an iteration allocates, the pauses."""
    return _GC_MODEL_MD.split("\n")


def _calibration() -> list[str]:
    """The queue calibration, and what is not modelled."""
    out = [
        "## Queue calibration",
        "",
        "Queue lengths emerge from the loop; these are the presets checked against published",
        "queue figures (tests/test_scheduler.py runs each and asserts the check). Means and p99",
        "over 500 iterations after warm-up, seed 5, pr652 per_field:",
        "",
        "| preset | queue | mean | p99 | published |",
        "|---|---|---:|---:|---|",
        *[f"| `{n}` | {q} | {m} | {p99} | {pub} |" for n, q, m, p99, pub in CALIBRATION],
        "",
        "prefill-dspark-dp8 sits at the low end of #11648's range: its transfers succeed at the",
        "first poll after the forward (residence 1, from PR #7236's ~60 ms transfer), and about",
        "half a random-4k request finishes per 1,024-token chunk. One scheduler with the whole",
        "8,192-token chunk (prefill-dspark) is a heavier regime than those per-rank logs: about",
        "4 requests finish per iteration, so about 4 are inflight.",
        "",
        "## Not modelled",
        "",
        "- The early send of a prefill-side cached prefix (`maybe_send_cached_prefix_chunk`,",
        "  prefill.py:1829-1852, on by default: SGLANG_DISAGG_PREFILL_EARLY_SEND_CACHED_PREFIX,",
        "  python/sglang/srt/environ.py:381): the model has no prefill-side prefix cache, and the",
        "  random datasets would not hit one. With shared-prefix traffic each hit adds one",
        "  `send_kv_chunk` (8-12 lookups per_field) for that request.",
        "- The overlap event loop (event_loop_overlap_disagg_prefill): the model follows the",
        "  non-overlap loop, whose last batch is the only reference a released request keeps.",
        "- Pipeline parallelism's extra lookups in the bootstrap queue (1-2 per queued request).",
        "",
    ]
    return out


def markdown() -> str:
    """docs/SCENARIOS.md."""
    sections = (_intro, _loops, _presets_and_parameters, _assumptions, _gc_model, _calibration)
    return "\n".join(line for section in sections for line in section())
