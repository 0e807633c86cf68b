"""The requests a real scheduler receives: the harness's arrival distributions (bench.core.arrivals),
built into the revision's own TokenizedGenerateReqInput as its tokenizer manager builds them
(ids, SamplingParams normalised with the tokenizer and verified), and encoded for the wire.

Token ids are synthetic: each request's first two ids encode its index, so no two requests share
a prefix by accident and the radix cache matches only what a preset shares on purpose (a
generated-shared-prefix group's system prompt, a session's earlier turns, a parallel-sampling
group's prompt). Sampling follows sglang bench_serving's defaults unless a preset says otherwise
(python/sglang/benchmark/serving.py:276-285 at sgl-project/sglang d55f1c28e2: stream on,
temperature 0, ignore_eos), so requests end by max_new_tokens; a preset's features
(bench.real.driver.features) add logprobs, stop strings, grammars, hidden states.

Request ids have one width ("rsb-" and nine digits): the scheduler matches an AbortReq's rid as
a prefix of the requests' (python/sglang/srt/managers/scheduler.py:4451 at d55f1c28e2), so no id
may be a prefix of another; the tokenizer manager's are uuid4 hex strings, of one width too.
"""

from __future__ import annotations

import dataclasses
import inspect
import random
from array import array
from dataclasses import dataclass, field
from typing import Any

from bench.core.arrivals import max_length, sample_length
from bench.real.driver.features import Drawn, Features

FIRST_ID = 3  # 0-2: pad, bos, eos of the stand-in model
_BLOCK = 1 << 16


def _longest(dist: str) -> int:
    return int(dist.partition(":")[2]) if dist.startswith("fixed:") else max_length(dist)


def rid_of(index: int) -> str:
    return f"rsb-{index:09d}"


@dataclass(frozen=True)
class Workload:
    """What arrives: lengths, sharing, the running target, features (bench.real.presets)."""

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
    # where a disaggregated request's KV goes: "" for the fake backend's host (a decode node's
    # requests), else a decode node's address (a prefill node's, through the driver's stand-in
    # transfer backend, bench.real.driver.transfer)
    bootstrap_host: str = ""
    features: Features = field(default_factory=Features)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Workload:
        names = {f.name for f in dataclasses.fields(cls)}
        kept = {k: v for k, v in raw.items() if k in names and k != "features"}
        return cls(**kept, features=Features.from_json(raw.get("features")))


@dataclass
class Lengths:
    """One request's tokens: its prompt (for the first cohort, with the output it has already
    generated) and the output it still has to generate."""

    ids: array[int]
    output_len: int
    generated: int = 0  # first cohort: tokens of its output already in its prompt


