"""Where real mode's preset values come from: SGLang file:line at a named commit, an issue or
PR, a page, another project's file at a commit; or an assumption, said to be one. The presets
(bench.real.presets) cite these; docs/REAL.md shows them beside every value.
"""

from __future__ import annotations

from bench.core import scenarios as sc

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
PLAN = "the harness's choice: how one process measures (not an SGLang number)"
NORMAL_LOOP = (
    "the normal event loop, as the presets measured before the overlap loop was run (the "
    "history of earlier stops compares with it); --set overlap=1 runs production's loop"
)
OVERLAP_DEFAULT = (
    "production's default: the overlap loop runs unless disable_overlap_schedule is set; "
    "python/sglang/srt/managers/scheduler.py:433 at sgl-project/sglang d55f1c28e2 "
    "(enable_overlap = not disable_overlap_schedule), and the CPU is not among the devices "
    "server_args.py forces onto the normal loop"
)

# -- production traffic ---------------------------------------------------------------------
PY_SPY_1500 = (
    "sgl-project/sglang#36369: a py-spy wall profile at ~1,500-request batches, the scheduler "
    "thread ~99% busy; #36366: gen2 GC pauses once the live set reaches ~1,500 requests, on a "
    "multi-turn RL rolling benchmark (1x GB300)"
)
SLIME = "THUDM/slime at 624b824a"
SLIME_LOGPROB = (
    f"{SLIME}, slime/rollout/sglang_rollout.py:176-179: every rollout request's payload has "
    '"return_logprob": True and no top_logprobs_num or logprob_start_len (the sampled token\'s '
    "logprob only); radixark/miles and NVIDIA-NeMo/RL send the same"
)
SLIME_TOP_K = (
    f"{SLIME}: no rollout request sends top_logprobs_num (miles asks top-k only for on-policy "
    "distillation, off by default: miles/utils/arguments.py:1639-1644 at 31f1ca961a94)"
)
SLIME_N = (
    f"{SLIME}, scripts/run-qwen3-4B.sh:58: --n-samples-per-prompt 8 (8 in 37 of its scripts); "
    "slime sends a group as 8 requests of one prompt, SGLang's n > 1 sends them after a "
    "prefix-caching request (tokenizer_manager.py:1880-1936 at sgl-project/sglang d55f1c28e2)"
)
SLIME_TEMPERATURE = f"{SLIME}, slime/utils/arguments.py:343-345: --rollout-temperature default 1.0"
SLIME_CONCURRENCY = (
    f"{SLIME}, slime/backends/sglang_utils/arguments.py:47: --sglang-server-concurrency default "
    "512 requests per engine"
)
SLIME_EOS = (
    f"{SLIME}, slime/rollout/sglang_rollout.py:95-105: rollout sampling parameters set no "
    "ignore_eos (a rollout ends at its EOS)"
)
SLIME_CAP = (
    f"{SLIME}, slime/rollout/sglang_rollout.py:99 (max_new_tokens=args.rollout_max_response_len) "
    "and scripts/run-qwen3-4B.sh:59 (--rollout-max-response-len 8192): the cap sent; the "
    "stand-in samples the EOS at the output length drawn for the request"
)
TURNS = (
    "volcengine/verl examples/sglang_multiturn/config/gsm8k_multiturn_grpo.yaml:21 at "
    "b178a3cd56f5: max_assistant_turns 5 (slime's examples cap turns at 2 to 16: "
    "examples/search-r1/generate_with_search.py:16, examples/retool/tool_sandbox.py:23); each "
    "turn's prompt is the previous prompt, its output and the tool's reply "
    "(examples/retool/generate_with_retool.py:271-353 at 624b824a)"
)
ABORTS = (
    "volcengine/verl verl/trainer/config/rollout/rollout.yaml:110-112 at b178a3cd56f5: the "
    "remaining requests are aborted once (1 - over_sample_rate) of them completed; "
    "examples/sglang_multiturn/run_qwen2.5-3b_gsm8k_multiturn.sh:51 sets over_sample_rate=0.1, "
    "so ~10% are aborted mid-stream"
)
STOP_TAGS = (
    f"{SLIME}, examples/search-r1/generate_with_search.py:173-177: stop strings "
    '["</search>", "</answer>"]'
)
RETRACT = (
    "assumption, every 20th forward: a served decode retracts when its pool is full "
    "(docs/advanced_features/hyperparameter_tuning.md:25-26 at sgl-project/sglang e2728ac504: "
    "'KV cache pool is full. Retract requests.', about once a minute is okay), but pressure alone "
    "did not retract on this traffic: 0 retractions in 4,000 iterations with the pool at 50-150% "
    "of the batch's demand, EOS-ended requests under a 4,096-token cap, with and without the "
    "radix cache, measured at sglang 0.5.23 on 2026-12-03 (its admission reserves for the "
    "outputs still to come and the cache's evictable tokens absorb the batch's growth); so the "
    "revision's own switch (SGLANG_TEST_RETRACT, SGLANG_TEST_RETRACT_INTERVAL in "
    "python/sglang/srt/environ.py, scheduler.py update_running_batch) retracts one decoding "
    "request every N forwards through the same retract_decode a full pool runs"
)
DEEPSEEK_HIDDEN = (
    "a served model's hidden size, not the stand-in's 64: DeepSeek-V3's 7,168 (bench/core/"
    "arrivals.py HIDDEN_SIZE); what return_hidden_states streams per token"
)
NO_SHARE = (
    "assumption: no published share of production requests using this (searched: sglang and "
    "vLLM issues, RL frameworks' rollout code); `python -m bench real features` measures what "
    "the share costs per iteration"
)
SCHEMA = (
    "assumption: a tool call's arguments (an object of a string, an integer and a list of "
    "strings), the shape of vLLM's structured-output benchmark schemas"
)
REGEX = "assumption: an e-mail address (a bounded pattern that ends)"
KV_MIX = (
    "assumption: room for the batch's live tokens at steady state (1.40 M measured at sglang "
    "0.5.23 with an unbounded pool, 2026-12-03) and a quarter as much again of cache, so the "
    "radix cache fills and evicts; production sizes the pool by GPU memory (480,406 tokens on "
    "8 x H200 for DeepSeek-V3 in #3196; 665,690 in docs/advanced_features/"
    "hyperparameter_tuning.md:44 at sgl-project/sglang e2728ac504)"
)
KV_RL = KV_MIX.replace("1.40 M", "0.69 M")
MIX_FORWARD = (
    sc.ASSUMED + ": decode-b256's 90 ms; a 1,536-request batch's forward is longer, so the share "
    "shown is an upper bound"
)
THINK = (
    "assumption: the next turn arrives at the boundary after the last one ends (a tool's or "
    "user's time between turns is not modelled)"
)
MESSAGE = "assumption: a new message (a tool's reply or the user's) of 128 tokens"
INPUT_LOGPROBS = (
    "0 (none): RL rollouts ask for output logprobs only (slime's payload); the input_logprobs "
    "variant asks for the prompt's last 16 positions (an assumption: scoring a completion's "
    "tail)"
)
HIDDEN_MODE = (
    "return_hidden_states 'last' (the last token's states, replaced at each step; "
    "ReturnHiddenStatesMode = Union[bool, Literal['last']] at python/sglang/srt/managers/"
    "schedule_batch.py:152 at sgl-project/sglang d55f1c28e2); 'full' (True) streams every "
    "position's, ~8M floats per 2k-token prompt at a 4,096-wide model, which no run here can hold"
)
NO_CAP = (
    "0: the drawn output length is sent as max_new_tokens, as bench_serving's ignore_eos "
    "requests are; N > 0 sends the cap and ends each request at its EOS"
)
PD_PREFILL = (
    "the PD prefill node's own loop (event_loop_normal_disagg_prefill, python/sglang/srt/"
    "disaggregation/prefill.py at sgl-project/sglang d55f1c28e2) through the driver's stand-in "
    "transfer backend (bench/real/driver/transfer.py): the handshake done at the first poll "
    "(#11648: #unbootstrapped-req 0), a transfer succeeding at the next iteration's poll (PR "
    "#7236: ~60 ms, shorter than one prefill forward)"
)
SPEC_V2 = (
    "production's default with a draft: the overlap loop runs the spec v2 workers "
    "(docs/docs/advanced_features/speculative_decoding.mdx:585-592 at sgl-project/sglang "
    "d55f1c28e2: 'with the overlap scheduler enabled by default'); the CPU turns it off "
    "(arg_groups/speculative_hook.py:14-21 there), which the driver lifts while the scheduler is "
    "built (bench/real/driver/server.py, Claims)"
)
