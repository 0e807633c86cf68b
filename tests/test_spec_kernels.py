"""The torch versions of sgl_kernel's speculative CPU ops (bench.real.driver.kernels), each on
small cases whose expected outputs were worked out by hand from the C++ op's semantics
(spec.cpp / kvcache.cpp at SGLang d55f1c28e2) and are written here literally: chains and
branching trees, requests accepting no draft, some, or all, -1 padding, zero-length ranges."""

from __future__ import annotations

import re

import pytest
import torch

from bench.real.driver import kernels
from bench.real.driver.kernels import (
    OPS,
    TORCH_OPS,
    assign_draft_cache_locs_contiguous_cpu,
    assign_extend_cache_locs_cpu,
    assign_req_to_token_pool_cpu,
    build_draft_decode_metadata_cpu,
    build_tree_kernel_efficient_cpu,
    copy_all_layer_kv_cache_cpu,
    fill_accept_out_cache_loc_cpu,
    fill_bonus_tokens_cpu,
    reconstruct_indices_from_tree_mask,
    rotate_input_ids_cpu,
    verify_tree_greedy_cpu,
)

INDEX = pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
I32, I64 = torch.int32, torch.int64


def t(values: object, dtype: torch.dtype = I64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


def test_every_op_is_callable_and_in_the_docstring_table() -> None:
    doc = kernels.__doc__ or ""
    table = doc[doc.index("  op ") :]
    for name, fn in OPS.items():
        assert callable(fn)
        assert fn.__name__ == name
        assert re.search(rf"^  {name}\s", table, re.MULTILINE), name


def test_torch_ops_are_the_same_functions_under_the_schema_names() -> None:
    assert TORCH_OPS["reconstruct_indices_from_tree_mask_cpu"] is reconstruct_indices_from_tree_mask
    assert "reconstruct_indices_from_tree_mask" not in TORCH_OPS
    assert set(TORCH_OPS) - {"reconstruct_indices_from_tree_mask_cpu"} == set(OPS) - {
        "reconstruct_indices_from_tree_mask",
        *kernels.CUDA_OPS,
    }
    assert all(TORCH_OPS[name] is OPS[name] for name in OPS if name in TORCH_OPS)


# verify_tree_greedy_cpu


def _verify(
    candidates: torch.Tensor,
    index: torch.Tensor,
    first: torch.Tensor,
    sibling: torch.Tensor,
    target: torch.Tensor,
    steps: int,
) -> tuple[list[int], list[list[int]], list[int]]:
    bs, n = candidates.shape
    predicts = torch.full((bs * n,), -1, dtype=I32)
    accept_index = torch.full((bs, steps), -1, dtype=I32)
    accept_token_num = torch.full((bs,), 99, dtype=I32)
    verify_tree_greedy_cpu(
        predicts=predicts,
        accept_index=accept_index,
        accept_token_num=accept_token_num,
        candidates=candidates,
        retrive_index=index,
        retrive_next_token=first,
        retrive_next_sibling=sibling,
        target_predict=target,
    )
    return predicts.tolist(), accept_index.tolist(), accept_token_num.tolist()


@INDEX
def test_verify_chain_accepting_some_all_and_none(dtype: torch.dtype) -> None:
    # Three 4-token chains (0 -> 1 -> 2 -> 3). Request 0: drafts 3, 4 match the target's argmax
    # at their parents, 5 does not (target 9). Request 1: all three match. Request 2: none.
    index = t([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], dtype)
    first = t([[1, 2, 3, -1]] * 3, dtype)
    sibling = t([[-1] * 4] * 3, dtype)
    candidates = t([[10, 3, 4, 5], [20, 21, 22, 23], [40, 41, 42, 43]], dtype)
    target = t([[3, 4, 9, 9], [21, 22, 23, 24], [50, 51, 52, 53]], dtype)
    predicts, accept, count = _verify(candidates, index, first, sibling, target, 4)
    assert accept == [[0, 1, 2, -1], [4, 5, 6, 7], [8, -1, -1, -1]]
    assert count == [2, 3, 0]
    # The target's token at every accepted node; the others keep the caller's -1.
    assert predicts == [3, 4, 9, -1, 21, 22, 23, 24, 50, -1, -1, -1]


def test_verify_stops_at_the_width_of_accept_index() -> None:
    # Request 0 of the chain case with two columns: one draft accepted though two match.
    predicts, accept, count = _verify(
        t([[10, 3, 4, 5]]),
        t([[0, 1, 2, 3]]),
        t([[1, 2, 3, -1]]),
        t([[-1] * 4]),
        t([[3, 4, 9, 9]]),
        2,
    )
    assert (predicts, accept, count) == ([3, 4, -1, -1], [[0, 1]], [1])


@INDEX
def test_verify_branching_tree_tries_siblings_in_order(dtype: torch.dtype) -> None:
    # Per request: root 0 -> {1, 2}; 1 -> 3; 2 -> {4, 5} (first child, then next sibling).
    first = t([[1, 3, 4, -1, -1, -1]] * 2, dtype)
    sibling = t([[-1, 2, -1, -1, 5, -1]] * 2, dtype)
    index = t([[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]], dtype)
    candidates = t([[0, 7, 8, 9, 5, 6]] * 2, dtype)
    # Request 0: target 8 at the root -> node 1 (7) fails, its sibling 2 (8) is accepted;
    # target 6 at node 2 -> node 4 (5) fails, node 5 (6) is accepted.
    # Request 1: target 7 at the root -> node 1 accepted; target 2 at node 1 -> node 3 (9)
    # fails and has no sibling: the walk stops with one draft.
    target = t([[8, 0, 6, 0, 0, 1], [7, 2, 0, 3, 0, 0]], dtype)
    predicts, accept, count = _verify(candidates, index, first, sibling, target, 3)
    assert accept == [[0, 2, 5], [6, 7, -1]]
    assert count == [2, 1]
    assert predicts == [8, -1, 6, -1, -1, 1, 7, 2, -1, -1, -1, -1]


def test_verify_refuses_outputs_of_the_wrong_dtype() -> None:
    cand = t([[1, 2]])
    with pytest.raises(RuntimeError, match="predicts"):
        verify_tree_greedy_cpu(
            torch.zeros(2, dtype=I64),
            torch.zeros(1, 2, dtype=I32),
            torch.zeros(1, dtype=I32),
            cand,
            t([[0, 1]]),
            t([[1, -1]]),
            t([[-1, -1]]),
            cand,
        )


# build_tree_kernel_efficient_cpu


def _build(
    parent_list: torch.Tensor,
    selected: torch.Tensor,
    seq_lens: torch.Tensor,
    topk: int,
    depth: int,
    n: int,
    mode: int,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, list[int], list[list[list[int]]]]:
    bs = seq_lens.numel()
    if mask is None:
        mask = torch.ones(bs * n * n, dtype=torch.bool)
    positions = torch.zeros(bs * n, dtype=seq_lens.dtype)
    links = torch.full((3, bs, n), -1, dtype=seq_lens.dtype)  # as the caller pre-fills them
    build_tree_kernel_efficient_cpu(
        parent_list, selected, seq_lens, mask, positions, *links, topk, depth, n, mode
    )
    return mask, positions.tolist(), links.tolist()


@INDEX
def test_build_tree_chain(dtype: torch.dtype) -> None:
    # topk 1, 3 steps: parent_list [-1, 0, 1] and tokens 0, 1, 2 make the chain 0-1-2-3.
    mask, positions, (index, first, sibling) = _build(
        t([[-1, 0, 1]] * 2, dtype), t([[0, 1, 2]] * 2, dtype), t([7, 12], dtype), 1, 3, 4, 1
    )
    assert index == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert first == [[1, 2, 3, -1]] * 2
    assert sibling == [[-1] * 4] * 2
    assert positions == [7, 8, 9, 10, 12, 13, 14, 15]
    tril = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]
    assert mask.view(2, 4, 4).int().tolist() == [tril, tril]


