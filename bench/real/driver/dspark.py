"""The stand-in's DSpark draft: what the revision's DSpark head computes, replaced by made-up
values of its shapes, timed as the stand-in's (on a GPU server it is device work, as the model's
forward is).

DSpark (python/sglang/srt/speculative/dspark_components/ at sgl-project/sglang d55f1c28e2)
drafts a block of gamma tokens in one forward of its draft model over the target's hidden
states, then the target verifies the block as one linear window of gamma + 1. Around the draft
model's forward (the stand-in's, bench.real.driver.standin) the revision calls three pieces of
the head's own compute, which the stand-in replaces:

- `compute_base_logits` (python/sglang/srt/models/dspark.py:398-424 there): the target's LM
  head over the draft's hidden states, [bs * gamma, vocab]. The stand-in returns one zero
  column per row: the Markov head below, the only reader, is the stand-in's too.
- the Markov head's `sample_block` (dspark.py:36-62, 114-126 and 233-269 there): per block
  position, the base logits biased by the previous token and a sampler's pick. The stand-in
  proposes the text's next tokens from the block's anchor (bench.real.driver.spec.successor,
  what the draft of every other algorithm proposes), so the verify's predictions decide the
  accepts; it hands the base logits back as the corrected logits, which only the sampling
  accept reads (every request of a preset is greedy: temperature 0).
- `write_target_hidden_kv` (dspark.py:576-648 there): the target's hidden states at the draft's
  layers projected into the draft's KV cache (a GEMM, norms, RoPE, a Triton write). The
  stand-in writes nothing; it checks the hidden states are the width the draft's projection
  reads (its fc, len(target_layer_ids) x hidden size), as project_target_hidden does
  (python/sglang/srt/models/dflash.py:411-424 there), and refuses any other.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from bench.real.driver import spec
from bench.real.driver.phases import Phases

MODULE = "sglang.srt.models.dspark"
# DSpark's device kernels: classes whose `execute` runs the Triton kernel for CUDA inputs and
# the revision's own torch reference for CPU inputs (inputs_on_cuda, python/sglang/kernels/ops/
# speculative/dspark/dispatch.py:6-14 at sgl-project/sglang d55f1c28e2; the same folder under
# python/sglang/srt/speculative/dspark_components/kernels/ at bytedance-iaas/sglang
# 32990a0560). On the CPU the reference runs: timed as the stand-in's, as the device's work.
KERNEL_PACKAGES = (
    "sglang.kernels.ops.speculative.dspark",
    "sglang.srt.speculative.dspark_components.kernels",
)
KERNEL_MODULES = (
    "dspark_accept", "dspark_verify_window", "dspark_attn_metadata", "dspark_schedule",
    "dspark_draft_model",
)  # fmt: skip
MIXIN = "DSparkDraftMixin"
INJECTED: dict[str, int] = {"calls": 0, "rows": 0}  # hidden rows handed to the injection


def block_proposals(anchors: torch.Tensor, gamma: int) -> torch.Tensor:
    """[bs, gamma]: the text's next gamma tokens after each anchor (the bonus token the last
    verify sampled), each the successor of the one before."""
    out = torch.empty((anchors.shape[0], gamma), dtype=torch.int64)
    token = anchors.to(torch.int64)
    for j in range(gamma):
        token = spec.successor(token)
        out[:, j] = token
    return out


def base_logits(self: Any, hidden: torch.Tensor) -> tuple[torch.Tensor, None]:
    """compute_base_logits' stand-in: one zero logit per row, no confidence tap."""
    return torch.zeros((hidden.shape[0], 1), dtype=torch.float32), None


def sample_block(
    self: Any,
    base: torch.Tensor,
    *,
    first_prev_tokens: torch.Tensor,
    hidden_states: Any = None,
    sampler: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The Markov head's sample_block stand-in: (proposals [bs, gamma], corrected logits)."""
    return block_proposals(first_prev_tokens, int(base.shape[1])), base


class WidthMismatch(RuntimeError):
    pass


def check_width(draft: Any, hidden: torch.Tensor) -> None:
    """The target's hidden rows must be [N, fc.in_features], as the draft's projection reads."""
    fc = getattr(draft, "fc", None)
    expected = int(getattr(fc, "in_features", hidden.shape[-1]))
    if hidden.ndim != 2 or int(hidden.shape[-1]) != expected:
        raise WidthMismatch(
            f"the DSpark draft reads the target's hidden states {expected} wide, the stand-in "
            f"handed it {tuple(hidden.shape)}"
        )


def write_target_hidden_kv(self: Any, *, target_hidden: torch.Tensor, **_kwargs: Any) -> None:
    """write_target_hidden_kv's stand-in: the width checked, nothing written."""
    check_width(self, target_hidden)
    INJECTED["calls"] += 1
    INJECTED["rows"] += int(target_hidden.shape[0])


def _kernel_classes() -> list[type]:
    out: list[type] = []
    for package in KERNEL_PACKAGES:
        for name in KERNEL_MODULES:
            try:
                module = importlib.import_module(f"{package}.{name}")
            except ImportError:
                continue
            out += [
                cls
                for cls in vars(module).values()
                if isinstance(cls, type)
                and cls.__module__ == module.__name__
                and isinstance(vars(cls).get("execute"), classmethod)
            ]
    return out


def time_kernels(phases: Phases) -> list[str]:
    """Each DSpark kernel class's `execute` timed as the stand-in's; the classes' names."""
    names = []
    for cls in _kernel_classes():
        func = vars(cls)["execute"].__func__
        cls.execute = classmethod(phases.timed("stand_in", func))  # type: ignore[attr-defined]
        names.append(cls.__name__)
    return names


def install(phases: Phases) -> list[str]:
    """Replace the revision's DSpark head compute (where it has models/dspark.py)."""
    try:
        module = importlib.import_module(MODULE)
    except ImportError:
        return []
    mixin = getattr(module, MIXIN, None)
    if mixin is None:
        return []
    mixin.compute_base_logits = phases.timed("stand_in", base_logits)
    mixin.write_target_hidden_kv = phases.timed("stand_in", write_target_hidden_kv)
    heads = [
        cls
        for cls in vars(module).values()
        if isinstance(cls, type) and "sample_block" in vars(cls) and cls.__module__ == MODULE
    ]
    for cls in heads:
        cls.sample_block = phases.timed("stand_in", sample_block)  # type: ignore[attr-defined]
    kernels = time_kernels(phases)
    return [
        f"DSpark's device kernels ({len(kernels)} classes: {', '.join(sorted(kernels))}) run "
        "the revision's own torch references on CPU inputs, each call timed as the stand-in's",
        "the DSpark head's compute (models/dspark.py): its base logits are one zero column, its "
        f"Markov sampling ({', '.join(c.__name__ for c in heads)}) proposes the text's next "
        "tokens from the block's anchor, its KV injection of the target's hidden states checks "
        "their width and writes nothing; each timed as the stand-in's",
    ]
