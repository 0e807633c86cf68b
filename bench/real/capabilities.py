"""Whether a revision can run what a preset asks for, read from its source before anything is
built or written: each request feature and scheduler mode needs names the revision's code
defines (a field of TokenizedGenerateReqInput, a SamplingParams argument, a server argument,
an event loop, a transfer backend's registry). A preset asking for one the revision lacks is
refused in one line naming the preset and the feature (exit 2).

Read with `ast` from the revision's files (its exported tree, or the release installed in its
environment); a revision whose files cannot be found here (an interpreter given with
--real-python for a release) is not checked: the driver then fails on the first request that
needs the missing name, saying which.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench.base.errors import UsageError
from bench.target.tree import SourceTree

IO = "srt/managers/io_struct.py"
PARAMS = "srt/sampling/sampling_params.py"
SERVER = "srt/server_args.py"
SCHEDULER = "srt/managers/scheduler.py"
BATCH = "srt/managers/schedule_batch.py"
ENVIRON = "srt/environ.py"
FAKE = "srt/disaggregation/fake/conn.py"
DISAGG = "srt/disaggregation/utils.py"
GRAMMAR = "srt/constrained"
FIELDS = "srt/arg_groups/fields"

SPEC_INFO = "srt/speculative/spec_info.py"


class Files(Protocol):
    """A revision's sglang folder, read-only: a file's text (None when absent), whether a
    folder or file is there."""

    def text(self, rel: str) -> str | None: ...

    def exists(self, rel: str) -> bool: ...

    def under(self, rel: str) -> list[str]: ...


@dataclass
class FolderFiles:
    root: Path  # the sglang folder

    def text(self, rel: str) -> str | None:
        try:
            return (self.root / rel).read_text(encoding="utf-8")
        except OSError:
            return None

    def exists(self, rel: str) -> bool:
        return (self.root / rel).exists()

    def under(self, rel: str) -> list[str]:
        """The .py files in a folder (relative to the sglang folder)."""
        folder = self.root / rel
        return sorted(str(p.relative_to(self.root)) for p in folder.glob("*.py"))


@dataclass
class TreeFiles:
    """The sglang folder of a git revision (python/sglang/ at the commit), read with git."""

    tree: Any  # bench.target.tree.SourceTree
    prefix: str = "python/sglang/"
    _texts: dict[str, str | None] = field(default_factory=dict)

    def text(self, rel: str) -> str | None:
        if rel not in self._texts:
            path = self.prefix + rel
            self._texts[rel] = self.tree.read(path) if self.tree.exists(path) else None
        return self._texts[rel]

    def exists(self, rel: str) -> bool:
        path = self.prefix + rel
        return self.tree.exists(path) or any(f.startswith(path + "/") for f in self.tree.files())

    def under(self, rel: str) -> list[str]:
        path = self.prefix + rel + "/"
        return sorted(
            f[len(self.prefix) :]
            for f in self.tree.files(".py")
            if f.startswith(path) and "/" not in f[len(path) :]
        )


def _parsed(files: Files, rel: str) -> ast.Module | None:
    text = files.text(rel)
    try:
        return ast.parse(text) if text is not None else None
    except (SyntaxError, ValueError):
        return None


def class_fields(files: Files, rel: str, name: str) -> set[str]:
    """The names a class declares: annotated fields, and its __init__'s parameters."""
    tree = _parsed(files, rel)
    out: set[str] = set()
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ClassDef) and node.name == name:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    out.add(item.target.id)
                elif isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    out.update(a.arg for a in item.args.args + item.args.kwonlyargs)
    return out


def defines(files: Files, rel: str, name: str) -> bool:
    """Whether a module defines a function, class or assigned name `name` anywhere."""
    tree = _parsed(files, rel)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


Check = Callable[[Files], "str | None"]


def _field(rel: str, cls: str, name: str) -> Check:
    def check(files: Files) -> str | None:
        if name in class_fields(files, rel, cls):
            return None
        return f"its {cls} has no {name!r} (sglang/{rel})"

    return check


def _defined(rel: str, name: str, what: str) -> Check:
    def check(files: Files) -> str | None:
        return None if defines(files, rel, name) else f"it has no {what} (sglang/{rel})"

    return check


def _server_arg(name: str) -> Check:
    """A ServerArgs field: declared in server_args.py, or (since mid-2026) in one of the
    arg_groups/fields modules it is assembled from."""

    def check(files: Files) -> str | None:
        texts = [files.text(SERVER) or ""] + [files.text(f) or "" for f in files.under(FIELDS)]
        if any(f"{name}:" in t for t in texts):
            return None
        return f"its server arguments have no {name!r} (sglang/{SERVER}, sglang/{FIELDS}/)"

    return check


