"""Request classes shaped like SGLang's `Req` (the arrival stream is bench/core/arrivals.py).

SGLang's Req is a plain class (no __slots__, no __eq__/__hash__, hashed by identity) whose
__init__ takes ~40 keyword parameters and sets ~140-160 instance attributes. The class here is
generated from a request model (bench/core/reqmodel.py: a table read from the real
schedule_batch.py, shipped in bench/data/request_models/), attribute by attribute with values of
the real kinds and the same keyword parameters, so instance dict size, GC-tracked values and
construction cost follow the real class. The `synthetic` model is the earlier generated table
of realistic names (kept for comparison). A strategy shapes the class with REQUEST_INIT_FIELDS
(set in __init__) and REQUEST_CLASS_FIELDS (class-level declarations).

Every class is built as cls(rid, input_ids, max_new_tokens); input ids should be an array('q')
of the prompt's length, as in the real request.
"""

from __future__ import annotations

import copy
import linecache
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench.core import holders, reqmodel
from bench.core.reqmodel import DEFAULT_MODEL, SYNTHETIC, RequestModel
from bench.core.sglang_req import make_sglang_request_class, sglang_version
from strategies import Strategy
from strategies._contract import FIELD_DEFAULTS

# Attributes the `synthetic` request model carries: Req.__init__ sets 140 at bytedance-iaas/sglang
# c96e68b62b (schedule_batch.py; `python -m bench import-req` counts them).
DEFAULT_REQUEST_ATTRS = 140


class SmallObject:
    """Stand-in for the small objects a Req holds (its ReqLogprob, its time stats, ...): a plain
    GC-tracked object with an attribute dict."""

    def __init__(self) -> None:
        self.a = None
        self.b = None
        self.c = 0
        self.d = 0


class TensorStandIn:
    """Where the real class holds a torch tensor, when torch is not to be imported (the
    instruction-count gate runs without it): one GC-tracked object."""

    def __init__(self) -> None:
        self.data = None


def _tensor_standin() -> object:
    return TensorStandIn()


# What builds a request's tensor attributes; the measuring processes switch it to torch.
_TENSOR_FACTORY: list[Any] = [_tensor_standin]


def use_torch_tensors() -> None:
    """Requests built from now on hold real torch tensors where the real class does (called by
    the worker, which imports torch anyway; the core stays torch-free)."""
    import torch

    def empty_int64() -> object:
        return torch.empty((0,), dtype=torch.int64)

    _TENSOR_FACTORY[0] = empty_int64


def _make_tensor() -> object:
    return _TENSOR_FACTORY[0]()


class SamplingParams:
    """Stand-in for the small per-request objects a Req holds (sampling params, grammar, ...)."""

    def __init__(self, max_new_tokens: int) -> None:
        self.max_new_tokens = max_new_tokens
        self.temperature = 1.0
        self.top_p = 1.0
        self.top_k = -1
        self.stop_strs: list[str] = []


