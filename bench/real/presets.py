"""Real-mode presets: what the real scheduler is built with and what arrives, each number with
its source (bench.real.sources: SGLang file:line at a named commit, an issue or PR, a page) or
marked an assumption.

A preset is a closed loop of `running` clients (one arrives as one leaves: a decode-bound
server's batch stays at B) through the revision's own event loop, with the server arguments a
production deployment of that size runs with, and the request features its clients ask for
(bench.real.driver.features: logprobs, stop strings, grammars, n > 1, aborts, multi-turn
sessions, hidden states). Its forward time is the denominator of "share of a forward".
`python -m bench real presets` lists them; docs/REAL.md has the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from bench.core import scenarios as sc
from bench.core.arrivals import max_length
from bench.real import sources as src
from bench.real import speculation
from bench.real.driver.features import ORDER, Features
from bench.real.driver.server import MODEL_CONFIG
from bench.real.speculation import Speculation

LOCKSTEP_ITERATIONS = 1
LOCKSTEP_VALUES = 400
# In lockstep, an unrecorded iteration at the start of every turn: the recorded one then follows
# the process's own iteration, as a scheduler's does. Measured with `real interleave` on #32208
# (docs/REAL.md, "What runs between two iterations"): without it the baseline iteration cost
# 2,639 / 3,473 / 4,099 / 4,560 µs with 1 / 3 / 7 / 11 other processes between two of its own
# (2,430 alone), so a change's share depended on the command's group; with it, 2,567 / 2,822 /
# 3,056 µs and the #32208 change -5.4 / -6.1 / -5.5%.
LOCKSTEP_REWARM = 1
# The driver's protocol: bumped when what a process sends or measures changes, so that stored
# rounds of an older protocol are never pooled with newer ones (bench/history/run.py).
# 2: the stand-in tokenizer, warm-up until the cache is steady, the first cohort holding its
# generated tokens, fixed-width request ids.
# 3: a re-warm iteration at each lockstep turn (LOCKSTEP_REWARM).
DRIVER_PROTOCOL = 3


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
    # sgl-project/sglang d55f1c28e2: handshakes and transfers that succeed at once); "prefill":
    # the prefill node, through the driver's stand-in transfer backend (the prefill node refuses
    # the fake one: arg_groups/pd_disaggregation_hook.py:102 there)
    disaggregation: str = ""
    features: Features = field(default_factory=Features)
    overlap: bool = False  # the overlap event loop (production's default) instead of the normal
    mixed_chunk: bool = False  # --enable-mixed-chunk: prefill chunks mixed into decode batches
    # speculative decoding (bench.real.speculation: the algorithm, its draft and accept lengths)
    spec: Speculation | None = None
    kv_tokens: int = 0  # the KV pool's tokens; 0: sized so that no request is retracted
    # every Nth forward retracts a decoding request through the revision's own retraction test
    # switch (SGLANG_TEST_RETRACT; 0: off): src.RETRACT says why KV pressure alone does not
    retract_every: int = 0
    hidden_width: int = 7168  # the width of returned hidden states (src.DEEPSEEK_HIDDEN)
    # How one process measures it (the harness's choice, not SGLang's): iterations run before
    # anything is recorded at least, then until the cache is steady (settle), iterations per
    # value, values per process.
    warmup: int = 400
    settle: bool = True
    iterations: int = 100
    values: int = 8
    lockstep_values: int = LOCKSTEP_VALUES  # values per process in lockstep (one iteration each)
    # in lockstep, unrecorded iterations at the start of each turn (bench.real.interleave)
    rewarm: int = 0
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def _longest(self, dist: str) -> int:
        return int(dist.partition(":")[2]) if dist.startswith("fixed:") else max_length(dist)

    @property
    def longest_request(self) -> int:
        """The most tokens one request holds: its prompt, and every turn's output and message."""
        f = self.features
        turns = f.turns if f.session > 0 else 1
        out = max(self._longest(self.outputs), f.max_new_tokens)
        message = self._longest(f.turn_message) if turns > 1 else 0
        return self.prefix_len + self._longest(self.prompts) + turns * out + (turns - 1) * message

    @property
    def context_len(self) -> int:
        """The stand-in model's context: the longest request, and a margin."""
        return max(1024, 1 << (self.longest_request + 16).bit_length())

    @property
    def max_total_tokens(self) -> int:
        """KV tokens: the preset's, or room for every live request at its longest (ASSUMED_KV),
        and under speculative decoding for the draft tokens each request holds ahead (spec v2
        allocates two verifies' worth: eagle_info_v2.py prepare_for_decode at sgl-project/
        sglang d7c93e183b, `kv_committed_len + 2 * alloc_len_per_decode`)."""
        if self.kv_tokens:
            return self.kv_tokens
        ahead = 2 * self.spec.ahead if self.spec is not None else 0
        return self.running * (self.longest_request + ahead) + self.chunked_prefill_size + 4096

    def in_lockstep(self, changed: Mapping[str, Any] | None = None) -> RealPreset:
        """How processes of several revisions measure it together (bench.real.process): one
        iteration per value, taken in turns, 400 per process. Measured on an A/A pair of one
        revision here (prefill-chunked, 2 rounds): the spread of a pair's log ratio was 0.16
        with windows of 100 iterations (16 pairs), 0.22 with 10 (160), 0.27 with 1 (800): the
        finest turns give the most pairs for the least spread each. Each turn first runs
        LOCKSTEP_REWARM iterations unrecorded, so that the recorded one follows the process's
        own iteration and not the other processes' (whose data had pushed its own out of the
        caches: see LOCKSTEP_REWARM)."""
        kept = {k: v for k, v in (changed or {}).items() if k in ("iterations", "values", "rewarm")}
        return replace(
            self,
            **{
                "iterations": LOCKSTEP_ITERATIONS,
                "values": self.lockstep_values,
                "rewarm": LOCKSTEP_REWARM,
                **kept,
            },
        )

    def plan(self) -> dict[str, Any]:
        return {
            "warmup_iterations": self.warmup,
            "values": self.values,
            "iterations": self.iterations,
            "freeze_gc": True,
            "settle": self.settle,
            "rewarm_iterations": self.rewarm,
        }

    def server(self, seed: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "max_running_requests": self.max_running_requests,
            "max_total_tokens": self.max_total_tokens,
            "chunked_prefill_size": self.chunked_prefill_size,
            "random_seed": seed,
            "disable_overlap_schedule": not self.overlap,
        }
        if self.mixed_chunk:
            out["enable_mixed_chunk"] = True
        if self.spec is not None:
            out.update(self.spec.server())
        if self.features.hidden > 0:
            out["enable_return_hidden_states"] = True
        if self.disaggregation:
            out["disaggregation_mode"] = self.disaggregation
            # the prefill node refuses the fake backend: the driver's stand-in runs under the
            # default backend's name (bench/real/driver/transfer.py)
            prefill = self.disaggregation == "prefill"
            out["disaggregation_transfer_backend"] = "nixl" if prefill else "fake"
        if self.disaggregation == "decode":
            # KV kept across a retraction in per-request CPU tensors, not the default pinned
            # host pool, which registers host memory with CUDA (python/sglang/srt/server_args.py
            # :3118-3130 and mem_cache/registry.py:211-216 at sgl-project/sglang d55f1c28e2)
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
            "bootstrap_host": "10.0.0.2" if self.disaggregation == "prefill" else "",
            "features": self.features.to_json(),
        }

    def env(self) -> dict[str, str]:
        """Environment variables the driver sets for this preset (the revision reads them)."""
        if not self.retract_every:
            return {}
        return {"SGLANG_TEST_RETRACT": "1", "SGLANG_TEST_RETRACT_INTERVAL": str(self.retract_every)}

    def needs(self) -> list[str]:
        """What the revision must have for this preset: its features and modes."""
        out = list(self.features.used)
        out += [m for m, on in (("overlap", self.overlap), ("mixed_chunk", self.mixed_chunk)) if on]
        if self.retract_every:
            out.append("retraction")
        if self.features.max_new_tokens:
            out.append("eos")
        if self.spec is not None:
            out.append(f"speculative={self.spec.algorithm}")
        if self.disaggregation:
            out.append(f"disaggregation={self.disaggregation}")
        return out

    def meta(self, changed: Mapping[str, Any]) -> dict[str, Any]:
        """For the manifest: the description, every value with its source, what --set changed."""
        return {
            "description": self.description,
            "values": {k: v for k, v, _src in self.rows()},
            "sources": {k: s for k, _v, s in self.rows()},
            "changed": dict(changed),
            "forward_ms": self.forward_ms,
            "driver_protocol": DRIVER_PROTOCOL,
        }

    def rows(self) -> list[tuple[str, str, str]]:
        """(parameter, value, source) for docs and --explain."""
        keys = (
            "running", "prompts", "prompt_range_ratio", "outputs", "prefix_groups", "prefix_len",
            "stream", "chunked_prefill_size", "max_running_requests", "forward_ms",
        )  # fmt: skip
        out = [(k, str(getattr(self, k)), self.sources.get(k, "")) for k in keys]
        kv = self.sources.get("kv_tokens", src.ASSUMED_KV)
        out.append(("max_total_tokens", str(self.max_total_tokens), kv))
        loop = "overlap" if self.overlap else "normal"
        out.append(("loop", loop, self.sources.get("loop", src.NORMAL_LOOP)))
        for name in ("mixed_chunk", "disaggregation", "retract_every"):
            value = getattr(self, name)
            if value:
                out.append((name, str(value), self.sources.get(name, "")))
        if self.spec is not None:
            out += self.spec.rows()
        out += self._feature_rows()
        plan = src.PLAN
        out += [
            (k, str(getattr(self, k)), plan)
            for k in ("warmup", "settle", "iterations", "values", "rewarm")
        ]
        return out

    def _feature_rows(self) -> list[tuple[str, str, str]]:
        f = self.features
        rows = []

        def source(key: str) -> str:
            return self.sources.get(key) or FEATURE_SOURCES.get(key, "")

        for name in ORDER:
            if f.share(name) > 0:
                rows.append((name, f"{f.share(name):g}", self.sources.get(name, src.NO_SHARE)))
                rows += [(p, _show(getattr(f, p)), source(p)) for p in FEATURE_PARAMS.get(name, ())]
        if f.hidden > 0:
            rows.append(("hidden_width", str(self.hidden_width), src.DEEPSEEK_HIDDEN))
        for param in ("max_new_tokens", "temperature", "top_p", "top_k", "ignore_eos"):
            default = getattr(Features(), param)
            if getattr(f, param) != default or param in self.sources:
                rows.append((param, _show(getattr(f, param)), source(param)))
        return rows


