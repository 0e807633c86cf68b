"""Torch versions of the Triton kernels SGLang's speculative path launches on its own (the spec
v2 overlap loop's, and the EAGLE path's before its CPU ops existed), served by
bench.real.driver.triton_launch. Each takes the launch grid and the kernel's arguments by the
kernel's parameter names, and writes its outputs in place as the kernel does; its semantics are
read from the revision's Triton source, cited per kernel as file:line at a commit.

A Triton kernel addresses its tensors as flat memory from their first element, whatever their
shape: so do these (`_flat`: a contiguous tensor's elements in order; a tensor that is not
contiguous is refused). A kernel's `tl.arange(0, UPPER)` with a mask reaches only the first UPPER
elements: where a kernel bounds a loop or a sum that way, these bound it the same way. A branch
of a kernel that the stand-in's runs never take (page_size > 1 with topk > 1) is refused by name
(StubReached), never approximated.

The kernels of sgl-project/sglang d7c93e183b and of its parent (4743cf6051) are the same,
parameters and bodies; where their line numbers differ both are cited. Where a later revision
defines a kernel of the same name (d55f1c28e2's python/sglang/kernels/ops/), its parameters are
the same too (there the CPU path launches none of them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from bench.real.driver import kernels
from bench.real.driver.stubs import StubReached

KERNELS: dict[str, Callable[..., Any]] = {}


def _rows(t: Any, width: int) -> Any:
    """A buffer as rows of `width` elements (the kernels address it row-major)."""
    return t.view(-1, int(width))


def gather_rows(grid: tuple[int, ...], **a: Any) -> None:
    """_gather_rows_kernel (python/sglang/kernels/ops/speculative/gather_spec_extras.py:10-45
    at sgl-project/sglang d55f1c28e2, the same in sglang 0.5.23): row i of each destination is
    row idx[i] of its source, for three buffer pairs and a fourth where HAS3."""
    idx = a["idx_ptr"].view(-1).to(torch.int64)[: grid[0]]
    pairs = [("s0", "d0", "n0"), ("s1", "d1", "n1"), ("s2", "d2", "n2")]
    if a.get("HAS3"):
        pairs.append(("s3", "d3", "n3"))
    for s, d, n in pairs:
        _rows(a[d], a[n])[: idx.shape[0]] = _rows(a[s], a[n])[idx]


KERNELS["_gather_rows_kernel"] = gather_rows


def copy_all_layer_kv_cache_tiled(grid: tuple[int, ...], **a: Any) -> None:
    """copy_all_layer_kv_cache_tiled (python/sglang/srt/mem_cache/memory_pool.py:2050-2083 at
    sgl-project/sglang d7c93e183b and at its parent): program (b, t) copies byte tile t
    (BYTES_PER_TILE bytes, cut at the row's stride) of rows src_loc[i] -> tgt_loc[i] for
    i < min(num_locs, num_locs_upper), in buffer b (address data_ptrs[b], strides[b] bytes a
    row); a program loads all its rows before it stores any. Here: the first grid[0] buffers,
    the first grid[1] * BYTES_PER_TILE bytes of each row; for a repeated target the last pair
    wins (the kernel leaves that order unspecified)."""
    buffers, tiles = grid[0], grid[1] if len(grid) > 1 else 1
    n = min(int(a["num_locs"]), int(a["num_locs_upper"]))
    kernels.copy_rows_at(
        a["data_ptrs"].view(-1)[:buffers].tolist(),
        a["strides"].view(-1)[:buffers].tolist(),
        a["tgt_loc_ptr"].view(-1)[:n],
        a["src_loc_ptr"].view(-1)[:n],
        width=tiles * int(a["BYTES_PER_TILE"]),
    )


KERNELS["copy_all_layer_kv_cache_tiled"] = copy_all_layer_kv_cache_tiled


def _flat(t: Any) -> torch.Tensor:
    """A tensor's memory as a kernel addresses it: its elements in order."""
    if not t.is_contiguous():
        raise RuntimeError("a Triton kernel's tensor argument is not contiguous")
    return t.view(-1)


def _inside(flat: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """idx, checked to address `flat` (torch would wrap a negative index, where the kernel reads
    or writes outside the tensor: refused instead)."""
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= flat.numel()):
        raise IndexError("a Triton kernel's index reaches outside its tensor")
    return idx


def _take(flat: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return flat[_inside(flat, idx)]


def _put(flat: torch.Tensor, idx: torch.Tensor, values: torch.Tensor) -> None:
    """flat[idx] = values, cast to flat's dtype as a kernel's store casts."""
    flat[_inside(flat, idx)] = values.to(flat.dtype)


def _before(x: torch.Tensor, upper: int) -> torch.Tensor:
    """Per program p, the sum of x[k] over k < p and k < upper (the kernels' masked
    `tl.sum(tl.load(x + tl.arange(0, upper), mask=offsets < pid))`)."""
    kept = torch.where(torch.arange(x.numel()) < int(upper), x, torch.zeros_like(x))
    return torch.cumsum(kept, 0) - kept


def _spans(length: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every element of spans of these lengths (negative ones empty): (span, offset in it)."""
    count = length.long().clamp(min=0)
    span = torch.repeat_interleave(torch.arange(count.numel()), count)
    first = torch.cumsum(count, 0) - count
    return span, torch.arange(int(count.sum())) - first[span]


def _refuse(kernel: str, branch: str) -> StubReached:
    return StubReached(
        f"the Triton kernel {kernel} took its branch for {branch}, which the stand-in does not "
        "implement (bench/real/driver/triton_kernels.py)"
    )


def _copy_spans(
    dst: torch.Tensor, at: list[int], src: torch.Tensor, frm: list[int], length: list[int]
) -> None:
    """dst[at[i] : at[i] + length[i]] = src[frm[i] : ...] for each i (length <= 0: nothing),
    cast to dst's dtype, in order: one contiguous copy a span, as a kernel's program copies
    its row. A span reaching outside either tensor raises (the kernel would fault or
    corrupt memory), never wraps or is cut short."""
    for a, f, n in zip(at, frm, length, strict=True):
        if n <= 0:
            continue
        if a < 0 or f < 0 or a + n > dst.numel() or f + n > src.numel():
            raise IndexError("a Triton kernel's span reaches outside its tensor")
        dst[a : a + n].copy_(src[f : f + n])


def _copy_ranges(grid: tuple[int, ...], a: dict[str, Any], to_pool: bool) -> None:
    """assign_req_to_token_pool (to_pool) and assign_extend_cache_locs: program i moves
    end_offset[i] - start_offset[i] entries between row req_pool_indices[i] of req_to_token,
    from column start_offset[i], and out_cache_loc, from the sum of end - start over the
    programs before i (below bs_upper)."""
    n = grid[0]
    start = _flat(a["start_offset"])[:n].long()
    end = _flat(a["end_offset"])[:n].long()
    dense = _before(end - start, a["bs_upper"]).tolist()
    rows = _flat(a["req_pool_indices"])[:n].long() * int(a["pool_len"])
    at_pool = (rows + start).tolist()
    length = (end - start).tolist()
    pool, cache = _flat(a["req_to_token"]), _flat(a["out_cache_loc"])
    if to_pool:
        _copy_spans(pool, at_pool, cache, dense, length)
    else:
        _copy_spans(cache, dense, pool, at_pool, length)


def assign_req_to_token_pool(grid: tuple[int, ...], **a: Any) -> None:
    """assign_req_to_token_pool (python/sglang/srt/speculative/spec_utils.py:90-122 at
    sgl-project/sglang d7c93e183b): req_to_token[rpi[i], start[i]:end[i]] = the next end[i] -
    start[i] entries of out_cache_loc, request i's starting after those of the requests before
    it (the sum below bs_upper)."""
    _copy_ranges(grid, a, to_pool=True)


def assign_extend_cache_locs(grid: tuple[int, ...], **a: Any) -> None:
    """assign_extend_cache_locs (python/sglang/srt/speculative/eagle_info_v2.py:501-533 at
    sgl-project/sglang d7c93e183b, :499-531 at its parent): out_cache_loc, dense, from each
    request's req_to_token[rpi[i], start[i]:end[i]]; the entries past the total untouched."""
    _copy_ranges(grid, a, to_pool=False)


def _draft_slots(grid: tuple[int, ...], a: dict[str, Any], to_pool: bool) -> None:
    """The topk * num_steps draft slots of each request i, at columns seq_lens[i] + j of its
    req_to_token row and at out_cache_loc[i * topk * num_steps + j]: written into the row
    (to_pool) or read from it."""
    n = grid[0]
    width = int(a["topk"]) * int(a["speculative_num_steps"])
    rows = _flat(a["req_pool_indices"])[:n].long()
    base = rows * int(a["pool_len"]) + _flat(a["seq_lens"])[:n].long()
    at_pool = (base.view(n, 1) + torch.arange(width)).view(-1)
    at_cache = torch.arange(n * width)
    pool, cache = _flat(a["req_to_token"]), _flat(a["out_cache_loc"])
    if to_pool:
        _put(pool, at_pool, _take(cache, at_cache))
    else:
        _put(cache, at_cache, _take(pool, at_pool))


def assign_draft_cache_locs(grid: tuple[int, ...], **a: Any) -> None:
    """assign_draft_cache_locs (python/sglang/srt/speculative/spec_utils.py:144-251 at
    sgl-project/sglang d7c93e183b), its branch for page_size 1 or topk 1: request i's
    topk * speculative_num_steps slots out_cache_loc[i * topk * steps + j] go to
    req_to_token[rpi[i], seq_lens[i] + j]. The branch for pages with topk > 1 (extend_lens'
    offsets, the last partial page duplicated per candidate) is refused."""
    if int(a["page_size"]) != 1 and int(a["topk"]) != 1:
        raise _refuse("assign_draft_cache_locs", "page_size > 1 with topk > 1")
    _draft_slots(grid, a, to_pool=True)


def assign_draft_cache_locs_page_size_1(grid: tuple[int, ...], **a: Any) -> None:
    """assign_draft_cache_locs_page_size_1
    (python/sglang/srt/speculative/eagle_info_v2.py:60-84 at sgl-project/sglang d7c93e183b and
    at its parent): out_cache_loc[i * topk * steps + j] = req_to_token[rpi[i], seq_lens[i] + j]
    for j < topk * speculative_num_steps."""
    _draft_slots(grid, a, to_pool=False)


def create_flashinfer_kv_indices_triton(grid: tuple[int, ...], **a: Any) -> None:
    """create_flashinfer_kv_indices_triton (python/sglang/srt/layers/attention/utils.py:16-52
    at sgl-project/sglang d7c93e183b and at its parent): kv_indices[kv_indptr[i] + j] =
    req_to_token[rpi[i], s + j] for j < page_kernel_lens[i], s = kv_start_idx[i] (0 when it is
    None); req_to_token's rows req_to_token_ptr_stride apart."""
    n = grid[0]
    start = torch.zeros(n, dtype=torch.long)
    if a.get("kv_start_idx") is not None:
        start = _flat(a["kv_start_idx"])[:n].long()
    rows = _flat(a["req_pool_indices_ptr"])[:n].long() * int(a["req_to_token_ptr_stride"])
    _copy_spans(
        _flat(a["kv_indices_ptr"]),
        _flat(a["kv_indptr"])[:n].tolist(),
        _flat(a["req_to_token_ptr"]),
        (rows + start).tolist(),
        _flat(a["page_kernel_lens_ptr"])[:n].tolist(),
    )


def create_extend_after_decode_spec_info(grid: tuple[int, ...], **a: Any) -> None:
    """create_extend_after_decode_spec_info (python/sglang/srt/speculative/spec_utils.py:63-87
    at sgl-project/sglang d7c93e183b): for request i with accept_lens[i] = L tokens (the bonus
    one included) starting at c = the sum of accept_lens before it (below bs_upper):
    positions[c + k] = seq_lens[i] - L + k for k < L (and k < bs_upper), and new_verified_id[i]
    = verified_id[c + L - 1], its last accepted token."""
    n, upper = grid[0], int(a["bs_upper"])
    accept = _flat(a["accept_lens"])[:n].long()
    first = _before(accept, upper)
    span, k = _spans(accept.clamp(max=upper))
    value = _flat(a["seq_lens"])[:n].long()[span] - accept[span] + k
    _put(_flat(a["positions"]), first[span] + k, value)
    last = _take(_flat(a["verified_id"]), first + accept - 1)
    _put(_flat(a["new_verified_id"]), torch.arange(n), last)


def fill_new_verified_id(grid: tuple[int, ...], **a: Any) -> None:
    """fill_new_verified_id (python/sglang/srt/speculative/eagle_info_v2.py:465-480 at
    sgl-project/sglang d7c93e183b, :463-478 at its parent): new_verified_id[i] =
    verified_id[num_draft_tokens * i + accept_lens[i] - 1], the last accepted token."""
    n = grid[0]
    at = torch.arange(n) * int(a["num_draft_tokens"]) + _flat(a["accept_lens"])[:n].long() - 1
    _put(_flat(a["new_verified_id"]), torch.arange(n), _take(_flat(a["verified_id"]), at))


def fill_accepted_out_cache_loc(grid: tuple[int, ...], **a: Any) -> None:
    """fill_accepted_out_cache_loc (python/sglang/srt/speculative/eagle_info_v2.py:483-498 at
    sgl-project/sglang d7c93e183b, :481-496 at its parent): program i with accept_index[i] >
    -1 writes out_cache_loc[accept_index[i]] at accepted_out_cache_loc[d], d = how many of
    accept_index[k], k < i (below size_upper), are not -1: the accepted slots, compacted."""
    n = grid[0]
    index = _flat(a["accept_index"])[:n].long()
    dst = _before((index != -1).long(), a["size_upper"])
    keep = index > -1
    value = _take(_flat(a["out_cache_loc"]), index[keep])
    _put(_flat(a["accepted_out_cache_loc"]), dst[keep], value)


def _draft_columns(seq: torch.Tensor, topk: int, steps: int, page: int) -> torch.Tensor:
    """[requests, topk]: the column of a request's req_to_token row where candidate t's draft
    slots start: seq_len + t * steps with page_size 1 or topk 1; else after the prefix's full
    pages, t times the candidate's pages, then the length of the prefix's partial last page
    (which each candidate's pages repeat)."""
    cand = torch.arange(topk).view(1, topk)
    if page == 1 or topk == 1:
        return seq.view(-1, 1) + cand * steps
    last = seq % page
    pages = torch.div(last + steps + page - 1, page, rounding_mode="floor")
    base = torch.div(seq, page, rounding_mode="floor") * page
    return (base + last).view(-1, 1) + cand * (pages * page).view(-1, 1)


def generate_draft_decode_kv_indices(grid: tuple[int, ...], **a: Any) -> None:
    """generate_draft_decode_kv_indices (python/sglang/srt/speculative/spec_utils.py:254-332
    at sgl-project/sglang d7c93e183b), grid (steps, requests, topk). For step s (row s of
    kv_indices and of kv_indptr, kv_indices_stride and kv_indptr_stride apart), it = s + 1,
    request b of prefix length L = paged_kernel_lens[b] (cum: the sum of L before b, below
    bs_upper), candidate t: at row offset cum * topk + b * it * topk + t * (L + it), the
    prefix req_to_token[rpi[b], :L], then the candidate's first it draft slots (below
    iter_upper); and kv_indptr[z] = the sum of positions[:z] (below num_tokens_upper) + z * it
    for z = b * topk + t, except that z = 0 writes z = requests * topk (kv_indptr[0] is left
    as it was)."""
    steps, n, topk = grid
    seq = _flat(a["paged_kernel_lens"])[:n].long()
    row = _flat(a["req_pool_indices"])[:n].long() * int(a["pool_len"])
    pool, out, indptr = _flat(a["req_to_token"]), _flat(a["kv_indices"]), _flat(a["kv_indptr"])
    cum = _before(seq, a["bs_upper"]).view(n, 1)
    drafts = (row.view(n, 1) + _draft_columns(seq, topk, steps, int(a["page_size"]))).view(-1)
    b, t = torch.arange(n).view(n, 1), torch.arange(topk).view(1, topk)
    z = (b * topk + t).view(-1)
    z = torch.where(z == 0, n * topk, z)
    positions = _flat(a["positions"])[: n * topk].long()
    kept = torch.where(torch.arange(n * topk) < int(a["num_tokens_upper"]), positions, 0)
    prefix = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(kept, 0)])[z]
    lens = seq.repeat_interleave(topk)
    for s in range(steps):
        it = s + 1
        at = (cum * topk + b * it * topk + t * (seq.view(n, 1) + it)).view(-1)
        at += s * int(a["kv_indices_stride"])
        _copy_spans(out, at.tolist(), pool, row.repeat_interleave(topk).tolist(), lens.tolist())
        width = [min(it, int(a["iter_upper"]))] * (n * topk)
        _copy_spans(out, (at + lens).tolist(), pool, drafts.tolist(), width)
        _put(indptr, s * int(a["kv_indptr_stride"]) + z, prefix + z * it)


KERNELS.update(
    {
        "assign_req_to_token_pool": assign_req_to_token_pool,
        "assign_extend_cache_locs": assign_extend_cache_locs,
        "assign_draft_cache_locs": assign_draft_cache_locs,
        "assign_draft_cache_locs_page_size_1": assign_draft_cache_locs_page_size_1,
        "create_flashinfer_kv_indices_triton": create_flashinfer_kv_indices_triton,
        "create_extend_after_decode_spec_info": create_extend_after_decode_spec_info,
        "fill_new_verified_id": fill_new_verified_id,
        "fill_accepted_out_cache_loc": fill_accepted_out_cache_loc,
        "generate_draft_decode_kv_indices": generate_draft_decode_kv_indices,
    }
)
