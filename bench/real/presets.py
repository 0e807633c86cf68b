"""Real-mode presets: what the real scheduler is built with and what arrives, each number with
its source (SGLang file:line at a named commit, an issue or PR, a page) or marked an assumption.

A preset is a closed loop of `running` live requests (one arrives as one finishes: a
decode-bound server's batch stays at B) through the revision's own colocated event loop, with
the server arguments a production deployment of that size runs with. Its forward time is the
denominator of "share of a forward". `python -m bench real presets` lists them; docs/REAL.md
has the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bench.core import scenarios as sc
from bench.core.arrivals import max_length

LOCKSTEP_ITERATIONS = 1
LOCKSTEP_VALUES = 400
ASSUMED_KV = (
    "assumption: KV capacity sized so the batch never retracts (running x (longest prompt + "
    "longest output)); production sizes it by GPU memory"
)
GSP = (
    "sglang bench_serving generated-shared-prefix defaults (python/sglang/benchmark/"
    "serving.py:2612-2645 at sgl-project/sglang d55f1c28e2): 64 groups, 2,048-token system "
    "prompt, 128-token question, 256-token output, range ratio 1.0 (fixed lengths)"
)
BENCH_SERVING = (
    "sglang bench_serving request defaults (python/sglang/benchmark/serving.py:276-285 at "
    "sgl-project/sglang d55f1c28e2): stream on, temperature 0, ignore_eos"
)


@dataclass(frozen=True)
class RealPreset:
    name: str
    description: str
    running: int
    prompts: str
    prompt_range_ratio: float
    outputs: str
    chunked_prefill_size: int
    max_running_requests: int
    forward_ms: float
    prefix_groups: int = 0
    prefix_len: int = 0
    stream: bool = True
    # "" colocated; "decode": the decode node of a disaggregated deployment, its KV transfers
    # through SGLang's fake backend (python/sglang/srt/disaggregation/fake/conn.py at
    # sgl-project/sglang d55f1c28e2: handshakes and transfers that succeed at once). The
    # prefill node refuses the fake backend (arg_groups/pd_disaggregation_hook.py:102 there):
    # its fake path is per request on a server whose own transfer engine must start.
    disaggregation: str = ""
    # How one process measures it (the harness's choice, not SGLang's): iterations run before
    # anything is recorded, iterations per value, values per process.
    warmup: int = 400
    iterations: int = 100
    values: int = 8
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def _longest(self, dist: str) -> int:
        return int(dist.partition(":")[2]) if dist.startswith("fixed:") else max_length(dist)

    @property
    def context_len(self) -> int:
        """The stand-in model's context: the longest prompt and output, and a margin."""
        need = self.prefix_len + self._longest(self.prompts) + self._longest(self.outputs)
        return max(1024, 1 << (need + 16).bit_length())

    @property
    def max_total_tokens(self) -> int:
        """KV tokens: room for every live request at its longest (ASSUMED_KV)."""
        per = self.prefix_len + self._longest(self.prompts) + self._longest(self.outputs)
        return self.running * per + self.chunked_prefill_size + 4096

    def in_lockstep(self, changed: Mapping[str, Any] | None = None) -> RealPreset:
        """How processes of several revisions measure it together (bench.real.process): one
        iteration per value, taken in turns, 400 per process. Measured on an A/A pair of one
        revision here (prefill-chunked, 2 rounds): the spread of a pair's log ratio was 0.16
        with windows of 100 iterations (16 pairs), 0.22 with 10 (160), 0.27 with 1 (800): the
        finest turns give the most pairs for the least spread each, and every iteration of a
        revision then follows one of another's, its data out of the core's nearest caches, as
        a real scheduler's iteration follows a forward's launch work."""
        kept = {k: v for k, v in (changed or {}).items() if k in ("iterations", "values")}
        return replace(
            self, **{"iterations": LOCKSTEP_ITERATIONS, "values": LOCKSTEP_VALUES, **kept}
        )

    def plan(self) -> dict[str, Any]:
        return {
            "warmup_iterations": self.warmup,
            "values": self.values,
            "iterations": self.iterations,
            "freeze_gc": True,
        }

    def server(self, seed: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "max_running_requests": self.max_running_requests,
            "max_total_tokens": self.max_total_tokens,
            "chunked_prefill_size": self.chunked_prefill_size,
            "random_seed": seed,
        }
        if self.disaggregation:
            out["disaggregation_mode"] = self.disaggregation
            out["disaggregation_transfer_backend"] = "fake"
        if self.disaggregation == "decode":
            # KV kept across a retraction in per-request CPU tensors, not the default pinned
            # host pool, which registers host memory with CUDA (python/sglang/srt/server_args.py
            # :3118-3130 and mem_cache/registry.py:211-216 at sgl-project/sglang d55f1c28e2);
            # the presets' KV is sized so that no request is retracted
            out["disaggregation_decode_retraction_backup"] = "cpu_tensor"
        return out

    def workload(self, seed: int, vocab_size: int) -> dict[str, Any]:
        return {
            "running": self.running,
            "prompts": self.prompts,
            "prompt_range_ratio": self.prompt_range_ratio,
            "outputs": self.outputs,
            "stream": self.stream,
            "vocab_size": vocab_size,
            "prefix_groups": self.prefix_groups,
            "prefix_len": self.prefix_len,
            "seed": seed,
            "bootstrap_rooms": bool(self.disaggregation),
        }

    def meta(self, changed: Mapping[str, Any]) -> dict[str, Any]:
        """For the manifest: the description, every value with its source, what --set changed."""
        return {
            "description": self.description,
            "values": {k: v for k, v, _src in self.rows()},
            "sources": {k: src for k, _v, src in self.rows()},
            "changed": dict(changed),
            "forward_ms": self.forward_ms,
        }

    def rows(self) -> list[tuple[str, str, str]]:
        """(parameter, value, source) for docs and --explain."""
        keys = (
            "running", "prompts", "prompt_range_ratio", "outputs", "prefix_groups", "prefix_len",
            "stream", "chunked_prefill_size", "max_running_requests", "forward_ms",
        )  # fmt: skip
        out = [(k, str(getattr(self, k)), self.sources.get(k, "")) for k in keys]
        out.append(("max_total_tokens", str(self.max_total_tokens), ASSUMED_KV))
        plan = "the harness's choice: how one process measures (not an SGLang number)"
        out += [(k, str(getattr(self, k)), plan) for k in ("warmup", "iterations", "values")]
        return out