def test_build_tree_full_mask_writes_only_the_draft_columns() -> None:
    # FULL_MASK rows are seq_len + 4 wide; the prefix columns are the caller's (here left
    # False to show the op does not touch them).
    mask = torch.zeros((2 + 1 + 2 * 4) * 4, dtype=torch.bool)
    mask, positions, _ = _build(
        t([[-1, 0, 1]] * 2), t([[0, 1, 2]] * 2), t([2, 1]), 1, 3, 4, 0, mask
    )
    assert positions == [2, 3, 4, 5, 1, 2, 3, 4]
    assert mask.int().tolist() == [
        *[0, 0, 1, 0, 0, 0],
        *[0, 0, 1, 1, 0, 0],
        *[0, 0, 1, 1, 1, 0],
        *[0, 0, 1, 1, 1, 1],
        *[0, 1, 0, 0, 0],
        *[0, 1, 1, 0, 0],
        *[0, 1, 1, 1, 0],
        *[0, 1, 1, 1, 1],
    ]


def test_build_tree_branching() -> None:
    # topk 2, 3 steps, 5 tokens. Token ids: 0-1 from step 0 (children of the root), 2-5 from
    # step 1 (token t's parent is token parent_list[t // 2]), 6-9 from step 2.
    # Request 0: tokens 0, 1, 4, 6. 4 // 2 = 2 -> parent_list[2] = 1 (node 2); 6 // 2 = 3 ->
    # parent_list[3] = 4 (node 3). Tree: 0 -> {1, 2}, 2 -> 3 -> 4.
    # Request 1: tokens 0, 2, 3, 6. 2 // 2 = 3 // 2 = 1 -> token 0 (node 1); 6 // 2 = 3 ->
    # parent_list[3] = 2 (node 2). Tree: 0 -> 1 -> {2, 3}, 2 -> 4.
    parent_list = t([[-1, 0, 1, 4, 2], [-1, 0, 1, 2, 3]])
    selected = t([[0, 1, 4, 6], [0, 2, 3, 6]])
    mask, positions, (index, first, sibling) = _build(parent_list, selected, t([10, 3]), 2, 3, 5, 1)
    assert index == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert first == [[1, -1, 3, 4, -1], [1, 2, 4, -1, -1]]
    assert sibling == [[-1, 2, -1, -1, -1], [-1, -1, 3, -1, -1]]
    assert positions == [10, 11, 11, 12, 13, 3, 4, 5, 5, 6]
    assert mask.view(2, 5, 5).int().tolist() == [
        [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [1, 0, 1, 1, 0], [1, 0, 1, 1, 1]],
        [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 0, 1, 0], [1, 1, 1, 0, 1]],
    ]


