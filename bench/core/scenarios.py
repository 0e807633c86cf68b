"""Scenarios: what a scheduler loop faces, as named presets whose every number has a source.

A Scenario is the full parameter set of one synthetic scheduler (which loop, what arrives, how
long requests wait and reside, how large batches are, how long a forward takes). Queue lengths
are not parameters: they emerge from arrivals x residence times under the caps. Each preset
value carries its primary source (SGLang file:line at a named commit, a GitHub issue or PR of
sgl-project/sglang, a published page), or says that it is an assumption; `python -m bench scenarios --markdown` writes
docs/SCENARIOS.md from this module, and a test keeps the two equal.

Evidence at bytedance-iaas/sglang c96e68b62b (the PR's branch head): prefill.py is
python/sglang/srt/disaggregation/prefill.py, decode.py the decode side beside it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

LOOPS = ("prefill", "decode", "colocated")
LENGTHS = ("sharegpt", "random-1k", "random-2k", "random-4k", "random-8k")
CAPTURE = ("get", "peek")
# Harness limits (memory of this machine, not properties of SGLang).
MAX_DECODE_BATCH = 65_536
MAX_ITERATIONS = 100_000


@dataclass(frozen=True)
class Param:
    """One scenario parameter: its type, its allowed values, and what it means."""

    kind: type  # int, float, bool, str
    doc: str
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()

    def parse(self, key: str, text: str) -> Any:
        """A value from command-line text; ValueError naming the key and what is allowed."""
        try:
            if self.kind is bool:
                if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                value: Any = text.lower() in ("true", "1", "yes")
            elif key == "arrival" and text == "fill":
                value = "fill"
            else:
                value = self.kind(text)
        except ValueError:
            raise ValueError(f"{key}={text!r}: expected {self.allowed()}") from None
        self.check(key, value)
        return value

    def check(self, key: str, value: Any) -> None:
        if self.choices and value not in self.choices:
            raise ValueError(f"{key}={value!r}: expected {self.allowed()}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if (self.lo is not None and value < self.lo) or (
                self.hi is not None and value > self.hi
            ):
                raise ValueError(f"{key}={value!r}: expected {self.allowed()}")

    def allowed(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.kind is bool:
            return "true or false"
        name = {int: "an integer", float: "a number", str: "text"}[self.kind]
        bounds = (
            f" in [{self.lo:g}, {self.hi:g}]" if self.lo is not None and self.hi is not None else ""
        )
        return name + bounds


PARAMS: dict[str, Param] = {
    "loop": Param(str, "which scheduler loop runs", choices=LOOPS),
    "prompts": Param(str, "input-length distribution", choices=LENGTHS),
    "prompt_range_ratio": Param(
        float, "random-*: lengths uniform in [ratio x max, max]", lo=0.0, hi=1.0
    ),
    "outputs": Param(str, "output-length distribution (decode, colocated)", choices=LENGTHS),
    "cached_prefix_max_frac": Param(
        float, "decode-side cached prefix, uniform in [0, this) x prompt", lo=0.0, hi=0.99
    ),
    "pd_fraction": Param(float, "share of requests that transfer PD hidden rows", lo=0.0, hi=1.0),
    "hidden_transfer": Param(bool, "the server carries the PD_HIDDEN state type (DSpark)"),
    "streaming": Param(bool, "hidden rows allocated per chunk and freed on the decode ACK"),
    "capture_layers": Param(int, "target layers whose hidden rows are captured", lo=1, hi=64),
    "chunked_prefill_size": Param(
        int, "prefill tokens per batch (the server argument, before DP division)", lo=16, hi=1 << 20
    ),
    "dp_size": Param(
        int,
        "data-parallel attention ranks: each rank's scheduler prefills chunked_prefill_size // "
        "dp_size tokens per batch",
        lo=1,
        hi=64,
    ),
    "pool_rows": Param(int, "prefill hidden row pool rows", lo=16, hi=1 << 22),
    "decode_pool_rows": Param(
        int, "decode receive rows (caps PD requests in flight)", lo=16, hi=1 << 22
    ),
    "kv_capacity_tokens": Param(
        int, "prefill KV tokens (caps prefilled + inflight)", lo=1024, hi=1 << 30
    ),
    "arrival": Param(float, "requests per iteration, or 'fill' (saturated)", lo=0.001, hi=1e5),
    "bootstrap_wait": Param(
        int, "iterations until the decode side's metadata arrives", lo=0, hi=MAX_ITERATIONS
    ),
    "inflight_residence": Param(
        int, "iterations from last chunk to KV transfer success", lo=1, hi=MAX_ITERATIONS
    ),
    "ack_delay": Param(
        int, "iterations until a streamed chunk's rows are ACKed and freed", lo=0, hi=1000
    ),
    "decode_batch": Param(int, "running decode batch B", lo=1, hi=MAX_DECODE_BATCH),
    "accepted_tokens_per_verify": Param(
        int,
        "tokens each decode request gains per forward (speculative decoding accepts several "
        "per verify): the request churn per iteration",
        lo=1,
        hi=16,
    ),
    "max_running_requests": Param(
        int, "scheduler cap on running requests", lo=1, hi=MAX_DECODE_BATCH
    ),
    "scans_per_forward": Param(int, "ForwardBatch.init_new calls per iteration", lo=1, hi=8),
    "capture": Param(
        str, "capture-layer scan: get (the code) or peek (a proposal)", choices=CAPTURE
    ),
    "forward_ms": Param(
        float, "model forward time the host cost is compared with", lo=0.01, hi=1e6
    ),
    "keep_finished": Param(int, "iterations a finished request stays referenced", lo=0, hi=64),
    "batch_objects_per_request": Param(
        int,
        "GC-tracked objects the batch bookkeeping allocates per batch request per iteration, "
        "referenced as long as the batch (keep_finished iterations)",
        lo=0,
        hi=256,
    ),
    "iteration_objects_per_request": Param(
        int,
        "GC-tracked objects an iteration allocates per batch request and frees by reference "
        "counting before it ends (the gc suite's allocation model)",
        lo=0,
        hi=256,
    ),
    "iteration_objects_fixed": Param(
        int,
        "GC-tracked objects an iteration allocates whatever the batch size and frees before it "
        "ends (the gc suite's allocation model)",
        lo=0,
        hi=100_000,
    ),
    "request_objects_per_iteration": Param(
        int,
        "GC-tracked objects appended to each batch request per iteration, kept as long as the "
        "request (the gc suite's allocation model)",
        lo=0,
        hi=64,
    ),
    "server_objects_per_request": Param(
        int,
        "GC-tracked objects a finished request leaves for the server's lifetime (radix-cache "
        "nodes; the gc suite's allocation model)",
        lo=0,
        hi=256,
    ),
    "server_objects_capacity": Param(
        int,
        "server-lifetime objects kept at most (the oldest go first, as the radix cache evicts)",
        lo=0,
        hi=10_000_000,
    ),
    "branch_share": Param(
        float,
        "share of requests for which a replayed state-group access under a branch the reader "
        "cannot resolve runs (`if req.return_logprob:`); groups other than PD hidden only",
        lo=0.0,
        hi=1.0,
    ),
}


@dataclass(frozen=True, kw_only=True)
class Scenario:
    name: str
    description: str
    loop: str
    prompts: str
    prompt_range_ratio: float
    outputs: str
    cached_prefix_max_frac: float
    pd_fraction: float
    hidden_transfer: bool
    streaming: bool
    capture_layers: int
    chunked_prefill_size: int
    dp_size: int
    pool_rows: int
    decode_pool_rows: int
    kv_capacity_tokens: int
    arrival: str | float
    bootstrap_wait: int
    inflight_residence: int
    ack_delay: int
    decode_batch: int
    accepted_tokens_per_verify: int
    max_running_requests: int
    scans_per_forward: int
    capture: str
    forward_ms: float
    keep_finished: int
    batch_objects_per_request: int
    iteration_objects_per_request: int
    iteration_objects_fixed: int
    request_objects_per_iteration: int
    server_objects_per_request: int
    server_objects_capacity: int
    branch_share: float
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    modified: tuple[str, ...] = ()  # parameters changed from the preset by --set / --sweep

    def values(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in PARAMS}

    def with_changes(self, changes: Mapping[str, Any]) -> Scenario:
        """This scenario with parameters changed (and recorded as modified); checked."""
        for key, value in changes.items():
            if key not in PARAMS:
                raise ValueError(f"unknown scenario parameter {key!r}; known: {', '.join(PARAMS)}")
            PARAMS[key].check(key, value)
        mod = tuple(
            dict.fromkeys([*self.modified, *(k for k in changes if changes[k] != getattr(self, k))])
        )
        out = dataclasses.replace(self, **changes, modified=mod)
        out.check_runnable()
        return out

    @property
    def chunk_tokens(self) -> int:
        """Tokens one scheduler prefills per batch: SGLang divides chunked_prefill_size by
        dp_size under DP attention (python/sglang/srt/server_args.py:5643 at c96e68b62b)."""
        return max(1, self.chunked_prefill_size // self.dp_size)

    def check_runnable(self) -> None:
        """Refuse combinations that cannot run (ValueError, one line)."""
        if self.decode_batch > self.max_running_requests and self.loop != "prefill":
            raise ValueError(
                f"{self.name}: decode_batch {self.decode_batch} exceeds max_running_requests "
                f"{self.max_running_requests}; raise it with --set max_running_requests=N"
            )
        if self.pool_rows < self.chunk_tokens and self.streaming and self.pd_fraction:
            raise ValueError(
                f"{self.name}: pool_rows {self.pool_rows} is smaller than one chunk "
                f"({self.chunk_tokens}); every streamed chunk would abort"
            )
        if self.kv_capacity_tokens < self.chunk_tokens and self.loop == "prefill":
            raise ValueError(
                f"{self.name}: kv_capacity_tokens {self.kv_capacity_tokens} is below one chunk "
                f"({self.chunk_tokens}); no request could ever be prefilled"
            )

    @property
    def label(self) -> str:
        return self.name + (" (modified preset)" if self.modified else "")


# -- sources ------------------------------------------------------------------------------------
# SGLang files are at bytedance-iaas/sglang c96e68b62b (the PR's branch head) unless a line says
# otherwise; issue and PR numbers are sgl-project/sglang's; inferred arithmetic says so.

AT = " at c96e68b62b"
SERVER_ARGS = "python/sglang/srt/server_args.py"
CHUNK_BY_GPU = (
    f"{SERVER_ARGS}:3936-3950{AT}: chunked_prefill_size 8,192 on H100, H20 and H200 "
    "(GPU memory 90-160 GB)"
)
CUDA_GRAPH_BS = (
    f"{SERVER_ARGS}:3936-3950{AT}: decode CUDA-graph max batch 256 when tp_size < 4 (512 otherwise)"
)
POOL_DEFAULT = (
    "python/sglang/srt/speculative/dspark_components/dspark_disaggregation.py:105-118"
    + AT
    + ": max(max_prefill_buffer_tokens, max_prefill_tokens) unless SGLANG_PD_HIDDEN_POOL_TOKENS "
    f"is set; max_prefill_tokens defaults to 16,384 ({SERVER_ARGS}:722-732)"
)
MAX_RUNNING = (
    "python/sglang/srt/mem_cache/kv_cache_configurator.py:1622-1627"
    + AT
    + ": max(min(estimate, 4096), 2048) requests per DP worker (high end)"
)
EP_BLOG = (
    "lmsys.org blog 2025-05-05, DeepSeek with PD disaggregation and large-scale expert "
    "parallelism on 96 H100s"
)
PREFILL_FORWARD = (
    EP_BLOG + ": prefill 50-58k tokens/s per 8-GPU node, so one 8,192-token chunk per GPU takes "
    "~1.1-1.3 s (inferred)"
)
DECODE_FORWARD = (
    EP_BLOG + ": decode 22,282 tokens/s per node at 256 requests per GPU, ~92 ms per step "
    "(inferred 256 / (22,282 / 8)); an upper bound on the forward: the step time includes "
    "exposed host time and counts one token per request per step"
)
HEALTHY_LOGS = (
    "#11648 (DeepSeek-R1 PD on 6x8 H20): healthy logs per DP rank show #transferring-req 1-5, "
    "#queue-req 0-7, #unbootstrapped-req 0"
)
TRANSFER = (
    "PR #7236: KV transfer ~60 ms per request for DeepSeek-V3 at 10K context, shorter than one "
    "prefill forward, so the transfer that starts after forward s succeeds during forward s+1 "
    "and the poll after it (prefill.py:1050" + AT + ") sees Success: 1 iteration"
)
NON_OVERLAP_LOOP = (
    "prefill.py:1018-1052" + AT + " (the non-overlap loop the model follows): a released "
    "request's last batch is replaced by `self.last_batch = batch` at the end of the iteration "
    "that released it, so nothing keeps it longer"
)
GC_SURVIVORS = (
    "estimate, a lower bound: per batch request per round, Req.init_next_round_input makes a new "
    "Range (python/sglang/srt/managers/schedule_batch.py:1154" + AT + ") and match_prefix a new "
    "prefix_indices tensor (schedule_batch.py:1245-1252), both kept until the next round; "
    "per-batch lists (prepare_for_extend, schedule_batch.py:2157-2163) and temporaries are not "
    "counted; swept in docs/SCENARIOS.md"
)
BENCH_RANDOM = (
    "sglang bench_serving random dataset: --random-range-ratio default 0.0 "
    "(python/sglang/benchmark/serving.py:2282), lengths randint(max(ratio*len,1), len) "
    "(python/sglang/benchmark/datasets/common.py:57-64) at c96e68b62b"
)
MAIN = " at sgl-project/sglang d55f1c28e2"
GC_ESTIMATE = "estimate read from the code" + MAIN + " (docs/SCENARIOS.md, GC model): "
ITER_DECODE = (
    GC_ESTIMATE + "per decode batch request, one list in the normalised token ids "
    "(`[[t] for t in ids]`, managers/scheduler_components/batch_result_processor.py:938) and two "
    "array slices per emitted request in the output stream (output_streamer.py, stream_interval "
    "1: every token), freed when the iteration's result is sent; swept"
)
ITER_PREFILL = (
    GC_ESTIMATE + "per prefill batch request, one array slice of its input "
    "(managers/schedule_batch.py prepare_for_extend, 2369); swept"
)
FIXED_DECODE = (
    GC_ESTIMATE + "per decode iteration: the ForwardBatch and its per-batch lists "
    "(model_executor/forward_batch_info.py:704), the tensors prepare_for_decode makes "
    "(schedule_batch.py:3038), the stream accumulator's 26 lists and the BatchTokenIDOutput "
    "(output_streamer.py:129): about 45; swept"
)
FIXED_PREFILL = (
    GC_ESTIMATE + "per prefill iteration: ~14 lists and ~7 tensors of prepare_for_extend "
    "(schedule_batch.py:2369) and ~17 objects of SamplingBatchInfo.from_schedule_batch "
    "(sampling/sampling_batch_info.py:87): about 38; swept"
)
PER_REQUEST_APPEND = (
    "0: a request without logprobs appends no tracked object per step (its output ids are an "
    "array('q')); with top logprobs _apply_decode_logprobs appends a list of values and one of "
    "ids per step (batch_result_processor.py:956" + MAIN + "): 2, swept"
)
SERVER_OBJECTS = (
    GC_ESTIMATE + "RadixCache.cache_finished_req (mem_cache/radix_cache.py:458) inserts the "
    "finished request's tokens: a node split and a new leaf, each a TreeNode with its children "
    "dict and key/value objects, about 5 of the 15-25 objects it allocates stay in the tree; "
    "swept"
)
SERVER_CAPACITY = (
    "assumption: the radix tree is bounded by the KV pool and evicts its oldest leaves; 100,000 "
    "nodes' objects (swept)"
)
SHAREGPT = "sgl-project/sglang#2805: 369,103 in / 326,408 out tokens over 1,648 ShareGPT requests"
SHAREGPT_PER_CHUNK = SHAREGPT + ": ~224 input tokens each, ~36 per 8,192-token chunk (inferred)"
ASSUMED = "assumption (no published number; swept in docs/SCENARIOS.md)"

# The common ground of the prefill presets, with sources.
_PREFILL: dict[str, tuple[Any, str]] = {
    "loop": ("prefill", "disaggregated prefill event loop, prefill.py:1018-1053"),
    "prompts": ("random-4k", "the issue's prefill-dspark preset; " + BENCH_RANDOM),
    "prompt_range_ratio": (0.0, BENCH_RANDOM),
    "outputs": (
        "random-1k",
        BENCH_RANDOM + " (--random-output 1024); prefill sets max_new_tokens=1",
    ),
    "cached_prefix_max_frac": (0.5, ASSUMED),
    "pd_fraction": (
        1.0,
        "DSpark PD uses hidden transfer for every request with hidden_len > 0 (decode.py:1068-1076"
        + AT
        + ")",
    ),
    "hidden_transfer": (True, "PD_HIDDEN in state_types on a DSpark server (prefill.py:2001)"),
    "streaming": (
        True,
        "decode aborts PD requests without streaming (decode.py:1211-1232" + AT + ")",
    ),
    "capture_layers": (
        3,
        "one target layer per draft layer unless the draft config lists them "
        "(python/sglang/srt/speculative/dflash_utils.py:407-430" + AT + "); 3 layers: assumption",
    ),
    "chunked_prefill_size": (8192, CHUNK_BY_GPU),
    "dp_size": (
        1,
        "one scheduler without DP attention, the whole chunk (with DP attention SGLang divides "
        f"the chunk by dp_size, {SERVER_ARGS}:5643{AT}: see prefill-dspark-dp8)",
    ),
    "pool_rows": (16384, POOL_DEFAULT),
    "decode_pool_rows": (
        16384,
        POOL_DEFAULT + "; the decode side reads SGLANG_PD_HIDDEN_RECV_POOL_TOKENS first "
        "(dspark_disaggregation.py:111-114); window min(hidden_len, pool) decode.py:1232",
    ),
    "kv_capacity_tokens": (
        500_000,
        "assumption: prefill KV tokens of a DeepSeek-class model on 8 GPUs (low end); swept in "
        "docs/SCENARIOS.md",
    ),
    "arrival": (
        "fill",
        "saturated, an assumption: a loaded server queues enough tokens to fill every chunk "
        "(the caps still bind: see the tokens prefilled per iteration)",
    ),
    "bootstrap_wait": (0, HEALTHY_LOGS),
    "inflight_residence": (1, TRANSFER),
    "ack_delay": (1, "assumption: at most one decode-iteration ACK round trip"),
    "decode_batch": (256, CUDA_GRAPH_BS),
    "accepted_tokens_per_verify": (
        1,
        "assumption: one token per request per forward (a lower bound on churn: DSpark accepts "
        "several per verify); swept in docs/SCENARIOS.md",
    ),
    "max_running_requests": (4096, MAX_RUNNING),
    "scans_per_forward": (
        1,
        "ForwardBatch.init_new once per forward (forward_batch_info.py:660, tp_worker.py:544)",
    ),
    "capture": ("get", "the code: get-or-create scan (hidden_state.py:35-41)"),
    "forward_ms": (1200.0, PREFILL_FORWARD),
    "keep_finished": (0, NON_OVERLAP_LOOP),
    "batch_objects_per_request": (2, GC_SURVIVORS),
    "iteration_objects_per_request": (1, ITER_PREFILL),
    "iteration_objects_fixed": (38, FIXED_PREFILL),
    "request_objects_per_iteration": (0, PER_REQUEST_APPEND),
    "server_objects_per_request": (5, SERVER_OBJECTS),
    "server_objects_capacity": (100_000, SERVER_CAPACITY),
    "branch_share": (
        1.0,
        "assumption: every branch the access reader cannot resolve is taken (an upper bound on a "
        "group's accesses per iteration); swept with --sweep branch_share=0,0.5,1",
    ),
}


def _preset(
    name: str, description: str, base: dict[str, tuple[Any, str]], **changes: tuple[Any, str]
) -> Scenario:
    table = {**base, **changes}
    missing = set(PARAMS) - set(table)
    if missing:
        raise AssertionError(f"preset {name} lacks {sorted(missing)}")
    values = {k: v for k, (v, _src) in table.items()}
    sources = {k: src for k, (_v, src) in table.items()}
    scenario = Scenario(name=name, description=description, sources=sources, **values)
    for key, value in values.items():
        if not (key == "arrival" and value == "fill"):
            PARAMS[key].check(key, value)
    scenario.check_runnable()
    return scenario


_DECODE = {
    **_PREFILL,
    "loop": (
        "decode",
        "decode node: ForwardBatch.init_new on every forward (tp_worker.py:544; DSpark verify dflash_info.py:72)",
    ),
    "arrival": ("fill", "decode-bound: every finished request is replaced, the batch stays at B"),
    "forward_ms": (90.0, DECODE_FORWARD),
    "iteration_objects_per_request": (3, ITER_DECODE),
    "iteration_objects_fixed": (45, FIXED_DECODE),
}

PRESETS: dict[str, Scenario] = {
    p.name: p
    for p in (
        _preset(
            "prefill-dspark",
            "DSpark PD prefill node: every request streams hidden rows (the PR's own deployment)",
            _PREFILL,
        ),
        _preset(
            "prefill-dspark-dp8",
            "prefill-dspark on one of 8 DP-attention ranks: a 1,024-token chunk per scheduler, "
            "the regime of the healthy per-rank logs in #11648",
            _PREFILL,
            dp_size=(
                8,
                f"{HEALTHY_LOGS}; their lines are per DP rank, and SGLang divides "
                f"chunked_prefill_size by dp_size ({SERVER_ARGS}:5643{AT}): 8,192 // 8 = 1,024",
            ),
            forward_ms=(
                150.0,
                PREFILL_FORWARD + "; a 1,024-token chunk per GPU at the same throughput: "
                "~0.15 s (inferred)",
            ),
        ),
        _preset(
            "prefill-sharegpt",
            "prefill-dspark with ShareGPT-like prompts: ~36 requests per 8k chunk",
            _PREFILL,
            prompts=("sharegpt", SHAREGPT_PER_CHUNK),
            outputs=("sharegpt", SHAREGPT),
        ),
        _preset(
            "prefill-no-dspark",
            "PD prefill without DSpark on the same binary: no hidden transfer, the PR's scan, poll and clears still run",
            _PREFILL,
            pd_fraction=(
                0.0,
                "servers without DSpark on the same binary transfer no hidden rows "
                "(decode.py:1068-1076" + AT + ")",
            ),
            hidden_transfer=(False, "no PD_HIDDEN state type without DSpark"),
        ),
        _preset(
            "decode-dspark",
            "DSpark PD decode node: the capture-layer scan over all B requests on every forward",
            _DECODE,
        ),
        _preset(
            "colocated",
            "one server doing both: decode batch with a prefill chunk mixed in, no PD transfer",
            _DECODE,
            loop=(
                "colocated",
                "mixed chunked prefill + decode in one forward (ForwardBatch.init_new per forward)",
            ),
            prompts=("sharegpt", SHAREGPT),
            outputs=("sharegpt", SHAREGPT),
            pd_fraction=(0.0, "colocated: no disaggregation, no hidden transfer"),
            hidden_transfer=(False, "colocated: no PD_HIDDEN state type"),
            forward_ms=(
                16.0,
                "NVIDIA NIM for LLMs benchmark page: Llama-3.1-8B decode at ~256 concurrent on "
                "H100, inter-token latency ~16 ms (low end: the largest share)",
            ),
        ),
        _preset(
            "stress-transfer-stall",
            "pathological transfer engine (2-11 MB/s): ~150 inflight and ~340 bootstrapping per rank",
            _PREFILL,
            pd_fraction=(0.0, "sgl-project/sglang#5450 is plain PD (mooncake), no DSpark"),
            hidden_transfer=(False, "no PD_HIDDEN state type in #5450"),
            prompts=("random-4k", "#5450: isl=4k"),
            prompt_range_ratio=(1.0, "#5450: isl=4k fixed"),
            inflight_residence=(
                75,
                "#5450: ~150 inflight per rank / ~2 requests per 8k chunk (inferred)",
            ),
            bootstrap_wait=(
                170,
                "#5450: ~340 bootstrapping per rank / ~2 requests per iteration (inferred)",
            ),
            kv_capacity_tokens=(
                1_000_000,
                "assumption, the high end: 150 inflight x 4k tokens must fit",
            ),
        ),
        _preset(
            "stress-decode-max",
            "decode at max_running_requests without CUDA graphs: B = 4,096",
            _DECODE,
            decode_batch=(
                4096,
                "up to max_running_requests without CUDA graphs: " + MAX_RUNNING,
            ),
            forward_ms=(
                90.0,
                ASSUMED
                + ": decode-dspark's 90 ms; a real 4,096 batch is slower, so the share shown is an upper bound",
            ),
        ),
    )
}

# Parameters added after runs were recorded without them: the value such a run measured.
ABSENT_MEANS: dict[str, Any] = {
    "dp_size": 1,
    "accepted_tokens_per_verify": 1,
    "branch_share": 1.0,
    # the gc allocation model did not exist: nothing allocated beyond the batch objects
    "iteration_objects_per_request": 0,
    "iteration_objects_fixed": 0,
    "request_objects_per_iteration": 0,
    "server_objects_per_request": 0,
    "server_objects_capacity": 0,
}

DEFAULT_SET = ("prefill-dspark", "prefill-sharegpt", "prefill-no-dspark", "decode-dspark")


def get(name: str) -> Scenario:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; choose from {', '.join(PRESETS)}") from None


def parse_assignment(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key or not value.strip():
        raise ValueError(f"{text!r}: expected key=value")
    if key not in PARAMS:
        raise ValueError(f"unknown scenario parameter {key!r}; known: {', '.join(PARAMS)}")
    return key, value.strip()


def parse_set(items: list[str]) -> dict[str, Any]:
    """--set key=value (repeatable) -> {key: typed value}."""
    out: dict[str, Any] = {}
    for item in items:
        key, text = parse_assignment(item)
        out[key] = PARAMS[key].parse(key, text)
    return out


def parse_sweep(text: str) -> tuple[str, tuple[Any, ...]]:
    """--sweep key=v1,v2,... -> (key, typed values); at least two distinct values."""
    key, raw = parse_assignment(text)
    values = tuple(PARAMS[key].parse(key, v.strip()) for v in raw.split(",") if v.strip())
    if len(set(values)) < 2:
        raise ValueError(f"--sweep {key}: give at least two distinct values (key=v1,v2,...)")
    return key, values


def resolve(
    names: tuple[str, ...], overrides: Mapping[str, Any], sweep: tuple[str, tuple[Any, ...]] | None
) -> list[tuple[Scenario, dict[str, str]]]:
    """Every scheduler case of a run: (scenario, extra name parameters). With a sweep, one case
    per scenario and swept value, named by it; the overrides apply to every scenario."""
    cases: list[tuple[Scenario, dict[str, str]]] = []
    for name in names:
        base = get(name).with_changes(overrides) if overrides else get(name)
        if sweep is None:
            cases.append((base, {}))
            continue
        key, values = sweep
        for value in values:
            cases.append((base.with_changes({key: value}), {key: format_value(value)}))
    return cases


def format_value(value: Any) -> str:
    """A parameter value as benchmark names and tables show it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
