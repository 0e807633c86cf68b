"""The stand-in model: ModelRunner.forward and ModelRunner.sample replaced, everything around
them real (as SGLang's simulator does, tools/sglang-simulator, sgl-project/sglang #33824).

The revision's ModelRunner is built by its own __init__ from a tiny config (bench.real.driver.
server): its weights (dummy), KV pools, attention backend and memory checks are real. What the
stand-in returns is what the revision's own forward and sampler would hand the scheduler, shaped
as they shape it, with made-up values:

- forward: the revision's ModelRunnerOutput holding a LogitsProcessorOutput. For a batch that
  asks for nothing but tokens, with no logits (nothing downstream reads them). For a batch that
  returns input logprobs (an extend with return_logprob) or hidden states, the revision's own
  LogitsProcessor is called on zero hidden states (`hidden_width` wide: a served model's hidden
  size, not the stand-in's), with its `_get_logits` (the LM head's matmul) replaced by zero
  logits, so the pruning, the input-logprob fields and the captured hidden states are the
  revision's own.
- sample: one next token per sequence, from its length (never the EOS: requests end by
  max_new_tokens), except that a request whose client sent a cap gets the EOS once its output
  reaches the length drawn for it (bench.real.driver.features, `max_new_tokens`); for a request
  with a grammar, a token its grammar allows, read from the vocab
  mask the revision's own `update_regex_vocab_mask` filled (that fill is the scheduler thread's
  own work on a GPU server too, so it is timed with the forward, not as the stand-in); for a
  batch that returns logprobs, the sampler's fields: next_token_logprobs (a tensor per sequence),
  the top-k values and ids (one tensor per sequence), the requested token ids' logprobs.

Both are timed as the phase `stand_in` and left out of every iteration figure.
"""

from __future__ import annotations

from typing import Any

from bench.real.driver import spec
from bench.real.driver.phases import Phases

# Multiplicative hashing of the length: a token per (sequence, position) that varies.
_MIX = 2654435761
LOGPROB = -0.6931  # the made-up logprob of every sampled token (ln 0.5)


def _needs_logits_processor(forward_batch: Any) -> bool:
    mode = getattr(forward_batch, "capture_hidden_mode", None)
    if mode is not None and getattr(mode, "need_capture", lambda: False)():
        return True
    return bool(getattr(forward_batch, "return_logprob", False)) and bool(
        forward_batch.forward_mode.is_extend()
    )


# The verify's predictions, handed from the stand-in forward to its _get_logits (the revision's
# LogitsProcessor calls it between the two with the rows it keeps: every row in a verify).
SPEC_PENDING: list[Any] = []
DRAFT_INPUT: list[Any] = []  # the forward's input ids (a draft proposes from each row's token)


def _spec_forward(runner: Any, forward_batch: Any) -> bool:
    """Whether a forward under speculative decoding returns logits the revision reduces: the
    target's verify, any forward of the draft model, and a forward that captures hidden states
    for the draft."""
    if getattr(runner, "is_draft_worker", False):
        return True
    if forward_batch.forward_mode.is_target_verify():
        return True
    mode = getattr(forward_batch, "capture_hidden_mode", None)
    return bool(mode is not None and getattr(mode, "need_capture", lambda: False)())


def _width(runner: Any) -> int:
    """The hidden states a runner hands on under speculative decoding: its model's own width
    (the target's feed the draft, which reads them at that width)."""
    config = getattr(getattr(runner, "model_config", None), "hf_config", None)
    return int(getattr(config, "hidden_size", 64) or 64)


