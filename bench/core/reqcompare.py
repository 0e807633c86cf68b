"""A request model against the installed sglang's own `Req`: what a run on the model stands in
for, checked where the real class can be imported.

    python -m bench workload compare-real [--model sglang-0.5.23] [--markdown]

Both classes are built the way runs build them (cls(rid, input_ids, max_new_tokens); the real
one through bench.core.sglang_req, which also builds its SamplingParams). Compared: attribute
names and their order, GC-tracked attribute values, the instance dict's bytes, the type of
every nested object, the construction time, and each strategy's get on a live request (a hit).
Timings are timeit minima over repetitions on this machine: read their ratio, not their digits.
"""

from __future__ import annotations

import gc
import sys
import timeit
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.core.sglang_req import make_sglang_request_class, sglang_version
from bench.core.workload import make_request_class
from strategies import Strategy, resolve

PROMPT_TOKENS = 2048  # token ids per request (a random-4k prompt's mean)
LIVE = 1000  # requests holding state when get is timed


@dataclass(frozen=True)
class Side:
    """One class's figures."""

    attributes: int
    tracked: int
    dict_bytes: int
    construct_ns: float
    get_hit_ns: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Comparison:
    model: str
    sglang: str
    real: Side
    modelled: Side
    missing: tuple[str, ...]  # attributes of the real class the model lacks
    extra: tuple[str, ...]  # attributes of the model the real class lacks
    order_differs: tuple[str, ...]  # first attributes (real's) where the orders part
    nested: tuple[tuple[str, str, bool, str, bool], ...]  # name, real type, tracked, model's ...

    def lines(self) -> list[str]:
        r, m = self.real, self.modelled
        out = [
            f"model {self.model} against sglang {self.sglang}'s Req (installed)",
            f"  attributes       {r.attributes} real, {m.attributes} model"
            + (f"; missing {', '.join(self.missing)}" if self.missing else "")
            + (f"; extra {', '.join(self.extra)}" if self.extra else ""),
            "  key order        "
            + ("same" if not self.order_differs else f"differs from {self.order_differs[0]}"),
            f"  GC-tracked       {r.tracked} real, {m.tracked} model",
            f"  __dict__ bytes   {r.dict_bytes} real, {m.dict_bytes} model",
            f"  construct        {r.construct_ns / 1e3:.2f} us real, {m.construct_ns / 1e3:.2f} us "
            f"model ({m.construct_ns / r.construct_ns:.2f}x)",
        ]
        for name, real_type, real_tracked, model_type, model_tracked in self.nested:
            flag = "" if real_tracked == model_tracked else "  TRACKED-NESS DIFFERS"
            out.append(
                f"  nested {name:<26} {real_type} (tracked {real_tracked}) / "
                f"{model_type} (tracked {model_tracked}){flag}"
            )
        for s in sorted(r.get_hit_ns):
            out.append(
                f"  get_hit {s:<12} {r.get_hit_ns[s]:.1f} ns real, "
                f"{m.get_hit_ns.get(s, float('nan')):.1f} ns model "
                f"({m.get_hit_ns.get(s, float('nan')) / r.get_hit_ns[s]:.2f}x)"
            )
        return out

    def markdown(self) -> str:
        r, m = self.real, self.modelled
        rows = [
            ("attributes", str(r.attributes), str(m.attributes)),
            ("key order", "", "same" if not self.order_differs else "differs"),
            ("GC-tracked values", str(r.tracked), str(m.tracked)),
            ("`__dict__` bytes", str(r.dict_bytes), str(m.dict_bytes)),
            ("construction (µs)", f"{r.construct_ns / 1e3:.1f}", f"{m.construct_ns / 1e3:.1f}"),
        ]
        rows += [
            (
                f"`{s}` get hit (ns, {LIVE:,} live)",
                f"{r.get_hit_ns[s]:.1f}",
                f"{m.get_hit_ns.get(s, float('nan')):.1f}",
            )
            for s in sorted(r.get_hit_ns)
        ]
        head = f"| | sglang {self.sglang} `Req` | model `{self.model}` |\n|---|---:|---:|\n"
        return head + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows) + "\n"


