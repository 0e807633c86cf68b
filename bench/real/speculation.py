"""Speculative decoding in real mode: what a preset's draft runs and how much of it the target
accepts, each value with its source (or an assumption, said to be one).

A `Speculation` sets the revision's own server arguments (speculative_algorithm, _num_steps,
_eagle_topk, _num_draft_tokens; a draft model of the stand-in's where the algorithm needs one)
and the stand-in's accept draws (bench/real/driver/spec.py): the mean accept length, tokens per
verify with the bonus token, as SGLang reports it (completion tokens / spec_verify_ct,
python/sglang/srt/managers/tokenizer_manager.py:2794 at sgl-project/sglang d55f1c28e2), and its
distribution. The variants `ngram`, `eagle`, `mtp` and `dspark` put one on any preset
(NAME+ngram).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

DOCS = "docs/docs/advanced_features/speculative_decoding.mdx"
DEEPSEEK = "docs/cookbook/autoregressive/DeepSeek/DeepSeek-V3.mdx"
AT = " at sgl-project/sglang d55f1c28e2"

NGRAM_TOKENS = (
    "python/sglang/srt/arg_groups/speculative_hook.py:718-723" + AT + ": NGRAM's "
    "speculative_num_draft_tokens defaults to 12 (min(max_trie_depth, 12) in " + DOCS + ":652-654)"
)
NGRAM_BREADTH = (
    "python/sglang/srt/server_args.py:2284-2293" + AT + ": BFS breadth 1 to 10 by default (the "
    "tree's topk is its maximum: speculative_hook.py:716)"
)
NGRAM_ACCEPT = (
    "assumption: no published accept length for SGLang's NGRAM on bench_serving's random "
    "prompts (free text has few n-gram repeats; n-gram drafts reach 2.5-3 on edit-heavy data: "
    "vllm-project/vllm#24344); swept with --set accept_len=X"
)
EAGLE_SHAPE = (
    DOCS + ":585-601" + AT + ": the overlap scheduler's (spec v2) example, a chain: "
    "--speculative-num-steps 4 --speculative-eagle-topk 1 --speculative-num-draft-tokens 5 "
    "(topk 1 is what spec v2 supports: lines 590-592)"
)
EAGLE_ACCEPT = (
    "vllm-project/vllm#16035: the EAGLE draft lmsys/sglang-EAGLE-LLaMA3-Instruct-8B for "
    "Llama-3-8B-Instruct on MT-Bench with 4 speculative tokens accepts 2.08 tokens a verify "
    "(1.89 with 2)"
)
MTP_SHAPE = (
    DEEPSEEK + ":392" + AT + ": DeepSeek's MTP layer as the EAGLE draft, default "
    "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 "
    "(also SGLang's auto-chosen parameters for DeepSeek-V3: "
    "python/sglang/srt/arg_groups/speculative_hook.py:823-839 there)"
)
MTP_ACCEPT = (
    DEEPSEEK + ":440-502" + AT + ": DeepSeek-V3 with its MTP layer at 3/1/4, bench_serving "
    "random 1,024 in / 1,024 out: accept length 2.61 (8x MI300X, sglang 0.5.7); 2.46 for "
    "DeepSeek-V3.2 (DeepSeek-V3_2.mdx:633)"
)
GEOMETRIC = (
    "each draft accepted with one probability while every earlier one was, so accept lengths "
    "spread as production's (the i.i.d. acceptance model of Leviathan, Kalman and Matias, "
    "'Fast Inference from Transformers via Speculative Decoding', ICML 2023, section 3.1)"
)
SUCCESSOR = (
    "assumption: the stand-in model's text follows each token with one fixed successor "
    "(bench/real/driver/spec.py: an affine permutation of the ids, cycles of ~2,000 tokens), "
    "the draft proposes it and the verify's bonus token is it, so text repeats and the n-gram "
    "corpus proposes deep trees, as repetitive text (retrieval-augmented answers, code edits: "
    "sgl-project/sglang#2790's motivation) gives it; the accept length is the preset's either way"
)
DSPARK_COOKBOOK = "docs/cookbook/autoregressive/DeepSeek/DeepSeek-V4.mdx"
DSPARK_BLOCK = (
    DSPARK_COOKBOOK + ":599" + AT + ": DeepSeek-V4's bundled DSpark heads (Flash 0731, Pro 0813) "
    "resolve to five proposed tokens, 'gamma=5, verify_num_draft_tokens=6', the verified "
    "default (SGLang's own default without a checkpoint value is 7: DEFAULT_DSPARK_GAMMA, "
    "python/sglang/srt/speculative/dspark_components/dspark_config.py:16 there); a DSpark "
    "verify is a window of gamma + 1 (python/sglang/srt/arg_groups/speculative_hook.py:392-403 "
    "there), one step, topk 1 (:343-359 there)"
)
DSPARK_ACCEPT = (
    DSPARK_COOKBOOK + ":578" + AT + ": the Pro Official (0813) recipe as shipped earns an accept "
    "length of 4.678 (its low-latency rows were measured pinned at SGLANG_SIMULATE_ACC_LEN=4); "
    "assumption: that a stand-in target and draft (bench_serving's random prompts, not the "
    "recipe's corpus) accept as DeepSeek-V4-Pro's head does"
)
DRAFT_STANDIN = (
    "the stand-in's draft: the target's config with one layer (an EAGLE head's shape, "
    "LlamaForCausalLMEagle; a STANDALONE draft's LlamaForCausalLM), no weights; an EAGLE head "
    "reads the target's hidden states at their width"
)


@dataclass(frozen=True)
class Speculation:
    """What a preset's speculative decoding runs."""

    algorithm: str  # the revision's speculative_algorithm: NGRAM, EAGLE, EAGLE3
    steps: int  # speculative_num_steps (0: the revision's own, as NGRAM's derives it)
    topk: int  # speculative_eagle_topk (NGRAM: its BFS breadth)
    draft_tokens: int  # speculative_num_draft_tokens, the root included
    accept_len: float  # tokens per verify, the bonus token included
    accept_dist: str = "geometric"
    draft: bool = False  # a draft model of the stand-in's (EAGLE, EAGLE3, STANDALONE)
    # the stand-in draft's architecture: an EAGLE head, or a small model of the target's own
    draft_arch: str = "LlamaForCausalLMEagle"
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def ahead(self) -> int:
        """KV slots a request holds ahead per verify: its tree's tokens or its draft steps'
        (alloc_len_per_decode: max(num_steps * topk, num_draft_tokens))."""
        return max(self.steps * self.topk, self.draft_tokens)

    @property
    def drafts(self) -> int:
        """The most drafts one verify can accept: the tree's tokens less its root, and no more
        than its depth (the draft steps) where the algorithm sets one."""
        return min(self.draft_tokens - 1, self.steps) if self.steps else self.draft_tokens - 1

    def check(self) -> None:
        """ValueError, one line, for a configuration the stand-in cannot serve."""
        if self.accept_dist not in ("geometric", "fixed"):
            raise ValueError(f"accept_dist={self.accept_dist}: geometric or fixed")
        if self.draft_tokens < 2:
            raise ValueError(f"spec_draft_tokens={self.draft_tokens}: at least 2 (a root, a draft)")
        if not 1.0 <= self.accept_len <= self.drafts + 1:
            raise ValueError(
                f"accept_len={self.accept_len:g} cannot be reached with {self.draft_tokens} "
                f"draft tokens a verify{f' over {self.steps} steps' if self.steps else ''} "
                f"(from 1 to {self.drafts + 1}: the drafts accepted and the bonus token)"
            )

    @property
    def dspark(self) -> bool:
        """A DSpark block draft (a linear window, the target's hidden states injected as its
        KV): its draft is the stand-in's DSpark head, not an EAGLE head."""
        return self.algorithm == "DSPARK"

    def server(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "speculative_algorithm": self.algorithm,
            "speculative_num_draft_tokens": self.draft_tokens,
        }
        if self.algorithm == "NGRAM":
            out["speculative_ngram_max_bfs_breadth"] = self.topk
        else:
            out["speculative_eagle_topk"] = self.topk
        if self.steps:
            out["speculative_num_steps"] = self.steps
        if self.draft and self.dspark:
            # the DSpark draft runs on the target's CPU attention backend (torch_native), which
            # the revision's draft-backend resolvers replace by flashinfer; the driver keeps it
            # while the scheduler is built (bench.real.driver.server.Claims, `dspark`)
            out["speculative_draft_attention_backend"] = "torch_native"
        elif self.draft:
            # a draft model runs on the CPU under intel_amx only (python/sglang/srt/speculative/
            # draft_utils.py:80-102 at sgl-project/sglang d55f1c28e2), SGLang's CPU default
            # (server_args.py:4347-4353 there); its kernels never run (the stand-in's forward
            # replaces the model), and the driver keeps it on a CPU without AMX (claim_amx)
            out["attention_backend"] = "intel_amx"
        return out

    def job(self) -> dict[str, Any]:
        """The driver's part (bench.real.driver.spec)."""
        return {
            "accept_len": self.accept_len,
            "drafts": self.drafts,
            "dist": self.accept_dist,
            "draft_model": self.draft,
            "algorithm": self.algorithm,
            "draft_tokens": self.draft_tokens,
            "draft_arch": self.draft_arch,
        }

    def rows(self) -> list[tuple[str, str, str]]:
        s = self.sources
        return [
            ("speculative", self.algorithm, s.get("algorithm", "")),
            *([("spec_steps", str(self.steps), s.get("steps", ""))] if self.steps else []),
            ("spec_topk", str(self.topk), s.get("topk", "")),
            ("spec_draft_tokens", str(self.draft_tokens), s.get("draft_tokens", "")),
            ("accept_len", f"{self.accept_len:g}", s.get("accept_len", "")),
            ("accept_dist", self.accept_dist, s.get("accept_dist", GEOMETRIC)),
            ("text", "each token's fixed successor", SUCCESSOR),
        ] + (
            [("draft_model", "stand-in", DSPARK_STANDIN if self.dspark else DRAFT_STANDIN)]
            if self.draft
            else []
        )


