"""The requests a real scheduler receives: the harness's arrival distributions (bench.core.arrivals),
built into the revision's own TokenizedGenerateReqInput as its tokenizer manager builds them
(ids, SamplingParams normalised and verified), and encoded for the wire.

Token ids are synthetic: each request's first two ids encode its index, so no two requests share
a prefix by accident and the radix cache matches only what a preset shares on purpose (a
generated-shared-prefix group's system prompt). Sampling follows sglang bench_serving's defaults
(python/sglang/benchmark/serving.py:276-285 at sgl-project/sglang d55f1c28e2: stream on,
temperature 0, ignore_eos), so requests end by max_new_tokens.
"""

from __future__ import annotations

import dataclasses
import inspect
import random
from array import array
from dataclasses import dataclass
from typing import Any

from bench.core.arrivals import sample_length

FIRST_ID = 3  # 0-2: pad, bos, eos of the stand-in model
_BLOCK = 1 << 16


@dataclass(frozen=True)
class Workload:
    """What arrives: lengths, sharing, the running target (bench.real.presets)."""

    running: int  # live requests kept in the system (a closed loop: one in for one out)
    prompts: str  # a length distribution, or "fixed:N" (a shared-prefix group's question)
    prompt_range_ratio: float
    outputs: str  # a length distribution (bench.core.arrivals), or "fixed:N"
    stream: bool
    vocab_size: int
    prefix_groups: int = 0  # generated-shared-prefix: groups sharing a system prompt (0: none)
    prefix_len: int = 0
    seed: int = 0
    # a disaggregated node's requests carry a bootstrap room: with the fake transfer backend the
    # tokenizer numbers them (python/sglang/srt/managers/tokenizer_manager.py:1410-1411 at
    # sgl-project/sglang d55f1c28e2)
    bootstrap_rooms: bool = False

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Workload:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in names})


class RequestFactory:
    """Seeded: every process of a preset receives the same stream, in the same order."""

    def __init__(self, workload: Workload) -> None:
        from sglang.srt.managers import io_struct
        from sglang.srt.sampling.sampling_params import (
            SamplingParams,
        )

        self.w = workload
        self.rng = random.Random(workload.seed)
        span = workload.vocab_size - FIRST_ID
        self.span = span
        block = random.Random(workload.seed + 1)
        self.block = array("q", (FIRST_ID + block.randrange(span) for _ in range(_BLOCK)))
        self.prefixes = [
            array("q", (FIRST_ID + random.Random(1000 + g).randrange(span) for _ in range(n)))
            for g, n in enumerate([workload.prefix_len] * workload.prefix_groups)
        ]
        self.cls = io_struct.TokenizedGenerateReqInput
        self.params_cls = SamplingParams
        self.fields = _fields(self.cls)
        self.ids_as_array = "array" in str(self.fields.get("input_ids", ""))
        self.made = 0
        self.bootstrap_host = None
        if workload.bootstrap_rooms:
            # what sglang bench_serving sends to a fake-transfer deployment
            # (python/sglang/benchmark/serving.py:1990 at sgl-project/sglang d55f1c28e2)
            from sglang.srt.disaggregation import utils as disagg

            self.bootstrap_host = getattr(disagg, "FAKE_BOOTSTRAP_HOST", None)

    # -- lengths ----------------------------------------------------------------------------

    def _length(self, spec: str, role: str, range_ratio: float) -> int:
        if spec.startswith("fixed:"):
            return int(spec.partition(":")[2])
        return sample_length(spec, self.rng, range_ratio=range_ratio, role=role)

    def _output_len(self, initial: bool) -> int:
        n = self._length(self.w.outputs, "outputs", 0.0)
        # The first cohort starts where a long-running server's batch is: a request caught in
        # flight has a uniform share of its output left, so completions are spread from the
        # first iteration instead of arriving as one wave.
        return self.rng.randint(1, n) if initial else n

    def _ids(self, index: int) -> array[int]:
        head = array(
            "q", (FIRST_ID + index % self.span, FIRST_ID + (index // self.span) % self.span)
        )
        if self.prefixes:
            group = self.prefixes[index % len(self.prefixes)]
            question = self._length(self.w.prompts, "prompts", self.w.prompt_range_ratio)
            return group + head + self._body(max(0, question - 2))
        n = self._length(self.w.prompts, "prompts", self.w.prompt_range_ratio)
        return head + self._body(max(0, n - 2))

    def _body(self, n: int) -> array[int]:
        start = self.rng.randrange(_BLOCK)
        out = self.block[start : start + n]
        while len(out) < n:
            out += self.block[: n - len(out)]
        return out

    # -- the revision's objects -------------------------------------------------------------

    def make(self, *, initial: bool = False) -> tuple[Any, int, int]:
        """(the request object, its prompt length, its output length)."""
        index = self.made
        self.made += 1
        ids = self._ids(index)
        output_len = self._output_len(initial)
        params = self.params_cls(max_new_tokens=output_len, temperature=0.0, ignore_eos=True)
        _call(params.normalize, None)
        _call(params.verify, self.w.vocab_size)
        values: dict[str, Any] = {
            "rid": f"rsb-{index}",
            "input_text": "",
            "input_ids": ids if self.ids_as_array else ids.tolist(),
            "input_embeds": None,
            "mm_inputs": None,
            "image_inputs": None,
            "token_type_ids": None,
            "sampling_params": params,
            "return_logprob": False,
            "logprob_start_len": -1,
            "top_logprobs_num": 0,
            "token_ids_logprob": None,
            "stream": self.w.stream,
            "return_hidden_states": False,
            "session_params": None,
            "lora_path": None,
            "lora_id": None,
            "custom_logit_processor": None,
            "bootstrap_host": self.bootstrap_host,
            "bootstrap_port": None,
            "bootstrap_room": index if self.w.bootstrap_rooms else None,
        }
        kwargs: dict[str, Any] = {}
        for name, required in self.fields.items():
            if name in values:
                kwargs[name] = values[name]
            elif required:
                raise TypeError(
                    f"TokenizedGenerateReqInput at this revision requires {name!r}, which the "
                    "driver does not know how to fill"
                )
        return self.cls(**kwargs), len(ids), output_len


def _fields(cls: type) -> dict[str, Any]:
    """name -> True where required; a dataclass or a msgspec Struct. The value's str() holds
    the annotation (checked for 'array')."""
    out: dict[str, Any] = {}
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            out[f.name] = _Field(str(f.type), required)
        return out
    import msgspec

    for info in msgspec.structs.fields(cls):
        out[info.name] = _Field(str(info.type), info.required)
    return out


@dataclass(frozen=True)
class _Field:
    annotation: str
    required: bool

    def __bool__(self) -> bool:
        return self.required

    def __str__(self) -> str:
        return self.annotation


def _call(method: Any, arg: Any) -> None:
    """normalize(tokenizer) / verify(vocab_size) across revisions that dropped the argument."""
    try:
        takes = len(inspect.signature(method).parameters)
    except (TypeError, ValueError):
        takes = 1
    method(arg) if takes else method()
