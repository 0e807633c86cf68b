"""The seeded stream of requests a scenario's scheduler receives.

Lengths follow the scenario's distributions (sources in bench/core/scenarios.py):

    random-Nk   sglang bench_serving's random dataset: uniform integers in
                [max(range_ratio x N, 1), N] (range ratio 0.0 by default: mean ~N/2)
    sharegpt    log-normal with ShareGPT's published means (224 in, 198 out, #2805); the
                spread (sigma) is an assumption, lengths clipped to [2, 2048]

Every strategy's scheduler draws the same stream from the same seed, so their steps are
paired. A request with hidden rows to send (PD, hidden_len > 0) carries the decode side's
metadata dict, keyed as the PR's code reads it (prefill.py:1237-1260).
"""

from __future__ import annotations

import math
import random
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bench.core.scenarios import Scenario

# ShareGPT as sglang bench_serving uses it: sgl-project/sglang#2805 (369,103 input / 326,408
# output tokens over 1,648 requests).
SHAREGPT_MEAN_TOKENS = {"prompts": 224, "outputs": 198}
SHAREGPT_SIGMA = 1.0  # assumption: the published figures are means only
SHAREGPT_CLIP = (2, 2048)
# DeepSeek-class hidden size: DeepSeek-V3's config.json hidden_size 7168; a row is capture layers
# x hidden size (dspark_disaggregation.py:104 at bytedance-iaas/sglang c96e68b62b).
HIDDEN_SIZE = 7168
# Capture layers: consecutive ids from here (an assumption; the draft config lists them,
# python/sglang/srt/speculative/dflash_utils.py:407-430 at c96e68b62b).
FIRST_CAPTURE_LAYER = 40


@dataclass(slots=True)
class Arrival:
    """One request as the scheduler receives it."""

    req: Any
    prompt_len: int
    output_len: int
    meta: dict[str, Any] | None  # the decode side's PD hidden metadata; None: no hidden rows

    @property
    def hidden_len(self) -> int:
        return 0 if self.meta is None else int(self.meta["hidden_len"])


def sample_length(dist: str, rng: random.Random, *, range_ratio: float, role: str) -> int:
    """One length from a named distribution (role: 'prompts' or 'outputs')."""
    if dist == "sharegpt":
        mean = SHAREGPT_MEAN_TOKENS[role]
        mu = math.log(mean) - SHAREGPT_SIGMA**2 / 2  # so the log-normal's mean is `mean`
        lo, hi = SHAREGPT_CLIP
        return max(lo, min(hi, int(rng.lognormvariate(mu, SHAREGPT_SIGMA))))
    if dist.startswith("random-") and dist.endswith("k"):
        full = int(dist[len("random-") : -1]) * 1024
        return rng.randint(max(int(full * range_ratio), 1), full)
    raise ValueError(f"unknown length distribution {dist!r}")


def max_length(dist: str) -> int:
    """The longest length a named distribution gives."""
    if dist == "sharegpt":
        return SHAREGPT_CLIP[1]
    if dist.startswith("random-") and dist.endswith("k"):
        return int(dist[len("random-") : -1]) * 1024
    raise ValueError(f"unknown length distribution {dist!r}")


def mean_length(dist: str, *, range_ratio: float, role: str) -> float:
    """The distribution's mean (clipping ignored), for capacity checks and docs."""
    if dist == "sharegpt":
        return float(SHAREGPT_MEAN_TOKENS[role])
    full = int(dist[len("random-") : -1]) * 1024
    return (max(int(full * range_ratio), 1) + full) / 2


def hidden_meta(scenario: Scenario, prompt_len: int, cached_prefix: int) -> dict[str, Any]:
    """The ~10-key metadata the decode side sends (copied into the state at finalize)."""
    hidden_len = prompt_len - cached_prefix
    layers = list(range(FIRST_CAPTURE_LAYER, FIRST_CAPTURE_LAYER + scenario.capture_layers))
    width = HIDDEN_SIZE * len(layers)
    return {
        "hidden_start": cached_prefix,
        "hidden_len": hidden_len,
        "streaming_hidden": scenario.streaming,
        # decode.py:1232: the decode side's receive window
        "window_rows": min(hidden_len, scenario.decode_pool_rows),
        "radix_policy": "lru",
        "pp_slices": {"0": {"slice_start": 0, "slice_len": width}},
        "hidden_size": HIDDEN_SIZE,
        "target_layer_ids": layers,
        "decode_prefix_len": cached_prefix,
        "bootstrap_room": 0,
    }


def request_stream(
    req_cls: type, scenario: Scenario, seed: int, *, rid_prefix: str = "req"
) -> Iterator[Arrival]:
    """An endless, seeded stream of arrivals; same seed, same stream, for every strategy.
    Request ids are `<rid_prefix>-<seed>-<n>`: schedulers that share a process must use
    distinct prefixes, as request ids are unique in a real server (rid_dict keys by them)."""
    rng = random.Random(seed)
    # A request's token ids are an array('q') of its prompt's length, as in SGLang's Req
    # (origin_input_ids, python/sglang/srt/managers/schedule_batch.py at c96e68b62b): slices of
    # one seeded pool, so a request costs a
    # copy, not prompt_len random draws.
    longest = max_length(scenario.prompts)
    token_pool = array("q", (rng.randrange(32000) for _ in range(2 * longest)))
    n = 0
    while True:
        prompt_len = sample_length(
            scenario.prompts, rng, range_ratio=scenario.prompt_range_ratio, role="prompts"
        )
        output_len = sample_length(
            scenario.outputs, rng, range_ratio=scenario.prompt_range_ratio, role="outputs"
        )
        cached = int(prompt_len * rng.random() * scenario.cached_prefix_max_frac)
        uses_pd = rng.random() < scenario.pd_fraction and prompt_len > cached
        offset = rng.randrange(longest)
        ids = token_pool[offset : offset + prompt_len]
        meta = hidden_meta(scenario, prompt_len, cached) if uses_pd else None
        rid = f"{rid_prefix}-{seed}-{n}"
        n += 1
        # No local keeps the request: a paused generator must not hold the last one alive.
        yield Arrival(
            req=req_cls(rid, ids, output_len),
            prompt_len=prompt_len,
            output_len=output_len,
            meta=meta,
        )
