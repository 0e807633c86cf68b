"""Declarations by module-level name (strategies, suites): the upper-case names a module assigns,
and a refusal of those that look like a misspelt declaration, naming it. A misspelt declaration
(FIGURE for FIGURES, REQUEST_INIT_FIELD for REQUEST_INIT_FIELDS) would otherwise be ignored
without a word, asv's well-known trap. A name far from every declared one (a strategy file's own
SOURCE_COMMIT) is the module's own constant and accepted."""

from __future__ import annotations

import ast
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


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions turning a into b."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def max_typo(declared: str) -> int:
    """How many edits a misspelling of a declared name is within: one for a short name, two
    from eight characters (FIGURE -> FIGURES, PAIRD -> PAIRED, ADAPTIV -> ADAPTIVE)."""
    return 1 if len(declared) < 8 else 2


def unknown_name(module: ModuleType, known: Iterable[str]) -> str | None:
    """One line naming the first upper-case name the module assigns that is not declared but
    within a typo of a declared one (bench.base.spelling.max_typo), with that one; None when
    none is. Names far from every declared one are the module's own and pass."""
    allowed = sorted(set(known))
    for name in upper_case_names(module):
        if name in allowed or name.startswith("_"):
            continue
        near = [
            (edit_distance(name, k), k) for k in allowed if edit_distance(name, k) <= max_typo(k)
        ]
        if near:
            closest = min(near)[1]
            return (
                f"unknown name {name} (did you mean {closest}?; a constant of your own: rename "
                f"it, or make it private: _{name})"
            )
    return None