def _decode(
    name: str, running: int, running_source: str, forward_source: str, iterations: int
) -> RealPreset:
    return RealPreset(
        name=name,
        description=f"colocated server, decode-bound: {running:,} running requests, each "
        "finished one replaced",
        running=running,
        prompts="random-4k",
        prompt_range_ratio=0.0,
        outputs="random-1k",
        chunked_prefill_size=8192,
        max_running_requests=4096,
        forward_ms=90.0,
        iterations=iterations,
        sources={
            "running": running_source,
            "prompts": "the decode-dspark scenario's prompts; " + sc.BENCH_RANDOM,
            "prompt_range_ratio": sc.BENCH_RANDOM,
            "outputs": sc.BENCH_RANDOM + " (--random-output 1024)",
            "stream": BENCH_SERVING,
            "chunked_prefill_size": sc.CHUNK_BY_GPU,
            "max_running_requests": sc.MAX_RUNNING,
            "forward_ms": forward_source,
        },
    )


PRESETS: dict[str, RealPreset] = {
    p.name: p
    for p in (
        _decode("decode-b256", 256, sc.CUDA_GRAPH_BS, sc.DECODE_FORWARD, 100),
        _decode(
            "decode-b1024",
            1024,
            "sgl-project/sglang #33475 (its PR text: get_next_batch_to_run at ~1,000 running "
            "requests)",
            sc.ASSUMED + ": decode-b256's 90 ms; a larger batch's forward is longer, so the share "
            "shown is an upper bound",
            40,
        ),
        _decode(
            "decode-b4096",
            4096,
            "up to max_running_requests without CUDA graphs: " + sc.MAX_RUNNING,
            sc.ASSUMED + ": decode-b256's 90 ms (an upper bound on the share)",
            10,
        ),
        RealPreset(
            name="prefill-chunked",
            description="colocated server, prefill-bound: random-4k prompts through 8k chunks, "
            "one output token each, so requests are admitted every iteration",
            running=64,
            prompts="random-4k",
            prompt_range_ratio=0.0,
            outputs="fixed:1",
            chunked_prefill_size=8192,
            max_running_requests=4096,
            forward_ms=1200.0,
            sources={
                "running": "assumption: enough queued to fill every chunk (the prefill scenarios' "
                "'fill'); swept with --set running=N",
                "prompts": sc.BENCH_RANDOM,
                "prompt_range_ratio": sc.BENCH_RANDOM,
                "outputs": "a prefill node's requests carry max_new_tokens=1 (the prefill "
                "scenarios' outputs)",
                "stream": BENCH_SERVING,
                "chunked_prefill_size": sc.CHUNK_BY_GPU,
                "max_running_requests": sc.MAX_RUNNING,
                "forward_ms": sc.PREFILL_FORWARD,
            },
        ),
        RealPreset(
            name="shared-prefix",
            description="colocated server, bench_serving's generated-shared-prefix: 64 system "
            "prompts shared by their groups, so the radix cache matches and splits",
            running=256,
            prompts="fixed:128",
            prompt_range_ratio=1.0,
            outputs="fixed:256",
            prefix_groups=64,
            prefix_len=2048,
            chunked_prefill_size=8192,
            max_running_requests=4096,
            forward_ms=90.0,
            sources={
                "running": sc.CUDA_GRAPH_BS + " (an assumption for this dataset)",
                "prompts": GSP,
                "prompt_range_ratio": GSP,
                "outputs": GSP,
                "prefix_groups": GSP,
                "prefix_len": GSP,
                "stream": BENCH_SERVING,
                "chunked_prefill_size": sc.CHUNK_BY_GPU,
                "max_running_requests": sc.MAX_RUNNING,
                "forward_ms": sc.DECODE_FORWARD,
            },
        ),
        replace(
            _decode(
                "pd-decode-b256",
                256,
                sc.CUDA_GRAPH_BS,
                sc.DECODE_FORWARD,
                100,
            ),
            description="the decode node of a disaggregated deployment: 256 running requests "
            "arriving with their KV through the fake transfer backend, each finished one replaced",
            disaggregation="decode",
            sources={
                **_decode("x", 256, sc.CUDA_GRAPH_BS, sc.DECODE_FORWARD, 100).sources,
                "disaggregation": "the PD decode node (decode.py at c96e68b62b, the decode-dspark "
                "scenario's loop), the fake transfer backend of "
                "python/sglang/srt/disaggregation/fake/conn.py at sgl-project/sglang d55f1c28e2",
            },
        ),
        RealPreset(
            name="colocated-sharegpt",
            description="colocated server, ShareGPT-like lengths: short prompts and outputs, "
            "new requests every few iterations",
            running=256,
            prompts="sharegpt",
            prompt_range_ratio=0.0,
            outputs="sharegpt",
            chunked_prefill_size=8192,
            max_running_requests=4096,
            forward_ms=16.0,
            sources={
                "running": sc.CUDA_GRAPH_BS,
                "prompts": sc.SHAREGPT,
                "prompt_range_ratio": "not used: ShareGPT-like lengths follow their own "
                "distribution (bench/core/arrivals.py)",
                "outputs": sc.SHAREGPT,
                "stream": BENCH_SERVING,
                "chunked_prefill_size": sc.CHUNK_BY_GPU,
                "max_running_requests": sc.MAX_RUNNING,
                "forward_ms": "NVIDIA NIM for LLMs benchmark page: Llama-3.1-8B decode at ~256 "
                "concurrent on H100, inter-token latency ~16 ms (the colocated scenario's)",
            },
        ),
    )
}

