"""The stand-in model's logits under speculative decoding: a tensor that knows its argmax.

With a draft, the revision reduces logits over the vocabulary itself: the verify takes
`torch.argmax` of the target's logits for every draft token (greedy verify, and every verify on
the CPU: python/sglang/srt/speculative/eagle_utils.py:726-728 at sgl-project/sglang
d55f1c28e2), and a topk-1 draft takes the argmax of the draft model's logits
(eagle_worker_v2.py:679-683 there). On a GPU server that reduction is the device's work, as the
LM head is. On the CPU it would be the host's: decode-b256 verifying 4 draft tokens a request
scans 1,024 rows of 32,000 logits, ~131 MB, tens of milliseconds per iteration against the
scheduler's few.

So the stand-in hands the revision `ChosenLogits`: rows whose dense value is 1.0 at one chosen
token and 0.0 elsewhere (a zero row expanded to the full shape: no memory), with the chosen
tokens kept beside. `argmax`, `max` and `topk` over the vocabulary, `softmax`, row selection,
`float`/`to`/`contiguous`/`clone` and shape queries answer from the chosen tokens without
scanning. Any other operation first makes the tensor dense, in place (the same values as a real
tensor would hold), and then runs as written: the revision's answer is then the one it computes
on real logits, at the real cost, and `DENSIFIED` names the operation, for the run's notes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

DENSIFIED: dict[str, int] = {}  # operation -> times it made a ChosenLogits dense

# Queries of a tensor's metadata: answered by the expanded base as they are, values untouched.
_METADATA = frozenset(
    {
        "shape", "dtype", "device", "is_cpu", "is_cuda", "ndim", "layout", "requires_grad",
        "is_sparse", "is_quantized", "is_meta", "is_nested", "grad_fn", "names", "is_leaf",
        "size", "dim", "numel", "nelement", "stride", "is_contiguous", "element_size",
        "get_device", "__len__", "data_ptr", "storage_offset", "is_floating_point",
        "is_complex", "__repr__", "__format__", "_is_view", "__hash__",
    }
)  # fmt: skip


def _name(func: Any) -> str:
    """An operation's name: a method's or function's, or a property's whose getter it is."""
    owner = getattr(func, "__self__", None)
    if getattr(func, "__name__", "") == "__get__" and owner is not None:
        return str(getattr(owner, "__name__", "__get__"))
    return str(getattr(func, "__name__", repr(func)))


class ChosenLogits(torch.Tensor):
    """[rows, vocab] logits whose dense value is `hi` at `chosen[row]` and `lo` elsewhere."""

    chosen: torch.Tensor | None  # int64 [rows]; None once the tensor has been made dense
    hi: float
    lo: float

    @staticmethod
    def make(chosen: torch.Tensor, vocab: int, hi: float = 1.0, lo: float = 0.0) -> ChosenLogits:
        rows = int(chosen.shape[0])
        base = torch.zeros((1, vocab), dtype=torch.float32).expand(rows, vocab)
        out = torch.Tensor._make_subclass(ChosenLogits, base)
        out.chosen, out.hi, out.lo = chosen.to(torch.int64), hi, lo
        return out

    def dense(self) -> torch.Tensor:
        """The values as a plain tensor."""
        assert self.chosen is not None
        rows, vocab = self.chosen.shape[0], int(super().__getattribute__("shape")[-1])
        out = torch.full((rows, vocab), self.lo, dtype=torch.float32)
        out.scatter_(1, self.chosen.view(-1, 1), self.hi)
        return out

    def _densify(self, why: str) -> None:
        """Become the dense tensor, in place (an in-place operation's effect is then kept)."""
        if self.chosen is None:
            return
        values = self.dense()
        with torch._C.DisableTorchFunctionSubclass():
            self.set_(values.untyped_storage(), 0, values.shape, values.stride())
        self.chosen = None
        DENSIFIED[why] = DENSIFIED.get(why, 0) + 1

    @classmethod
    def __torch_function__(
        cls,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        name = _name(func)
        me = args[0] if args and isinstance(args[0], ChosenLogits) else None
        if me is not None and me.chosen is not None and name not in _METADATA:
            handler = _HANDLERS.get(name)
            out = handler(me, *args[1:], **kwargs) if handler is not None else NotImplemented
            if out is not NotImplemented:
                return out
        for arg in (*args, *kwargs.values()):
            if isinstance(arg, ChosenLogits) and name not in _METADATA:
                arg._densify(name)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


def _last_dim(me: ChosenLogits, dim: Any) -> bool:
    return dim is not None and int(dim) in (-1, me.ndim - 1)


def _argmax(me: ChosenLogits, dim: Any = None, keepdim: bool = False) -> Any:
    if not _last_dim(me, dim) or me.hi <= me.lo:
        return NotImplemented
    assert me.chosen is not None
    return me.chosen.view(-1, 1) if keepdim else me.chosen.clone()


def _max(me: ChosenLogits, dim: Any = None, keepdim: bool = False) -> Any:
    if not _last_dim(me, dim) or me.hi <= me.lo:
        return NotImplemented
    assert me.chosen is not None
    values = torch.full((me.chosen.shape[0],), me.hi, dtype=torch.float32)
    if keepdim:
        return torch.return_types.max((values.view(-1, 1), me.chosen.view(-1, 1)))
    return torch.return_types.max((values, me.chosen.clone()))


def _topk(me: ChosenLogits, k: int, dim: int = -1, largest: bool = True, **_: Any) -> Any:
    if not _last_dim(me, dim) or not largest or me.hi <= me.lo:
        return NotImplemented
    assert me.chosen is not None
    vocab = me.shape[-1]
    rows = me.chosen.shape[0]
    # the chosen token first, then the next ids (ties among `lo`: any order is a valid topk)
    idx = (me.chosen.view(-1, 1) + torch.arange(int(k), dtype=torch.int64)) % vocab
    values = torch.full((rows, int(k)), me.lo, dtype=torch.float32)
    values[:, 0] = me.hi
    return torch.return_types.topk((values, idx))


def _softmax(me: ChosenLogits, dim: Any = None, *args: Any, **kwargs: Any) -> Any:
    if not _last_dim(me, dim):
        return NotImplemented
    assert me.chosen is not None
    vocab = me.shape[-1]
    top = math.exp(me.hi - me.hi)
    rest = math.exp(me.lo - me.hi)
    total = top + (vocab - 1) * rest
    return ChosenLogits.make(me.chosen, vocab, top / total, rest / total)


def _rows(me: ChosenLogits, index: Any) -> Any:
    """Row selection: an index tensor, a slice or an int on the first dimension, optionally
    followed by a full slice of the vocabulary."""
    assert me.chosen is not None
    if isinstance(index, tuple):
        if len(index) == 2 and index[1] == slice(None):
            index = index[0]
        else:
            return NotImplemented
    if isinstance(index, int):
        return NotImplemented  # a single row: a 1-d tensor, made dense below
    if not isinstance(index, (slice, torch.Tensor)):
        return NotImplemented
    if isinstance(index, torch.Tensor) and index.dtype == torch.bool and index.ndim != 1:
        return NotImplemented
    return ChosenLogits.make(me.chosen[index], me.shape[-1], me.hi, me.lo)


def _same(me: ChosenLogits, *args: Any, **kwargs: Any) -> Any:
    """float(), to(), contiguous(), clone(), detach(): the same values (a dtype change keeps
    them: 1.0, 0.0 and softmax's are representable in every float dtype the revision asks)."""
    assert me.chosen is not None
    for arg in (*args, *kwargs.values()):
        if isinstance(arg, torch.dtype) and not arg.is_floating_point:
            return NotImplemented
    return ChosenLogits.make(me.chosen.clone(), me.shape[-1], me.hi, me.lo)


_HANDLERS: dict[str, Callable[..., Any]] = {
    "argmax": _argmax,
    "max": _max,
    "topk": _topk,
    "softmax": _softmax,
    "__getitem__": _rows,
    "float": _same,
    "to": _same,
    "contiguous": _same,
    "clone": _same,
    "detach": _same,
}
