"""Speculative decoding in real mode, without sglang: the stand-in's accept draws, the verify's
predictions (checked against the revision's greedy verify as the torch op implements it), the
logits that carry their argmax, the presets' values and refusals, and the driver's stand-ins
for a stubbed package's torch.ops and for Triton launches."""

from __future__ import annotations

import enum
import json
import math
import sys
import types
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from bench.real import presets as rp
from bench.real import speculation
from bench.real.driver import (
    dspark,
    kernels,
    server,
    spec,
    standin,
    stubs,
    transfer,
    triton_launch,
)
from bench.real.driver.logits import DENSIFIED, ChosenLogits
from bench.real.driver.phases import Phases
from bench.real.driver.server import Claims

# -- the accept model -----------------------------------------------------------------------


@pytest.mark.parametrize(("mean", "drafts"), [(2.08, 4), (2.61, 3), (2.0, 11), (3.0, 5)])
def test_the_geometric_rate_gives_the_mean_accept_length(mean: float, drafts: int) -> None:
    model = spec.AcceptModel(mean, drafts)
    a = model.rate
    assert sum(a**j for j in range(drafts + 1)) == pytest.approx(mean, abs=1e-9)
    u = spec.uniforms(7, torch.arange(200_000) * 7919 + 13, torch.full((200_000,), 4096))
    drawn = model.draw(u).to(torch.float64)
    assert float(drawn.mean()) + 1 == pytest.approx(mean, abs=0.02)
    assert float(drawn.std()) == pytest.approx(model.spread(), abs=0.02)
    assert int(drawn.max()) <= drafts
    assert int(drawn.min()) >= 0


def test_the_fixed_model_accepts_the_mean_s_floor_or_ceiling() -> None:
    model = spec.AcceptModel(2.25, 4, "fixed")
    drawn = model.draw(spec.uniforms(0, torch.arange(100_000), torch.arange(100_000)))
    assert set(drawn.tolist()) == {1, 2}
    assert float(drawn.to(torch.float64).mean()) + 1 == pytest.approx(2.25, abs=0.01)
    assert model.spread() == pytest.approx(math.sqrt(0.25 * 0.75))


def test_an_unreachable_accept_length_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot be reached with 4 draft tokens"):
        spec.AcceptModel(5.5, 4)
    with pytest.raises(ValueError, match="geometric or fixed"):
        spec.AcceptModel(2.0, 4, "poisson")


def test_draws_are_the_seed_s_request_s_and_position_s_only() -> None:
    keys = torch.tensor([spec.key_of("req-000001"), spec.key_of("req-000002")] * 3)
    pos = torch.tensor([100, 100, 101, 101, 102, 102])
    torch.manual_seed(1)
    first = spec.uniforms(3, keys, pos)
    torch.manual_seed(99)  # the process's own randomness plays no part
    assert torch.equal(spec.uniforms(3, keys, pos), first)
    assert not torch.equal(spec.uniforms(4, keys, pos), first)  # another seed, other draws
    assert first[0] != first[1]
    assert first[0] != first[2]
    # neighbouring positions of one request draw independently
    u = spec.uniforms(0, torch.full((50_000,), 12345), torch.arange(50_000)).numpy()
    r = float(((u[:-1] - u.mean()) * (u[1:] - u.mean())).mean() / u.var())
    assert abs(r) < 0.02


# -- the verify's predictions ---------------------------------------------------------------


def _batch(drafts: list[list[int]], first_child: list[list[int]], sibling: list[list[int]]) -> Any:
    n = len(drafts[0])
    info = SimpleNamespace(
        draft_token_num=n,
        draft_token=torch.tensor(drafts, dtype=torch.int64).view(-1),
        retrieve_next_token=torch.tensor(first_child, dtype=torch.int64).view(-1),
        retrieve_next_sibling=torch.tensor(sibling, dtype=torch.int64).view(-1),
    )
    bs = len(drafts)
    return SimpleNamespace(
        spec_info=info,
        req_pool_indices=torch.arange(bs),
        seq_lens=torch.full((bs,), 50, dtype=torch.int64),
    )