# (attribute name, Python expression) in the order SGLang's Req.__init__ roughly sets them.
# Expressions may use: rid, input_ids, prompt_len, max_new_tokens, SamplingParams.
_ATTRS: tuple[tuple[str, str], ...] = (
    ("rid", "rid"),
    ("origin_input_text", "''"),
    ("origin_input_ids_unpadded", "input_ids"),
    ("origin_input_ids", "input_ids"),
    ("output_ids", "array('q')"),  # schedule_batch.py:774 at c96e68b62b: array('q')
    ("fill_ids", "[]"),
    ("session_id", "None"),
    ("input_embeds", "None"),
    ("token_type_ids", "None"),
    ("sampling_params", "SamplingParams(max_new_tokens)"),
    ("custom_logit_processor", "None"),
    ("return_hidden_states", "False"),
    ("lora_id", "None"),
    ("lora_path", "None"),
    ("stream", "False"),
    ("eos_token_ids", "None"),
    ("bootstrap_host", "'127.0.0.1'"),
    ("bootstrap_port", "8998"),
    ("bootstrap_room", "hash(rid) & 0xFFFFFFFF"),
    ("disagg_kv_sender", "None"),
    ("data_parallel_rank", "0"),
    ("metadata_buffer_index", "-1"),
    ("priority", "None"),
    ("queue_time_start", "0.0"),
    ("queue_time_end", "0.0"),
    ("created_time", "0.0"),
    ("last_tic", "0.0"),
    ("finished_reason", "None"),
    ("finished_len", "None"),
    ("finished_output", "None"),
    ("to_abort", "False"),
    ("to_abort_message", "None"),
    ("is_retracted", "False"),
    ("retraction_count", "0"),
    ("retracted_stain", "False"),
    ("decoded_text", "''"),
    ("surr_offset", "None"),
    ("read_offset", "None"),
    ("surr_and_decode_ids", "None"),
    ("vid", "0"),
    ("image_inputs", "None"),
    ("multimodal_inputs", "None"),
    ("prefix_indices", "[]"),
    ("extend_input_len", "0"),
    ("extend_logprob_start_len", "0"),
    ("last_node", "None"),
    ("last_host_node", "None"),
    ("host_hit_length", "0"),
    ("last_matched_prefix_len", "0"),
    ("cached_tokens", "0"),
    ("already_computed", "0"),
    ("is_chunked", "0"),
    ("req_pool_idx", "None"),
    ("kv_committed_len", "0"),
    ("kv_allocated_len", "0"),
    ("kv_committed_freed", "False"),
    ("kv_overallocated_freed", "False"),
    ("swa_uuid_for_lock", "None"),
    ("swa_evicted_seqlen", "0"),
    ("mamba_pool_idx", "None"),
    ("mamba_ping_pong_track_buffer", "None"),
    ("mamba_next_track_idx", "None"),
    ("mamba_last_track_seqlen", "None"),
    ("mamba_branching_seqlen", "None"),
    ("return_logprob", "False"),
    ("logprob_start_len", "-1"),
    ("top_logprobs_num", "0"),
    ("token_ids_logprob", "None"),
    ("input_token_logprobs_val", "None"),
    ("input_token_logprobs_idx", "None"),
    ("input_top_logprobs_val", "None"),
    ("input_top_logprobs_idx", "None"),
    ("input_token_ids_logprobs_val", "None"),
    ("input_token_ids_logprobs_idx", "None"),
    ("output_token_logprobs_val", "[]"),
    ("output_token_logprobs_idx", "[]"),
    ("output_top_logprobs_val", "[]"),
    ("output_top_logprobs_idx", "[]"),
    ("output_token_ids_logprobs_val", "[]"),
    ("output_token_ids_logprobs_idx", "[]"),
    ("temp_input_top_logprobs_val", "None"),
    ("temp_input_top_logprobs_idx", "None"),
    ("temp_input_token_ids_logprobs_val", "None"),
    ("temp_input_token_ids_logprobs_idx", "None"),
    ("temp_scaled_logprobs", "False"),
    ("temperature", "None"),
    ("top_p_normalize_probs", "False"),
    ("hidden_states", "[]"),
    ("hidden_states_tensor", "None"),
    ("output_topk_p", "None"),
    ("output_topk_index", "None"),
    ("embedding", "None"),
    ("grammar", "None"),
    ("grammar_key", "None"),
    ("grammar_wait_ct", "0"),
    ("spec_verify_ct", "0"),
    ("spec_accepted_tokens", "0"),
    ("spec_acceptance_histogram", "[]"),
    ("lora_prefetch", "False"),
    ("time_stats", "{}"),
    ("has_log_time_stats", "False"),
    ("last_update_decode_tokens", "0"),
    ("queue_wait_ms", "0.0"),
    ("prefill_start_ms", "0.0"),
    ("prefill_end_ms", "0.0"),
    ("first_token_time", "0.0"),
    ("decode_batch_idx", "0"),
    ("routed_experts", "None"),
    ("customized_info", "None"),
    ("return_routed_experts", "False"),
    ("require_reasoning", "False"),
    ("think_end_id", "None"),
    ("reasoning_tokens", "0"),
    ("dimensions", "None"),
    ("http_worker_ipc", "None"),
    ("received_time", "0.0"),
    ("received_time_perf", "0.0"),
    ("origin_input_len", "prompt_len"),
    ("max_new_tokens", "max_new_tokens"),
    ("ignore_eos", "False"),
    ("no_stop_trim", "False"),
    ("stop_token_ids", "None"),
    ("tokenizer", "None"),
    ("prefix_hash", "None"),
    ("num_computed_tokens", "0"),
    ("disagg_prefill_dp_rank", "None"),
    ("start_send_idx", "0"),
    ("tmp_end_idx", "-1"),
    ("bootstrap_done", "False"),
    ("transfer_start_time", "0.0"),
    ("transfer_done_time", "0.0"),
    ("dspark_plan", "None"),
    ("dspark_enabled", "False"),
    ("hicache_status", "None"),
    ("storage_hit_length", "0"),
    ("prefetch_status", "None"),
    ("ready_to_fill_cache", "False"),
    ("is_prefill_only", "False"),
    ("return_text_in_logprobs", "False"),
    ("log_metrics", "True"),
    ("trace_ctx", "None"),
    ("extra_key", "None"),
    ("priority_time", "0.0"),
    ("input_len_bucket", "prompt_len // 1024"),
)