FEATURE_PARAMS: dict[str, tuple[str, ...]] = {
    "logprob": ("top_logprobs_num", "logprob_start_len", "input_logprobs"),
    "stop": ("stop_strings",),
    "regex": ("regex_pattern",),
    "json": ("json_schema",),
    "parallel": ("n",),
    "session": ("turns", "turn_message", "think_iterations"),
    "hidden": ("hidden_mode",),
}


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return ", ".join(repr(v) for v in value)
    return str(value)


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
            "stream": src.BENCH_SERVING,
            "chunked_prefill_size": sc.CHUNK_BY_GPU,
            "max_running_requests": sc.MAX_RUNNING,
            "forward_ms": forward_source,
        },
    )


def _with_values(preset: RealPreset, values: int, source: str) -> RealPreset:
    """The preset measuring `values` iterations a process in lockstep, with the number's source."""
    return replace(
        preset, lockstep_values=values, sources={**preset.sources, "lockstep_values": source}
    )


# What each feature's parameters are, wherever a preset (or --set) turns it on.
FEATURE_SOURCES = {
    "top_logprobs_num": src.SLIME_TOP_K,
    "logprob_start_len": src.SLIME_LOGPROB,
    "input_logprobs": src.INPUT_LOGPROBS,
    "stop_strings": src.STOP_TAGS,
    "regex_pattern": src.REGEX,
    "json_schema": src.SCHEMA,
    "n": src.SLIME_N,
    "turns": src.TURNS,
    "turn_message": src.MESSAGE,
    "think_iterations": src.THINK,
    "hidden_mode": src.HIDDEN_MODE,
    "max_new_tokens": src.NO_CAP,
    "temperature": src.BENCH_SERVING,
    "top_p": src.BENCH_SERVING,
    "top_k": src.BENCH_SERVING,
    "ignore_eos": src.BENCH_SERVING,
}
# Production's traffic: a server at ~1,500 running requests mixing what clients ask for. The
# shares have no published source (src.NO_SHARE): `real features` measures each one's cost.
MIX_FEATURES = Features(
    logprob=0.25,
    stop=0.5,
    regex=0.02,
    json=0.05,
    parallel=0.05,
    abort=0.1,
    session=0.5,
    temperature=1.0,
    ignore_eos=False,
)
MIX_SOURCES = {  # a share not named here is src.NO_SHARE's (rows() says so)
    "abort": src.ABORTS + " (in RL rollouts; the mix's share is an assumption)",
    "temperature": src.SLIME_TEMPERATURE,
    "ignore_eos": src.SLIME_EOS,
}
RL_FEATURES = Features(
    logprob=1.0,
    parallel=1.0,
    abort=0.1,
    session=1.0,
    max_new_tokens=8192,
    temperature=1.0,
    ignore_eos=False,
)
RL_SOURCES = {
    "logprob": src.SLIME_LOGPROB,
    "parallel": src.SLIME_N,
    "abort": src.ABORTS,
    "session": src.TURNS,
    "max_new_tokens": src.SLIME_CAP,
    "temperature": src.SLIME_TEMPERATURE,
    "ignore_eos": src.SLIME_EOS,
}


