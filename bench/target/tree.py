"""One revision of a user's source tree, read without importing it or touching any checkout.

    PATH            the working tree as it is on disk (uncommitted changes included)
    PATH@REV        the commit REV of the git repository at PATH, read with `git show` /
                    `git grep` (works on bare repositories too; no worktree is created)

Paths inside a tree are POSIX paths relative to its root (the git top level, or PATH itself
when it is not a git repository). Every failure is a UsageError of one line: a missing folder,
an unrecognised revision, a file that cannot be read.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bench.base.errors import UsageError

GIT_TIMEOUT_S = 120
# Folders never read in a working tree (environments, caches, build output).
_SKIP_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist"})


def _git(cwd: Path, *args: str, check: bool = True) -> str:
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
            timeout=GIT_TIMEOUT_S,
        )
    except FileNotFoundError:
        raise UsageError("git is not installed: reading a revision needs it") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"git {args[0]} in {cwd} did not answer in {GIT_TIMEOUT_S} s") from None
    if check and proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise UsageError(f"git {' '.join(args[:2])} in {cwd}: {lines[-1] if lines else 'failed'}")
    return proc.stdout if proc.returncode == 0 else ""


def skip_file(rel: str) -> bool:
    """Tests and benchmarks of a tree are not its server code."""
    parts = rel.split("/")
    noise = ("test", "tests", "benchmark", "benchmarks")
    return any(p in noise for p in parts) or parts[-1].startswith("test_")


def split_spec(spec: str) -> tuple[str, str | None]:
    """'PATH@REV' -> (PATH, REV); 'PATH' -> (PATH, None). The last '@' separates, unless the
    whole text names an existing folder (a path that contains '@')."""
    if "@" not in spec or Path(spec).is_dir():
        return spec, None
    path, _, rev = spec.rpartition("@")
    if not path or not rev:
        raise UsageError(f"{spec!r}: expected PATH or PATH@REV")
    return path, rev


@dataclass(frozen=True)
class SourceTree:
    """The files of one revision (`rev` None: the working tree on disk)."""

    path: Path  # as given
    root: Path  # where relative paths start: the git top level, or `path`
    rev: str | None  # as given
    commit: str | None  # full hash of rev (of HEAD for a git working tree); None outside git
    git_dir: bool  # a git repository (rev reads go through git)
    dirty: bool = False  # a working tree with uncommitted changes
    _cache: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def open(cls, spec: str) -> SourceTree:
        """PATH or PATH@REV; UsageError (one line) when it cannot be read."""
        text, rev = split_spec(spec)
        path = Path(text)
        if not path.is_dir():
            raise UsageError(f"{text}: no such folder (expected an SGLang source tree)")
        inside = _git(path, "rev-parse", "--is-inside-work-tree", check=False).strip()
        bare = _git(path, "rev-parse", "--is-bare-repository", check=False).strip() == "true"
        is_git = inside == "true" or bare
        if rev is not None and not is_git:
            raise UsageError(f"{text}: not a git repository, so @{rev} cannot be read")
        if is_git:
            root = (
                path.resolve() if bare else Path(_git(path, "rev-parse", "--show-toplevel").strip())
            )
            if rev is None and bare:
                raise UsageError(f"{text}: a bare repository has no working tree; give PATH@REV")
            wanted = rev or "HEAD"
            commit = _git(
                path, "rev-parse", "--verify", "--quiet", f"{wanted}^{{commit}}", check=False
            )
            if not commit.strip():
                if rev is None:
                    commit = ""  # a repository without commits yet
                else:
                    raise UsageError(f"{text}: unrecognised revision {rev!r}")
            dirty = False
            if rev is None:
                dirty = bool(_git(path, "status", "--porcelain", "--untracked-files=no").strip())
            return cls(path, root, rev, commit.strip() or None, True, dirty)
        return cls(path, path.resolve(), None, None, False)

    # -- naming -----------------------------------------------------------------------------

    @property
    def short(self) -> str:
        """The revision in a few characters: a 10-digit hash, 'worktree' for the working tree."""
        if self.rev is None:
            return "worktree"
        return (self.commit or self.rev)[:10]

    @property
    def label(self) -> str:
        """How the revision is shown: 'PATH@32990a0560' or 'PATH (working tree)'."""
        if self.rev is None:
            return f"{self.path} (working tree{', uncommitted changes' if self.dirty else ''})"
        return f"{self.path}@{self.short}"

    def strategy_name(self) -> str:
        """A strategy NAME for this revision: the folder's name and the short hash
        ('sglang_32990a0560'; 'sglang_worktree' for the working tree)."""
        stem = re.sub(r"[^a-z0-9_]+", "_", self.root.name.lower().removesuffix(".git")).strip("_")
        if not stem or not stem[0].isalpha():
            stem = "t_" + stem
        return f"{stem[:24]}_{self.short}"

    # -- files ------------------------------------------------------------------------------

    @functools.cached_property
    def _listing(self) -> tuple[str, ...]:
        if self.rev is not None:
            out = _git(self.root, "ls-tree", "-r", "--name-only", "-z", self.commit or self.rev)
            return tuple(sorted(filter(None, out.split("\0"))))
        if self.git_dir:
            out = _git(self.root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
            return tuple(
                sorted(p for p in filter(None, out.split("\0")) if (self.root / p).is_file())
            )
        found = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            rel = Path(dirpath).relative_to(self.root)
            found += [PurePosixPath(rel, f).as_posix() for f in filenames]
        return tuple(sorted(found))

    def files(self, suffix: str = "") -> tuple[str, ...]:
        return tuple(self._printable(p) for p in self._listing if p.endswith(suffix))

    def _printable(self, rel: str) -> str:
        """A path read from the tree, refused (one line) when it holds a line break or another
        character that is not printable: paths are written into generated code (comments) and
        reports, where a line break would start a line of the tree's choosing."""
        if not rel.isprintable():
            raise UsageError(
                f"{self.label}: a file name that is not printable text ({rel!r}); the harness "
                "writes the paths it reads into the code it generates and refuses this one"
            )
        return rel

    def exists(self, rel: str) -> bool:
        return rel in set(self._listing) if self.rev is not None else (self.root / rel).is_file()

    def read(self, rel: str) -> str:
        """A file's text at this revision; UsageError when it is absent or unreadable."""
        if rel in self._cache:
            return self._cache[rel]
        if self.rev is not None:
            try:
                proc = subprocess.run(
                    ["git", "show", f"{self.commit}:{rel}"],
                    cwd=self.root,
                    capture_output=True,
                    check=False,
                    timeout=GIT_TIMEOUT_S,
                )
            except subprocess.TimeoutExpired:
                raise UsageError(f"{self.label}: git show {rel} did not answer") from None
            if proc.returncode != 0:
                raise UsageError(f"{self.label}: no file {rel}")
            raw = proc.stdout
        else:
            try:
                raw = (self.root / rel).read_bytes()
            except OSError as exc:
                raise UsageError(f"{self.label}: cannot read {rel} ({exc.strerror})") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"{self.label}: {rel} is not UTF-8 text") from None
        self._cache[rel] = text
        return text

    def grep(self, *needles: str, suffix: str = ".py") -> list[str]:
        """Files (ending in `suffix`) whose text contains every needle (fixed strings)."""
        return self._grep(needles, suffix, every=True)

    def grep_any(self, *needles: str, suffix: str = ".py") -> list[str]:
        """Files (ending in `suffix`) whose text contains any of the needles (fixed strings)."""
        return self._grep(needles, suffix, every=False) if needles else []

    def _grep(self, needles: tuple[str, ...], suffix: str, *, every: bool) -> list[str]:
        match = all if every else any
        if self.git_dir:
            args = ["grep", "-l", "-F", "-z", *(["--all-match"] if every else [])]
            for needle in needles:
                args += ["-e", needle]
            if self.rev is not None:
                args.append(self.commit or self.rev)
            else:
                args += ["--untracked"]
            args += ["--", f"*{suffix}"]
            out = _git(self.root, *args, check=False)
            names = [n for n in out.split("\0") if n]
            prefix = f"{self.commit or self.rev}:"
            return sorted(self._printable(n.removeprefix(prefix)) for n in names)
        return [p for p in self.files(suffix) if match(n in self.read(p) for n in needles)]