_EXTRA_EXPRS = ("None", "0", "0.0", "False", "[]", "''")


def _attr_table(n_attrs: int) -> list[tuple[str, str]]:
    if n_attrs < 1:
        raise ValueError(f"a request needs at least 1 attribute, got {n_attrs}")
    table = list(_ATTRS[:n_attrs])
    for i in range(len(table), n_attrs):
        table.append((f"extra_attr_{i}", _EXTRA_EXPRS[i % len(_EXTRA_EXPRS)]))
    return table


def _synthetic_lines(n_attrs: int) -> tuple[list[str], str]:
    lines = [
        "def __init__(self, rid, input_ids, max_new_tokens):",
        "    prompt_len = len(input_ids)",
    ]
    lines += [f"    self.{name} = {expr}" for name, expr in _attr_table(n_attrs)]
    return lines, f"synthetic {n_attrs} attributes"


_KIND_EXPR = {
    "rid": "rid",
    "ids": "input_ids",
    "text": "''",
    "sampling": "SamplingParams(max_new_tokens)",
    "none": "None",
    "list": "[]",
    "dict": "{}",
    "set": "set()",
    "tuple": "(0,)",
    "array": "array('q')",
    "tensor": "_make_tensor()",
    "object": "SmallObject()",
}
_SCALAR_DEFAULT = {"int": "0", "float": "0.0", "bool": "False", "str": "''"}


def _model_lines(model: RequestModel) -> tuple[list[str], str, dict[str, Any]]:
    """__init__ with the real keyword parameters (defaults bound on every call, as in the real
    constructor) and one assignment per attribute, in the real order; nested objects built as
    the real class builds them where bench.core.holders knows their shape. Also the names the
    code needs."""
    params = [p for p in model.params if p.name not in ("rid", "input_ids", "max_new_tokens")]
    signature = ", ".join(f"{p.name}={p.default!r}" for p in params)
    head = "def __init__(self, rid, input_ids, max_new_tokens" + (
        f", *, {signature}" if signature else ""
    )
    lines = [head + "):"]
    known = holders.holders_of(model)
    namespace: dict[str, Any] = {}
    for i, a in enumerate(model.attrs):
        call = "SamplingParams" if a.kind == "sampling" else holders.call_name(a.source)
        holder = known.get(call) if a.kind in ("object", "sampling") else None
        if holder is not None:
            namespace[f"_holder_{i}"] = holders.stand_in(model.name, call, holder)
            expr = f"_holder_{i}(max_new_tokens=max_new_tokens)"
        elif a.kind in _SCALAR_DEFAULT:
            expr = repr(a.value) if a.value is not None else _SCALAR_DEFAULT[a.kind]
        else:
            expr = _KIND_EXPR.get(a.kind, "None")
        lines.append(f"    self.{a.name} = {expr}")
    return lines, model.name, namespace