def test_build_tree_one_step_takes_an_empty_parent_list() -> None:
    # MTP with one step: no non-root parent, so parent_list is (bs, 0).
    mask, positions, (index, first, sibling) = _build(
        torch.empty(2, 0, dtype=I64), t([[0], [0]]), t([4, 9]), 1, 1, 2, 1
    )
    assert (index, first, sibling) == ([[0, 1], [2, 3]], [[1, -1]] * 2, [[-1, -1]] * 2)
    assert positions == [4, 5, 9, 10]
    assert mask.view(2, 2, 2).int().tolist() == [[[1, 0], [1, 1]]] * 2


def test_build_tree_with_a_missing_parent_warns_and_leaves_the_node_unlinked() -> None:
    # Token 8 // 2 = 4 -> parent_list[4] = 2, which no node holds: node 3 is not linked, its
    # walk stops at itself (position seq_len + 1, mask: the root and itself).
    with pytest.warns(UserWarning, match="invalid eagle tree"):
        mask, positions, (_, first, sibling) = _build(
            t([[-1, 0, 1, 4, 2]]), t([[0, 1, 8]]), t([0]), 2, 3, 4, 1
        )
    assert (first, sibling) == ([[1, -1, -1, -1]], [[-1, 2, -1, -1]])
    assert positions == [0, 1, 1, 1]
    assert mask.view(4, 4).int().tolist() == [
        [1, 0, 0, 0],
        [1, 1, 0, 0],
        [1, 0, 1, 0],
        [1, 0, 0, 1],
    ]


def test_build_tree_links_onto_what_next_token_held() -> None:
    # The C++ op pushes each node onto its parent's child list without clearing it first
    # (callers pre-fill -1): a root that held 5 ends with child 1, whose sibling is the 5.
    links = t([[[0, 0, 0]], [[5, -1, -1]], [[-1, -1, -1]]])
    mask, positions = torch.ones(9, dtype=torch.bool), torch.zeros(3, dtype=I64)
    build_tree_kernel_efficient_cpu(
        t([[-1, 0]]), t([[0, 1]]), t([0]), mask, positions, *links, 1, 2, 3, 1
    )
    assert links.tolist() == [[[0, 1, 2]], [[1, 2, -1]], [[-1, 5, -1]]]


