"""The job a driver process is given (JSON; bench/real/driver/main.py reads it):

    mode          "measure" (timed iterations) or "count" (calls per function, untimed)
    stubs         GPU-only top-level packages stubbed for the revision (bench/real/driver/stubs.py)
    env           environment variables set before the revision is imported
    context_len   the stand-in model's max_position_embeddings
    server        ServerArgs values beyond the driver's own (bench/real/driver/server.py)
    workload      bench.real.driver.requests.Workload
    plan          bench.real.driver.loop.Plan
    hash_seed     PYTHONHASHSEED of the process (one per worker, as pyperf's workers have)

and its output: `ok`, the records of every measured iteration (wall ns less the stand-in's,
phases, forward mode, batch size, arrivals, finished requests, GC), what was stubbed, replaced
and patched, the build and import times; or `kind` and `message` of a failure.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench.base.storage import cache_dir

# Set in every driver process: the revision's CPU paths (is_cpu() in sglang.srt.utils) instead
# of the CUDA ones, which import vllm's rotary embedding on a machine without the CUDA stack;
# no model hub is ever asked (the stand-in's config and tokenizer are local files).
DRIVER_ENV = {"SGLANG_USE_CPU_ENGINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
VOCAB_SIZE = 32000  # bench.real.driver.server.MODEL_CONFIG


def tokenizer_cache() -> Path:
    """Where the stand-in tokenizer is trained once (bench.real.driver.tokenizer)."""
    return cache_dir() / "real" / "tokenizer"


# A C++ compiler command for a revision's JIT builds on the host: the NGRAM corpus is C++ built
# with ninja at first use (python/sglang/kernels/ops/speculative/ngram_corpus.py:27-40 at
# sgl-project/sglang d55f1c28e2), whose ngram_corpus/result.h:15 uses size_t without including
# <cstddef>, which GCC 12's libstdc++ headers do not bring in: the build fails there
# ("'size_t' has not been declared"). The wrapper adds that include and changes nothing else;
# the revision reads its compiler from CXX (kernels/jit/utils/compile/toolchain.py:66-72 there).
JIT_CXX = '#!/bin/sh\n# reqstate-bench: the host compiler with <cstddef>\nexec {cxx} -include cstddef "$@"\n'


def jit_env(preset: Any) -> dict[str, str]:
    """CXX for a preset whose revision builds C++ at run time (NGRAM's corpus); {} otherwise."""
    spec = getattr(preset, "spec", None)
    if spec is None or spec.algorithm != "NGRAM":
        return {}
    folder = cache_dir() / "real" / "toolchain"
    wrapper = folder / "c++"
    text = JIT_CXX.format(cxx=os.environ.get("CXX", "c++"))
    if not wrapper.exists() or wrapper.read_text(encoding="utf-8") != text:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = wrapper.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(0o755)
        os.replace(tmp, wrapper)
    return {"CXX": str(wrapper)}


def probe_job(stubs: list[str]) -> dict[str, Any]:
    """A few tiny iterations: enough to import the revision, build its Scheduler and step its
    loop through prefill and decode (lazy imports on that path are the environment's business)."""
    return {
        "mode": "measure",
        "stubs": list(stubs),
        "env": dict(DRIVER_ENV),
        "context_len": 1024,
        "server": {
            "max_running_requests": 16,
            "max_total_tokens": 16384,
            "chunked_prefill_size": 512,
            "random_seed": 0,
            "disable_overlap_schedule": True,
        },
        "tokenizer_cache": str(tokenizer_cache()),
        "workload": {
            "running": 4,
            "prompts": "fixed:64",
            "prompt_range_ratio": 0.0,
            "outputs": "fixed:6",
            "stream": True,
            "vocab_size": VOCAB_SIZE,
            "seed": 0,
        },
        "plan": {
            "warmup_iterations": 4,
            "values": 1,
            "iterations": 8,
            "freeze_gc": True,
            "settle": False,
        },
    }
