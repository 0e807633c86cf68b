"""Calls per function per iteration, counted in an untimed pass: a profile hook (sys.setprofile,
the measured thread only) counts every call into the revision's own package, iteration by
iteration, beside what each iteration did (its batch, arrivals, finished requests). The harness
turns these into the hot-path frequency map (bench.real.freqmap): which functions run per
iteration, per batch request, per new or finished request, per prefill chunk.
"""

from __future__ import annotations

import os
import sys
from types import CodeType, FrameType
from typing import Any


class CallCounter:
    def __init__(self, package_dir: str) -> None:
        # sglang's folder: counted paths are reported relative to its parent ("sglang/srt/...")
        self.root = os.path.dirname(os.path.abspath(package_dir)) + os.sep
        self.prefix = os.path.abspath(package_dir) + os.sep
        self._counts: dict[CodeType, int] = {}
        self._skip: set[CodeType] = set()
        self.iterations: list[dict[str, int]] = []  # per iteration: function key -> calls
        self.functions: dict[str, tuple[str, str, int]] = {}  # key -> (qualname, file, line)

    def _hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        n = self._counts.get(code)
        if n is not None:
            self._counts[code] = n + 1
        elif code not in self._skip:
            if code.co_filename.startswith(self.prefix):
                self._counts[code] = 1
            else:
                self._skip.add(code)

    def start(self) -> None:
        sys.setprofile(self._hook)

    def stop(self) -> None:
        sys.setprofile(None)

    def cut(self) -> None:
        """Close one iteration's counts (at the boundary, with the hook off)."""
        row: dict[str, int] = {}
        for code, n in self._counts.items():
            if not n:
                continue
            qualname = getattr(code, "co_qualname", code.co_name)
            key = f"{code.co_filename[len(self.root) :]}:{code.co_firstlineno}:{qualname}"
            row[key] = n
            if key not in self.functions:
                self.functions[key] = (
                    qualname,
                    code.co_filename[len(self.root) :],
                    code.co_firstlineno,
                )
            self._counts[code] = 0
        self.iterations.append(row)


def defined(names: list[str]) -> dict[str, bool]:
    """Which `Class.method` / function names the revision's loaded modules define."""
    have: set[str] = set()
    for mod_name, module in list(sys.modules.items()):
        if not mod_name.startswith("sglang") or module is None:
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in items:
            if getattr(value, "__module__", None) != mod_name:
                continue
            if isinstance(value, type):
                have.update(f"{attr}.{m}" for m in vars(value))
            elif callable(value):
                have.add(attr)
    return {n: n in have for n in names}
