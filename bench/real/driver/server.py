"""Building the revision's Scheduler as its server does: the revision's own ServerArgs, PortArgs
and run_scheduler_process (plugins, the runtime context, process set-up, then Scheduler(...)),
with a model config written here and the tokenizer skipped.

Arguments are bound by name against the revision's own signatures, so one driver serves
revisions whose signatures moved (run_scheduler_process took nine rank arguments in mid-2026,
a SpawnRanks object later); an argument a revision does not have is left out and recorded.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import sys
from pathlib import Path
from typing import Any

from bench.real.driver import tokenizer

# The stand-in model: a Llama config small enough that its real KV pools (tiny head dims, the
# preset's token counts) fit this machine's memory; nothing is ever computed with it.
MODEL_CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "num_key_value_heads": 1,
    "head_dim": 8,
    "vocab_size": 32000,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "torch_dtype": "bfloat16",
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
    "tie_word_embeddings": False,
}


def write_model(folder: Path, context_len: int, tokenizer_dir: Path | None = None) -> Path:
    """config.json of the stand-in model (no weights: load_format is dummy) and, beside it, the
    stand-in tokenizer (bench.real.driver.tokenizer), which the scheduler loads from there."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {**MODEL_CONFIG, "max_position_embeddings": context_len}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if tokenizer_dir is not None:
        tokenizer.install(folder, tokenizer_dir)
    return folder


# The stand-in's draft model under EAGLE: the target's config with one layer, as an EAGLE head
# is (its class LlamaForCausalLMEagle: python/sglang/srt/models/llama_eagle.py at sgl-project/
# sglang d55f1c28e2); nothing is computed with it, its ModelRunner's forward being the stand-in's.
DRAFT_CONFIG: dict[str, Any] = {
    **MODEL_CONFIG,
    "architectures": ["LlamaForCausalLMEagle"],
    "num_hidden_layers": 1,
}


def write_draft(folder: Path, context_len: int, arch: str = "") -> Path:
    """config.json of the stand-in's draft model (no weights: load_format is dummy): an EAGLE
    head, or `arch` (a STANDALONE draft is a model of the target's own architecture)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {**DRAFT_CONFIG, "max_position_embeddings": context_len}
    if arch:
        config["architectures"] = [arch]
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


# The stand-in's DSpark draft: a one-layer DSpark head of the target's width (it shares the
# target's embedding and LM head: python/sglang/srt/speculative/dspark_components/
# dspark_worker_v2.py:189-206 at sgl-project/sglang d55f1c28e2), shaped as SGLang's own dummy
# DSpark draft (test/registered/dcp/test_kimi_linear_dcp_dspark4.py:43-80 there: a Qwen3-style
# DSpark model, a vanilla Markov head, mask_token_id, block_size, target_layer_ids); the keys
# are read by parse_dspark_draft_config and parse_dflash_draft_config
# (dspark_config.py:179-295, python/sglang/srt/speculative/dflash_utils.py:536-621 there).
# It reads the target's hidden states at both of its layers, DSPARK_TARGET_LAYERS wide.
DSPARK_TARGET_LAYERS = [0, 1]
DSPARK_DRAFT_CONFIG: dict[str, Any] = {
    **MODEL_CONFIG,
    "architectures": ["Qwen3DSparkModel"],
    "model_type": "qwen3",
    "num_hidden_layers": 1,
    "hidden_act": "silu",
    "attention_bias": False,
    "mask_token_id": MODEL_CONFIG["vocab_size"] - 1,
    "markov_rank": 8,
    "markov_head_type": "vanilla",
    "num_target_layers": MODEL_CONFIG["num_hidden_layers"],
    "target_layer_ids": DSPARK_TARGET_LAYERS,
    "layer_types": ["full_attention"],
}


def write_dspark_draft(folder: Path, context_len: int, block_size: int) -> Path:
    """config.json of the stand-in's DSpark draft, proposing `block_size` tokens (gamma) a step,
    which the revision reads as the checkpoint's (dspark_config.py:138-150 at d55f1c28e2)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        **DSPARK_DRAFT_CONFIG,
        "max_position_embeddings": context_len,
        "block_size": int(block_size),
    }
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


# What every real-mode scheduler is built with, whatever the preset (the preset adds its sizes).
BASE_ARGS: dict[str, Any] = {
    "device": "cpu",
    "attention_backend": "torch_native",  # allocation without triton kernels on the CPU
    "sampling_backend": "pytorch",
    "load_format": "dummy",
    "disable_cuda_graph": True,
    "log_level": "error",
    # the KV configurator reads this machine's memory as the GPU's; with its default it can
    # compute a negative fraction (d55f1c28e2); max_total_tokens sets the pool size
    "mem_fraction_static": 0.8,
}