def _greedy_accepts(batch: Any, predict: torch.Tensor) -> list[int]:
    """Drafts the revision's greedy verify accepts given these predictions (the torch version
    of sgl-kernel's verify_tree_greedy_cpu)."""
    info = batch.spec_info
    bs, n = batch.seq_lens.shape[0], info.draft_token_num
    out = torch.zeros(bs * n, dtype=torch.int32)
    index = torch.full((bs, n), -1, dtype=torch.int32)
    count = torch.zeros(bs, dtype=torch.int32)
    kernels.verify_tree_greedy_cpu(
        predicts=out,
        accept_index=index,
        accept_token_num=count,
        candidates=info.draft_token.view(bs, n),
        retrive_index=torch.arange(bs * n, dtype=torch.int64).view(bs, n),
        retrive_next_token=info.retrieve_next_token.view(bs, n),
        retrive_next_sibling=info.retrieve_next_sibling.view(bs, n),
        target_predict=predict.view(bs, n),
    )
    return count.tolist()


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The accept model's draws set by the test: a list of accepted drafts per request."""
    wanted: list[int] = []

    class Forced(spec.AcceptModel):
        def draw(self, u: torch.Tensor) -> torch.Tensor:
            return torch.tensor(wanted, dtype=torch.int64)

    monkeypatch.setattr(spec.STATE, "model", Forced(2.0, 7))
    monkeypatch.setattr(spec.STATE, "keys", None)
    monkeypatch.setattr(spec.STATE, "vocab", 32000)
    return wanted


def test_a_chain_accepts_the_drafts_drawn_and_the_bonus_follows(forced: list[int]) -> None:
    # two requests, a chain of 4 draft tokens each (root first)
    drafts = [[500, 501, 502, 503], [900, 901, 902, 903]]
    first_child = [[1, 2, 3, -1], [1, 2, 3, -1]]
    sibling = [[-1, -1, -1, -1]] * 2
    for k in ([0, 3], [2, 1], [3, 0]):
        forced[:] = k
        batch = _batch(drafts, first_child, sibling)
        predict = spec.verify_predictions(batch).view(2, 4)
        assert _greedy_accepts(batch, predict) == k
        for b in range(2):
            assert predict[b, : k[b]].tolist() == drafts[b][1 : k[b] + 1]
            bonus = int(predict[b, k[b]])
            assert bonus not in drafts[b][k[b] + 1 : k[b] + 2]  # the next draft is rejected


def test_a_tree_follows_its_deepest_path_and_a_shallow_tree_caps_the_draw(
    forced: list[int],
) -> None:
    # root 0 with children 1 and 2 (siblings); 1 is a leaf; 2 -> 3 -> 4: the deepest path
    drafts = [[10, 11, 12, 13, 14]]
    first_child = [[1, -1, 3, 4, -1]]
    sibling = [[-1, 2, -1, -1, -1]]
    forced[:] = [3]
    batch = _batch(drafts, first_child, sibling)
    predict = spec.verify_predictions(batch)
    assert _greedy_accepts(batch, predict) == [3]
    assert predict.tolist()[0] == 12  # the root predicts the deeper child's token
    forced[:] = [7]  # more than the tree holds: the verify accepts its depth
    before = spec.STATE.drawn
    predict = spec.verify_predictions(batch)
    assert _greedy_accepts(batch, predict) == [3]
    assert spec.STATE.drawn - before == 3


def test_the_bonus_token_is_never_a_child_of_the_node_it_follows(forced: list[int]) -> None:
    # the root's children hold its successor and the successor's successor: the bonus skips on
    root = 700
    s1 = int(spec.successor(torch.tensor([root])))
    s2 = int(spec.successor(torch.tensor([s1])))
    drafts = [[root, s1, s2, 5]]
    first_child = [[1, -1, -1, -1]]
    sibling = [[-1, 2, 3, -1]]
    forced[:] = [0]
    batch = _batch(drafts, first_child, sibling)
    predict = spec.verify_predictions(batch)
    assert _greedy_accepts(batch, predict) == [0]
    assert int(predict[0]) not in (s1, s2, 5)
    assert int(predict[0]) == int(spec.successor(torch.tensor([s2])))