NGRAM = Speculation(
    "NGRAM", steps=0, topk=10, draft_tokens=12, accept_len=2.0,
    sources={
        "algorithm": "sgl-project/sglang#9873 (lookahead, renamed NGRAM in #11010): drafts "
        "from an n-gram trie of the requests' own tokens, no draft model",
        "steps": NGRAM_TOKENS, "topk": NGRAM_BREADTH, "draft_tokens": NGRAM_TOKENS,
        "accept_len": NGRAM_ACCEPT,
    },
)  # fmt: skip
EAGLE = Speculation(
    "EAGLE", steps=4, topk=1, draft_tokens=5, accept_len=2.08, draft=True,
    sources={
        "algorithm": "EAGLE with a draft model (" + DOCS + ":36-80" + AT + ")",
        "steps": EAGLE_SHAPE, "topk": EAGLE_SHAPE, "draft_tokens": EAGLE_SHAPE,
        "accept_len": EAGLE_ACCEPT,
    },
)  # fmt: skip
MTP = Speculation(
    "EAGLE", steps=3, topk=1, draft_tokens=4, accept_len=2.61, draft=True,
    sources={
        "algorithm": "DeepSeek's MTP layer run as SGLang's EAGLE draft (" + DEEPSEEK + ":453-465"
        + AT + ": --speculative-algorithm EAGLE)",
        "steps": MTP_SHAPE, "topk": MTP_SHAPE, "draft_tokens": MTP_SHAPE,
        "accept_len": MTP_ACCEPT,
    },
)  # fmt: skip
TREE_SHAPE = (
    "python/sglang/srt/arg_groups/speculative_hook.py:820-822" + AT + ": SGLang's auto-chosen "
    "parameters for a Llama target (--speculative-num-steps 5 --speculative-eagle-topk 4 "
    "--speculative-num-draft-tokens 8), a tree; it runs on the normal loop (spec v2 takes topk 1: "
    + DOCS
    + ":590-592)"
)
EAGLE_TREE = Speculation(
    "EAGLE", steps=5, topk=4, draft_tokens=8, accept_len=3.0, draft=True,
    sources={
        "algorithm": "EAGLE with a draft model (" + DOCS + ":36-80" + AT + ")",
        "steps": TREE_SHAPE, "topk": TREE_SHAPE, "draft_tokens": TREE_SHAPE,
        "accept_len": "assumption: no published accept length for this tree shape (EAGLE-2 "
        "reaches 3.76 on Llama-3.1-8B with 8 steps and a wider tree: sgl-project/sglang#4247); "
        "swept with --set accept_len=X",
    },
)  # fmt: skip
DSPARK_STANDIN = (
    "the stand-in's DSpark draft: a one-layer Qwen3DSparkModel of the target's width with a "
    "vanilla Markov head, reading the target's hidden states at two layers (the shape of "
    "SGLang's own dummy DSpark draft in test/registered/dcp/test_kimi_linear_dcp_dspark4.py:43-80"
    + AT
    + ", there five of 27 layers); no weights, nothing computed: its forward, base logits, "
    "Markov sampling and KV injection are the stand-in's"
)
DSPARK = Speculation(
    "DSPARK", steps=0, topk=1, draft_tokens=6, accept_len=4.678, draft=True,
    sources={
        "algorithm": "DSpark, a block draft with a Markov head over the target's hidden states, "
        "verified as one linear window (python/sglang/srt/speculative/dspark_components/" + AT
        + "; " + DSPARK_COOKBOOK + ":571-605 there)",
        "topk": DSPARK_BLOCK, "draft_tokens": DSPARK_BLOCK, "accept_len": DSPARK_ACCEPT,
    },
)  # fmt: skip
STANDALONE_SHAPE = (
    DOCS + ":585-601" + AT + ": the overlap scheduler's (spec v2) example is a STANDALONE draft "
    "(Qwen2.5-1.5B-Instruct for Qwen2.5-7B-Instruct): --speculative-num-steps 4 "
    "--speculative-eagle-topk 1 --speculative-num-draft-tokens 5"
)
STANDALONE = Speculation(
    "STANDALONE", steps=4, topk=1, draft_tokens=5, accept_len=2.0, draft=True,
    draft_arch="LlamaForCausalLM",
    sources={
        "algorithm": "a smaller LLM of the target's family drafts token by token (" + DOCS
        + ":503-560" + AT + ")",
        "steps": STANDALONE_SHAPE, "topk": STANDALONE_SHAPE, "draft_tokens": STANDALONE_SHAPE,
        "accept_len": "assumption: no published accept length for this pair in SGLang's docs; "
        "swept with --set accept_len=X",
    },
)  # fmt: skip
BY_NAME: dict[str, Speculation] = {
    "ngram": NGRAM, "eagle": EAGLE, "mtp": MTP, "eagletree": EAGLE_TREE, "dspark": DSPARK,
    "standalone": STANDALONE,
}  # fmt: skip