def server_args(values: dict[str, Any]) -> tuple[Any, dict[str, Any], list[str]]:
    """The revision's ServerArgs from `values`; (args, what was passed, names it lacks)."""
    from sglang.srt.server_args import ServerArgs

    known = set(inspect.signature(ServerArgs).parameters)
    passed = {k: v for k, v in values.items() if k in known}
    missing = sorted(k for k in values if k not in known)
    return ServerArgs(**passed), passed, missing


class Claims:
    """What the driver has the revision believe while its server is configured and its
    scheduler built (from `claim()` to `release()`, at the start of the event loop: no measured
    iteration sees either), where its CPU guards refuse what the stand-in can run:

    - `amx`: its CPU has AMX, so attention_backend=intel_amx stays, which its checks turn into
      torch_native on a CPU without AMX (python/sglang/srt/arg_groups/overrides.py:2319-2328 at
      sgl-project/sglang d55f1c28e2, :1300-1310 in sglang 0.5.23, server_args.py:2645-2651 at
      d7c93e183b): the revision's EAGLE draft runs on the CPU under that backend only. Through
      the revision's own scoped override of its machine facts where it has one
      (override_platform in python/sglang/srt/runtime_context.py, sglang 0.5.23), else through
      cpu_has_amx_support in its argument resolvers. The model's layers decide at import,
      before the claim, and pack no weights for AMX; its attention kernels never run.
    - `spec_overlap`: speculative decoding may run the overlap loop (spec v2, production's
      default), which the revision turns off on the CPU ("Overlap schedule is not implemented
      for speculative decoding on CPU": _disable_overlap_schedule_for_cpu in
      python/sglang/srt/arg_groups/speculative_hook.py:14-21 at d55f1c28e2, :66-78 in 0.5.23):
      that hook does nothing meanwhile. The loop's CPU streams are torch.cpu.Stream no-ops, as
      in the overlap loop without a draft.
    - `dspark`: DSpark's server-argument hook sees a CUDA device ("DSpark speculative decoding
      only supports CUDA or NPU device": _handle_dspark in python/sglang/srt/arg_groups/
      speculative_hook.py:278-283 at d55f1c28e2; its only use of the device), and its draft
      worker keeps the CPU attention backend the preset names
      (speculative_draft_attention_backend), which _resolve_draft_attention_backend_fallback
      (python/sglang/srt/speculative/draft_worker_common.py:43-62 there) turns into flashinfer,
      a GPU library: the draft's attention never runs (its forward is the stand-in's).
    """

    NAME = "cpu_has_amx_support"
    # where revisions resolve their arguments: a model's modules keep the machine's answer
    RESOLVERS = ("sglang.srt.server_args", "sglang.srt.arg_groups")
    HOOK = ("sglang.srt.arg_groups.speculative_hook", "_disable_overlap_schedule_for_cpu")
    DSPARK_HOOK = ("sglang.srt.arg_groups.speculative_hook", "_handle_dspark")
    DRAFT_BACKEND = (
        "sglang.srt.speculative.draft_worker_common",
        "_resolve_draft_attention_backend_fallback",
    )

    def __init__(self) -> None:
        self._scope: Any = None
        self._original: Any = None
        self._hook: Any = None
        self._replaced: list[tuple[Any, str, Any]] = []
        self.active = False

    @staticmethod
    def _claim() -> bool:
        return True

    @staticmethod
    def _keep_overlap(*_args: Any, **_kwargs: Any) -> None:
        return None

    def _holders(self) -> list[Any]:
        mods = [m for k, m in list(sys.modules.items()) if k.startswith(self.RESOLVERS) and m]
        return [m for m in mods if callable(vars(m).get(self.NAME))]

    def claim(self, amx: bool, spec_overlap: bool, dspark: bool = False) -> list[str]:
        """Take the claims asked for; what was claimed, for the run's list of replacements."""
        out: list[str] = []
        if amx:
            self._claim_amx()
            out.append(
                "the revision's AMX check answers yes while its server is configured "
                "and its scheduler built (attention_backend=intel_amx kept for the "
                "EAGLE draft; its kernels never run)"
            )
        if spec_overlap:
            module = importlib.import_module(self.HOOK[0]) if _has(self.HOOK[0]) else None
            if module is not None and callable(getattr(module, self.HOOK[1], None)):
                self._hook = (module, getattr(module, self.HOOK[1]))
                setattr(module, self.HOOK[1], self._keep_overlap)
                out.append(
                    "speculative decoding keeps the overlap loop on the CPU "
                    "(_disable_overlap_schedule_for_cpu does nothing while the scheduler "
                    "is built)"
                )
        if dspark:
            out += self._claim_dspark()
        self.active = True
        return out

    def _replace(self, where: tuple[str, str], make: Any) -> bool:
        """Replace a revision function (module, name) by make(original); whether it exists."""
        module = importlib.import_module(where[0]) if _has(where[0]) else None
        original = getattr(module, where[1], None) if module is not None else None
        if original is None or not callable(original):
            return False
        self._replaced.append((module, where[1], original))
        setattr(module, where[1], make(original))
        return True

    def _claim_dspark(self) -> list[str]:
        def on_cuda(original: Any) -> Any:
            def handle(server_args: Any) -> Any:
                device = server_args.device
                server_args.device = "cuda"
                try:
                    return original(server_args)
                finally:
                    server_args.device = device

            return handle

        def keep_cpu_backend(original: Any) -> Any:
            # its server arguments by keyword: server_args (d55f1c28e2), draft_server_args (a
            # copy, bytedance-iaas/sglang 32990a0560)
            def resolve(**kwargs: Any) -> Any:
                for value in kwargs.values():
                    chosen = getattr(value, "speculative_draft_attention_backend", None)
                    if chosen in CPU_ATTENTION_BACKENDS:
                        return chosen
                return original(**kwargs)

            return resolve

        out = []
        if self._replace(self.DSPARK_HOOK, on_cuda):
            out.append(
                "DSpark's server-argument hook sees a CUDA device while the server is "
                "configured (its device check is the only use it makes of the device)"
            )
        if self._replace(self.DRAFT_BACKEND, keep_cpu_backend):
            out.append(
                "the DSpark draft keeps the CPU attention backend the preset names while its "
                "worker is built (the revision's fallback would pick flashinfer; the draft's "
                "attention never runs)"
            )
        return out

    def _claim_amx(self) -> None:
        context = sys.modules.get("sglang.srt.runtime_context")
        scoped = getattr(context, "override_platform", None)
        if scoped is not None:
            self._scope = scoped(has_amx=True)
            self._scope.__enter__()
            return
        holders = self._holders()
        if holders:
            self._original = vars(holders[0])[self.NAME]
            for module in holders:
                setattr(module, self.NAME, self._claim)

    def release(self) -> None:
        if not self.active:
            return
        self.active = False
        if self._scope is not None:
            self._scope.__exit__(None, None, None)
        elif self._original is not None:
            for module in self._holders():
                if vars(module)[self.NAME] is self._claim:
                    setattr(module, self.NAME, self._original)
        if self._hook is not None:
            module, original = self._hook
            setattr(module, self.HOOK[1], original)
        while self._replaced:
            module, name, original = self._replaced.pop()
            setattr(module, name, original)