def _logits_output(runner: Any, forward_batch: Any, width: int, speculative: bool) -> Any:
    """What the runner's model returns for a batch that needs its LogitsProcessor (hidden
    states, logprobs, a verify's or a draft's logits), over zero hidden states `width` wide."""
    import torch
    from sglang.srt.layers import logits_processor as lp

    ids = forward_batch.input_ids
    hidden = torch.zeros((ids.shape[0], width), dtype=torch.bfloat16)
    model = runner.model
    if getattr(model, "logits_processor", None) is None:
        # a block draft (DFlash, DSpark) hands its hidden states on, no logits
        # (DFlashDraftModel.forward: python/sglang/srt/models/dflash.py:421-445 at
        # sgl-project/sglang d55f1c28e2)
        return lp.LogitsProcessorOutput(next_token_logits=None, hidden_states=hidden)
    drafting = getattr(runner, "is_draft_worker", False)
    if speculative and not drafting and forward_batch.forward_mode.is_target_verify():
        SPEC_PENDING.append(spec.verify_predictions(forward_batch))
    DRAFT_INPUT.append(ids)
    try:
        return model.logits_processor(
            ids, hidden, model.lm_head, forward_batch, *_aux_hidden(model, hidden)
        )
    finally:
        SPEC_PENDING.clear()
        DRAFT_INPUT.clear()


def _aux_hidden(model: Any, hidden: Any) -> list[Any]:
    """The target's hidden states at the layers a draft reads (EAGLE3's, DFlash's and DSpark's
    target_layer_ids), where the model captures them (capture_aux_hidden_states, set by
    set_dflash_layers_to_capture: python/sglang/srt/models/llama.py:905-915 at sgl-project/
    sglang d55f1c28e2): one zero tensor per layer, which the revision's LogitsProcessor
    concatenates, so the draft reads them at its width (layers x hidden size)."""
    if not getattr(model, "capture_aux_hidden_states", False):
        return []
    layers = getattr(getattr(model, "model", None), "layers_to_capture", None) or []
    return [[hidden for _ in layers]] if layers else []


def _allowed_tokens(torch: Any, mask_row: Any, vocab: int) -> Any:
    """Token ids a grammar's bitmask row (int32 words, bit j of word w: token 32w + j) allows."""
    if mask_row.dtype == torch.bool:  # a boolean mask: True where the token is disallowed
        return (~mask_row[:vocab]).nonzero().flatten()
    shifts = torch.arange(32, dtype=mask_row.dtype)
    bits = (mask_row.unsqueeze(-1) >> shifts) & 1
    return bits.flatten()[:vocab].nonzero().flatten()


class State:
    """What the driver tells the stand-in between iterations: per request-pool slot, the
    sequence length at which its next token is the EOS (a request whose client sent a cap;
    bench.real.driver.client), or None when no request has one."""

    eos_at: Any = None


STATE = State()
EOS = 2  # the stand-in model's eos_token_id (bench.real.driver.server.MODEL_CONFIG)


