"""Which commits of a range a history measures.

A range is `A..B` of the repository at PATH (a bare repository works; nothing is checked out):
the first-parent commits after A up to B, oldest first, as `git rev-list --first-parent A..B`
lists them, with A itself in front as the anchor every other commit is measured against.

    every commit      the default
    every Nth         --every N (the last commit of the range always kept)
    the hot path      --hot-path: only commits that touch a file holding the scheduler's hot
                      path: the files of the measured frequency map (bench.real.freqmap) of
                      the anchor when one is stored, else of bench/core/hotpath.py's table
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from bench.base.errors import UsageError
from bench.core import hotpath
from bench.gate.git import git

# Where hot-path files live in an SGLang tree (the table's paths are under it).
SRT = "python/sglang/srt/"


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str  # committer date, ISO 8601
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:10]


@dataclass(frozen=True)
class Selection:
    anchor: Commit
    commits: tuple[Commit, ...]  # measured after the anchor, oldest first
    in_range: int  # commits of the range before selection
    how: str  # "every commit", "every 3rd", "touching the hot path (N files, from ...)"
    hot_files: tuple[str, ...] = ()

    @property
    def all(self) -> tuple[Commit, ...]:
        return (self.anchor, *self.commits)


def split_range(text: str) -> tuple[str, str]:
    a, sep, b = text.partition("..")
    if not sep or not a or not b or b.startswith("."):
        raise UsageError(f"{text!r}: expected a range A..B (two revisions)")
    return a, b


def _commit(repo: Path, rev: str) -> Commit:
    line = git("log", "-1", "--format=%H%x00%cI%x00%s", f"{rev}^{{commit}}", "--", cwd=repo)
    sha, date, subject = line.split("\0", 2)
    return Commit(sha, date, subject)


def resolve(repo: Path, rev: str) -> Commit:
    """A revision of the repository at `repo`, or a one-line UsageError."""
    if not repo.exists():
        raise UsageError(f"{repo}: no such folder")
    return _commit(repo, rev)


def in_range(repo: Path, a: str, b: str) -> list[Commit]:
    """The first-parent commits of a..b, oldest first."""
    text = git(
        "log", "--first-parent", "--reverse", "--format=%H%x00%cI%x00%s", f"{a}..{b}", "--",
        cwd=repo,
    )  # fmt: skip
    out = []
    for line in filter(None, text.splitlines()):
        sha, date, subject = line.split("\0", 2)
        out.append(Commit(sha, date, subject))
    return out


def touched(repo: Path, sha: str) -> set[str]:
    """The files a commit changed against its first parent."""
    text = git(
        "diff-tree", "--no-commit-id", "--name-only", "-r", "-m", "--first-parent", sha, cwd=repo
    )
    return set(filter(None, text.splitlines()))


def hot_files(anchor: str) -> tuple[tuple[str, ...], str]:
    """The files holding the hot path, repository-relative: (files, where they came from)."""
    path = hotpath.measured_path(anchor)
    if path.is_file():
        try:
            rows = json.loads(path.read_text(encoding="utf-8")).get("rows", [])
            files = {"python/" + r["defined"].rpartition(":")[0] for r in rows if r.get("defined")}
            if files:
                return tuple(sorted(files)), f"the map measured at {anchor[:10]}"
        except (OSError, ValueError, AttributeError, KeyError, TypeError):
            pass
    files = {SRT + h.defined.rpartition(":")[0] for h in hotpath.HOT_PATH}
    return tuple(sorted(files)), f"bench/core/hotpath.py ({hotpath.COMMIT})"


def select(repo: Path, range_text: str, *, every: int = 1, hot_path: bool = False) -> Selection:
    if every < 1:
        raise UsageError(f"--every {every}: at least 1")
    a, b = split_range(range_text)
    anchor, last = resolve(repo, a), resolve(repo, b)
    commits = in_range(repo, anchor.sha, last.sha)
    if not commits:
        raise UsageError(f"{range_text}: no commits after {anchor.short} up to {last.short}")
    total = len(commits)
    how = "every commit"
    files: tuple[str, ...] = ()
    if hot_path:
        files, origin = hot_files(anchor.sha)
        wanted = set(files)
        commits = [c for c in commits if touched(repo, c.sha) & wanted]
        how = f"the commits touching the hot path ({len(files)} files, from {origin})"
        if not commits:
            raise UsageError(f"{range_text}: none of its {total} commits touches the hot path")
    if every > 1:
        kept = [c for i, c in enumerate(commits) if i % every == every - 1]
        if kept[-1:] != commits[-1:]:
            kept.append(commits[-1])
        commits = kept
        how += f", every {_ordinal(every)}"
    return Selection(anchor, tuple(commits), total, how, files)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
