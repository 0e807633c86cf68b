"""Building the revision's Scheduler as its server does: the revision's own ServerArgs, PortArgs
and run_scheduler_process (plugins, the runtime context, process set-up, then Scheduler(...)),
with a model config written here and the tokenizer skipped.

Arguments are bound by name against the revision's own signatures, so one driver serves
revisions whose signatures moved (run_scheduler_process took nine rank arguments in mid-2026,
a SpawnRanks object later); an argument a revision does not have is left out and recorded.
"""

from __future__ import annotations

import inspect
import json
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