class RequestFactory:
    """Seeded: every process of a preset receives the same stream, in the same order."""

    def __init__(self, workload: Workload, tokenizer: Any = None) -> None:
        from sglang.srt.managers import io_struct
        from sglang.srt.sampling.sampling_params import SamplingParams

        self.w = workload
        self.tokenizer = tokenizer
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
        self.abort_cls = getattr(io_struct, "AbortReq", None)
        self.params_cls = SamplingParams
        self.fields = _fields(self.cls)
        self.param_fields = _fields(SamplingParams)
        self.ids_as_array = "array" in str(self.fields.get("input_ids", ""))
        self.made = 0  # requests built (prompts drawn)
        self.bootstrap_host = None
        if workload.bootstrap_rooms:
            # what sglang bench_serving sends to a fake-transfer deployment
            # (python/sglang/benchmark/serving.py:1990 at sgl-project/sglang d55f1c28e2)
            from sglang.srt.disaggregation import utils as disagg

            self.bootstrap_host = workload.bootstrap_host or getattr(
                disagg, "FAKE_BOOTSTRAP_HOST", None
            )

    # -- lengths ----------------------------------------------------------------------------

    def _length(
        self, spec: str, role: str, range_ratio: float, rng: random.Random | None = None
    ) -> int:
        if spec.startswith("fixed:"):
            return int(spec.partition(":")[2])
        return sample_length(spec, rng or self.rng, range_ratio=range_ratio, role=role)

    def lengths(self, *, initial: bool = False) -> Lengths:
        """A new request's prompt and output. The first cohort starts where a long-running
        server's batch is: a request caught in flight has generated a uniform share of its
        output, which it holds (prompt and generated tokens in the KV cache), and the rest is
        still to come, so completions are spread from the first iteration instead of arriving
        as one wave and the pool holds what a running batch holds. In flight, long requests are
        over-represented (length-biased): the first cohort's outputs are drawn so."""
        index = self.made
        self.made += 1
        ids = self._ids(index)
        n = self._length(self.w.outputs, "outputs", 0.0)
        if not initial:
            return Lengths(ids, n)
        # a request caught in flight is drawn in proportion to its length (a long one is in
        # flight for longer): rejection sampling of the output distribution
        longest = max(1, _longest(self.w.outputs))
        while self.rng.random() * longest > n:
            n = self._length(self.w.outputs, "outputs", 0.0)
        left = self.rng.randint(1, n)
        generated = n - left
        return Lengths(ids + self._body(generated), left, generated)

    def turn(self, key: int, turn: int) -> tuple[array[int], int]:
        """A session's next user message and the output its turn asks for. Drawn from a stream
        of the session's own (its first request's index and the turn), so every process sends
        the same turns whatever order its sessions' turns end in."""
        rng = random.Random((self.w.seed * 1_000_003 + key) * 131 + turn)
        n = self._length(self.w.features.turn_message, "prompts", 0.0, rng)
        return self._body(n, rng), self._length(self.w.outputs, "outputs", 0.0, rng)

    def history(self, key: int, depth: int) -> array[int]:
        """What a session caught at its turn `depth` holds beyond its first prompt: each earlier
        turn's output and the message after it (the first cohort starts mid-conversation, as it
        starts mid-output)."""
        out = array("q")
        for turn in range(1, depth):
            rng = random.Random((self.w.seed * 1_000_003 + key) * 131 + 10_000 + turn)
            n = self._length(self.w.outputs, "outputs", 0.0, rng)
            message, _ = self.turn(key, turn + 1)
            out += self._body(n, rng) + message
        return out

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

    def _body(self, n: int, rng: random.Random | None = None) -> array[int]:
        start = (rng or self.rng).randrange(_BLOCK)
        out = self.block[start : start + n]
        while len(out) < n:
            out += self.block[: n - len(out)]
        return out

    # -- the revision's objects -------------------------------------------------------------

    def params(self, max_new_tokens: int, drawn: Drawn) -> Any:
        """SamplingParams as the tokenizer manager builds them: the request's own, then
        normalize(tokenizer) and verify(vocab_size)."""
        f = self.w.features
        offered = {"max_new_tokens": max_new_tokens, "temperature": f.temperature}
        offered["ignore_eos"] = f.ignore_eos
        asked: dict[str, Any] = {}
        if f.top_p != 1.0:
            asked["top_p"] = f.top_p
        if f.top_k != -1:
            asked["top_k"] = f.top_k
        if drawn.stop:
            asked["stop"] = list(f.stop_strings)
        if drawn.grammar == "regex":
            asked["regex"] = f.regex_pattern
        elif drawn.grammar == "json":
            asked["json_schema"] = f.json_schema
        if drawn.n > 1:
            asked["n"] = drawn.n
        params = build(self.params_cls, self.param_fields, offered, asked, "SamplingParams")
        _call(params.normalize, self.tokenizer)
        _call(params.verify, self.w.vocab_size)
        return params

    def request(
        self,
        rid: str,
        ids: array[int],
        max_new_tokens: int,
        drawn: Drawn,
        *,
        room: int,
        stream: bool | None = None,
    ) -> Any:
        """The revision's TokenizedGenerateReqInput for one request."""
        f = self.w.features
        offered: dict[str, Any] = {
            "rid": rid,
            "input_text": "",
            "input_ids": ids if self.ids_as_array else ids.tolist(),
            "input_embeds": None,
            "mm_inputs": None,
            "image_inputs": None,
            "token_type_ids": None,
            "sampling_params": self.params(max_new_tokens, drawn),
            "return_logprob": False,
            "logprob_start_len": -1,
            "top_logprobs_num": 0,
            "token_ids_logprob": None,
            "stream": self.w.stream if stream is None else stream,
            "return_hidden_states": False,
            "session_params": None,
            "lora_path": None,
            "lora_id": None,
            "custom_logit_processor": None,
            "bootstrap_host": self.bootstrap_host,
            "bootstrap_port": None,
            "bootstrap_room": room if self.w.bootstrap_rooms else None,
        }
        asked: dict[str, Any] = {}
        if drawn.logprob:
            start = f.logprob_start_len
            if f.input_logprobs > 0:
                start = max(0, len(ids) - f.input_logprobs)
            asked.update(
                return_logprob=True, logprob_start_len=start, top_logprobs_num=f.top_logprobs_num
            )
        if drawn.hidden:
            asked["return_hidden_states"] = True if f.hidden_mode == "full" else "last"
        return build(self.cls, self.fields, offered, asked, "TokenizedGenerateReqInput")

    def abort(self, rid: str) -> Any:
        """The AbortReq a disconnecting client's tokenizer manager sends (abort_request at
        python/sglang/srt/managers/tokenizer_manager.py:1991-2007 at d55f1c28e2)."""
        if self.abort_cls is None:
            raise TypeError("io_struct at this revision has no AbortReq")
        return build(self.abort_cls, _fields(self.abort_cls), {}, {"rid": rid}, "AbortReq")


def build(
    cls: type, fields: dict[str, Any], offered: dict[str, Any], asked: dict[str, Any], what: str
) -> Any:
    """cls(**values): `offered` values where the revision has the field, `asked` ones (what a
    request's features need) always, an error naming the field where it has none. A required
    field the driver cannot fill is an error too."""
    for name in asked:
        if name not in fields:
            raise TypeError(f"{what} at this revision has no {name!r}, which the request asks for")
    values = {**{k: v for k, v in offered.items() if k in fields}, **asked}
    for name, required in fields.items():
        if required and name not in values:
            raise TypeError(
                f"{what} at this revision requires {name!r}, which the driver does not know "
                "how to fill"
            )
    return cls(**values)


def _fields(cls: type) -> dict[str, Any]:
    """name -> True where required; a dataclass, a msgspec Struct or a plain class's __init__.
    The value's str() holds the annotation (checked for 'array')."""
    out: dict[str, Any] = {}
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            out[f.name] = _Field(str(f.type), required)
        return out
    try:
        import msgspec

        is_struct = isinstance(cls, type) and issubclass(cls, msgspec.Struct)
    except ImportError:
        is_struct = False
    if is_struct:
        for info in msgspec.structs.fields(cls):
            out[info.name] = _Field(str(info.type), info.required)
        return out
    for name, p in inspect.signature(cls).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out[name] = _Field(str(p.annotation), p.default is inspect.Parameter.empty)
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
