"""Triton kernels launched on the CPU: served by torch versions, or refused by name.

Parts of SGLang's speculative path launch Triton kernels the revision writes itself (the spec
v2 overlap loop's gathers, and before the CPU path existed, sgl-project/sglang#27862, the whole
EAGLE path's cache-location kernels). Triton has no CPU driver here, so a launch fails ("0
active drivers"). The driver wraps Triton's launch (`JITFunction.run`, which `kernel[grid](...)`
calls): a kernel whose name bench.real.driver.triton_kernels implements runs as that torch
version, its arguments bound by the kernel's own parameter names (defaults applied; Triton's
launch options such as num_warps dropped), timed as the stand-in's (on a
GPU server it is device work, as the model's forward is); any other kernel raises StubReached
naming it and where it is defined, never a silent wrong value.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from bench.real.driver.phases import Phases
from bench.real.driver.stubs import StubReached

LAUNCHED: dict[str, int] = {}  # kernel -> launches served


def _where(fn: Any) -> str:
    code = getattr(fn, "__code__", None)
    if code is None:
        return "?"
    path = code.co_filename
    cut = path.rfind("/sglang/")
    return (path[cut + 1 :] if cut >= 0 else path) + f":{code.co_firstlineno}"


def _grid(grid: Any, meta: dict[str, Any]) -> tuple[int, ...]:
    out = grid(meta) if callable(grid) else grid
    return tuple(int(x) for x in (out if isinstance(out, (tuple, list)) else (out,)))


def install(phases: Phases, kernels: dict[str, Callable[..., Any]]) -> list[str]:
    """Wrap Triton's launch (where the revision's environment has Triton); what was replaced."""
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:
        return []
    signatures: dict[int, inspect.Signature] = {}

    def run(self: Any, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> Any:
        fn = self.fn
        name = fn.__name__
        impl = kernels.get(name)
        if impl is None:
            raise StubReached(
                f"the Triton kernel {name} ({_where(fn)}) was launched: Triton has no CPU "
                "driver here and the stand-in has no torch version of it "
                "(bench/real/driver/triton_kernels.py)"
            )
        sig = signatures.get(id(fn))
        if sig is None:
            sig = signatures[id(fn)] = inspect.signature(fn)
        # Triton's own launch options (num_warps, num_stages, ...) are not the kernel's
        mine = {k: v for k, v in kwargs.items() if k in sig.parameters}
        binding = sig.bind_partial(*args, **mine)
        binding.apply_defaults()
        bound = binding.arguments
        if warmup:
            return None
        phases.enter("stand_in")
        try:
            impl(_grid(grid, dict(bound)), **bound)
        finally:
            phases.leave()
        LAUNCHED[name] = LAUNCHED.get(name, 0) + 1
        return None

    JITFunction.run = run
    return [
        "Triton launches (JITFunction.run): a kernel the stand-in implements runs as its torch "
        f"version ({len(kernels)} kernels, bench/real/driver/triton_kernels.py), timed as the "
        "stand-in's; any other raises, naming it"
    ]