def _mix() -> RealPreset:
    running = 1536
    return RealPreset(
        name="production-mix",
        description="colocated server at ~1,500 running requests, the overlap loop, clients "
        "mixing logprobs, stop strings, grammars, n > 1, aborts and multi-turn sessions",
        running=running,
        prompts="sharegpt",
        prompt_range_ratio=0.0,
        outputs="sharegpt",
        chunked_prefill_size=8192,
        max_running_requests=4096,
        forward_ms=90.0,
        features=MIX_FEATURES,
        overlap=True,
        kv_tokens=1_750_000,
        # its first cohort starts near the steady state (bench.real.driver.client): a short
        # minimum, then the warm-up settles; an iteration costs ~40 ms here, so 100 values in
        # lockstep measure as long as decode-b256's 400
        warmup=100,
        iterations=50,
        lockstep_values=100,
        sources={
            "running": src.PY_SPY_1500,
            "prompts": sc.SHAREGPT,
            "prompt_range_ratio": "not used: ShareGPT-like lengths follow their own "
            "distribution (bench/core/arrivals.py)",
            "outputs": sc.SHAREGPT,
            "stream": src.BENCH_SERVING,
            "chunked_prefill_size": sc.CHUNK_BY_GPU,
            "max_running_requests": sc.MAX_RUNNING,
            "forward_ms": src.MIX_FORWARD,
            "kv_tokens": src.KV_MIX,
            "loop": src.OVERLAP_DEFAULT,
            **MIX_SOURCES,
        },
    )