# --set keys of a preset's speculation, with their types and fields
SETTABLE: dict[str, tuple[str, type]] = {
    "spec_steps": ("steps", int),
    "spec_topk": ("topk", int),
    "spec_draft_tokens": ("draft_tokens", int),
    "accept_len": ("accept_len", float),
    "accept_dist": ("accept_dist", str),
}


def named(name: str) -> Speculation:
    """A speculation by its algorithm's or variant's name (--set speculative=NGRAM)."""
    spec = BY_NAME.get(name.lower())
    if spec is None:
        raise ValueError(
            f"--set speculative={name}: one of {', '.join(sorted(BY_NAME))} (or its variant, "
            "NAME+ngram)"
        )
    return spec


def changed(spec: Speculation | None, changes: Mapping[str, Any]) -> Speculation | None:
    """The speculation with --set's values; ValueError where there is none to change."""
    mine = {SETTABLE[k][0]: v for k, v in changes.items() if k in SETTABLE}
    if not mine:
        return spec
    if spec is None:
        raise ValueError(
            f"--set {', '.join(k for k in changes if k in SETTABLE)}: the preset runs no "
            "speculative decoding (add +ngram, +eagle, +mtp or +dspark, or --set speculative=NAME)"
        )
    out = replace(spec, **mine)
    if "accept_len" in mine:
        out = replace(out, sources={**out.sources, "accept_len": "set with --set accept_len"})
    return out
