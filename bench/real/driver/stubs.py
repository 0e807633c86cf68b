"""Stand-ins for GPU-only packages a revision imports at module level (sgl_kernel, torchvision,
...), in the manner of SGLang's own CPU tests (python/sglang/test/test_utils.py,
`maybe_stub_sgl_kernel`, sgl-project/sglang #21950): a meta-path finder serves the package and
its submodules as empty modules. Unlike a MagicMock, nothing here ever returns a value into the
code that reaches it: a stub can be imported, its names imported and its attributes read (at
import, `from sgl_kernel import foo` and `class X(torchvision.Foo)` must work), but calling,
instantiating, iterating or testing one raises StubReached naming it.

A stubbed package is visible to every importer, as an installed one would be: transformers
registers image processors against torchvision at import (AutoImageProcessor.register requires
the torchvision backend in transformers 5.12), so a stub reports the version that pairs with
the installed torch (`versions`), and transformers' own checks pass. Only the names are there,
except the ops the driver implements in torch (`implemented`: bench.real.driver.kernels, the CPU
ops of sgl_kernel that SGLang's speculative path calls): a stubbed module serves those by name,
and every other name stays a stub that raises when used.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Iterable
from typing import Any


class StubReached(RuntimeError):
    """A stubbed GPU-only package was used at run time: the measured loop cannot go on."""


def _reached(name: str, how: str) -> StubReached:
    return StubReached(
        f"{name} was {how}: it belongs to a GPU-only package the driver stubbed at import "
        "(bench/real/driver/stubs.py); the loop reached code that needs it"
    )


class Stub:
    """A name inside a stubbed package."""

    __slots__ = ("_stub_name",)
    _stub_name: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_stub_name", name)

    def __getattr__(self, attr: str) -> Stub:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Stub(f"{self._stub_name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise _reached(self._stub_name, "called")

    def __bool__(self) -> bool:
        raise _reached(self._stub_name, "tested for truth")

    def __iter__(self) -> Any:
        raise _reached(self._stub_name, "iterated")

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        """`class X(stubbed.Base)`: a class that cannot be instantiated."""
        name = self._stub_name

        def __init__(self: object, *args: Any, **kwargs: Any) -> None:
            raise _reached(name, "instantiated")

        module, _, short = name.rpartition(".")
        return (type(short, (), {"__init__": __init__, "__module__": module}),)

    def __repr__(self) -> str:
        return f"<stub {self._stub_name}>"


class _Loader(importlib.abc.Loader):
    def __init__(self, version: str | None, implemented: dict[str, Any]) -> None:
        self.version = version
        self.implemented = implemented

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        if self.version is not None and "." not in name:
            module.__version__ = self.version  # type: ignore[attr-defined]

        implemented = self.implemented

        def __getattr__(attr: str) -> Any:
            if attr.startswith("__") and attr.endswith("__"):
                raise AttributeError(attr)
            op = implemented.get(attr)
            return op if op is not None else Stub(f"{name}.{attr}")

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        module.__path__ = []
        module.__reqstate_stub__ = True  # type: ignore[attr-defined]


class StubFinder(importlib.abc.MetaPathFinder):
    """Serves `roots` (top-level package names) and their submodules; a name in
    `implemented` (root -> {name: function}) is served as that function by the root's modules
    (an op is found by its name whichever submodule it is imported from, as sgl_kernel's
    package re-exports its submodules' ops)."""

    def __init__(
        self,
        roots: Iterable[str],
        versions: dict[str, str] | None = None,
        implemented: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.roots = frozenset(roots)
        self.versions = versions or {}
        self.implemented = implemented or {}
        self.served: dict[str, str] = {}  # stubbed module -> the module that first imported it

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        root = fullname.partition(".")[0]
        if root not in self.roots:
            return None
        self.served.setdefault(fullname, _importer())
        loader = _Loader(self.versions.get(root), self.implemented.get(root, {}))
        return importlib.machinery.ModuleSpec(fullname, loader, is_package=True)


def _importer() -> str:
    """The module whose code is importing: the first frame outside importlib's own."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        where = frame.f_code.co_filename
        if not (where.startswith("<frozen") or "importlib" in where):
            return str(frame.f_globals.get("__name__", ""))
        frame = frame.f_back
    return ""


def paired_versions(torch_version: str) -> dict[str, str]:
    """torchvision's release for a torch release (torch 2.N pairs with torchvision 0.N+15: 2.13
    with 0.28), the version its stub reports."""
    major, minor = (int(x) for x in torch_version.split(".")[:2])
    return {"torchvision": f"0.{minor + 15}.0"} if major == 2 else {}


# Ops a revision takes from torch.ops.sgl_kernel when it builds its CPU attention backend
# (IntelAMXAttnBackend.__init__: python/sglang/srt/layers/attention/intel_amx_backend.py:55-56 at
# sgl-project/sglang d55f1c28e2) and calls only in the model's forward, which the stand-in
# replaces: stubs that raise if ever called.
STORED_OPS = {"sgl_kernel": ("decode_attention_cpu", "extend_attention_cpu")}


class OpsNamespace:
    """torch.ops.<package> of a stubbed package, as the package would have registered it at
    import: an implemented op by name, a STORED_OPS one as a stub; any other is absent
    (AttributeError), as an op nothing registered is (revisions ask with hasattr before they
    register fakes or choose a backend)."""

    def __init__(self, package: str, implemented: dict[str, Any]) -> None:
        self._package = package
        self._implemented = implemented

    def __getattr__(self, name: str) -> Any:
        op = self._implemented.get(name)
        if op is not None:
            return op
        if name in STORED_OPS.get(self._package, ()):
            return Stub(f"torch.ops.{self._package}.{name}")
        raise AttributeError(f"torch.ops.{self._package} has no op {name!r} (stubbed package)")


def install(
    roots: Iterable[str],
    versions: dict[str, str] | None = None,
    implemented: dict[str, dict[str, Any]] | None = None,
    torch_ops: dict[str, dict[str, Any]] | None = None,
) -> StubFinder:
    """Put the finder first on sys.meta_path; returns it (its `served` says what was used).
    `torch_ops` (package -> {op: function}) also stands in for the stubbed packages' torch.ops
    namespaces, for revisions that call an op there."""
    if torch_ops:
        import torch

        for package, ops in torch_ops.items():
            setattr(torch.ops, package, OpsNamespace(package, ops))
    finder = StubFinder(roots, versions, implemented)
    sys.meta_path.insert(0, finder)
    return finder