def _rl() -> RealPreset:
    running = 512
    return RealPreset(
        name="rl-rollout",
        description="an RL rollout engine: every request returns its tokens' logprobs, groups "
        "of 8 samples of one prompt (n > 1), multi-turn trajectories, the tail aborted",
        running=running,
        prompts="random-1k",
        prompt_range_ratio=0.0,
        outputs="random-1k",
        chunked_prefill_size=8192,
        max_running_requests=4096,
        forward_ms=90.0,
        features=RL_FEATURES,
        overlap=True,
        kv_tokens=860_000,
        iterations=50,
        sources={
            "running": src.SLIME_CONCURRENCY,
            "prompts": "assumption: prompts up to 1,024 tokens (math and tool-use datasets' "
            "prompts are short); " + sc.BENCH_RANDOM,
            "prompt_range_ratio": sc.BENCH_RANDOM,
            "outputs": "assumption: responses up to 1,024 tokens per turn (slime's scripts cap "
            "a response at 8,192: scripts/run-qwen3-4B.sh:59 at 624b824a); " + sc.BENCH_RANDOM,
            "stream": "assumption: streamed, as bench_serving's are (slime's /generate calls "
            "are not streamed; the scheduler's output path runs either way)",
            "chunked_prefill_size": sc.CHUNK_BY_GPU,
            "max_running_requests": sc.MAX_RUNNING,
            "forward_ms": src.MIX_FORWARD.replace("1,536", "512"),
            "kv_tokens": src.KV_RL,
            "loop": src.OVERLAP_DEFAULT,
            **RL_SOURCES,
        },
    )


