"""The torch versions of the Triton kernels SGLang's speculative path launches on its own
(bench.real.driver.triton_kernels) and of the sgl_kernel CUDA ops a revision from before the
CPU speculative path calls (bench.real.driver.kernels), each on a small case whose expected
output was worked out by hand from the kernel's source (sgl-project/sglang d7c93e183b) and is
written here literally; Triton's launch options; the CUDA branches and the draft backend a
revision without a CPU speculative path is given (bench.real.driver.server)."""

from __future__ import annotations

import re
import sys
import types
from typing import Any

import pytest
import torch

from bench.real.driver import kernels, main, server, stubs, triton_launch
from bench.real.driver.phases import Phases
from bench.real.driver.triton_kernels import KERNELS

I32, I64 = torch.int32, torch.int64


def t(values: object, dtype: torch.dtype = I64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


def launch(name: str, grid: tuple[int, ...], **args: Any) -> None:
    KERNELS[name](grid, **args)


def test_every_kernel_is_callable_named_and_cites_its_source() -> None:
    for name, fn in KERNELS.items():
        assert callable(fn)
        doc = fn.__doc__ or ""
        assert doc.split()[0] == name, name
        assert re.search(r"python/sglang/\S+\.py:\d+", doc), name
        assert re.search(r"at\s+sgl-project/sglang\s+[0-9a-f]{10}", doc), name


def _pool(rows: int, width: int) -> torch.Tensor:
    """req_to_token whose entry (r, c) is 10 * r + c."""
    return (torch.arange(rows).view(rows, 1) * 10 + torch.arange(width)).to(I32)


# copy_all_layer_kv_cache_tiled


def _kv_buffers() -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    buffers = [torch.arange(1, 17, dtype=torch.uint8).view(4, 4) for _ in range(2)]
    buffers[1] += 100
    ptrs = t([b.data_ptr() for b in buffers], torch.uint64)
    return buffers, ptrs, t([4, 4])


def test_copy_all_layer_kv_cache_tiled_copies_the_grid_s_tiles_sources_first() -> None:
    buffers, ptrs, strides = _kv_buffers()
    args = dict(data_ptrs=ptrs, strides=strides, tgt_loc_ptr=t([2, 0]), src_loc_ptr=t([0, 1]))
    launch("copy_all_layer_kv_cache_tiled", (2, 1), **args, num_locs=2, num_locs_upper=2,
           BYTES_PER_TILE=2)  # fmt: skip
    # one tile of two bytes: row 2 gets row 0's first two bytes as they were, row 0 row 1's
    assert buffers[0].tolist() == [[5, 6, 3, 4], [5, 6, 7, 8], [1, 2, 11, 12], [13, 14, 15, 16]]
    assert buffers[1][2].tolist() == [101, 102, 111, 112]
    buffers, ptrs, strides = _kv_buffers()
    args.update(data_ptrs=ptrs, strides=strides)
    launch("copy_all_layer_kv_cache_tiled", (1, 2), **args, num_locs=2, num_locs_upper=1,
           BYTES_PER_TILE=2)  # fmt: skip
    # two tiles (whole rows), the first buffer only, and only the first pair (num_locs_upper)
    assert buffers[0].tolist() == [[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [13, 14, 15, 16]]
    assert buffers[1][2].tolist() == [109, 110, 111, 112]


# assign_req_to_token_pool, assign_extend_cache_locs


def test_assign_req_to_token_pool_scatters_each_range_after_the_previous_ones() -> None:
    pool = torch.zeros(3, 6, dtype=I32)
    launch("assign_req_to_token_pool", (2,), req_pool_indices=t([2, 0]), req_to_token=pool,
           start_offset=t([1, 3]), end_offset=t([3, 4]), out_cache_loc=t([10, 11, 12, 99]),
           pool_len=6, bs_upper=2)  # fmt: skip
    assert pool.tolist() == [[0, 0, 0, 12, 0, 0], [0] * 6, [0, 10, 11, 0, 0, 0]]


def test_assign_req_to_token_pool_sums_only_the_ranges_below_bs_upper() -> None:
    pool = torch.zeros(3, 2, dtype=I32)
    launch("assign_req_to_token_pool", (3,), req_pool_indices=t([0, 1, 2]), req_to_token=pool,
           start_offset=t([0, 0, 0]), end_offset=t([1, 1, 1]), out_cache_loc=t([7, 8, 9]),
           pool_len=2, bs_upper=1)  # fmt: skip
    # program 2 loads the lengths at offsets < 1 only: it starts at 1, as program 1 does
    assert pool[:, 0].tolist() == [7, 8, 8]


def test_assign_extend_cache_locs_gathers_each_range_and_keeps_the_tail() -> None:
    out = torch.full((6,), -1, dtype=I64)
    launch("assign_extend_cache_locs", (2,), req_pool_indices=t([2, 0]), req_to_token=_pool(3, 6),
           start_offset=t([1, 4]), end_offset=t([3, 6]), out_cache_loc=out, pool_len=6,
           bs_upper=2)  # fmt: skip
    assert out.tolist() == [21, 22, 4, 5, -1, -1]


def test_a_range_past_its_tensor_is_refused() -> None:
    with pytest.raises(IndexError):
        launch("assign_extend_cache_locs", (1,), req_pool_indices=t([0]), req_to_token=_pool(1, 4),
               start_offset=t([3]), end_offset=t([5]), out_cache_loc=torch.zeros(4, dtype=I64),
               pool_len=4, bs_upper=1)  # fmt: skip


# assign_draft_cache_locs, assign_draft_cache_locs_page_size_1


def _draft_args(**extra: Any) -> dict[str, Any]:
    """The arguments only the branch for pages with topk > 1 reads."""
    return dict(extend_lens=None, num_new_pages_per_topk=None, source_cache_loc=None,
                target_cache_loc=None, last_page_lens_cumsum=None, duplicate_cache_len=0,
                bs_upper=2, iter_upper=2, **extra)  # fmt: skip


def test_assign_draft_cache_locs_writes_each_request_s_draft_slots_after_its_prefix() -> None:
    pool = torch.zeros(2, 5, dtype=I32)
    launch("assign_draft_cache_locs", (2,), req_pool_indices=t([1, 0]), req_to_token=pool,
           seq_lens=t([2, 0]), out_cache_loc=t([50, 51, 60, 61]), pool_len=5, topk=1,
           speculative_num_steps=2, page_size=1, **_draft_args())  # fmt: skip
    assert pool.tolist() == [[60, 61, 0, 0, 0], [0, 0, 50, 51, 0]]


def test_assign_draft_cache_locs_refuses_pages_with_a_wider_tree() -> None:
    with pytest.raises(stubs.StubReached, match=r"assign_draft_cache_locs .*page_size > 1"):
        launch("assign_draft_cache_locs", (1,), req_pool_indices=t([0]),
               req_to_token=torch.zeros(1, 8, dtype=I32), seq_lens=t([1]),
               out_cache_loc=torch.zeros(8, dtype=I64), pool_len=8, topk=2,
               speculative_num_steps=2, page_size=4, **_draft_args())  # fmt: skip


def test_assign_draft_cache_locs_page_size_1_reads_the_draft_slots() -> None:
    out = torch.full((4,), -1, dtype=I64)
    launch("assign_draft_cache_locs_page_size_1", (2,), req_pool_indices=t([1, 0]),
           req_to_token=_pool(2, 5), seq_lens=t([1, 3]), out_cache_loc=out, pool_len=5,
           topk=2, speculative_num_steps=1)  # fmt: skip
    assert out.tolist() == [11, 12, 3, 4]


# create_flashinfer_kv_indices_triton


def test_create_flashinfer_kv_indices_from_the_start_or_from_kv_start_idx() -> None:
    out = torch.full((6,), -1, dtype=I64)
    args = dict(req_to_token_ptr=_pool(2, 5), req_pool_indices_ptr=t([1, 0]),
                page_kernel_lens_ptr=t([2, 3], I32), kv_indptr=t([0, 2, 5], I32),
                kv_indices_ptr=out, req_to_token_ptr_stride=5)  # fmt: skip
    launch("create_flashinfer_kv_indices_triton", (2,), kv_start_idx=None, **args)
    assert out.tolist() == [10, 11, 0, 1, 2, -1]
    launch("create_flashinfer_kv_indices_triton", (2,), kv_start_idx=t([1, 2]), **args)
    assert out.tolist() == [11, 12, 2, 3, 4, -1]


# create_extend_after_decode_spec_info, fill_new_verified_id, fill_accepted_out_cache_loc


def test_create_extend_after_decode_spec_info_positions_and_last_tokens() -> None:
    positions = torch.full((6,), -1, dtype=I64)
    new = torch.zeros(2, dtype=I32)
    launch("create_extend_after_decode_spec_info", (2,), verified_id=t([5, 6, 7, 8, 9]),
           seq_lens=t([10, 20]), accept_lens=t([3, 2], I32), positions=positions,
           new_verified_id=new, bs_upper=4)  # fmt: skip
    assert positions.tolist() == [7, 8, 9, 18, 19, -1]
    assert new.tolist() == [7, 9]


def test_fill_new_verified_id_takes_each_request_s_last_accepted_token() -> None:
    new = torch.zeros(2, dtype=I64)
    launch("fill_new_verified_id", (2,), verified_id=t([1, 2, 3, 4, 5, 6]),
           accept_lens=t([2, 3], I32), new_verified_id=new, num_draft_tokens=3)  # fmt: skip
    assert new.tolist() == [2, 6]
    with pytest.raises(IndexError):  # an accept length of 0 reads before the tensor
        launch("fill_new_verified_id", (1,), verified_id=t([1]), accept_lens=t([0], I32),
               new_verified_id=new, num_draft_tokens=1)  # fmt: skip


def test_fill_accepted_out_cache_loc_compacts_past_the_padding() -> None:
    out = torch.full((6,), -1, dtype=I64)
    launch("fill_accepted_out_cache_loc", (6,), accept_index=t([0, -1, 2, 3, -1, 5], I32),
           out_cache_loc=t([100, 101, 102, 103, 104, 105]), accepted_out_cache_loc=out,
           size_upper=8)  # fmt: skip
    assert out.tolist() == [100, 102, 103, 105, -1, -1]


# generate_draft_decode_kv_indices


def _kv_indices(steps: int, n: int, topk: int, seq: list[int], page: int, width: int) -> Any:
    kv = torch.full((steps, 16), -1, dtype=I64)
    indptr = torch.full((steps, 4), -1, dtype=I32)
    launch("generate_draft_decode_kv_indices", (steps, n, topk),
           req_pool_indices=t(list(range(n))), req_to_token=_pool(n, width),
           paged_kernel_lens=t(seq), kv_indices=kv, kv_indptr=indptr,
           positions=t(seq).repeat_interleave(topk), pool_len=width, kv_indices_stride=16,
           kv_indptr_stride=4, bs_upper=2, iter_upper=2, num_tokens_upper=2,
           page_size=page)  # fmt: skip
    return kv, indptr


def test_generate_draft_decode_kv_indices_a_chain() -> None:
    kv, indptr = _kv_indices(steps=2, n=2, topk=1, seq=[2, 1], page=1, width=6)
    # step 0: request 0's prefix (0, 1) and first draft slot (2), request 1's (10), (11)
    assert kv[0, :6].tolist() == [0, 1, 2, 10, 11, -1]
    # step 1: each with its first two draft slots
    assert kv[1, :8].tolist() == [0, 1, 2, 3, 10, 11, 12, -1]
    # kv_indptr[z] = positions before z + z * (step + 1); z = 0 writes the last entry instead
    assert indptr.tolist() == [[-1, 3, 5, -1], [-1, 4, 7, -1]]


def test_generate_draft_decode_kv_indices_two_candidates() -> None:
    kv, indptr = _kv_indices(steps=2, n=1, topk=2, seq=[1], page=1, width=8)
    # candidate t's drafts start at seq_len + t * steps: columns 1 and 3
    assert kv[0, :5].tolist() == [0, 1, 0, 3, -1]
    assert kv[1, :7].tolist() == [0, 1, 2, 0, 3, 4, -1]
    assert indptr.tolist() == [[-1, 2, 4, -1], [-1, 3, 6, -1]]


def test_generate_draft_decode_kv_indices_pages_with_two_candidates() -> None:
    kv, _ = _kv_indices(steps=2, n=1, topk=2, seq=[3], page=2, width=12)
    # prefix 3 of page 2: a full page (0, 1), then each candidate's two pages repeat the
    # partial one (column 2): candidate 0's drafts from column 3, candidate 1's from 7
    assert kv[0, :8].tolist() == [0, 1, 2, 3, 0, 1, 2, 7]
    assert kv[1, :10].tolist() == [0, 1, 2, 3, 4, 0, 1, 2, 7, 8]


# the CUDA ops: build_tree_kernel_efficient, verify_tree_greedy


def _tree(n: int, depth: int, parent_list: torch.Tensor, selected: list[list[int]]) -> Any:
    mask = torch.zeros(n * n, dtype=torch.bool)
    positions = torch.zeros(n, dtype=I64)
    index, first, sibling = (torch.full((1, n), -1, dtype=I64) for _ in range(3))
    kernels.OPS["build_tree_kernel_efficient"](
        parent_list, t(selected), t([5]), mask, positions, index, first, sibling,
        1, depth, n, 1,
    )  # fmt: skip
    return mask.view(n, n).int().tolist(), positions.tolist(), index, first, sibling


def test_build_tree_kernel_efficient_a_chain() -> None:
    # steps 2, topk 1: node 1 is draft 0 (the root's child), node 2 draft 1 (parent_list[1] = 0)
    mask, positions, index, first, sibling = _tree(3, 2, t([[-1, 0]]), [[0, 1]])
    assert mask == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert positions == [5, 6, 7]
    assert index.tolist() == [[0, 1, 2]]
    assert first.tolist() == [[1, 2, -1]]
    assert sibling.tolist() == [[-1, -1, -1]]


def test_build_tree_kernel_efficient_one_step_takes_the_empty_float_parent_list() -> None:
    mask, positions, _, first, _ = _tree(2, 1, torch.empty(1, 0), [[0]])
    assert mask == [[1, 0], [1, 1]]
    assert positions == [5, 6]
    assert first.tolist() == [[1, -1]]


def test_build_tree_kernel_efficient_refuses_int32_indices() -> None:
    with pytest.raises(RuntimeError, match="selected_index"):
        kernels.OPS["build_tree_kernel_efficient"](
            t([[-1, 0]]), t([[0, 1]], I32), t([5]), torch.zeros(9, dtype=torch.bool),
            torch.zeros(3, dtype=I64), *(torch.full((1, 3), -1, dtype=I64) for _ in range(3)),
            1, 2, 3, 1,
        )  # fmt: skip


def _verify(target: list[int], candidates: torch.Tensor) -> Any:
    predicts = torch.full((4,), -5, dtype=I32)  # one entry more than the tree, as callers pass
    accept_index = torch.full((1, 3), -1, dtype=I32)
    count = torch.zeros(1, dtype=I32)
    kernels.OPS["verify_tree_greedy"](
        predicts, accept_index, count, candidates, t([[0, 1, 2]]), t([[1, 2, -1]]),
        t([[-1, -1, -1]]), t([target]),
    )  # fmt: skip
    return predicts.tolist(), accept_index.tolist(), count.tolist()


def test_verify_tree_greedy_walks_the_chain_and_leaves_the_extra_entry() -> None:
    chain = t([[7, 8, 9]])
    assert _verify([8, 9, 4], chain) == ([8, 9, 4, -5], [[0, 1, 2]], [2])
    assert _verify([8, 3, 4], chain) == ([8, 3, -5, -5], [[0, 1, -1]], [1])
    assert _verify([2, 3, 4], chain) == ([2, -5, -5, -5], [[0, -1, -1]], [0])
    with pytest.raises(RuntimeError, match="candidates"):
        _verify([8, 9, 4], t([[7, 8, 9]], I32))


# Triton's launch options, the CUDA branches and the draft backend


def test_a_launch_drops_triton_s_options_and_applies_the_kernel_s_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class JITFunction:
        def __init__(self, fn: Any) -> None:
            self.fn = fn

        def run(self, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            raise AssertionError("Triton itself was launched")

    jit = types.ModuleType("triton.runtime.jit")
    jit.JITFunction = JITFunction  # type: ignore[attr-defined]
    for name in ("triton", "triton.runtime"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "triton.runtime.jit", jit)
    monkeypatch.setattr(JITFunction, "run", JITFunction.run)  # restored after the test
    seen: dict[str, Any] = {}

    def kernel(x: Any, n: Any, BLOCK: Any = 32) -> None:
        pass

    triton_launch.install(Phases(), {"kernel": lambda grid, **a: seen.update(grid=grid, **a)})
    JITFunction(kernel).run(t([1]), 3, grid=(2,), warmup=False, num_warps=4, num_stages=2)
    assert seen == {"grid": (2,), "x": seen["x"], "n": 3, "BLOCK": 32}


def test_cuda_branches_are_taken_only_where_a_module_has_no_cpu_branch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    older = types.ModuleType("sglang.srt.speculative.eagle_utils")
    older._is_cuda = False  # type: ignore[attr-defined]
    newer = types.ModuleType("sglang.srt.speculative.eagle_info_v2")
    newer._is_cuda = False  # type: ignore[attr-defined]
    newer._is_cpu = True  # type: ignore[attr-defined]
    kernel = types.ModuleType("sgl_kernel")
    kernel.build_tree_kernel_efficient = kernels.build_tree_kernel_efficient  # type: ignore[attr-defined]
    for module in (older, newer, kernel):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(server, "_has", lambda name: name in sys.modules)
    said = server.cuda_branches()
    assert older._is_cuda is True  # type: ignore[attr-defined]
    assert older.sgl_build_tree_kernel_efficient is kernels.build_tree_kernel_efficient  # type: ignore[attr-defined]
    assert newer._is_cuda is False  # type: ignore[attr-defined]
    assert len(said) == 1
    assert "eagle_utils" in said[0]
    assert "eagle_info_v2" not in said[0]


def test_the_draft_runs_under_triton_where_the_revision_has_no_intel_amx_draft(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    draft_utils = types.ModuleType("sglang.srt.speculative.draft_utils")
    draft_utils.DraftBackendFactory = type("DraftBackendFactory", (), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, draft_utils.__name__, draft_utils)
    monkeypatch.setattr(server, "_has", lambda name: name in sys.modules)
    values: dict[str, Any] = {"attention_backend": "intel_amx"}
    assert len(server.draft_backend(values)) == 1
    assert values["speculative_draft_attention_backend"] == "triton"
    other = {"attention_backend": "torch_native"}
    assert server.draft_backend(other) == []
    assert len(other) == 1
    factory = type("F", (), {"_create_intel_amx_decode_backend": lambda self: None})
    draft_utils.DraftBackendFactory = factory  # type: ignore[attr-defined]
    later: dict[str, Any] = {"attention_backend": "intel_amx"}
    assert server.draft_backend(later) == []
    assert len(later) == 1


def test_torch_cuda_synchronize_does_nothing_without_cuda(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "synchronize", torch.cuda.synchronize)  # restored after
    assert len(main._cuda_synchronize_on_cpu(torch)) == 1
    assert torch.cuda.synchronize() is None
