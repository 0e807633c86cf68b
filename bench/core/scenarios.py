"""Scenarios: what a scheduler loop faces, as named presets whose every number has a source.

A Scenario is the full parameter set of one synthetic scheduler (which loop, what arrives, how
long requests wait and reside, how large batches are, how long a forward takes). Queue lengths
are not parameters: they emerge from arrivals x residence times under the caps. Each preset
value carries its source (WORKLOAD.md section, SGLang file:line at a named commit, a published
log or issue), or says that it is an assumption; `python -m bench scenarios --markdown` writes
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
    "chunked_prefill_size": Param(int, "prefill tokens per batch", lo=16, hi=1 << 20),
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
    pool_rows: int
    decode_pool_rows: int
    kv_capacity_tokens: int
    arrival: str | float
    bootstrap_wait: int
    inflight_residence: int
    ack_delay: int
    decode_batch: int
    max_running_requests: int
    scans_per_forward: int
    capture: str
    forward_ms: float
    keep_finished: int
    batch_objects_per_request: int
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

    def check_runnable(self) -> None:
        """Refuse combinations that cannot run (ValueError, one line)."""
        if self.decode_batch > self.max_running_requests and self.loop != "prefill":
            raise ValueError(
                f"{self.name}: decode_batch {self.decode_batch} exceeds max_running_requests "
                f"{self.max_running_requests}; raise it with --set max_running_requests=N"
            )
        if self.pool_rows < self.chunked_prefill_size and self.streaming and self.pd_fraction:
            raise ValueError(
                f"{self.name}: pool_rows {self.pool_rows} is smaller than one chunk "
                f"({self.chunked_prefill_size}); every streamed chunk would abort"
            )
        if self.kv_capacity_tokens < self.chunked_prefill_size and self.loop == "prefill":
            raise ValueError(
                f"{self.name}: kv_capacity_tokens {self.kv_capacity_tokens} is below one chunk "
                f"({self.chunked_prefill_size}); no request could ever be prefilled"
            )

    @property
    def label(self) -> str:
        return self.name + (" (modified preset)" if self.modified else "")


# -- sources ------------------------------------------------------------------------------------

W_SCEN = "WORKLOAD.md 'Scenarios'"
W_SCALE = "WORKLOAD.md 'Scale'"
W_FWD = "WORKLOAD.md 'Forward times'"
W_POOL = "WORKLOAD.md 'The GPU row pool'"
W_WHY = "WORKLOAD.md 'Why the state exists'"
BENCH_RANDOM = (
    "sglang bench_serving random dataset: --random-range-ratio default 0.0 "
    "(python/sglang/benchmark/serving.py:2282), lengths randint(max(ratio*len,1), len) "
    "(python/sglang/benchmark/datasets/common.py:57-64) at c96e68b62b"
)
SHAREGPT = "sgl-project/sglang#2805: 369,103 in / 326,408 out tokens over 1,648 ShareGPT requests"
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
        W_SCEN
        + ": DSpark PD uses hidden transfer for every request with hidden_len > 0 (decode.py:1068-1076)",
    ),
    "hidden_transfer": (True, "PD_HIDDEN in state_types on a DSpark server (prefill.py:2001)"),
    "streaming": (
        True,
        W_SCEN + ": decode aborts PD requests without streaming (decode.py:1211-1232)",
    ),
    "capture_layers": (3, W_WHY + ": capture_layer_ids e.g. [40, 41, 42]"),
    "chunked_prefill_size": (8192, W_SCALE + ": 8k on H100/H200"),
    "pool_rows": (16384, W_POOL + ": max(chunked_prefill_size, 16384)"),
    "decode_pool_rows": (
        16384,
        W_POOL
        + " (decode side sized alike, assumption); window min(hidden_len, pool) decode.py:1232",
    ),
    "kv_capacity_tokens": (
        500_000,
        W_SCEN + ": ~0.5-1M tokens for a DeepSeek-class model on 8 GPUs (low end)",
    ),
    "arrival": (
        "fill",
        "saturated: just enough queued tokens to fill every chunk (healthy logs #11648: #queue-req 0-7)",
    ),
    "bootstrap_wait": (1, W_SCEN + ": healthy logs #11648 show #unbootstrapped-req 0"),
    "inflight_residence": (
        2,
        W_SCEN + ": 1-2 iterations (KV transfer ~60 ms after PR #7236, shorter than one forward)",
    ),
    "ack_delay": (1, W_SCEN + ": at most one decode-iteration ACK round trip"),
    "decode_batch": (256, W_SCALE + ": 256-512 per decode step (CUDA-graph max batch)"),
    "max_running_requests": (4096, W_SCALE + ": 2048-4096 per data-parallel worker"),
    "scans_per_forward": (
        1,
        "ForwardBatch.init_new once per forward (forward_batch_info.py:660, tp_worker.py:544)",
    ),
    "capture": ("get", "the code: get-or-create scan (hidden_state.py:35-41)"),
    "forward_ms": (
        1200.0,
        W_FWD + ": DeepSeek-V3 prefill, one 8,192-token chunk per GPU ~1.1-1.3 s",
    ),
    "keep_finished": (2, "WORKLOAD.md 'The request object': last batch + overlap result queue"),
    "batch_objects_per_request": (
        2,
        ASSUMED + ": a list and a tuple per batch request per iteration (batch building, "
        "streamed outputs); they survive with the batch, so young collections find survivors",
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
    "forward_ms": (
        90.0,
        W_FWD + ": DeepSeek-V3 decode, PD + large-scale EP, ~92 ms per step at 256 per GPU",
    ),
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
            "prefill-sharegpt",
            "prefill-dspark with ShareGPT-like prompts: ~36 requests per 8k chunk",
            _PREFILL,
            prompts=("sharegpt", SHAREGPT + "; " + W_SCALE + ": ~36 per 8k chunk"),
            outputs=("sharegpt", SHAREGPT),
        ),
        _preset(
            "prefill-no-dspark",
            "PD prefill without DSpark on the same binary: no hidden transfer, the PR's scan, poll and clears still run",
            _PREFILL,
            pd_fraction=(0.0, W_SCEN + ": everyone else on the binary uses none"),
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
                W_FWD
                + ": dense 8B decode at ~256 concurrent on H100, ITL ~16 ms (low end: the largest share)",
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
                W_SCEN + " (#5450: ~150 inflight per rank) / ~2 requests per 8k chunk",
            ),
            bootstrap_wait=(
                170,
                W_SCEN + " (#5450: ~340 bootstrapping per rank) / ~2 requests per iteration",
            ),
            kv_capacity_tokens=(
                1_000_000,
                W_SCEN + ": ~0.5-1M tokens (high end: 150 x 4k must fit)",
            ),
        ),
        _preset(
            "stress-decode-max",
            "decode at max_running_requests without CUDA graphs: B = 4,096",
            _DECODE,
            decode_batch=(
                4096,
                W_SCALE + ": up to max_running_requests (2048-4096) without graphs",
            ),
            forward_ms=(
                90.0,
                ASSUMED
                + ": decode-dspark's 90 ms; a real 4,096 batch is slower, so the share shown is an upper bound",
            ),
        ),
    )
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