# The attention backends SGLang builds on the CPU (a DSpark draft's claim keeps one of them).
CPU_ATTENTION_BACKENDS = ("torch_native", "intel_amx")


# A revision from before SGLang's CPU speculative path (sgl-project/sglang#27862) builds an
# EAGLE draft's attention backends from a map without intel_amx or torch_native
# (DraftBackendFactory.create_decode_backend / create_draft_extend_backend:
# python/sglang/srt/speculative/draft_utils.py:39-94 at sgl-project/sglang d7c93e183b and at its
# parent): "EAGLE is not supported in decode attention backend intel_amx". Of the backends it
# maps, only triton is built from torch and Triton alone (the others need flashinfer, fa3, aiter
# or NPU libraries); its kernels never run (the stand-in's forward replaces the model), and its
# forward-metadata kernels (kv indices) run as torch versions (bench.real.driver.triton_kernels).
DRAFT_FACTORY = ("sglang.srt.speculative.draft_utils", "DraftBackendFactory")
DRAFT_FALLBACK = "triton"


def draft_backend(values: dict[str, Any]) -> list[str]:
    """Where the preset's draft runs under intel_amx and the revision's draft backend factory has
    no intel_amx backend, the draft's attention backend is triton
    (speculative_draft_attention_backend, which the factory and the draft's ModelRunner read
    first: python/sglang/srt/model_executor/model_runner.py:2291-2301 at d7c93e183b); what was
    set. The driver then claims no AMX: the claim served the draft only, and the target's
    backend is what the revision resolves on this CPU (intel_amx without AMX: torch_native,
    python/sglang/srt/server_args.py:2645-2651 there), whose forward-metadata step does
    nothing; intel_amx's of that revision cannot plan a target verify
    (IntelAMXAttnBackend.init_forward_metadata reads extend_seq_lens, None in a verify:
    python/sglang/srt/layers/attention/intel_amx_backend.py:40-58 there), which the spec v2
    loop calls outside the model's forward (python/sglang/srt/speculative/eagle_info_v2.py:
    293-303 there, :291-301 at its parent)."""
    if values.get("attention_backend") != "intel_amx":
        return []
    if values.get("speculative_draft_attention_backend") or not _has(DRAFT_FACTORY[0]):
        return []
    factory = getattr(importlib.import_module(DRAFT_FACTORY[0]), DRAFT_FACTORY[1], None)
    if factory is None or hasattr(factory, "_create_intel_amx_decode_backend"):
        return []
    values["speculative_draft_attention_backend"] = DRAFT_FALLBACK
    return [
        "the EAGLE draft's attention backend is triton (speculative_draft_attention_backend): "
        "this revision's draft backend factory has no intel_amx one (a revision from before "
        "sgl-project/sglang#27862); its metadata kernels run as torch versions; the target's "
        "backend is the revision's own on this CPU (no AMX claimed)"
    ]