def install(phases: Phases, vocab_size: int, hidden_width: int = 64) -> list[str]:
    import torch
    from sglang.srt.layers import logits_processor as lp
    from sglang.srt.model_executor import model_runner

    output_class = model_runner.ModelRunnerOutput
    span = vocab_size - 3  # ids 0-2 are pad, bos, eos in the stand-in config
    zeros_row = torch.zeros((1, vocab_size), dtype=torch.float32)

    def get_logits(self: Any, hidden_states: Any, *args: Any, **kwargs: Any) -> Any:
        rows = hidden_states.shape[0]
        if spec.STATE.model is None:
            return zeros_row.expand(rows, vocab_size)
        if SPEC_PENDING:
            return spec.logits(SPEC_PENDING.pop())
        return spec.logits(spec.proposals(rows, DRAFT_INPUT[0] if DRAFT_INPUT else None))

    processor = getattr(lp, "LogitsProcessor", None)
    if processor is not None:
        processor._get_logits = get_logits

    def forward(self: Any, forward_batch: Any, *args: Any, **kwargs: Any) -> Any:
        phases.enter("stand_in")
        try:
            self.forward_pass_id = getattr(self, "forward_pass_id", 0) + 1
            speculative = spec.STATE.model is not None and _spec_forward(self, forward_batch)
            if speculative or _needs_logits_processor(forward_batch):
                width = _width(self) if speculative else hidden_width
                out = _logits_output(self, forward_batch, width, speculative)
            else:
                out = lp.LogitsProcessorOutput(next_token_logits=None)
            return output_class(logits_output=out, can_run_graph=False)
        finally:
            phases.leave()

    def sample(self: Any, logits_output: Any, forward_batch: Any, *args: Any, **kw: Any) -> Any:
        info: Any = getattr(forward_batch, "sampling_info", None)
        grammars = getattr(info, "grammars", None)
        if grammars:
            info.update_regex_vocab_mask()  # the revision's mask fill, timed as the forward's
        phases.enter("stand_in")
        try:
            lens = forward_batch.seq_lens.to(torch.int64)
            ids = torch.remainder(lens * _MIX + 12345, span) + 3
            if spec.STATE.model is not None and forward_batch.forward_mode.is_extend():
                ids = spec.first_tokens(forward_batch, ids)
            if STATE.eos_at is not None:
                slots = forward_batch.req_pool_indices.to(torch.int64)
                ids[lens + 1 >= STATE.eos_at[slots]] = EOS
            if grammars:
                _grammar_tokens(torch, ids, info, grammars, vocab_size)
            if getattr(forward_batch, "return_logprob", False):
                _logprobs(torch, logits_output, forward_batch, ids, vocab_size)
            return ids
        finally:
            phases.leave()

    model_runner.ModelRunner.forward = forward
    model_runner.ModelRunner.sample = sample
    return [
        "ModelRunner.forward: returns at once (no model is run; its host-side launch work is "
        "not measured); a batch returning input logprobs or hidden states gets them from the "
        f"revision's LogitsProcessor over zero hidden states {hidden_width} wide, with zero logits",
        "ModelRunner.sample: one next token per sequence from its length, the EOS only once a "
        "request whose client sent a cap reaches its drawn length; a grammar's request gets a "
        "token its vocab mask allows (the mask filled by the revision); logprobs made up, "
        "shaped as the revision's sampler shapes them",
    ]


def _grammar_tokens(torch: Any, ids: Any, info: Any, grammars: Any, vocab: int) -> None:
    """A token the vocab mask allows for each request with a grammar (the one at the
    sequence's hashed position among the allowed, preferring any but the EOS)."""
    mask = getattr(info, "vocab_mask", None)
    if mask is None:
        return
    for i, grammar in enumerate(grammars):
        if grammar is None or i >= mask.shape[0]:
            continue
        allowed = _allowed_tokens(torch, mask[i], vocab)
        if allowed.numel() == 0:
            continue
        if allowed.numel() > 1:
            allowed = allowed[allowed != 2]
        ids[i] = allowed[int(ids[i]) % allowed.numel()]


def _logprobs(torch: Any, out: Any, forward_batch: Any, ids: Any, vocab: int) -> None:
    """What the sampler writes for a batch that returns logprobs (LogprobResult.write_output_to
    at python/sglang/srt/layers/logprob_processor.py in sglang 0.5.23; the result processors of
    sgl-project/sglang from May to October 2026 read a tensor per batch for the sampled tokens
    and one tensor per sequence for the top-k and the requested ids)."""
    n = ids.shape[0]
    out.next_token_logprobs = torch.full((n,), LOGPROB, dtype=torch.float32)
    nums = list(getattr(forward_batch, "top_logprobs_nums", None) or [])
    if nums and any(k > 0 for k in nums):
        width = max(nums)
        vals = torch.full((n, width), LOGPROB, dtype=torch.float32)
        idx = (ids.unsqueeze(-1) + torch.arange(width, dtype=torch.int64)) % vocab
        out.next_token_top_logprobs_val = [vals[i, :k] for i, k in enumerate(nums)]
        out.next_token_top_logprobs_idx = [idx[i, :k] for i, k in enumerate(nums)]
    wanted = list(getattr(forward_batch, "token_ids_logprobs", None) or [])
    if wanted and any(t is not None for t in wanted):
        out.next_token_token_ids_logprobs_val = [
            torch.full((len(t or ()),), LOGPROB, dtype=torch.float32) for t in wanted
        ]
        out.next_token_token_ids_logprobs_idx = [list(t or ()) for t in wanted]