def _paired_min_ns(
    a: Callable[[], Any], b: Callable[[], Any], repeat: int = 9
) -> tuple[float, float]:
    """Minimum ns per call of a and of b, their repetitions alternated (a, b, a, b, ...) so
    that both see the same moments of a machine whose load drifts."""
    ta, tb = timeit.Timer(a), timeit.Timer(b)
    number = max(ta.autorange()[0], tb.autorange()[0])
    best_a = best_b = float("inf")
    for _ in range(repeat):
        best_a = min(best_a, ta.timeit(number))
        best_b = min(best_b, tb.timeit(number))
    return best_a / number * 1e9, best_b / number * 1e9


def _live(cls: type, strategy: Strategy) -> list[Any]:
    ids = array("q", range(PROMPT_TOKENS))
    reqs = [cls(f"r{i}", ids, 16) for i in range(LIVE)]
    for req in reqs:
        strategy.get(req)
    return reqs


def _get_hit_ns(real_cls: type, model_cls: type, strategy: Strategy) -> tuple[float, float]:
    real, model = _live(real_cls, strategy), _live(model_cls, strategy)
    get = strategy.get
    ns = _paired_min_ns(lambda: [get(r) for r in real], lambda: [get(r) for r in model])
    for req in (*real, *model):
        strategy.release(req)
    return ns[0] / LIVE, ns[1] / LIVE


def _shape(sample: Any) -> tuple[int, int, int]:
    values = vars(sample).values()
    return len(values), sum(gc.is_tracked(v) for v in values), sys.getsizeof(vars(sample))


def compare(model: str, strategy_names: Sequence[str] | None = None) -> Comparison:
    """Raises bench.core.sglang_req.SglangMissing (one line) where sglang cannot be imported."""

    real_cls = make_sglang_request_class(None)
    model_cls = make_request_class(None, model=model)
    ids = array("q", range(PROMPT_TOKENS))
    real, modelled = real_cls("r", ids, 16), model_cls("r", ids, 16)
    real_keys, model_keys = list(vars(real)), list(vars(modelled))
    shared = [k for k in real_keys if k in set(model_keys)]
    model_order = [k for k in model_keys if k in set(real_keys)]
    order = tuple(a for a, b in zip(shared, model_order, strict=True) if a != b)
    nested = tuple(
        (
            k,
            type(getattr(real, k)).__name__,
            gc.is_tracked(getattr(real, k)),
            type(getattr(modelled, k)).__name__,
            gc.is_tracked(getattr(modelled, k)),
        )
        for k in shared
        if type(getattr(real, k)).__module__.startswith("sglang")
    )
    ids_arg = array("q", range(PROMPT_TOKENS))
    construct = _paired_min_ns(
        lambda: real_cls("r", ids_arg, 16), lambda: model_cls("r", ids_arg, 16)
    )
    hits: dict[str, tuple[float, float]] = {}
    for s in resolve(strategy_names):
        if s.holds_state and not s.twin_of:
            hits[s.name] = _get_hit_ns(
                make_sglang_request_class(s), make_request_class(s, model=model), s
            )
    real_shape, model_shape = _shape(real), _shape(modelled)
    return Comparison(
        model=model,
        sglang=sglang_version() or "(version unknown)",
        real=Side(*real_shape, construct[0], {k: v[0] for k, v in hits.items()}),
        modelled=Side(*model_shape, construct[1], {k: v[1] for k, v in hits.items()}),
        missing=tuple(k for k in real_keys if k not in set(model_keys)),
        extra=tuple(k for k in model_keys if k not in set(real_keys)),
        order_differs=order,
        nested=nested,
    )