# Modules of a revision from before SGLang's CPU speculative path whose EAGLE steps have a CUDA
# branch and an NPU branch only: on the CPU the tree build names an op never imported
# (sgl_build_tree_kernel_efficient, imported under `if _is_cuda or ...`:
# python/sglang/srt/speculative/eagle_utils.py:14-17, called at :138), the greedy verify does
# nothing (verify_tree_greedy_func, :162-202: no branch runs, its outputs stay as allocated), and
# the v2 loop's extend cache locations are None (assign_extend_cache_locs_func:
# python/sglang/srt/speculative/eagle_info_v2.py:536-577, :534-575 at the parent); all at
# sgl-project/sglang d7c93e183b and at its parent. Their CUDA branches call sgl_kernel's ops
# and the revision's Triton kernels, which the driver serves as torch versions. Module -> the
# sgl_kernel ops its CUDA branch imported at module level (local name -> sgl_kernel name).
CUDA_BRANCHES: dict[str, dict[str, str]] = {
    "sglang.srt.speculative.eagle_utils": {
        "sgl_build_tree_kernel_efficient": "build_tree_kernel_efficient"
    },
    "sglang.srt.speculative.eagle_info_v2": {},
}


def cuda_branches() -> list[str]:
    """Have the CUDA_BRANCHES modules take their CUDA branch (their `_is_cuda`, read when each
    step runs), with the ops that branch imported at module level bound from sgl_kernel (the
    stub serves the ops the driver implements and refuses any other by name); only a module
    that has no CPU branch (no `_is_cpu`) and was imported without CUDA. What was changed."""
    taken = []
    for name, ops in CUDA_BRANCHES.items():
        if not _has(name):
            continue
        module = importlib.import_module(name)
        if vars(module).get("_is_cuda") is not False or hasattr(module, "_is_cpu"):
            continue
        kernel = importlib.import_module("sgl_kernel")
        for local, op in ops.items():
            if local not in vars(module):
                setattr(module, local, getattr(kernel, op))
        module._is_cuda = True  # type: ignore[attr-defined]
        taken.append(name.rpartition(".")[2])
    if not taken:
        return []
    return [
        f"the CUDA branches of {', '.join(taken)} (a revision without a CPU speculative path): "
        "sgl_kernel's ops and the Triton kernels they call run as torch versions"
    ]


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def port_args(args: Any) -> Any:
    from sglang.srt.server_args import PortArgs

    return PortArgs.init_new(args)


class InfoPipe:
    """What run_scheduler_process sends its parent once the Scheduler is built."""

    def __init__(self) -> None:
        self.info: dict[str, Any] = {}

    def send(self, obj: Any) -> None:
        if isinstance(obj, dict):
            self.info = obj


class UnboundArgument(RuntimeError):
    pass


def call_run_scheduler_process(args: Any, ports: Any, pipe: InfoPipe) -> None:
    """The revision's run_scheduler_process, its arguments bound by name (ranks 0, one GPU id
    0: numa and device code read it; no DP rank)."""
    from sglang.srt.managers import scheduler

    values = {
        "server_args": args,
        "port_args": ports,
        "gpu_id": 0,
        "tp_rank": 0,
        "attn_cp_rank": 0,
        "moe_dp_rank": 0,
        "moe_ep_rank": 0,
        "pp_rank": 0,
        "dp_rank": None,
        "pipe_writer": pipe,
    }
    func = scheduler.run_scheduler_process
    kwargs: dict[str, Any] = {}
    for name, param in inspect.signature(func).parameters.items():
        if name in values:
            kwargs[name] = values[name]
        elif param.default is inspect.Parameter.empty:
            raise UnboundArgument(
                f"run_scheduler_process at this revision takes {name!r}, which the driver "
                "does not know how to supply"
            )
    func(**kwargs)
