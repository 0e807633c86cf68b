"""The stand-in's speculative decoding: what the target model's verify predicts and what the
draft model proposes, so that the revision's own verify accepts, per request and step, the
number of draft tokens drawn for it.

The target's verify forward returns, for each draft token of a request (the nodes of its draft
tree, or of its linear window: DFlash and DSpark verify a chain), the token the model predicts
after it (bench.real.driver.logits: logits whose argmax is
that token). The revision's greedy verify walks the tree from its root and accepts a child while
the child's token equals the prediction at its parent (sgl-kernel's verify_tree_greedy; on the
CPU every verify is greedy: python/sglang/srt/speculative/eagle_utils.py:726-739 at
sgl-project/sglang d55f1c28e2). So the stand-in predicts, along the first-child path, the next
draft token for `k` steps and then a token none of the node's children holds (the bonus token):
the revision accepts exactly `k` drafts (fewer where the tree is shallower) and samples the bonus
token, as a model that agreed with `k` drafts would make it.

`k` is drawn per request and step from a seeded stream keyed by the request (a hash of its id,
set per request-pool slot by the driver at each boundary) and its sequence length, never from
the process's own randomness, so every process of a run, of either revision, verifies the same
accepts for the same request at the same point of its output. Its distribution (AcceptModel):
`geometric`, each draft accepted with one probability a while every earlier one was (the i.i.d.
acceptance model of Leviathan, Kalman and Matias, "Fast Inference from Transformers via
Speculative Decoding", ICML 2023, section 3.1), a chosen so that the mean accept length (tokens
per verify, the bonus token included) is the preset's; or `fixed`, every verify accepting the
mean's floor or ceiling (a Bernoulli on its fraction).

The draft model's proposals are tokens from the row's position; what they are does not matter
to the accept count, which the verify's predictions decide.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any

import torch

from bench.real.driver.logits import ChosenLogits

_MODULUS = 2147483647  # 2^31 - 1
_FIRST = 3  # ids 0-2 are pad, bos and eos in the stand-in config


def key_of(rid: str) -> int:
    """A request's key for its draws: a CRC of its id (the same in every process)."""
    return zlib.crc32(rid.encode("utf-8")) & 0x7FFFFFFF


