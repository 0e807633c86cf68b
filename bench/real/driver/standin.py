"""The stand-in model: ModelRunner.forward and ModelRunner.sample replaced, everything around
them real (as SGLang's simulator does, tools/sglang-simulator, sgl-project/sglang #33824).

The revision's ModelRunner is built by its own __init__ from a tiny config (bench.real.driver.
server): its weights (dummy), KV pools, attention backend and memory checks are real. Its
`forward` returns at once the revision's own ModelRunnerOutput holding a LogitsProcessorOutput
with no logits; `sample` returns one next token per sequence, computed from the sequence's
length (deterministic, never the EOS: requests end by max_new_tokens). The driver never asks
for logprobs or hidden states, so nothing downstream reads the missing logits; if the revision
does, it fails loudly (None has no shape), it is never handed a made-up value.

Both are timed as the phase `stand_in` and left out of every iteration figure.
"""

from __future__ import annotations

from typing import Any

from bench.real.driver.phases import Phases

# Multiplicative hashing of the length: a token per (sequence, position) that varies.
_MIX = 2654435761


def install(phases: Phases, vocab_size: int) -> list[str]:
    import torch
    from sglang.srt.layers.logits_processor import (
        LogitsProcessorOutput,
    )
    from sglang.srt.model_executor import model_runner

    output_class = model_runner.ModelRunnerOutput
    span = vocab_size - 3  # ids 0-2 are pad, bos, eos in the stand-in config

    def forward(self: Any, forward_batch: Any, *args: Any, **kwargs: Any) -> Any:
        phases.enter("stand_in")
        try:
            self.forward_pass_id = getattr(self, "forward_pass_id", 0) + 1
            return output_class(
                logits_output=LogitsProcessorOutput(next_token_logits=None),
                can_run_graph=False,
            )
        finally:
            phases.leave()

    def sample(self: Any, logits_output: Any, forward_batch: Any, *args: Any, **kw: Any) -> Any:
        phases.enter("stand_in")
        try:
            lens = forward_batch.seq_lens.to(torch.int64)
            return torch.remainder(lens * _MIX + 12345, span) + 3
        finally:
            phases.leave()

    model_runner.ModelRunner.forward = forward
    model_runner.ModelRunner.sample = sample
    return [
        "ModelRunner.forward: returns at once (no model is run; its host-side launch work is "
        "not measured)",
        "ModelRunner.sample: one next token per sequence from its length, never EOS",
    ]