# -- logits that carry their argmax ---------------------------------------------------------


def test_chosen_logits_answer_as_their_dense_values_do() -> None:
    chosen = torch.tensor([5, 2, 7])
    logits = ChosenLogits.make(chosen, 10, hi=20.0)
    dense = logits.dense()
    assert torch.equal(torch.argmax(logits, dim=-1), dense.argmax(-1))
    assert logits.argmax(-1, keepdim=True).tolist() == [[5], [2], [7]]
    assert torch.equal(torch.max(logits, dim=-1).indices, chosen)
    probs = torch.softmax(logits, dim=-1)
    assert torch.allclose(probs.dense(), torch.softmax(dense, dim=-1))
    top = torch.topk(probs, 2, dim=-1)
    assert top.indices[:, 0].tolist() == [5, 2, 7]
    assert torch.allclose(top.values[:, 0], torch.softmax(dense, dim=-1).max(-1).values)
    rows = logits[torch.tensor([2, 0])]
    assert isinstance(rows, ChosenLogits)
    assert rows.argmax(-1).tolist() == [7, 5]
    assert logits.shape == (3, 10)
    assert logits.dtype == torch.float32


def test_any_other_operation_makes_them_dense_and_is_named() -> None:
    DENSIFIED.clear()
    logits = ChosenLogits.make(torch.tensor([1, 3]), 6)
    logits[:, 3] = -1e9  # a grammar mask's fill, in place
    assert logits.argmax(-1).tolist() == [1, 0]  # the fill is seen, as on real logits
    assert DENSIFIED == {"__setitem__": 1}
    scaled = ChosenLogits.make(torch.tensor([4]), 6) / 2.0
    assert scaled.tolist() == [[0.0, 0.0, 0.0, 0.0, 0.5, 0.0]]


# -- presets --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["decode-b256+ngram", "eagle-chain", "mtp-decode", "decode-b256+dspark"]
)
def test_every_speculation_value_has_its_source(name: str) -> None:
    preset = rp.get(name)
    assert preset.spec is not None
    rows = {k: src for k, _v, src in preset.rows()}
    for key in ("speculative", "spec_draft_tokens", "accept_len", "accept_dist", "text"):
        assert rows[key], key
    server = preset.server(0)
    assert server["speculative_algorithm"] == preset.spec.algorithm
    assert server["speculative_num_draft_tokens"] == preset.spec.draft_tokens


def test_the_spec_presets_are_production_s_loops() -> None:
    assert not rp.get("decode-b256+ngram").overlap  # NGRAM turns the overlap loop off
    assert rp.get("eagle-chain").overlap
    assert rp.get("eagle-chain").spec.topk == 1
    mtp = rp.get("mtp-decode")
    assert mtp.overlap
    assert mtp.disaggregation == "decode"
    assert mtp.spec.accept_len == 2.61
    # the KV pool holds each request's tokens ahead of a verify too
    plain = rp.get("decode-b256")
    assert rp.get("eagle-chain").max_total_tokens > plain.max_total_tokens


def test_set_changes_the_speculation_and_refuses_what_cannot_run() -> None:
    changed = rp.with_changes(rp.get("eagle-chain"), {"accept_len": 3.5, "accept_dist": "fixed"})
    assert changed.spec.accept_len == 3.5
    assert changed.spec.accept_dist == "fixed"
    assert "set with --set" in dict((k, s) for k, _v, s in changed.rows())["accept_len"]
    with pytest.raises(ValueError, match="accept_len=6 cannot be reached with 5 draft tokens"):
        rp.with_changes(rp.get("eagle-chain"), {"accept_len": 6.0})
    with pytest.raises(ValueError, match="runs no speculative decoding"):
        rp.with_changes(rp.get("decode-b256"), {"accept_len": 2.0})
    with pytest.raises(ValueError, match="speculative=MEDUSA"):
        rp.with_changes(rp.get("decode-b256"), {"speculative": "MEDUSA"})
    assert rp.with_changes(rp.get("decode-b256"), {"speculative": "NGRAM"}).spec == (
        speculation.NGRAM
    )


