"""What a preset's clients ask of the server beyond plain generation, request by request.

Each feature is a share of requests (0 = none) and its parameters; bench.real.presets gives each
value its source. Which requests take a feature is drawn from a stream of its own, seeded, one
draw per feature per request whatever the shares: every process of a preset sends the same
requests with the same features, and changing one share leaves the others' requests unchanged.

    logprob        return_logprob, top_logprobs_num, logprob_start_len (-1: output tokens only)
    stop           stop strings (checked by decoding each request's tail with the tokenizer)
    regex / json   a regex or a JSON schema, compiled by the revision's grammar backend
    parallel       n > 1: the tokenizer manager's parallel sampling (a prefix-caching request
                   with max_new_tokens 0, then n requests of the same prompt)
    abort          the client disconnects after a uniform share of its output: AbortReq(rid)
    session        multi-turn: when a turn finishes, the next arrives with the previous prompt,
                   its output and a new message as its prompt, so the radix cache matches
    hidden         return_hidden_states (the server runs with enable_return_hidden_states)
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any

# The order draws are taken in (a new feature goes at the end: the others' draws stay).
ORDER = ("logprob", "stop", "regex", "json", "parallel", "abort", "session", "hidden")


@dataclass(frozen=True)
class Features:
    logprob: float = 0.0
    top_logprobs_num: int = 0
    logprob_start_len: int = -1
    # input logprobs for the prompt's last N positions (logprob_start_len = prompt - N); 0: none.
    # Over whole prompts the stand-in would compute a log-softmax per position (docs/REAL.md).
    input_logprobs: int = 0
    stop: float = 0.0
    stop_strings: tuple[str, ...] = ("</search>", "</answer>")
    regex: float = 0.0
    regex_pattern: str = r"[a-z]{3,12}@[a-z]{3,8}\.(com|org|net)"
    json: float = 0.0
    json_schema: str = (
        '{"type": "object", "properties": {"name": {"type": "string", "maxLength": 24}, '
        '"count": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string", '
        '"maxLength": 12}, "maxItems": 4}}, "required": ["name", "count", "tags"]}'
    )
    parallel: float = 0.0
    n: int = 8
    abort: float = 0.0
    session: float = 0.0
    turns: int = 5  # turns per session, the first included
    turn_message: str = "fixed:128"  # a length distribution (bench.core.arrivals) or fixed:N
    think_iterations: int = 0  # iterations between a turn's end and the next turn's arrival
    hidden: float = 0.0
    hidden_mode: str = "last"  # return_hidden_states "last" (the last token's) or "full" (True)
    # the max_new_tokens clients send: 0 sends the drawn output length itself (with ignore_eos
    # the request ends there, as bench_serving's do); N > 0 sends N and the stand-in samples the
    # EOS once the drawn length is reached (needs ignore_eos off), so the scheduler admits and
    # reserves by the cap, not the length, as it does for a served model's requests
    max_new_tokens: int = 0
    # sampling every request carries
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = -1
    ignore_eos: bool = True

    @classmethod
    def from_json(cls, raw: dict[str, Any] | None) -> Features:
        if not raw:
            return cls()
        names = {f.name for f in dataclasses.fields(cls)}
        kept: dict[str, Any] = {
            k: (tuple(v) if isinstance(v, list) else v) for k, v in raw.items() if k in names
        }
        return cls(**kept)

    def to_json(self) -> dict[str, Any]:
        return {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()
        }

    def share(self, name: str) -> float:
        return float(getattr(self, name))

    @property
    def used(self) -> tuple[str, ...]:
        """The features any request takes (a share above zero)."""
        return tuple(n for n in ORDER if self.share(n) > 0)

    @property
    def needs_tokenizer(self) -> bool:
        return any(self.share(n) > 0 for n in ("stop", "regex", "json"))


@dataclass
class Drawn:
    """One request's features."""

    logprob: bool = False
    stop: bool = False
    grammar: str = ""  # "", "regex" or "json"
    n: int = 1
    abort_share: float | None = None  # the share of its output after which the client leaves
    turns: int = 1
    hidden: bool = False
    flags: list[str] = field(default_factory=list)


class Drawer:
    """The seeded per-request draws (a stream of its own, beside the lengths' stream)."""

    def __init__(self, features: Features, seed: int) -> None:
        self.f = features
        self.rng = random.Random(seed * 7919 + 17)

    def draw(self) -> Drawn:
        u = {name: self.rng.random() for name in ORDER}
        abort_at = self.rng.random()  # drawn always, used when the request is aborted
        f = self.f
        d = Drawn()
        d.logprob = u["logprob"] < f.logprob
        d.stop = u["stop"] < f.stop and bool(f.stop_strings)
        if u["regex"] < f.regex and f.regex_pattern:
            d.grammar = "regex"
        elif u["json"] < f.json and f.json_schema:
            d.grammar = "json"
        d.n = f.n if u["parallel"] < f.parallel and f.n > 1 else 1
        d.abort_share = abort_at if u["abort"] < f.abort else None
        d.turns = f.turns if u["session"] < f.session and f.turns > 1 else 1
        d.hidden = u["hidden"] < f.hidden and f.hidden_mode in ("last", "full")
        d.flags = [
            name
            for name, on in (
                ("logprob", d.logprob),
                ("stop", d.stop),
                ("regex", d.grammar == "regex"),
                ("json", d.grammar == "json"),
                ("parallel", d.n > 1),
                ("abort", d.abort_share is not None),
                ("session", d.turns > 1),
                ("hidden", d.hidden),
            )
            if on
        ]
        return d
