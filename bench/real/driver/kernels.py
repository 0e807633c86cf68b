"""Torch versions of the sgl_kernel CPU ops that SGLang's speculative path (NGRAM, EAGLE, MTP)
calls when it runs on the CPU. No registry wheel ships sgl_kernel's CPU build for the torch the
real mode runs (2.13, CPU), and the stub (bench.real.driver.stubs) raises at the first call, so
these stand in for the compiled ops. Each function has the sgl_kernel Python wrapper's name and
signature, and writes its output tensors in place as the C++ op does: the same dtypes, the same
treatment of -1 and of rows past a request's valid length, the same untouched entries. The
semantics are read from the revision's own source (commit d55f1c28e2, 2026-08-18; the released
0.5.23 calls every op with the same arguments); the code is written here from them.

Where the C++ op would read or write out of bounds (a malformed tree, an index past a tensor),
these raise instead, and where its TORCH_CHECK refuses a dtype or a size they raise
RuntimeError too. Nothing returns a value the C++ op would not.

Sources, at d55f1c28e2: C++ kernels in python/sglang/kernels/aot/csrc/cpu/ (spec.cpp,
kvcache.cpp; op schemas in torch_extension_cpu.cpp:628-684 and :926); Python wrappers in
python/sglang/kernels/aot/python/sgl_kernel/ (speculative.py, kvcacheio.py); the Triton or host
references with the same contract under python/sglang/ (`ops/` = kernels/ops/).

  op                                      computes                              C++ kernel / reference
  reconstruct_indices_from_tree_mask      NGRAM tree links from a QLEN mask:    spec.cpp:689 /
    (torch.ops: ..._cpu)                  positions, identity retrive_index,    srt/speculative/
                                          first child, next sibling             ngram_worker.py:43
  verify_tree_greedy_cpu                  walk each draft tree, accept the      spec.cpp:249 (:48) /
                                          path whose drafts match the target    ops/speculative/
                                          argmax; predicts, accept_index, count spec_tree.py:177
  build_tree_kernel_efficient_cpu         EAGLE tree from parent_list and       spec.cpp:311 (:109) /
                                          selected_index: links, positions,     ops/speculative/
                                          tree mask (FULL_MASK or QLEN_ONLY)    spec_tree.py:19
  assign_req_to_token_pool_cpu            scatter new KV slots into             spec.cpp:387 (:12) /
                                          req_to_token[rpi, start:end]          srt/mem_cache/
                                                                                allocation.py:569
  build_draft_decode_metadata_cpu         per-candidate req_to_token rows:      spec.cpp:435 /
                                          prefix, then candidate tk's drafts    ops/speculative/
                                                                                cache_locs.py:56
  fill_bonus_tokens_cpu                   last accepted token of each request   spec.cpp:496 /
                                                                                ops/speculative/
                                                                                eagle.py:14
  fill_accept_out_cache_loc_cpu           compact out_cache_loc at the          spec.cpp:528 /
                                          accepted indices, skipping -1         ops/speculative/
                                                                                eagle.py:56
  assign_draft_cache_locs_contiguous_cpu  read topk*num_steps draft slots from  spec.cpp:563 /
                                          req_to_token at seq_lens              ops/speculative/
                                                                                cache_locs.py:29
  assign_extend_cache_locs_cpu            gather req_to_token[rpi, start:end]   spec.cpp:618 /
                                          into a dense vector                   ops/speculative/
                                                                                cache_locs.py:330
  rotate_input_ids_cpu                    shift each extend segment left by     spec.cpp:800 /
                                          one, write the new draft token        ops/speculative/
                                                                                multi_layer_eagle.py:29
  copy_all_layer_kv_cache_cpu             copy KV slot rows src -> tgt in every kvcache.cpp:144 /
                                          K/V buffer (gather, then scatter)     ops/kvcache/
                                                                                cache_move.py:61

A revision from before SGLang's CPU speculative path (sgl-project/sglang#27862, e.g. d7c93e183b)
calls two CUDA ops of sgl_kernel instead (from its CUDA branches, which the driver has it take:
bench.real.driver.server.cuda_branches); their contracts are the CPU ops' above, with the CUDA
ops' dtypes (sgl-kernel/csrc/speculative/eagle_utils.cu at d7c93e183b):

  build_tree_kernel_efficient             build_tree_kernel_efficient_cpu's,    eagle_utils.cu:
    (CUDA name)                           int64 indices; bit-packed mode        34-123, 214-269
                                          refused, as the CPU op's
  verify_tree_greedy                      verify_tree_greedy_cpu's, int64       eagle_utils.cu:
    (CUDA name)                           inputs; predicts any 1-D tensor of    271-313, 323-407
                                          at least bs * n entries

Not here: the spec path's attention (the CPU backend's decode and extend attention with a tree
mask) and the sampling ops (the CPU path verifies greedily); they stay stubbed.
"""

from __future__ import annotations

import ctypes
import warnings
from collections.abc import Callable
from typing import Any

import torch

_INDEX = (torch.int32, torch.int64)