def _retraction() -> RealPreset:
    base = _decode("x", 256, sc.CUDA_GRAPH_BS, sc.DECODE_FORWARD, 100)
    return replace(
        base,
        name="retraction",
        description="decode-b256 whose decode retracts a request every 20th forward, as a "
        "full KV pool makes it, through the revision's own retraction switch, and re-admits it",
        retract_every=20,
        sources={**base.sources, "retract_every": src.RETRACT},
    )


def _eagle_chain() -> RealPreset:
    base = _decode("x", 256, sc.CUDA_GRAPH_BS, sc.DECODE_FORWARD, 100)
    return replace(
        base,
        name="eagle-chain",
        description="decode-b256 with an EAGLE draft in a chain (topk 1) on the overlap loop "
        "(spec v2), the target verifying the drafts of every request each iteration",
        spec=speculation.EAGLE,
        overlap=True,
        sources={**base.sources, "loop": src.SPEC_V2},
    )


def _mtp_decode() -> RealPreset:
    base = _decode("x", 256, sc.CUDA_GRAPH_BS, sc.DECODE_FORWARD, 100)
    return replace(
        base,
        name="mtp-decode",
        description="the decode node of a disaggregated DeepSeek-style deployment: 256 running "
        "requests arriving with their KV through the fake transfer backend, drafted by one MTP "
        "layer as SGLang's EAGLE on the overlap loop (spec v2)",
        spec=speculation.MTP,
        overlap=True,
        disaggregation="decode",
        sources={
            **base.sources,
            "loop": src.SPEC_V2,
            "disaggregation": "the PD decode node, the fake transfer backend of "
            "python/sglang/srt/disaggregation/fake/conn.py at sgl-project/sglang d55f1c28e2",
        },
    )