def test_build_tree_refuses_the_bitpacked_mode() -> None:
    with pytest.raises(RuntimeError, match="QLEN_ONLY"):
        _build(t([[-1, 0, 1]]), t([[0, 1, 2]]), t([3]), 1, 3, 4, 2)


# reconstruct_indices_from_tree_mask


def _reconstruct(rows: list[list[int]], seq_lens: torch.Tensor, n: int) -> list[list[int]]:
    bs = seq_lens.numel()
    mask = torch.tensor(rows, dtype=torch.bool).flatten()
    positions = torch.full((bs * n,), -9, dtype=seq_lens.dtype)
    links = torch.full((3, bs, n), -9, dtype=seq_lens.dtype)
    reconstruct_indices_from_tree_mask(mask, seq_lens, positions, *links, bs, n)
    return [positions.tolist(), *links.flatten(1).tolist()]


@INDEX
def test_reconstruct_branching_tree_and_chain(dtype: torch.dtype) -> None:
    tree = [  # 0 -> {1, 2}, 2 -> {3, 4}; row i marks i's ancestors and itself
        [1, 0, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [1, 0, 1, 0, 0],
        [1, 0, 1, 1, 0],
        [1, 0, 1, 0, 1],
    ]
    chain = [[1] * (i + 1) + [0] * (4 - i) for i in range(5)]
    positions, index, first, sibling = _reconstruct(tree + chain, t([12, 5], dtype), 5)
    assert positions == [12, 13, 13, 14, 14, 5, 6, 7, 8, 9]
    assert index == list(range(10))
    assert first == [1, -1, 3, -1, -1, 1, 2, 3, 4, -1]
    assert sibling == [-1, 2, -1, 4, -1, -1, -1, -1, -1, -1]


def test_reconstruct_a_node_without_ancestors_is_a_second_root() -> None:
    # Node 2's row marks no ancestor: position seq_len, no sibling link, and it is skipped
    # between the root's children 1 and 3.
    rows = [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1]]
    positions, index, first, sibling = _reconstruct(rows, t([0]), 4)
    assert (positions, index) == ([0, 1, 0, 1], [0, 1, 2, 3])
    assert (first, sibling) == ([1, -1, -1, -1], [-1, 3, -1, -1])


# KV slot bookkeeping


def test_assign_req_to_token_pool_scatters_each_range() -> None:
    # int64 request indices with int32 offsets, as eagle_prepare_for_decode passes them; the
    # second request's range is empty; out_cache_loc has a spare entry past the total.
    req_to_token = torch.zeros(3, 6, dtype=I32)
    assign_req_to_token_pool_cpu(
        t([2, 0, 1]),
        req_to_token,
        t([1, 3, 0], I32),
        t([3, 3, 2], I32),
        t([100, 101, 102, 103, 999]),
        6,
    )
    assert req_to_token.tolist() == [
        [0, 0, 0, 0, 0, 0],
        [102, 103, 0, 0, 0, 0],
        [0, 100, 101, 0, 0, 0],
    ]
    with pytest.raises(RuntimeError, match="offsets require 4"):
        assign_req_to_token_pool_cpu(
            t([2, 0, 1]), req_to_token, t([1, 3, 0]), t([3, 3, 2]), t([1, 2, 3]), 6
        )


def test_assign_extend_cache_locs_gathers_each_range_and_keeps_the_tail() -> None:
    req_to_token = torch.arange(18, dtype=I32).view(3, 6)  # slot 6 * row + column
    out = torch.full((5,), -7, dtype=I64)
    assign_extend_cache_locs_cpu(
        t([1, 0, 2], I32), req_to_token, t([2, 5, 0]), t([4, 5, 1]), out, 6
    )
    assert out.tolist() == [8, 9, 12, -7, -7]
    with pytest.raises(RuntimeError, match="offsets require 3"):
        assign_extend_cache_locs_cpu(
            t([1, 0, 2]), req_to_token, t([2, 5, 0]), t([4, 5, 1]), torch.empty(2, dtype=I64), 6
        )