def _require(ok: bool, message: str) -> None:
    """The C++ ops' TORCH_CHECK: a RuntimeError naming what was wrong."""
    if not ok:
        raise RuntimeError(message)


def _tensor(t: torch.Tensor, op: str, name: str, dtypes: tuple[torch.dtype, ...]) -> None:
    """CHECK_INPUT and the dtype check: a contiguous CPU tensor of one of `dtypes`."""
    _require(t.device.type == "cpu" and t.is_contiguous(), f"{op}: {name} must be contiguous CPU")
    _require(t.dtype in dtypes, f"{op}: {name} is {t.dtype}, expected one of {dtypes}")


def _shape(t: torch.Tensor, op: str, name: str, shape: tuple[int, ...]) -> None:
    _require(tuple(t.shape) == shape, f"{op}: {name} has shape {tuple(t.shape)}, not {shape}")


def _exclusive_cumsum(x: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(x, 0) - x


def _extreme(flags: torch.Tensor, dim: int, last: bool) -> torch.Tensor:
    """The index of the first (or last) True along `dim`, -1 where there is none. The [b, n, n]
    flags are reduced over int16 indices: a quarter of int64's memory traffic."""
    n = flags.shape[dim]
    shape = [1] * flags.dim()
    shape[dim] = n
    order = torch.arange(n, dtype=torch.int16 if n < 2**15 else torch.int64).view(shape)
    if last:
        return torch.where(flags, order, -1).amax(dim).long()
    first = torch.where(flags, order, n).amin(dim).long()
    return torch.where(first < n, first, -1)


def _ragged(
    start: torch.Tensor, end: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """The element (request, column, dense offset) of every column in [start[i], end[i]).

    The dense offsets follow the C++ ops: request i starts at the sum of end - start over the
    requests before it, negative lengths included, and copies max(end - start, 0) columns.
    Also returns that sum over all requests (the dense length the C++ op checks).
    """
    start, end = start.long(), end.long()
    length = end - start
    count = length.clamp(min=0)
    req = torch.repeat_interleave(torch.arange(start.numel()), count)
    k = torch.arange(int(count.sum())) - _exclusive_cumsum(count)[req]
    return req, start[req] + k, _exclusive_cumsum(length)[req] + k, int(length.sum())


def _pool_slots(
    op: str,
    req_pool_indices: torch.Tensor,
    req_to_token: torch.Tensor,
    start_offset: torch.Tensor,
    end_offset: torch.Tensor,
    out_cache_loc: torch.Tensor,
    pool_len: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The checks the two ragged pool ops share (dtypes, sizes, enough out_cache_loc); per token
    of the ragged rows, its flat index into req_to_token and its place in out_cache_loc."""
    for name, t in (("req_pool_indices", req_pool_indices), ("start_offset", start_offset)):
        _tensor(t, op, name, _INDEX)
    _tensor(end_offset, op, "end_offset", (start_offset.dtype,))
    _tensor(req_to_token, op, "req_to_token", (torch.int32,))
    _tensor(out_cache_loc, op, "out_cache_loc", (torch.int64,))
    _require(req_to_token.dim() == 2 and req_to_token.shape[1] == pool_len, f"{op}: pool_len")
    bs = req_pool_indices.shape[0]
    _require(start_offset.numel() == bs and end_offset.numel() == bs, f"{op}: offsets size")
    req, col, at, total = _ragged(start_offset, end_offset)
    _require(
        total <= out_cache_loc.numel(),
        f"{op}: out_cache_loc has {out_cache_loc.numel()} entries but offsets require {total}",
    )
    return req_pool_indices.long()[req] * pool_len + col, at


def assign_req_to_token_pool_cpu(
    req_pool_indices: torch.Tensor,
    req_to_token: torch.Tensor,
    start_offset: torch.Tensor,
    end_offset: torch.Tensor,
    out_cache_loc: torch.Tensor,
    pool_len: int,
) -> None:
    """req_to_token[rpi[i], start[i]:end[i]] = out_cache_loc[prefix[i]:prefix[i + 1]] (int32)."""
    flat, src = _pool_slots(
        "assign_req_to_token_pool", req_pool_indices, req_to_token, start_offset, end_offset,
        out_cache_loc, pool_len,
    )  # fmt: skip
    req_to_token.view(-1)[flat] = out_cache_loc[src].to(torch.int32)


def assign_extend_cache_locs_cpu(
    req_pool_indices: torch.Tensor,
    req_to_token: torch.Tensor,
    start_offset: torch.Tensor,
    end_offset: torch.Tensor,
    out_cache_loc: torch.Tensor,
    pool_len: int,
) -> None:
    """out_cache_loc[prefix[i]:prefix[i + 1]] = req_to_token[rpi[i], start[i]:end[i]] (int64);
    the tail past the total is left as it was (callers size it at capacity)."""
    flat, dst = _pool_slots(
        "assign_extend_cache_locs", req_pool_indices, req_to_token, start_offset, end_offset,
        out_cache_loc, pool_len,
    )  # fmt: skip
    out_cache_loc[dst] = req_to_token.view(-1)[flat].long()


def assign_draft_cache_locs_contiguous_cpu(
    req_pool_indices: torch.Tensor,
    req_to_token: torch.Tensor,
    seq_lens: torch.Tensor,
    out_cache_loc: torch.Tensor,
    pool_len: int,
    topk: int,
    num_steps: int,
) -> None:
    """out_cache_loc[i * topk * num_steps + j] = req_to_token[rpi[i], seq_lens[i] + j] for
    j < topk * num_steps: the draft slots the allocator reserved after each prefix."""
    op = "assign_draft_cache_locs_contiguous"
    _tensor(req_pool_indices, op, "req_pool_indices", _INDEX)
    _tensor(seq_lens, op, "seq_lens", _INDEX)
    _tensor(req_to_token, op, "req_to_token", (torch.int32,))
    _tensor(out_cache_loc, op, "out_cache_loc", (torch.int64,))
    _require(req_to_token.dim() == 2 and req_to_token.shape[1] == pool_len, f"{op}: pool_len")
    bs = req_pool_indices.shape[0]
    copy_len = topk * num_steps
    _require(out_cache_loc.numel() == bs * copy_len, f"{op}: out_cache_loc size")
    _require(seq_lens.numel() == bs, f"{op}: seq_lens size")
    base = req_pool_indices.long() * pool_len + seq_lens.long()
    flat = base[:, None] + torch.arange(copy_len)
    out_cache_loc.view(bs, copy_len)[:] = req_to_token.view(-1)[flat].long()


def build_draft_decode_metadata_cpu(
    req_to_token: torch.Tensor,
    req_pool_indices: torch.Tensor,
    seq_lens: torch.Tensor,
    topk: int,
    num_steps: int,
    pool_len: int,
) -> torch.Tensor:
    """A new [len(rpi) * topk, pool_len] int32 map: row b * topk + tk holds request b's first
    seq_lens[b] slots, then the num_steps slots of candidate tk, which sit at seq_lens[b] +
    tk * num_steps in its row. Only the first seq_lens[b] + num_steps entries of a row are
    defined (the C++ op allocates the rest uninitialised; here they hold the source row)."""
    op = "build_draft_decode_metadata"
    _tensor(req_to_token, op, "req_to_token", (torch.int32,))
    _tensor(req_pool_indices, op, "req_pool_indices", _INDEX)
    _tensor(seq_lens, op, "seq_lens", _INDEX)
    _require(req_to_token.dim() == 2 and req_to_token.shape[1] == pool_len, f"{op}: pool_len")
    num_seqs = req_pool_indices.shape[0]
    _require(seq_lens.numel() == num_seqs, f"{op}: seq_lens size")
    source = req_to_token[req_pool_indices.long()]  # [num_seqs, pool_len]
    draft = source.repeat_interleave(topk, dim=0).view(num_seqs, topk, pool_len)
    sl = seq_lens.long().view(num_seqs, 1, 1)
    step = torch.arange(num_steps).view(1, 1, num_steps)
    candidate = torch.arange(topk).view(1, topk, 1)
    read = (sl + candidate * num_steps + step).expand(num_seqs, topk, num_steps)
    values = source.gather(1, read.reshape(num_seqs, topk * num_steps)).view(read.shape)
    draft.scatter_(2, (sl + step).expand(num_seqs, topk, num_steps), values)
    return draft.view(num_seqs * topk, pool_len)


def fill_bonus_tokens_cpu(
    accept_tokens: torch.Tensor,
    accept_lens: torch.Tensor,
    bonus_tokens: torch.Tensor,
    accept_stride: int,
) -> None:
    """bonus_tokens[i] = accept_tokens.flat[accept_stride * i + accept_lens[i] - 1]: the last
    accepted token (accept_lens counts the bonus token). The read is flat, as the C++ op's is."""
    op = "fill_bonus_tokens"
    for name, t in (("accept_tokens", accept_tokens), ("accept_lens", accept_lens)):
        _tensor(t, op, name, (torch.int32,))
    _tensor(bonus_tokens, op, "bonus_tokens", (torch.int32,))
    bs = accept_lens.shape[0]
    _require(accept_tokens.numel() == bs * accept_stride, f"{op}: accept_tokens size")
    _require(bonus_tokens.numel() == bs, f"{op}: bonus_tokens size")
    at = torch.arange(bs) * accept_stride + accept_lens.long() - 1
    _require(bool((at >= 0).all()), f"{op}: accept_lens reaches before accept_tokens")
    bonus_tokens.view(-1)[:] = accept_tokens.view(-1)[at]


def fill_accept_out_cache_loc_cpu(
    accept_index: torch.Tensor,
    out_cache_loc: torch.Tensor,
    accept_out_cache_loc: torch.Tensor,
) -> None:
    """accept_out_cache_loc[:k] = out_cache_loc[a] for the k entries a of accept_index (flat,
    in order) with a > -1; the entries past k are left as they were."""
    op = "fill_accept_out_cache_loc"
    _tensor(accept_index, op, "accept_index", _INDEX)
    _tensor(out_cache_loc, op, "out_cache_loc", (torch.int64,))
    _tensor(accept_out_cache_loc, op, "accept_out_cache_loc", (torch.int64,))
    _require(accept_out_cache_loc.numel() >= accept_index.numel(), f"{op}: output too small")
    src = accept_index.reshape(-1).long()
    src = src[src > -1]
    _require(bool((src < out_cache_loc.numel()).all()), f"{op}: accept_index out of range")
    accept_out_cache_loc.view(-1)[: src.numel()] = out_cache_loc.view(-1)[src]


def rotate_input_ids_cpu(
    input_ids: torch.Tensor,
    extend_start_loc: torch.Tensor,
    extend_seq_lens: torch.Tensor,
    topk_index: torch.Tensor,
    select_index: torch.Tensor | None = None,
) -> None:
    """For each request with a segment [start, start + len): shift it left by one token, then
    write topk_index[i] at start + len - 1, or at the global select_index[i] when given. A
    request with len 0 is left alone. Segments are taken as disjoint, as the parallel C++ op
    takes them."""
    op = "rotate_input_ids"
    _tensor(input_ids, op, "input_ids", (torch.int64,))
    _tensor(extend_start_loc, op, "extend_start_loc", _INDEX)
    _tensor(extend_seq_lens, op, "extend_seq_lens", _INDEX)
    _tensor(topk_index, op, "topk_index", (torch.int64,))
    bs = extend_seq_lens.shape[0]
    _require(extend_start_loc.numel() == bs and topk_index.numel() == bs, f"{op}: sizes")
    if select_index is not None:
        _tensor(select_index, op, "select_index", (torch.int64,))
        _require(select_index.numel() == bs, f"{op}: select_index size")
    start, length = extend_start_loc.long(), extend_seq_lens.long()
    ids = input_ids.view(-1)
    _, dst, _, _ = _ragged(start, start + length - 1)
    ids[dst] = ids[dst + 1]  # the right side is gathered before the write: a memmove
    has = length > 0
    at = (start + length - 1) if select_index is None else select_index.view(-1)
    ids[at[has]] = topk_index.view(-1)[has]


def _node_parents(
    parent_list: torch.Tensor, selected_index: torch.Tensor, topk: int
) -> torch.Tensor:
    """The parent node of each draft node of an EAGLE tree, [bs, n]: node i >= 1 is the draft
    token selected_index[b, i - 1]; its parent is the root (0) when that token was drawn at
    the first step (token // topk == 0), else the node whose token is parent_list[b, token //
    topk] (the first such); -1 when no node holds it (a malformed tree) and for node 0."""
    bs, m = selected_index.shape
    sel = selected_index.long()
    _require(bool((sel >= 0).all()), "build_tree_kernel_efficient: negative selected_index")
    group = torch.div(sel, topk, rounding_mode="trunc")
    need = group > 0
    token = torch.zeros_like(sel)
    rows = torch.arange(bs).view(bs, 1).expand(bs, m)
    token[need] = parent_list.long()[rows[need], group[need]]
    match = sel.view(bs, 1, m) == token.view(bs, m, 1)  # [b, node - 1, candidate parent - 1]
    found = _extreme(match, -1, last=False) if m else torch.zeros_like(sel)
    parent = torch.where(need, torch.where(found >= 0, found + 1, -1), 0)
    return torch.cat([torch.full((bs, 1), -1, dtype=torch.long), parent], dim=1)


def _link_tree(
    parent: torch.Tensor, next_token: torch.Tensor, next_sibling: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The C++ op's head insertion (nodes n - 1 down to 1, each pushed onto its parent's child
    list), in closed form: a parent's first child is its smallest child, a child's next
    sibling the next larger child of the same parent, and the largest child's sibling what
    next_token held for the parent before (-1 as callers pre-fill it: then left alone).
    Nodes with no parent (node 0, malformed ones) are left out, as the C++ op skips them."""
    n = parent.shape[1]
    order = torch.arange(n)
    valid = parent >= 0
    child = valid.unsqueeze(1) & (parent.unsqueeze(1) == order.view(1, n, 1))  # [b, p, i]
    first = _extreme(child, -1, last=False)
    first = torch.where(first >= 0, first, next_token)
    later = order.view(1, 1, n) > order.view(1, n, 1)  # [., i, k]: k > i
    same = later & (parent.unsqueeze(2) == parent.unsqueeze(1))
    same &= valid.unsqueeze(1) & valid.unsqueeze(2)
    before = next_token.gather(1, parent.clamp(min=0))
    last = torch.where(before != -1, before, next_sibling)
    sibling = _extreme(same, -1, last=False)
    sibling = torch.where(sibling >= 0, sibling, last)
    return first, torch.where(valid, sibling, next_sibling)


def _walk_tree(parent: torch.Tensor, depth: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each node's mask row and depth as the C++ op walks them: column 0 (the root) set, then
    the node itself and its ancestors, at most `depth` of them, stopping after the first whose
    parent is the root or unknown. Returns ([b, n, n] bool, [b, n] steps)."""
    bs, n = parent.shape
    mask = torch.zeros(bs, n, n, dtype=torch.bool)
    mask[:, :, 0] = True
    steps = torch.zeros(bs, n, dtype=torch.long)
    cur = torch.arange(n).expand(bs, n).clone()
    alive = cur > 0
    for _ in range(depth):
        mark = torch.zeros_like(mask)
        mark.scatter_(2, cur.unsqueeze(-1), alive.unsqueeze(-1))
        mask |= mark
        steps += alive
        up = parent.gather(1, cur)
        alive &= up > 0
        cur = torch.where(alive, up, cur)
    return mask, steps


def _full_mask_index(seq_len: torch.Tensor, n: int) -> torch.Tensor:
    """FULL_MASK's flat index of each request's [n, n] draft block: request b's rows are
    seq_len[b] + n wide, start after the rows of the requests before it, and the draft block
    is their last n columns."""
    bs = seq_len.numel()
    start = torch.arange(bs) * n * n + _exclusive_cumsum(seq_len) * n
    row = torch.arange(n).view(1, n, 1) * (seq_len + n).view(bs, 1, 1)
    return start.view(bs, 1, 1) + row + seq_len.view(bs, 1, 1) + torch.arange(n).view(1, 1, n)


def build_tree_kernel_efficient_cpu(
    parent_list: torch.Tensor,
    selected_index: torch.Tensor,
    verified_seq_len: torch.Tensor,
    tree_mask: torch.Tensor,
    positions: torch.Tensor,
    retrive_index: torch.Tensor,
    retrive_next_token: torch.Tensor,
    retrive_next_sibling: torch.Tensor,
    topk: int,
    depth: int,
    draft_token_num: int,
    tree_mask_mode: int,
) -> None:
    """The EAGLE draft tree for target verify. retrive_index[b, i] = b * n + i; first child
    and next sibling links (pre-filled -1 by the caller); positions = seq_len + the node's
    depth; the tree mask's draft block (QLEN_ONLY, mode 1: [bs * n * n], all of it; FULL_MASK,
    mode 0: each request's n x (seq_len + n) rows, only their last n columns: the caller fills
    the prefix columns)."""
    op = "build_tree_kernel_efficient"
    _require(tree_mask_mode in (0, 1), f"{op}: only FULL_MASK (0) and QLEN_ONLY (1)")
    _tensor(parent_list, op, "parent_list", _INDEX)
    _require(parent_list.dim() == 2, f"{op}: parent_list must be 2-D")
    bs, n, dtype = parent_list.shape[0], draft_token_num, parent_list.dtype
    if depth > 1:
        _shape(parent_list, op, "parent_list", (bs, topk * (depth - 1) + 1))
    for name, t, shape in (
        ("selected_index", selected_index, (bs, n - 1)),
        ("verified_seq_len", verified_seq_len, (bs,)),
        ("positions", positions, (bs * n,)),
        ("retrive_index", retrive_index, (bs, n)),
        ("retrive_next_token", retrive_next_token, (bs, n)),
        ("retrive_next_sibling", retrive_next_sibling, (bs, n)),
    ):
        _tensor(t, op, name, (dtype,))
        _shape(t, op, name, shape)
    _tensor(tree_mask, op, "tree_mask", (torch.bool,))
    seq_len = verified_seq_len.long()
    rows = bs * n if tree_mask_mode == 1 else int(seq_len.sum()) + bs * n
    _require(tree_mask.numel() == rows * n, f"{op}: tree_mask size")
    parent = _node_parents(parent_list, selected_index, topk)
    if bool((parent[:, 1:] < 0).any()):
        warnings.warn(f"{op}: invalid eagle tree, a node's parent was not found", stacklevel=2)
    first, sibling = _link_tree(parent, retrive_next_token.long(), retrive_next_sibling.long())
    mask, steps = _walk_tree(parent, depth)
    retrive_index.copy_(torch.arange(bs * n).view(bs, n))
    retrive_next_token.copy_(first)
    retrive_next_sibling.copy_(sibling)
    positions.view(bs, n).copy_(seq_len.view(bs, 1) + steps)
    if tree_mask_mode == 1:
        tree_mask.view(bs, n, n).copy_(mask)
    else:
        tree_mask.view(-1)[_full_mask_index(seq_len, n)] = mask


def reconstruct_indices_from_tree_mask(
    tree_mask: torch.Tensor,
    verified_seq_len: torch.Tensor,
    positions: torch.Tensor,
    retrive_index: torch.Tensor,
    retrive_next_token: torch.Tensor,
    retrive_next_sibling: torch.Tensor,
    batch_size: int,
    draft_token_num: int,
) -> None:
    """The NGRAM tree's links from its QLEN mask ([bs * n * n] bool; row i marks i's
    ancestors, column j < i): position = seq_len + the count of i's ancestors; retrive_index =
    b * n + i; parent = i's largest ancestor; first child = the smallest k > i with i among
    its ancestors; next sibling = the smallest k > i with the same parent (-1 for a node with
    no ancestor, and wherever none is found)."""
    op = "reconstruct_indices_from_tree_mask"
    bs, n = batch_size, draft_token_num
    _tensor(tree_mask, op, "tree_mask", (torch.bool,))
    _tensor(verified_seq_len, op, "verified_seq_len", _INDEX)
    _require(tree_mask.numel() == bs * n * n, f"{op}: tree_mask size")
    _require(verified_seq_len.numel() == bs, f"{op}: verified_seq_len size")
    outputs = (positions, retrive_index, retrive_next_token, retrive_next_sibling)
    names = ("positions", "retrive_index", "retrive_next_token", "retrive_next_sibling")
    for name, t in zip(names, outputs, strict=True):
        _tensor(t, op, name, (verified_seq_len.dtype,))
        _require(t.numel() == bs * n, f"{op}: {name} size")
    if bs * n == 0:
        return
    order = torch.arange(n)
    ancestor = tree_mask.view(bs, n, n) & (order.view(1, 1, n) < order.view(1, n, 1))
    parent = _extreme(ancestor, -1, last=True)  # [b, i]
    later = order.view(1, 1, n) > order.view(1, n, 1)  # [., i, k]: k > i
    same = later & (parent.unsqueeze(2) == parent.unsqueeze(1))
    sibling = _extreme(same, -1, last=False)
    positions.view(bs, n).copy_(ancestor.sum(-1) + verified_seq_len.long().view(bs, 1))
    retrive_index.view(bs, n).copy_(torch.arange(bs * n).view(bs, n))
    retrive_next_token.view(bs, n).copy_(_extreme(ancestor, 1, last=False))  # over rows i
    retrive_next_sibling.view(bs, n).copy_(torch.where(parent >= 0, sibling, -1))


def _accept_paths(
    candidates: torch.Tensor,
    index: torch.Tensor,
    first: torch.Tensor,
    sibling: torch.Tensor,
    target: torch.Tensor,
    steps: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy tree verify, all requests a level at a time: from the last accepted node, try
    its children in sibling order and accept the first whose draft token is the target's
    argmax at that node (target, flat by retrive_index); stop at a level with no match.
    Returns the accepted flat indices ([bs, steps], root first, -1 past the count) and the
    count of accepted drafts."""
    bs, n = candidates.shape
    rows = torch.arange(bs)
    accepted = torch.full((bs, steps), -1, dtype=torch.long)
    accepted[:, 0] = index[:, 0]
    last = index[:, 0].clone()
    count = torch.zeros(bs, dtype=torch.long)
    cur = torch.zeros(bs, dtype=torch.long)
    alive = torch.ones(bs, dtype=torch.bool)
    for _ in range(1, steps):
        cur = torch.where(alive, first[rows, cur.clamp(min=0)], -1)
        searching = alive & (cur != -1)
        want = target[last]
        for _ in range(n):  # a well-formed sibling list has fewer than n nodes
            if not bool(searching.any()):
                break
            node = cur.clamp(min=0)
            hit = searching & (candidates[rows, node] == want)
            count += hit
            accepted[rows[hit], count[hit]] = index[rows[hit], node[hit]]
            last = torch.where(hit, index[rows, node], last)
            searching &= ~hit
            cur = torch.where(searching, sibling[rows, node], cur)
            searching &= cur != -1
        _require(not bool(searching.any()), "verify_tree_greedy: retrive_next_sibling loops")
        alive &= cur != -1
        if not bool(alive.any()):
            break
    return accepted, count


def verify_tree_greedy_cpu(
    predicts: torch.Tensor,
    accept_index: torch.Tensor,
    accept_token_num: torch.Tensor,
    candidates: torch.Tensor,
    retrive_index: torch.Tensor,
    retrive_next_token: torch.Tensor,
    retrive_next_sibling: torch.Tensor,
    target_predict: torch.Tensor,
) -> None:
    """Greedy verify of each request's draft tree ([bs, n] candidates and links, steps =
    accept_index.shape[1]): accept_index[b, :count + 1] = the accepted path's flat indices
    (root first; the slots after it keep the caller's -1), accept_token_num[b] = count (the
    bonus token excluded), predicts[a] = target_predict.flat[a] at every accepted a (the
    other entries untouched)."""
    op = "verify_tree_greedy"
    _require(candidates.dim() == 2 and accept_index.dim() == 2, f"{op}: 2-D inputs")
    bs, n = candidates.shape
    steps = accept_index.shape[1]
    _tensor(candidates, op, "candidates", _INDEX)
    _tensor(retrive_index, op, "retrive_index", (candidates.dtype,))
    for name, t in (
        ("retrive_next_token", retrive_next_token),
        ("retrive_next_sibling", retrive_next_sibling),
        ("target_predict", target_predict),
    ):
        _tensor(t, op, name, (candidates.dtype,))
        _shape(t, op, name, (bs, n))
    _shape(retrive_index, op, "retrive_index", (bs, n))
    for name, t, shape in (
        ("predicts", predicts, (bs * n,)),
        ("accept_index", accept_index, (bs, steps)),
        ("accept_token_num", accept_token_num, (bs,)),
    ):
        _tensor(t, op, name, (torch.int32,))
        _shape(t, op, name, shape)
    if bs == 0:
        return
    _require(steps > 0, f"{op}: accept_index has no column for the root")
    target = target_predict.reshape(-1).long()
    accepted, count = _accept_paths(
        candidates.long(),
        retrive_index.long(),
        retrive_next_token.long(),
        retrive_next_sibling.long(),
        target,
        steps,
    )
    taken = torch.arange(steps).view(1, steps) <= count.view(bs, 1)
    accept_index[taken] = accepted[taken].to(torch.int32)
    accept_token_num.copy_(count)
    flat = accepted[taken]
    predicts[flat] = target[flat].to(torch.int32)


def _last_writes(tgt: torch.Tensor, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The (tgt, src) pairs that survive a sequential copy: the last one for each target."""
    unique, inverse = torch.unique(tgt, return_inverse=True)
    if unique.numel() == tgt.numel():
        return tgt, src
    last = torch.full((unique.numel(),), -1, dtype=torch.long)
    last.scatter_reduce_(0, inverse, torch.arange(tgt.numel()), reduce="amax")
    return tgt[last], src[last]


def copy_all_layer_kv_cache_cpu(
    data_ptrs: torch.Tensor,
    strides: torch.Tensor,
    tgt_loc: torch.Tensor,
    src_loc: torch.Tensor,
) -> None:
    """For every buffer b (base address data_ptrs[b], strides[b] bytes a slot row):
    row tgt_loc[i] = row src_loc[i], all sources read before any target is written (so
    overlapping locations are safe); for a repeated target the last pair wins. The buffers
    are reached through their addresses, as the C++ op reaches them."""
    op = "copy_all_layer_kv_cache"
    _tensor(data_ptrs, op, "data_ptrs", (torch.uint64,))
    _tensor(strides, op, "strides", (torch.int64,))
    _tensor(tgt_loc, op, "tgt_loc", _INDEX)
    _tensor(src_loc, op, "src_loc", (tgt_loc.dtype,))
    _require(strides.numel() == data_ptrs.numel(), f"{op}: strides size")
    _require(src_loc.numel() == tgt_loc.numel(), f"{op}: src_loc size")
    if data_ptrs.numel() == 0 or tgt_loc.numel() == 0:
        return
    copy_rows_at(data_ptrs.tolist(), strides.tolist(), tgt_loc, src_loc)


def copy_rows_at(
    addresses: list[int],
    strides: list[int],
    tgt_loc: torch.Tensor,
    src_loc: torch.Tensor,
    width: int | None = None,
) -> None:
    """In each buffer (base address, `stride` bytes a slot row), the first `width` bytes (the
    whole row by default) of row tgt_loc[i] = those of row src_loc[i]: every source read
    before any target is written; for a repeated target the last pair wins. Also serves the
    Triton kernel copy_all_layer_kv_cache_tiled (bench.real.driver.triton_kernels)."""
    tgt, src = _last_writes(tgt_loc.view(-1).long(), src_loc.view(-1).long())
    if tgt.numel() == 0:
        return
    _require(int(tgt.min()) >= 0 and int(src.min()) >= 0, "copy_all_layer_kv_cache: negative slot")
    rows = max(int(tgt.max()), int(src.max())) + 1
    for address, stride in zip(addresses, strides, strict=True):
        cols = stride if width is None else min(width, stride)
        if stride <= 0 or cols <= 0:
            continue
        raw: Any = (ctypes.c_uint8 * (rows * stride)).from_address(address)
        buffer = torch.frombuffer(raw, dtype=torch.uint8).view(rows, stride)[:, :cols]
        buffer[tgt] = buffer[src]  # the right side is a gathered copy: sources staged first


def _cuda_inputs(op: str, tensors: dict[str, torch.Tensor], dtype: torch.dtype) -> None:
    """The CUDA op's reads: `dtype` elements, contiguous (it casts each data pointer to that
    type; an int32 tensor would be read as other values: refused here instead)."""
    for name, t in tensors.items():
        _tensor(t, op, name, (dtype,))


def build_tree_kernel_efficient(
    parent_list: torch.Tensor,
    selected_index: torch.Tensor,
    verified_seq_len: torch.Tensor,
    tree_mask: torch.Tensor,
    positions: torch.Tensor,
    retrive_index: torch.Tensor,
    retrive_next_token: torch.Tensor,
    retrive_next_sibling: torch.Tensor,
    topk: int,
    depth: int,
    draft_token_num: int,
    tree_mask_mode: int,
) -> None:
    """sgl_kernel's CUDA op (sgl-kernel/csrc/speculative/eagle_utils.cu:34-123 and :214-269 at
    sgl-project/sglang d7c93e183b), which a revision from before the CPU path calls: the CPU
    op's contract for FULL_MASK and QLEN_ONLY (each node's mask row: the root's column and the
    node's ancestors set, the other draft columns cleared; links by head insertion; positions
    by depth), over int64 index tensors, which the CUDA kernel reads as int64. Its bit-packed
    mode (2) is refused, as the CPU op refuses it. A one-step draft's parent_list is empty and
    float (python/sglang/srt/speculative/eagle_utils.py:35-37 there), which the kernel never
    reads (every node's parent is the root): taken as an empty int64 one."""
    if parent_list.numel() == 0:
        parent_list = parent_list.long()
    _cuda_inputs(
        "build_tree_kernel_efficient",
        {
            "parent_list": parent_list,
            "selected_index": selected_index,
            "verified_seq_len": verified_seq_len,
        },
        torch.int64,
    )
    build_tree_kernel_efficient_cpu(
        parent_list,
        selected_index,
        verified_seq_len,
        tree_mask,
        positions,
        retrive_index,
        retrive_next_token,
        retrive_next_sibling,
        topk,
        depth,
        draft_token_num,
        tree_mask_mode,
    )


def verify_tree_greedy(
    predicts: torch.Tensor,
    accept_index: torch.Tensor,
    accept_token_num: torch.Tensor,
    candidates: torch.Tensor,
    retrive_index: torch.Tensor,
    retrive_next_token: torch.Tensor,
    retrive_next_sibling: torch.Tensor,
    target_predict: torch.Tensor,
) -> None:
    """sgl_kernel's CUDA op (sgl-kernel/csrc/speculative/eagle_utils.cu:271-313 and :323-407 at
    sgl-project/sglang d7c93e183b): the CPU op's contract (the same walk, the same outputs),
    with the CUDA op's dtypes: int64 candidates, links and target_predict (it throws on any
    other), int32 outputs. Its predicts is any 1-D tensor (callers pass one entry more than
    the tree's nodes: python/sglang/srt/speculative/eagle_info.py:266-268 there): the op
    writes the first bs * n, and the rest is left as it was."""
    op = "verify_tree_greedy"
    _require(predicts.dim() == 1 and candidates.dim() == 2, f"{op}: predicts 1-D, candidates 2-D")
    nodes = candidates.shape[0] * candidates.shape[1]
    _require(predicts.numel() >= nodes, f"{op}: predicts has fewer entries than the trees")
    _cuda_inputs(
        op,
        {
            "candidates": candidates,
            "retrive_index": retrive_index,
            "retrive_next_token": retrive_next_token,
            "retrive_next_sibling": retrive_next_sibling,
            "target_predict": target_predict,
        },
        torch.int64,
    )
    verify_tree_greedy_cpu(
        predicts[:nodes],
        accept_index,
        accept_token_num,
        candidates,
        retrive_index,
        retrive_next_token,
        retrive_next_sibling,
        target_predict,
    )


# The CUDA ops a revision from before the CPU path calls, by their Python names (sgl-project/
# sglang#27862; sgl-kernel/python/sgl_kernel/speculative.py there).
CUDA_OPS: dict[str, Callable[..., Any]] = {
    "build_tree_kernel_efficient": build_tree_kernel_efficient,
    "verify_tree_greedy": verify_tree_greedy,
}

# sgl_kernel's Python names (sgl_kernel/__init__.py, speculative.py, kvcacheio.py) -> function.
OPS: dict[str, Callable[..., Any]] = {
    "reconstruct_indices_from_tree_mask": reconstruct_indices_from_tree_mask,
    "verify_tree_greedy_cpu": verify_tree_greedy_cpu,
    "build_tree_kernel_efficient_cpu": build_tree_kernel_efficient_cpu,
    "assign_req_to_token_pool_cpu": assign_req_to_token_pool_cpu,
    "build_draft_decode_metadata_cpu": build_draft_decode_metadata_cpu,
    "fill_bonus_tokens_cpu": fill_bonus_tokens_cpu,
    "fill_accept_out_cache_loc_cpu": fill_accept_out_cache_loc_cpu,
    "assign_draft_cache_locs_contiguous_cpu": assign_draft_cache_locs_contiguous_cpu,
    "assign_extend_cache_locs_cpu": assign_extend_cache_locs_cpu,
    "rotate_input_ids_cpu": rotate_input_ids_cpu,
    "copy_all_layer_kv_cache_cpu": copy_all_layer_kv_cache_cpu,
    **CUDA_OPS,
}

# The CPU ops under torch.ops.sgl_kernel (their schema names, torch_extension_cpu.cpp): the
# Python name for all but the NGRAM one, whose CPU op carries a _cpu suffix. The CUDA ops are
# left out: a revision calls them through their Python wrappers only.
TORCH_OPS: dict[str, Callable[..., Any]] = {
    **{
        name: fn
        for name, fn in OPS.items()
        if name != "reconstruct_indices_from_tree_mask" and name not in CUDA_OPS
    },
    "reconstruct_indices_from_tree_mask_cpu": reconstruct_indices_from_tree_mask,
}
