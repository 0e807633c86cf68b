"""Declarations by module-level name (strategies, suites): the upper-case names a module assigns,
and a refusal of any it should not, naming the closest valid one. A misspelt declaration
(FIGURE for FIGURES, REQUEST_INIT_FIELD for REQUEST_INIT_FIELDS) would otherwise be ignored
without a word, asv's well-known trap."""

from __future__ import annotations

import ast
import difflib
import inspect
from collections.abc import Iterable
from types import ModuleType


def upper_case_names(module: ModuleType) -> list[str]:
    """Upper-case names the module assigns at top level (imported names excluded)."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return []
    names = []
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        names += [t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()]
    return names


def unknown_name(module: ModuleType, known: Iterable[str]) -> str | None:
    """One line naming the first upper-case name the module assigns that is not known (private
    `_NAMES` are the module's own), with the closest known one; None when all are known."""
    allowed = sorted(set(known))
    for name in upper_case_names(module):
        if name in allowed or name.startswith("_"):
            continue
        close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(allowed)}"
        return f"unknown name {name} ({hint}; a constant of your own is private: _{name})"
    return None