def _pd_prefill() -> RealPreset:
    return RealPreset(
        name="pd-prefill",
        description="the prefill node of a disaggregated deployment: random-4k prompts through "
        "8k chunks, each request's KV sent through the driver's stand-in transfer backend and "
        "held in the inflight queue until its transfer succeeds",
        running=64,
        prompts="random-4k",
        prompt_range_ratio=0.0,
        outputs="fixed:1",
        chunked_prefill_size=8192,
        max_running_requests=4096,
        forward_ms=1200.0,
        disaggregation="prefill",
        sources={
            "running": "assumption: enough queued to fill every chunk (the prefill scenarios' "
            "'fill')",
            "prompts": sc.BENCH_RANDOM,
            "prompt_range_ratio": sc.BENCH_RANDOM,
            "outputs": "a prefill node generates the first token only",
            "stream": src.BENCH_SERVING,
            "chunked_prefill_size": sc.CHUNK_BY_GPU,
            "max_running_requests": sc.MAX_RUNNING,
            "forward_ms": sc.PREFILL_FORWARD,
            "disaggregation": src.PD_PREFILL,
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
        _with_values(
            _decode(
                "decode-b1536",
                1536,
                src.PY_SPY_1500,
                sc.ASSUMED + ": decode-b256's 90 ms (an upper bound on the share)",
                20,
            ),
            200,
            sc.ASSUMED + ": 200 iterations a process in lockstep (not 400), so that a profile of "
            "eight processes at ~17 ms an iteration fits its minutes",
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
                "stream": src.BENCH_SERVING,
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
                "prompts": src.GSP,
                "prompt_range_ratio": src.GSP,
                "outputs": src.GSP,
                "prefix_groups": src.GSP,
                "prefix_len": src.GSP,
                "stream": src.BENCH_SERVING,
                "chunked_prefill_size": sc.CHUNK_BY_GPU,
                "max_running_requests": sc.MAX_RUNNING,
                "forward_ms": sc.DECODE_FORWARD,
            },
        ),
        replace(
            _decode("pd-decode-b256", 256, sc.CUDA_GRAPH_BS, sc.DECODE_FORWARD, 100),
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
                "stream": src.BENCH_SERVING,
                "chunked_prefill_size": sc.CHUNK_BY_GPU,
                "max_running_requests": sc.MAX_RUNNING,
                "forward_ms": "NVIDIA NIM for LLMs benchmark page: Llama-3.1-8B decode at ~256 "
                "concurrent on H100, inter-token latency ~16 ms (the colocated scenario's)",
            },
        ),
        _mix(),
        _rl(),
        _retraction(),
        _pd_prefill(),
        _eagle_chain(),
        _mtp_decode(),
    )
}

DEFAULT = ("decode-b256", "decode-b1024")
# What `gate --real` gates by default: a preset that admits requests every iteration (where
# allocation and prefix matching run) and the decode batch at the CUDA-graph size. production-mix
# is a flag away (--real-preset): an A/A gate of d55f1c28e2 with it took 10m52s here, past the 10 a
# default gate may take (docs/REAL.md, "The gate").
GATE_DEFAULT = ("prefill-chunked", "decode-b256")


# A preset's variants: NAME+VARIANT[+VARIANT] is the preset with one feature on at
# VARIANT_SHARE of its requests, or one scheduler mode on (`real features` measures each).
VARIANT_SHARE = 0.1
MODES: dict[str, dict[str, Any]] = {
    "overlap": {"overlap": True},
    "mixed_chunk": {"mixed_chunk": True},
    "retraction": {"retract_every": 20},
    "eos": {"max_new_tokens": 4096, "ignore_eos": False},
    # speculative decoding (bench.real.speculation): NGRAM, an EAGLE chain, DeepSeek's MTP
    **{name: {"speculative": name} for name in speculation.BY_NAME},
}
FEATURE_VARIANTS = (
    "logprob", "top_logprobs", "input_logprobs", "stop", "regex", "json", "parallel", "abort",
    "session", "hidden",
)  # fmt: skip
VARIANTS = (*FEATURE_VARIANTS, *MODES)
SPEC_VARIANTS = tuple(speculation.BY_NAME)


def variant_changes(name: str, share: float = VARIANT_SHARE) -> dict[str, Any]:
    """The --set values of one variant."""
    if name in MODES:
        return dict(MODES[name])
    if name == "top_logprobs":
        return {"logprob": share, "top_logprobs_num": 5}
    if name == "input_logprobs":
        return {"logprob": share, "input_logprobs": 16, "top_logprobs_num": 5}
    if name in FEATURE_VARIANTS:
        return {name: share}
    raise ValueError(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}")