def _hidden_last(files: Files) -> str | None:
    if 'Literal["last"]' in (files.text(BATCH) or ""):
        return None
    return f"its return_hidden_states takes no 'last' mode (sglang/{BATCH})"


def _exists(rel: str, what: str) -> Check:
    def check(files: Files) -> str | None:
        return None if files.exists(rel) else f"it has no {what} (sglang/{rel})"

    return check


def _all(*checks: Check) -> Check:
    def check(files: Files) -> str | None:
        return next((why for c in checks if (why := c(files)) is not None), None)

    return check


def _always(_files: Files) -> str | None:
    return None


CHECKS: dict[str, Check] = {
    "logprob": _all(
        _field(IO, "TokenizedGenerateReqInput", "return_logprob"),
        _field(IO, "TokenizedGenerateReqInput", "top_logprobs_num"),
    ),
    "stop": _field(PARAMS, "SamplingParams", "stop"),
    "regex": _all(_field(PARAMS, "SamplingParams", "regex"), _exists(GRAMMAR, "grammar backend")),
    "json": _all(
        _field(PARAMS, "SamplingParams", "json_schema"), _exists(GRAMMAR, "grammar backend")
    ),
    "parallel": _field(PARAMS, "SamplingParams", "n"),
    "abort": _defined(IO, "AbortReq", "AbortReq"),
    "session": _always,  # the client's own: each turn is a new request
    "hidden": _all(
        _field(IO, "TokenizedGenerateReqInput", "return_hidden_states"),
        _hidden_last,
        _server_arg("enable_return_hidden_states"),
    ),
    "overlap": _defined(SCHEDULER, "event_loop_overlap", "overlap event loop"),
    "mixed_chunk": _server_arg("enable_mixed_chunk"),
    "retraction": _all(
        _defined(ENVIRON, "SGLANG_TEST_RETRACT", "retraction test switch"),
        _defined(BATCH, "retract_decode", "decode retraction"),
    ),
    "eos": _always,
    "speculative=NGRAM": _defined(SPEC_INFO, "NGRAM", "NGRAM speculative algorithm"),
    "speculative=EAGLE": _defined(SPEC_INFO, "EAGLE", "EAGLE speculative algorithm"),
    "speculative=EAGLE3": _defined(SPEC_INFO, "EAGLE3", "EAGLE3 speculative algorithm"),
    "speculative=DSPARK": _defined(SPEC_INFO, "DSPARK", "DSPARK speculative algorithm"),
    "speculative=STANDALONE": _defined(SPEC_INFO, "STANDALONE", "STANDALONE speculative algorithm"),
    "disaggregation=decode": _exists(FAKE, "fake transfer backend"),
    "disaggregation=prefill": _all(
        _exists(FAKE, "fake transfer backend"),
        _defined(DISAGG, "get_kv_class", "transfer backend registry (get_kv_class)"),
    ),
}


def missing(needs: Sequence[str], files: Files) -> list[tuple[str, str]]:
    """(need, why) for each need the revision's files lack."""
    out = []
    for need in needs:
        check = CHECKS.get(need)
        why = f"real mode has no driver for {need!r}" if check is None else check(files)
        if why is not None:
            out.append((need, why))
    return out


def files_of(source: Any, root: Path | None = None) -> Files | None:
    """A revision's files: a git source's through git (nothing exported yet), else its sglang
    folder `root` (a release installed in its environment); None when neither is readable."""
    if getattr(source, "kind", None) == "git" and getattr(source, "tree", None) is not None:
        return TreeFiles(source.tree)
    return FolderFiles(root) if root is not None else None


def check(label: str, files: Files | None, presets: Sequence[Any]) -> None:
    """Refuse, in one line, the first preset that asks for a feature or mode the revision
    lacks (a revision whose files are not readable here is not checked)."""
    for preset in presets:
        needs = preset.needs()
        lacks = missing(needs, files) if files is not None and needs else []
        if lacks:
            need, why = lacks[0]
            raise UsageError(
                f"{label}: preset {preset.name} asks for {need}, which this revision lacks: {why}"
            )


def check_commits(repo: Path, commits: Sequence[str], presets: Sequence[Any]) -> None:
    """`check` for commits of a repository (a history's anchor and its last commit, a bisect's
    ends), read with git before anything is exported or built."""
    for sha in commits:
        tree = SourceTree.open(f"{repo}@{sha}")
        check(f"{repo.name}@{sha[:10]}", TreeFiles(tree), presets)