DEFAULT = ("decode-b256", "decode-b1024")
# What `gate --real` gates by default: a preset that admits requests every iteration (where
# allocation and prefix matching run) and the decode batch at the CUDA-graph size.
GATE_DEFAULT = ("prefill-chunked", "decode-b256")


def get(name: str) -> RealPreset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(
            f"unknown real preset {name!r}; choose from {', '.join(PRESETS)}"
        ) from None


SETTABLE = (
    "running", "prompts", "outputs", "chunked_prefill_size", "max_running_requests", "warmup",
    "iterations", "values",
)  # fmt: skip


def with_changes(preset: RealPreset, changes: Mapping[str, Any]) -> RealPreset:
    """--set KEY=VALUE on a real preset (recorded in the name's parameters by the caller)."""
    for key in changes:
        if key not in SETTABLE:
            raise ValueError(f"real presets take --set {', '.join(SETTABLE)}; not {key!r}")
    return replace(preset, **changes)


def markdown() -> str:
    """Every preset's values and sources, as docs/REAL.md shows them (a test keeps them equal)."""
    out = []
    for p in PRESETS.values():
        star = " (default)" if p.name in DEFAULT else ""
        out += [
            f"### `{p.name}`{star}",
            "",
            p.description + ".",
            "",
            "| parameter | value | source |",
            "|---|---|---|",
        ]
        out += [f"| {k} | {v} | {src or '-'} |" for k, v, src in p.rows()]
        out.append("")
    return "\n".join(out)