def variant(base: RealPreset, name: str, share: float = VARIANT_SHARE) -> RealPreset:
    """The preset with one feature at `share`, or one mode on, named BASE+NAME."""
    return replace(with_changes(base, variant_changes(name, share)), name=f"{base.name}+{name}")


def get(name: str) -> RealPreset:
    """A preset by name; NAME+VARIANT[+VARIANT] adds variants (VARIANTS) to it."""
    base, *extra = name.split("+")
    try:
        preset = PRESETS[base]
    except KeyError:
        raise ValueError(
            f"unknown real preset {base!r}; choose from {', '.join(PRESETS)}"
        ) from None
    for v in extra:
        preset = variant(preset, v)
    return preset


# --set KEY=VALUE: the preset's own values and its features', each with its type.
_PRESET_KEYS: dict[str, type] = {
    "running": int, "prompts": str, "outputs": str, "chunked_prefill_size": int,
    "max_running_requests": int, "warmup": int, "iterations": int, "values": int,
    "kv_tokens": int, "overlap": bool, "mixed_chunk": bool, "speculative": str,
    **{k: kind for k, (_f, kind) in speculation.SETTABLE.items()},
    "settle": bool, "hidden_width": int, "retract_every": int, "rewarm": int,
}  # fmt: skip
_FEATURE_KEYS: dict[str, type] = {
    f.name: (float if f.name in ORDER else type(getattr(Features(), f.name)))
    for f in fields(Features)
    if f.name not in ("stop_strings",)
}
SETTABLE: dict[str, type] = {**_PRESET_KEYS, **_FEATURE_KEYS}
_SPEC_KEYS = ("speculative", *speculation.SETTABLE)


def parse_value(key: str, text: str) -> Any:
    """A --set value of its key's type; ValueError saying what was expected."""
    kind = SETTABLE.get(key)
    if kind is None:
        raise ValueError(f"real presets take --set {', '.join(SETTABLE)}; not {key!r}")
    if kind is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"--set {key}={text}: expected 0 or 1")
    if kind is str:
        return text
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(
            f"--set {key}={text}: expected {'a number' if kind is float else 'an integer'}"
        ) from None
    if key in ORDER and not 0.0 <= value <= 1.0:
        raise ValueError(f"--set {key}={text}: a share of requests, from 0 to 1")
    return value


def with_changes(preset: RealPreset, changes: Mapping[str, Any]) -> RealPreset:
    """--set KEY=VALUE on a real preset (recorded in the name's parameters by the caller)."""
    for key in changes:
        if key not in SETTABLE:
            raise ValueError(f"real presets take --set {', '.join(SETTABLE)}; not {key!r}")
    mine = {k: v for k, v in changes.items() if k in _PRESET_KEYS and k not in _SPEC_KEYS}
    theirs = {k: v for k, v in changes.items() if k in _FEATURE_KEYS}
    features = replace(preset.features, **theirs) if theirs else preset.features
    spec = preset.spec
    if "speculative" in changes:
        spec = speculation.named(str(changes["speculative"])) if changes["speculative"] else None
    spec = speculation.changed(spec, changes)
    if spec is not None:
        spec.check()
    return replace(preset, **mine, features=features, spec=spec)


def markdown() -> str:
    """Every preset's values and sources, as docs/REAL.md shows them (a test keeps them equal)."""
    out = []
    for p in PRESETS.values():
        star = " (default)" if p.name in DEFAULT else ""
        gate = " (gated by default)" if p.name in GATE_DEFAULT else ""
        out += [
            f"### `{p.name}`{star}{gate}",
            "",
            p.description + ".",
            "",
            "| parameter | value | source |",
            "|---|---|---|",
        ]
        out += [f"| {k} | {v} | {s or '-'} |" for k, v, s in p.rows()]
        out.append("")
    return "\n".join(out)


def vocab_size() -> int:
    return int(MODEL_CONFIG["vocab_size"])