def request_attr_names(
    model: str = DEFAULT_MODEL, n_attrs: int = DEFAULT_REQUEST_ATTRS
) -> set[str]:
    loaded = reqmodel.load(model)
    if loaded is None:
        return {name for name, _ in _attr_table(n_attrs)}
    return {a.name for a in loaded.attrs}


def make_request_class(
    strategy: Strategy | None = None,
    *,
    model: str = DEFAULT_MODEL,
    n_attrs: int = DEFAULT_REQUEST_ATTRS,
) -> type:
    """A request class from a request model (n_attrs sizes the `synthetic` model only), shaped
    by the strategy. Construct instances with cls(rid, input_ids, max_new_tokens). The strategy's
    REQUEST_INIT_FIELDS are set after the model's attributes."""
    init_fields: Mapping[str, object] = strategy.request_init_fields if strategy else {}
    class_fields: Mapping[str, object] = strategy.request_class_fields if strategy else {}
    loaded = reqmodel.load(model)
    if loaded is None:
        lines, label = _synthetic_lines(n_attrs)
        holder_names: dict[str, Any] = {}
    else:
        lines, label, holder_names = _model_lines(loaded)
    base_names = request_attr_names(model, n_attrs)
    clash = base_names & (set(init_fields) | set(class_fields))
    if clash:
        raise ValueError(f"strategy fields clash with request attributes: {sorted(clash)}")
    namespace: dict[str, Any] = {
        "SamplingParams": SamplingParams,
        "SmallObject": SmallObject,
        "array": array,
        "_make_tensor": _make_tensor,
        **holder_names,
    }
    for i, (name, value) in enumerate(init_fields.items()):
        if value is None or isinstance(value, (bool, int, float, str)):
            lines.append(f"    self.{name} = {value!r}")
        else:  # a mutable default must not be shared: copy per instance
            namespace[f"_default_{i}"] = value
            lines.append(f"    self.{name} = _copy(_default_{i})")
    suffix = strategy.name if strategy else "plain"
    filename = f"<Req {label}:{suffix}>"
    source = "\n".join(lines) + "\n"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace["_copy"] = copy.copy
    exec(compile(source, filename, "exec"), namespace)
    cls_dict: dict[str, Any] = {
        "__init__": namespace["__init__"],
        "__module__": __name__,
        "__doc__": f"SGLang-like Req ({label}, strategy {suffix}).",
    }
    cls_dict.update(class_fields)
    return type(f"Req_{suffix}", (), cls_dict)


@dataclass(frozen=True)
class RequestSource:
    """Which request class a run builds: a request model's generated class, or (real=True) the
    installed sglang's own Req, subclassed per strategy (bench/core/sglang_req.py)."""

    model: str = DEFAULT_MODEL
    real: bool = False

    def make(self, strategy: Strategy | None) -> type:
        if strategy is not None and strategy.request_model:
            # a revision of a user's tree: its own Req, whatever the run's default
            return make_request_class(strategy, model=strategy.request_model)
        if self.real:
            return make_sglang_request_class(strategy)
        return make_request_class(strategy, model=self.model)

    @property
    def label(self) -> str:
        """What the requests are built from: a request model's name, or the installed sglang's
        Req with its version."""
        if not self.real:
            return self.model

        return f"sglang {sglang_version() or '(version unknown)'} Req (installed)"


assert not set(FIELD_DEFAULTS) & {name for name, _ in _ATTRS}, "field names clash with Req"
__all__ = [
    "DEFAULT_MODEL",
    "SYNTHETIC",
    "RequestSource",
    "make_request_class",
    "use_torch_tensors",
]