@INDEX
def test_assign_draft_cache_locs_contiguous(dtype: torch.dtype) -> None:
    req_to_token = torch.arange(16, dtype=I32).view(2, 8)  # slot 8 * row + column
    out = torch.empty(4, dtype=I64)
    assign_draft_cache_locs_contiguous_cpu(t([1, 0]), req_to_token, t([3, 0], dtype), out, 8, 2, 1)
    assert out.tolist() == [11, 12, 0, 1]
    with pytest.raises(RuntimeError, match="out_cache_loc size"):
        assign_draft_cache_locs_contiguous_cpu(t([1, 0]), req_to_token, t([3, 0]), out, 8, 2, 2)
    with pytest.raises(RuntimeError, match="req_to_token"):
        assign_draft_cache_locs_contiguous_cpu(
            t([1, 0]), req_to_token.long(), t([3, 0]), out, 8, 2, 1
        )


def test_build_draft_decode_metadata_puts_each_candidates_drafts_after_the_prefix() -> None:
    req_to_token = torch.arange(20, dtype=I32).view(2, 10)  # slot 10 * row + column
    # Request 0 (row 1, prefix 2): candidate 0's two drafts at columns 2-3, candidate 1's at
    # 4-5. Request 1 (row 0, empty prefix): candidate 0 at 0-1, candidate 1 at 2-3.
    draft = build_draft_decode_metadata_cpu(req_to_token, t([1, 0]), t([2, 0], I32), 2, 2, 10)
    assert (draft.shape, draft.dtype) == (torch.Size([4, 10]), I32)
    defined = [draft[0, :4], draft[1, :4], draft[2, :2], draft[3, :2]]
    assert [row.tolist() for row in defined] == [[10, 11, 12, 13], [10, 11, 14, 15], [0, 1], [2, 3]]


def test_fill_bonus_tokens_takes_the_last_accepted() -> None:
    accept_tokens = t([[5, 6, 7], [8, 9, 10]], I32)
    bonus = torch.empty(2, dtype=I32)
    fill_bonus_tokens_cpu(accept_tokens, t([1, 3], I32), bonus, 3)
    assert bonus.tolist() == [5, 10]
    # The read is flat, as the C++ op's: a 0 length reads the previous row's last token ...
    fill_bonus_tokens_cpu(accept_tokens, t([3, 0], I32), bonus, 3)
    assert bonus.tolist() == [7, 7]
    # ... and before the first row it is refused rather than read out of bounds.
    with pytest.raises(RuntimeError, match="before accept_tokens"):
        fill_bonus_tokens_cpu(accept_tokens, t([0, 1], I32), bonus, 3)


@INDEX
def test_fill_accept_out_cache_loc_compacts_past_the_padding(dtype: torch.dtype) -> None:
    out_cache_loc = torch.arange(100, 108, dtype=I64)
    out = torch.full((6,), -1, dtype=I64)
    fill_accept_out_cache_loc_cpu(t([[0, 1, -1], [4, -1, -1]], dtype), out_cache_loc, out)
    assert out.tolist() == [100, 101, 104, -1, -1, -1]
    untouched = torch.full((6,), -5, dtype=I64)
    fill_accept_out_cache_loc_cpu(t([[-1] * 3] * 2, dtype), out_cache_loc, untouched)
    assert untouched.tolist() == [-5] * 6
    with pytest.raises(RuntimeError, match="out of range"):
        fill_accept_out_cache_loc_cpu(t([[8, -1, -1], [0, -1, -1]], dtype), out_cache_loc, out)
    with pytest.raises(RuntimeError, match="too small"):
        fill_accept_out_cache_loc_cpu(t([[0] * 3] * 2, dtype), out_cache_loc, out[:5])


# rotate_input_ids_cpu


@INDEX
def test_rotate_input_ids(dtype: torch.dtype) -> None:
    start, lens, new = t([0, 4, 5], dtype), t([4, 1, 3], dtype), t([100, 200, 300])
    ids = torch.arange(10, 18, dtype=I64)
    rotate_input_ids_cpu(ids, start, lens, new)
    assert ids.tolist() == [11, 12, 13, 100, 200, 16, 17, 300]
    # With select_index the new token goes to the given slot, after the shift.
    ids = torch.arange(10, 18, dtype=I64)
    rotate_input_ids_cpu(ids, start, lens, new, t([1, 4, 6]))
    assert ids.tolist() == [11, 100, 13, 13, 200, 16, 300, 17]


