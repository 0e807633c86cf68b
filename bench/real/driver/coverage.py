"""Which lines and functions of the scheduler's own packages the measured iterations execute:
a line tracer (sys.settrace, the measured thread only) in the untimed counting pass.

The packages are folders of the revision's sglang/srt (managers, mem_cache, disaggregation,
speculative, sampling, constrained: the scheduler, its caches, the PD nodes' loops, speculative
decoding and the sampling and grammar code on the scheduler's side). A line counts where it is
in a function's body (module and class bodies run at import, before any iteration, so they are
neither executable nor covered here); a function is reached where it was called in a measured
iteration. Each file's executable lines and functions come from compiling its source.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from types import CodeType, FrameType
from typing import Any

PACKAGES = ("managers", "mem_cache", "disaggregation", "speculative", "sampling", "constrained")
# and the one file of model_executor/ the scheduler's thread runs per forward: the batch's
# ForwardBatch is built there (ForwardBatch.init_new)
FILES = ("model_executor/forward_batch_info.py",)


class LineTracer:
    def __init__(
        self, package_dir: str, packages: tuple[str, ...] = PACKAGES, files: tuple[str, ...] = FILES
    ) -> None:
        self.root = os.path.dirname(os.path.abspath(package_dir)) + os.sep
        srt = os.path.join(os.path.abspath(package_dir), "srt")
        self.files = tuple(os.path.join(srt, f) for f in files)
        self.prefixes = tuple(os.path.join(srt, p) + os.sep for p in packages) + self.files
        self.lines: dict[str, set[int]] = {}
        self.functions: set[tuple[str, int]] = set()  # (file, first line) of code objects called
        self._wanted: dict[str, set[int] | None] = {}

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call":
            return None
        code = frame.f_code
        filename = code.co_filename
        if filename not in self._wanted:
            wanted = filename.startswith(self.prefixes)
            self._wanted[filename] = self.lines.setdefault(filename, set()) if wanted else None
        lines = self._wanted[filename]
        if lines is None:
            return None
        self.functions.add((filename, code.co_firstlineno))
        add = lines.add

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                add(frame.f_lineno)
            return local

        return local

    def start(self) -> None:
        sys.settrace(self._global)

    def stop(self) -> None:
        sys.settrace(None)

    def cut(self) -> None:
        """An iteration's end (kept for the counting pass's shape: coverage is cumulative)."""

    def report(self) -> dict[str, dict[str, Any]]:
        """Per file (relative, 'sglang/srt/...'): its executable lines and functions, and those
        executed. Every file of the packages is listed, reached or not."""
        out: dict[str, dict[str, Any]] = {}
        for path in [*_files(self.prefixes[: len(self.prefixes) - len(self.files)]), *self.files]:
            executable, functions = _executable(path)
            if not executable:
                continue
            covered = self.lines.get(path, set()) & executable
            reached = sorted(f"{q}:{ln}" for q, ln in functions if (path, ln) in self.functions)
            out[path[len(self.root) :]] = {
                "executable": sorted(executable),
                "covered": sorted(covered),
                "functions": sorted(f"{q}:{ln}" for q, ln in functions),
                "reached": reached,
            }
        return out


def _files(prefixes: tuple[str, ...]) -> Iterator[str]:
    for prefix in prefixes:
        for folder, _dirs, names in os.walk(prefix):
            for name in sorted(names):
                if name.endswith(".py"):
                    yield os.path.join(folder, name)


def _executable(path: str) -> tuple[set[int], list[tuple[str, int]]]:
    """The body lines of every function in a file, and the functions (qualname, first line)."""
    try:
        with open(path, encoding="utf-8") as f:
            module = compile(f.read(), path, "exec")
    except (OSError, SyntaxError, ValueError):
        return set(), []
    lines: set[int] = set()
    functions: list[tuple[str, int]] = []
    stack = [module]
    while stack:
        code = stack.pop()
        for const in code.co_consts:
            if isinstance(const, CodeType):
                stack.append(const)
        if code is module or _is_class_body(code):
            continue
        functions.append((getattr(code, "co_qualname", code.co_name), code.co_firstlineno))
        entries = [ln for _s, _e, ln in code.co_lines() if ln is not None]
        # the first entry is the function's start (its def or decorator line): never a line event
        head = {code.co_firstlineno, entries[0]} if entries else set()
        lines.update(ln for ln in entries if ln not in head)
    return lines, functions


def _is_class_body(code: CodeType) -> bool:
    """A class body's code object (it sets __module__ and __qualname__)."""
    names = code.co_names
    return "__qualname__" in names and "__module__" in names and code.co_argcount == 0
