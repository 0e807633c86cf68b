"""Small helpers shared by the tests."""

from __future__ import annotations

import functools
import gc
import subprocess
import sys
import weakref
from pathlib import Path
from typing import Any

from bench.core.workload import make_request_class
from strategies import Strategy

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


@functools.cache
def request_class(strategy: Strategy, n_attrs: int = 140) -> type:
    return make_request_class(strategy, n_attrs=n_attrs)


def new_request(strategy: Strategy, rid: str = "r0", *, n_attrs: int = 140) -> Any:
    return request_class(strategy, n_attrs)(rid, [1, 2, 3], 1)


class Liveness:
    """Tells whether an object is still alive, for objects with or without weakref support."""

    def __init__(self, obj: object) -> None:
        self._type = type(obj)
        self._id = id(obj)
        try:
            self._ref: weakref.ref[Any] | None = weakref.ref(obj)
        except TypeError:
            self._ref = None

    def alive(self) -> bool:
        gc.collect()
        if self._ref is not None:
            return self._ref() is not None
        return any(type(o) is self._type and id(o) == self._id for o in gc.get_objects())


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def visible_lines(md: str) -> list[str]:
    """summary.md's lines a reader sees before unfolding anything: those outside <details>."""
    out: list[str] = []
    folded = False
    for line in md.splitlines():
        if line.startswith("<details>"):
            folded = True
        if not folded:
            out.append(line)
        if line.startswith("</details>"):
            folded = False
    return out