def uniforms(seed: int, keys: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """A uniform in (0, 1) per (key, position), from `seed`: the three mixed, then four rounds
    of xor-shift and multiply on 31 bits (int64 arithmetic, no overflow), so neighbouring
    positions of one request draw independently."""
    mask = _MODULUS  # 2^31 - 1
    x = (keys.to(torch.int64) * 1000003 + positions.to(torch.int64) * 7919 + seed * 31) & mask
    for mult in (1597334677, 2246822519, 3266489917, 668265263):
        x = ((x ^ (x >> 15)) * mult) & mask
    x = x ^ (x >> 13)
    return (x.to(torch.float64) + 0.5) / (mask + 1)


@dataclass(frozen=True)
class AcceptModel:
    """Accepted draft tokens per verify: `mean` tokens per verify (the accept length, the bonus
    token included), at most `drafts` drafts a verify."""

    mean: float
    drafts: int
    dist: str = "geometric"

    def __post_init__(self) -> None:
        if not 1.0 <= self.mean <= self.drafts + 1:
            raise ValueError(
                f"an accept length of {self.mean} cannot be reached with {self.drafts} draft "
                f"tokens a verify (from 1 to {self.drafts + 1})"
            )
        if self.dist not in ("geometric", "fixed"):
            raise ValueError(f"accept distribution {self.dist!r}: geometric or fixed")

    @property
    def rate(self) -> float:
        """The geometric model's per-draft acceptance probability whose mean is `mean`:
        mean = sum_{j=0..drafts} a^j, solved by bisection."""
        target = self.mean
        if target >= self.drafts + 1:
            return 1.0
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if sum(mid**j for j in range(self.drafts + 1)) < target:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    def spread(self) -> float:
        """The standard deviation of the accept length under the model."""
        if self.dist == "fixed":
            frac = self.mean - math.floor(self.mean)
            return math.sqrt(frac * (1 - frac))
        a = self.rate
        # P(L >= j + 1) = a^j for j = 0..drafts
        tail = [a**j for j in range(self.drafts + 1)]
        mean = sum(tail)
        second = sum((2 * j + 1) * t for j, t in enumerate(tail))
        return math.sqrt(max(0.0, second - mean * mean))

    def draw(self, u: torch.Tensor) -> torch.Tensor:
        """Accepted drafts (0 to `drafts`) for uniforms `u`."""
        if self.dist == "fixed":
            base = math.floor(self.mean - 1)
            frac = (self.mean - 1) - base
            out = torch.full(u.shape, base, dtype=torch.int64) + (u < frac).to(torch.int64)
            return out.clamp_(0, self.drafts)
        a = self.rate
        if a >= 1.0:
            return torch.full(u.shape, self.drafts, dtype=torch.int64)
        if a <= 0.0:
            return torch.zeros(u.shape, dtype=torch.int64)
        # accepted >= j exactly when u < a^j
        k = torch.floor(torch.log(u) / math.log(a)).to(torch.int64)
        return k.clamp_(0, self.drafts)


class State:
    """Set by the driver: the accept model, the run's seed, the vocabulary, and per
    request-pool slot the key of the request holding it (bench.real.driver.loop)."""

    model: AcceptModel | None = None
    seed: int = 0
    vocab: int = 32000
    keys: torch.Tensor | None = None  # int64 per slot
    drawn: int = 0  # accepted drafts drawn since the boundary (the configured side)
    verified: int = 0  # requests verified since the boundary


STATE = State()


def _tree(spec: Any, name: str) -> Any:
    """A field of the verify input, under its current or its older spelling (`retrive_`)."""
    value = getattr(spec, name, None)
    if value is None:
        value = getattr(spec, name.replace("retrieve_", "retrive_"), None)
    return value


def verify_predictions(forward_batch: Any) -> torch.Tensor:
    """The target's predicted token for every draft-tree node of the batch, [bs * n]."""
    spec = forward_batch.spec_info
    n = int(spec.draft_token_num)
    drafts = spec.draft_token.to(torch.int64).view(-1, n)
    bs = drafts.shape[0]
    first_child, sibling = _links(spec, bs, n)
    model = STATE.model
    if model is None:
        raise RuntimeError("the stand-in's verify ran without an accept model (a spec preset)")
    slots = forward_batch.req_pool_indices.to(torch.int64)
    keys = STATE.keys[slots] if STATE.keys is not None else slots
    k = model.draw(uniforms(STATE.seed, keys, forward_batch.seq_lens))
    rows = torch.arange(bs)
    predict = _absent(drafts).view(-1, 1).expand(bs, n).clone()
    deepest = _deepest_child(first_child, sibling)
    node = torch.zeros(bs, dtype=torch.int64)
    taken = torch.zeros(bs, dtype=torch.int64)
    for step in range(min(n - 1, model.drafts)):
        child = deepest[rows, node]
        going = (step < k) & (child >= 0)
        if not bool(going.any()):
            break
        at = torch.where(going, child, torch.zeros_like(child))
        predict[rows[going], node[going]] = drafts[rows[going], at[going]]
        node = torch.where(going, at, node)
        taken += going.to(torch.int64)
    predict[rows, node] = _bonus(drafts, first_child, sibling, node, predict[rows, node])
    STATE.drawn += int(taken.sum())
    STATE.verified += bs
    return predict.view(-1)


def _links(spec: Any, bs: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per node, its first child and its next sibling (-1: none): the draft tree's, or for a
    linear window (DFlash's and DSpark's verify input, which has no tree: python/sglang/srt/
    speculative/dflash_info.py:26-57 at sgl-project/sglang d55f1c28e2) a chain, each token the
    parent of the next, as its greedy accept reads it (accept while candidates[:, 1:] equal
    the target's predictions[:, :-1]: compute_dflash_correct_drafts_and_bonus,
    python/sglang/srt/speculative/dflash_utils.py:671-690 there)."""
    first = _tree(spec, "retrieve_next_token")
    if first is not None:
        sibling = _tree(spec, "retrieve_next_sibling")
        return first.to(torch.int64).view(bs, n), sibling.to(torch.int64).view(bs, n)
    chain = torch.arange(1, n + 1, dtype=torch.int64)
    chain[-1] = -1
    return chain.expand(bs, n).clone(), torch.full((bs, n), -1, dtype=torch.int64)


def _deepest_child(first_child: torch.Tensor, sibling: torch.Tensor) -> torch.Tensor:
    """Per node, its child on the longest path below it (the first such; -1 for a leaf): the
    path the stand-in's model agrees with, so a draw of k drafts is cut short only where the
    whole tree is shallower than k. Nodes are in the tree's order (a parent before its
    children, a sibling after its elder), as the revision's tree builders lay them out."""
    bs, n = first_child.shape
    rows = torch.arange(bs)
    parent = torch.full((bs, n), -1, dtype=torch.int64)
    for c in range(n):
        child = first_child[:, c]
        has = child >= 0
        parent[rows[has], child[has]] = c
        nxt = sibling[:, c]
        has = nxt >= 0
        parent[rows[has], nxt[has]] = parent[rows[has], c]
    height = torch.zeros((bs, n), dtype=torch.int64)
    best = torch.full((bs, n), -1, dtype=torch.int64)
    for c in range(n - 1, 0, -1):
        p = parent[:, c]
        up = (p >= 0) & (height[:, c] + 1 >= height[rows, p.clamp(min=0)])
        height[rows[up], p[up]] = height[rows[up], c] + 1
        best[rows[up], p[up]] = c
    return best


def _absent(drafts: torch.Tensor) -> torch.Tensor:
    """Per request, a token none of its draft tokens is: the smallest id from _FIRST up."""
    bs, n = drafts.shape
    pick = torch.full((bs,), -1, dtype=torch.int64)
    for token in range(_FIRST, _FIRST + n + 1):
        free = (pick < 0) & ~(drafts == token).any(dim=1)
        pick[free] = token
    return pick


def successor(tokens: torch.Tensor) -> torch.Tensor:
    """The stand-in model's text: the token that follows each token, an affine permutation of
    the vocabulary's ids from _FIRST up (cycles of ~2,000 tokens), so generated text repeats
    itself as a model's does and an n-gram corpus finds its continuations."""
    span = STATE.vocab - _FIRST
    return ((tokens.to(torch.int64) - _FIRST) * 28635 + 12345) % span + _FIRST


def _bonus(
    drafts: torch.Tensor,
    first_child: torch.Tensor,
    sibling: torch.Tensor,
    node: torch.Tensor,
    fallback: torch.Tensor,
) -> torch.Tensor:
    """The token predicted where the verify stops, at `node`: the text's next token after the
    node's (`successor`), or the first after it that none of the node's children holds (so no
    child is accepted: the text skips ahead on its cycle); `fallback` (a token no draft holds)
    only where none is free."""
    bs, n = drafts.shape
    rows = torch.arange(bs)
    children = []
    c = first_child[rows, node]
    for _ in range(n):
        live = c >= 0
        if not bool(live.any()):
            break
        children.append(torch.where(live, drafts[rows, c.clamp(min=0)], torch.full_like(c, -1)))
        c = torch.where(live, sibling[rows, c.clamp(min=0)], c)
    held = torch.stack(children, dim=1) if children else torch.full((bs, 1), -1)
    pick = torch.full((bs,), -1, dtype=torch.int64)
    token = drafts[rows, node].to(torch.int64)
    for _ in range(held.shape[1] + 1):  # one of the next len(children) + 1 successors is free
        token = successor(token)
        free = (pick < 0) & ~(held == token.view(-1, 1)).any(dim=1)
        pick = torch.where(free, token, pick)
    return torch.where(pick < 0, fallback, pick)


def first_tokens(forward_batch: Any, ids: torch.Tensor) -> torch.Tensor:
    """Under speculative decoding, a prefill's sampled token: the text's successor of each
    request's last prompt token (what the draft then goes on from)."""
    starts = getattr(forward_batch, "extend_start_loc", None)
    lens = getattr(forward_batch, "extend_seq_lens", None)
    if starts is None or lens is None or starts.shape[0] != ids.shape[0]:
        return ids
    last = (starts.to(torch.int64) + lens.to(torch.int64) - 1).clamp(min=0)
    return successor(forward_batch.input_ids.to(torch.int64)[last])


def proposals(rows: int, tokens: Any = None) -> torch.Tensor:
    """The draft model's proposed token per row: the text's successor of the row's input token
    where the rows are the input's, else of the row's index."""
    base = tokens if tokens is not None and tokens.shape[0] == rows else torch.arange(rows)
    return successor(base.to(torch.int64) % (STATE.vocab - _FIRST) + _FIRST)


# The logit of a chosen token (every other is 0): a confident model's, whose softmax puts
# 0.9999 on it over 32,000 tokens, so a draft tree's cumulative scores follow its top-1 path as
# a trained draft's do and the tree grows deep enough for the accept lengths drawn.
CHOSEN_LOGIT = 20.0


def logits(chosen: torch.Tensor) -> ChosenLogits:
    return ChosenLogits.make(chosen, STATE.vocab, hi=CHOSEN_LOGIT)