# -- stand-ins for a stubbed package's ops and for Triton -----------------------------------


def test_a_stubbed_package_s_torch_ops_hold_what_it_would_register(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ns = stubs.OpsNamespace(
        "sgl_kernel", {"verify_tree_greedy_cpu": kernels.verify_tree_greedy_cpu}
    )
    assert ns.verify_tree_greedy_cpu is kernels.verify_tree_greedy_cpu
    assert not hasattr(ns, "convert_weight_packed")  # an op nothing registered is absent
    stored = ns.decode_attention_cpu  # stored at construction by the CPU attention backend
    with pytest.raises(stubs.StubReached, match=r"torch\.ops\.sgl_kernel\.decode_attention_cpu"):
        stored()


def _fake_triton(monkeypatch: pytest.MonkeyPatch) -> type:
    class JITFunction:
        def __init__(self, fn: Any) -> None:
            self.fn = fn

        def run(self, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            raise AssertionError("Triton itself was launched")

        def __getitem__(self, grid: Any) -> Any:
            return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    jit = types.ModuleType("triton.runtime.jit")
    jit.JITFunction = JITFunction  # type: ignore[attr-defined]
    for name, module in (
        ("triton", types.ModuleType("triton")),
        ("triton.runtime", types.ModuleType("triton.runtime")),
        ("triton.runtime.jit", jit),
    ):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(JITFunction, "run", JITFunction.run)  # restored after the test
    return JITFunction


def test_a_triton_launch_runs_the_kernel_s_torch_version_or_names_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jit = _fake_triton(monkeypatch)
    seen: dict[str, Any] = {}

    def copy_rows(grid: tuple[int, ...], **a: Any) -> None:
        seen.update(grid=grid, **a)
        a["dst"][: grid[0]] = a["src"][: grid[0]]

    def copy_kernel(src: Any, dst: Any, n: Any, BLOCK: Any) -> None:
        pass

    def other_kernel(x: Any) -> None:
        pass

    phases = Phases()
    triton_launch.install(phases, {"copy_kernel": copy_rows})
    src, dst = torch.arange(4), torch.zeros(4, dtype=torch.int64)
    jit(copy_kernel)[lambda meta: (meta["n"],)](src, dst, 3, BLOCK=16)
    assert dst.tolist() == [0, 1, 2, 0]
    assert seen["grid"] == (3,)
    assert seen["BLOCK"] == 16
    assert phases.ns["stand_in"] > 0  # timed as the stand-in's, out of the figure
    with pytest.raises(stubs.StubReached, match=r"Triton kernel other_kernel .* was launched"):
        jit(other_kernel)[(1,)](src)


def test_the_claims_hold_while_the_scheduler_is_built_and_are_given_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def machine() -> bool:
        return False

    def hook(args: Any) -> None:
        args.disable_overlap_schedule = True

    resolver = types.ModuleType("sglang.srt.server_args")
    resolver.cpu_has_amx_support = machine  # type: ignore[attr-defined]
    spec_hook = types.ModuleType("sglang.srt.arg_groups.speculative_hook")
    spec_hook._disable_overlap_schedule_for_cpu = hook  # type: ignore[attr-defined]
    model = types.ModuleType("sglang.srt.layers.some_layer")
    model.cpu_has_amx_support = machine  # type: ignore[attr-defined]
    for name, module in (
        ("sglang.srt.server_args", resolver),
        ("sglang.srt.arg_groups.speculative_hook", spec_hook),
        ("sglang.srt.layers.some_layer", model),
    ):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr("bench.real.driver.server._has", lambda name: name in sys.modules)
    claims = Claims()
    said = claims.claim(amx=True, spec_overlap=True)
    assert len(said) == 2
    assert resolver.cpu_has_amx_support() is True
    assert model.cpu_has_amx_support() is False  # a model's module keeps the machine's answer
    args = SimpleNamespace(disable_overlap_schedule=False)
    spec_hook._disable_overlap_schedule_for_cpu(args)
    assert args.disable_overlap_schedule is False
    claims.release()
    assert resolver.cpu_has_amx_support() is False
    spec_hook._disable_overlap_schedule_for_cpu(args)
    assert args.disable_overlap_schedule is True


# -- DSpark: a block draft verified as one linear window -------------------------------------


def _window(candidates: list[list[int]]) -> Any:
    """A verify batch of linear windows (anchor first), as DFlashVerifyInput carries them: no
    tree fields."""
    n = len(candidates[0])
    info = SimpleNamespace(
        draft_token_num=n, draft_token=torch.tensor(candidates, dtype=torch.int64).view(-1)
    )
    bs = len(candidates)
    return SimpleNamespace(
        spec_info=info,
        req_pool_indices=torch.arange(bs),
        seq_lens=torch.full((bs,), 80, dtype=torch.int64),
    )


def _linear_accepts(candidates: torch.Tensor, predict: torch.Tensor) -> tuple[list[int], list[int]]:
    """The revision's greedy accept of a window (compute_dflash_correct_drafts_and_bonus,
    python/sglang/srt/speculative/dflash_utils.py:671-690 at sgl-project/sglang d55f1c28e2):
    accept while candidates[:, 1:] equal predict[:, :-1] consecutively; the bonus is the
    prediction at the first mismatch."""
    match = (candidates[:, 1:] == predict[:, :-1]).to(torch.int64)
    correct = match.cumprod(dim=1).sum(dim=1)
    bonus = predict[torch.arange(candidates.shape[0]), correct]
    return correct.tolist(), bonus.tolist()


def test_a_linear_window_accepts_exactly_the_drafts_drawn(forced: list[int]) -> None:
    gamma = 5
    anchors = torch.tensor([500, 9000, 31000])
    proposals = dspark.block_proposals(anchors, gamma)
    candidates = torch.cat([anchors.view(-1, 1), proposals], dim=1)
    for k in ([0, 5, 2], [5, 0, 3], [1, 4, 5]):
        forced[:] = k
        batch = _window(candidates.tolist())
        predict = spec.verify_predictions(batch).view(3, gamma + 1)
        correct, bonus = _linear_accepts(candidates, predict)
        assert correct == k
        for b in range(3):
            if k[b] < gamma:  # the bonus is not the next draft, which is rejected
                assert bonus[b] != int(candidates[b, k[b] + 1])


def test_the_dspark_draft_proposes_the_text_s_next_tokens() -> None:
    anchors = torch.tensor([7, 31990])
    block = dspark.block_proposals(anchors, 3)
    assert block[:, 0].tolist() == spec.successor(anchors).tolist()
    assert block[:, 2].tolist() == spec.successor(block[:, 1]).tolist()
    base = torch.zeros((2, 3, 1))
    tokens, corrected = dspark.sample_block(None, base, first_prev_tokens=anchors)
    assert torch.equal(tokens, block)
    assert corrected is base
    logits, tap = dspark.base_logits(None, torch.zeros((6, 64)))
    assert tuple(logits.shape) == (6, 1)
    assert tap is None


def test_the_injection_refuses_hidden_states_of_another_width() -> None:
    draft = SimpleNamespace(fc=torch.nn.Linear(128, 64, bias=False))
    before = dict(dspark.INJECTED)
    dspark.write_target_hidden_kv(draft, target_hidden=torch.zeros((12, 128)), pool=None)
    assert dspark.INJECTED["rows"] - before["rows"] == 12
    with pytest.raises(dspark.WidthMismatch, match="128 wide"):
        dspark.write_target_hidden_kv(draft, target_hidden=torch.zeros((12, 64)))


def test_the_target_hands_its_hidden_states_at_the_draft_s_layers() -> None:
    hidden = torch.zeros((4, 64))
    capturing = SimpleNamespace(
        capture_aux_hidden_states=True, model=SimpleNamespace(layers_to_capture=[1, 2])
    )
    (aux,) = standin._aux_hidden(capturing, hidden)
    assert len(aux) == 2
    assert torch.cat(aux, dim=-1).shape == (4, 128)  # as the LogitsProcessor packs them
    assert standin._aux_hidden(SimpleNamespace(), hidden) == []


def test_the_dspark_draft_config_is_the_preset_s_block(tmp_path: Any) -> None:
    folder = server.write_dspark_draft(tmp_path / "draft", 4096, 5)
    config = json.loads((folder / "config.json").read_text())
    assert config["block_size"] == 5
    assert config["hidden_size"] == server.MODEL_CONFIG["hidden_size"]
    assert config["mask_token_id"] < server.MODEL_CONFIG["vocab_size"]
    assert max(config["target_layer_ids"]) < server.MODEL_CONFIG["num_hidden_layers"]
    assert config["markov_rank"] > 0


def test_the_dspark_preset_verifies_a_window_of_gamma_plus_one() -> None:
    preset = rp.get("decode-b256+dspark")
    assert preset.spec is speculation.DSPARK or preset.spec == speculation.DSPARK
    assert preset.spec.drafts == 5  # gamma: one step, the window less its anchor
    server_args = preset.server(0)
    assert server_args["speculative_num_draft_tokens"] == 6
    assert "speculative_num_steps" not in server_args  # the revision sets DSpark's one step
    assert server_args["speculative_draft_attention_backend"] == "torch_native"
    assert "attention_backend" not in speculation.DSPARK.server()
    job = preset.spec.job()
    assert (job["algorithm"], job["draft_tokens"], job["drafts"]) == ("DSPARK", 6, 5)
    with pytest.raises(ValueError, match=r"accept_len=6\.5 cannot be reached with 6 draft"):
        rp.with_changes(preset, {"accept_len": 6.5})


def test_the_dspark_claims_hold_while_the_scheduler_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []

    def handle_dspark(args: Any) -> None:
        seen.append(args.device)
        if not args.device.startswith(("cuda", "npu")):
            raise ValueError("DSpark speculative decoding only supports CUDA or NPU device.")

    def fallback(*, draft_server_args: Any, algo_label: str) -> str:
        return "flashinfer"

    hook = types.ModuleType("sglang.srt.arg_groups.speculative_hook")
    hook._handle_dspark = handle_dspark  # type: ignore[attr-defined]
    common = types.ModuleType("sglang.srt.speculative.draft_worker_common")
    common._resolve_draft_attention_backend_fallback = fallback  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sglang.srt.arg_groups.speculative_hook", hook)
    monkeypatch.setitem(sys.modules, "sglang.srt.speculative.draft_worker_common", common)
    monkeypatch.setattr("bench.real.driver.server._has", lambda name: name in sys.modules)
    claims = Claims()
    assert len(claims.claim(amx=False, spec_overlap=False, dspark=True)) == 2
    args = SimpleNamespace(device="cpu", speculative_draft_attention_backend="torch_native")
    hook._handle_dspark(args)
    assert (seen, args.device) == (["cuda"], "cpu")  # seen as CUDA, given back
    resolve = common._resolve_draft_attention_backend_fallback
    assert resolve(draft_server_args=args, algo_label="DSPARK") == "torch_native"
    gpu = SimpleNamespace(speculative_draft_attention_backend=None)
    assert resolve(draft_server_args=gpu, algo_label="DSPARK") == "flashinfer"
    claims.release()
    with pytest.raises(ValueError, match="only supports CUDA"):
        hook._handle_dspark(args)
    assert common._resolve_draft_attention_backend_fallback is fallback


def test_dspark_s_kernel_classes_are_timed_as_the_stand_in_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = "sglang.kernels.ops.speculative.dspark.dspark_accept"
    module = types.ModuleType(name)

    class AcceptGreedy:
        @classmethod
        def execute(cls, *, x: torch.Tensor) -> torch.Tensor:
            return x + 1

    AcceptGreedy.__module__ = name
    module.AcceptGreedy = AcceptGreedy  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, name, module)
    phases = Phases()
    assert dspark.time_kernels(phases) == ["AcceptGreedy"]
    assert AcceptGreedy.execute(x=torch.tensor([1])).tolist() == [2]
    assert phases.ns["stand_in"] > 0


def test_the_stand_in_transfer_manager_holds_the_fork_s_hidden_row_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the prefill node of bytedance-iaas/sglang 32990a0560 reads kv_manager.req_to_pd_hidden_meta
    # for every request (prefill.py:378, 394 there); the fake manager has no such table
    class KVClassType(enum.Enum):
        KVARGS, MANAGER, SENDER, RECEIVER = range(4)

    class FakeKVManager:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.req_to_decode_prefix_len: dict[int, int] = {}

    utils = types.ModuleType("sglang.srt.disaggregation.utils")
    utils.KVClassType = KVClassType  # type: ignore[attr-defined]
    utils.TransferBackend = str  # type: ignore[attr-defined]
    utils.get_kv_class = lambda backend, kind: None  # type: ignore[attr-defined]
    base = types.ModuleType("sglang.srt.disaggregation.base")
    base.KVArgs = object  # type: ignore[attr-defined]
    base.KVPoll = SimpleNamespace()  # type: ignore[attr-defined]
    fake = types.ModuleType("sglang.srt.disaggregation.fake")
    fake.FakeKVManager = FakeKVManager  # type: ignore[attr-defined]
    fake.FakeKVSender = type("FakeKVSender", (), {})  # type: ignore[attr-defined]
    fake.FakeKVReceiver = type("FakeKVReceiver", (), {})  # type: ignore[attr-defined]
    package = types.ModuleType("sglang.srt.disaggregation")
    package.utils = utils  # type: ignore[attr-defined]
    for name, module in (
        ("sglang.srt.disaggregation", package),
        ("sglang.srt.disaggregation.utils", utils),
        ("sglang.srt.disaggregation.base", base),
        ("sglang.srt.disaggregation.fake", fake),
    ):
        monkeypatch.setitem(sys.modules, name, module)
    transfer.install()
    manager = utils.get_kv_class(transfer.BACKEND, KVClassType.MANAGER)()
    assert isinstance(manager, FakeKVManager)
    assert manager.req_to_pd_hidden_meta == {}  # no decode node asked for hidden rows


def test_the_accept_interval_is_the_stream_s_over_iterations() -> None:
    """Tokens per verify with a ratio interval over iterations: draws of a known geometric
    stream give an interval that holds its mean, narrower with more iterations; identical
    processes report it once, said so; processes that differ get a t interval over them."""
    import random

    from bench.real.measure import ProcessSummary, accept_interval
    from bench.real.report import _accept_text

    def iterations(n: int, seed: int) -> list[tuple[int, int]]:
        rng = random.Random(seed)
        out = []
        for _ in range(n):
            accepts = [1 + min(4, int(math.log(rng.random()) / math.log(0.5))) for _ in range(64)]
            out.append((sum(accepts), len(accepts)))
        return out

    truth = sum(min(5, k) * 0.5**k for k in range(1, 20))  # 1 + min(4, floor(Geometric))
    short, long = accept_interval(iterations(50, 1)), accept_interval(iterations(800, 2))
    assert short is not None
    assert long is not None
    assert short[0] < truth < short[1]
    assert long[0] < truth < long[1]
    assert long[1] - long[0] < (short[1] - short[0]) / 2
    assert accept_interval([(3, 1)]) is None
    assert accept_interval([(0, 0), (0, 0)]) is None

    def summary(tokens: int, ci: tuple[float, float] | None) -> ProcessSummary:
        return ProcessSummary(
            1, 1.0, 0.0, 0.0, (0, 0, 0), [], None, 0.0,
            verified=100, verified_tokens=tokens, accept_ci=ci,
        )  # fmt: skip

    same = [summary(208, (2.0, 2.16)), summary(208, (2.0, 2.16))]
    assert _accept_text(same, [2.08, 2.08]) == (
        "2.080 [2.000, 2.160] (over one process's iterations; its 2 processes verified the same "
        "draws)"
    )
    text = _accept_text([summary(200, None), summary(210, None)], [2.0, 2.1])
    assert text.startswith("2.050 [")
    assert text.endswith("(t interval over 2 processes)")