def test_rotate_input_ids_leaves_an_empty_segment_alone_and_refuses_int32_ids() -> None:
    ids = torch.arange(10, 17, dtype=I64)
    rotate_input_ids_cpu(ids, t([0, 4, 4]), t([4, 0, 3]), t([100, 200, 300]), None)
    assert ids.tolist() == [11, 12, 13, 100, 15, 16, 300]
    with pytest.raises(RuntimeError, match="input_ids"):
        rotate_input_ids_cpu(ids.int(), t([0]), t([1]), t([5]))


# copy_all_layer_kv_cache_cpu


def _copy(buffers: list[torch.Tensor], tgt: torch.Tensor, src: torch.Tensor) -> None:
    ptrs = torch.tensor([b.data_ptr() for b in buffers], dtype=torch.uint64)
    strides = t([b[0].numel() * b.element_size() for b in buffers])
    copy_all_layer_kv_cache_cpu(ptrs, strides, tgt, src)


def test_copy_all_layer_kv_cache_stages_sources_before_writing() -> None:
    # Two buffers of different row widths (8 and 6 bytes). tgt[i] == src[i + 1]: a row-by-row
    # copy would read row 1 after writing it.
    k = torch.arange(12, dtype=torch.float32).view(6, 2)
    v = torch.arange(18, dtype=torch.int16).view(6, 3)
    _copy([k, v], t([1, 2]), t([0, 1]))
    assert k.tolist() == [[0, 1], [0, 1], [2, 3], [6, 7], [8, 9], [10, 11]]
    assert v.tolist() == [[0, 1, 2], [0, 1, 2], [3, 4, 5], [9, 10, 11], [12, 13, 14], [15, 16, 17]]


def test_copy_all_layer_kv_cache_last_write_wins_and_self_copy_is_a_no_op() -> None:
    k = torch.arange(12, dtype=torch.float32).view(6, 2)
    _copy([k], t([3, 3], I32), t([0, 5], I32))
    assert k[3].tolist() == [10, 11]
    before = k.clone()
    _copy([k], t([0]), t([0]))  # the pool's warm-up call
    _copy([k], t([], I64), t([], I64))
    assert torch.equal(k, before)


def test_every_op_takes_an_empty_batch() -> None:
    def e(*shape: int, dtype: torch.dtype = I64) -> torch.Tensor:
        return torch.empty(*shape, dtype=dtype)

    rtt = torch.zeros(2, 8, dtype=I32)
    assign_req_to_token_pool_cpu(e(0), rtt, e(0), e(0), e(0), 8)
    assign_extend_cache_locs_cpu(e(0), rtt, e(0), e(0), e(0), 8)
    assign_draft_cache_locs_contiguous_cpu(e(0), rtt, e(0), e(0), 8, 2, 3)
    assert build_draft_decode_metadata_cpu(rtt, e(0), e(0), 2, 3, 8).shape == (0, 8)
    fill_bonus_tokens_cpu(e(0, 3, dtype=I32), e(0, dtype=I32), e(0, dtype=I32), 3)
    fill_accept_out_cache_loc_cpu(e(0, 3), e(0), e(0))
    rotate_input_ids_cpu(e(0), e(0), e(0), e(0))
    for mode in (0, 1):
        links = (e(0, 5), e(0, 5), e(0, 5))
        build_tree_kernel_efficient_cpu(
            e(0, 5), e(0, 4), e(0), e(0, dtype=torch.bool), e(0), *links, 2, 3, 5, mode
        )
    reconstruct_indices_from_tree_mask(e(0, dtype=torch.bool), e(0), e(0), *links, 0, 5)
    verify_tree_greedy_cpu(
        e(0, dtype=I32), e(0, 4, dtype=I32), e(0, dtype=I32), *links, e(0, 5), e(0, 5)
    )
    copy_all_layer_kv_cache_cpu(e(0, dtype=torch.uint64), e(0), e(0), e(0))
    assert rtt.eq(0).all()
