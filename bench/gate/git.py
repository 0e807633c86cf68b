"""The gate's trees: the baseline as a git worktree, the candidate as a copy of the working tree."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from bench.base.errors import DataError, UsageError
from bench.base.storage import ROOT


def git(*args: str, cwd: Path = ROOT) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
    )
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise UsageError(f"git {' '.join(args)}: {lines[-1] if lines else 'failed'}")
    return proc.stdout.strip()


def default_base(root: Path = ROOT) -> str:
    """The merge base with main, or HEAD~1 when HEAD is main itself (or there is no main)."""
    head = git("rev-parse", "HEAD", cwd=root)
    with contextlib.suppress(UsageError):
        base = git("merge-base", "HEAD", "main", cwd=root)
        if base != head:
            return base
    try:
        return git("rev-parse", "HEAD~1", cwd=root)
    except UsageError:
        raise UsageError(
            "no baseline: HEAD has no parent; pass --base REF or --baseline FILE"
        ) from None


@contextlib.contextmanager
def worktree(ref: str, parent: Path, root: Path = ROOT) -> Iterator[tuple[Path, str]]:
    """The tree of `ref` at parent/base, laid out exactly as the candidate's copy: checked out
    as a detached worktree (removed at once, whatever happens) and copied the way snapshot()
    copies the working tree. Run from the worktree itself, whose root also lists a .git file,
    identical code sat in other heap layouts than its copies (the import system caches that
    directory listing): a copy of the worktree plus its .git file reproduced the worktree's
    instruction counts exactly, the copy without it differed by up to 1.6% on decode-dspark's
    dynattr step (docs/GATE.md, instruction mode)."""
    commit = git("rev-parse", "--verify", f"{ref}^{{commit}}", cwd=root)
    checkout = parent / "checkout"
    git("worktree", "add", "--detach", "--quiet", str(checkout), commit, cwd=root)
    try:
        if not (checkout / "bench" / "worker.py").is_file():
            raise DataError(
                f"--base {ref}: that tree has no bench/worker.py (too old for the gate)"
            )
        path = snapshot(checkout, parent, "base")
    finally:
        for args in (["worktree", "remove", "--force", str(checkout)], ["worktree", "prune"]):
            subprocess.run(["git", *args], cwd=root, capture_output=True, check=False)
    yield path, commit


def snapshot(root: Path, parent: Path, name: str = "cand") -> Path:
    """A copy of the working tree (tracked and unignored files) at parent/<name>.

    Both sides run from sibling folders of equal path length and without bytecode caches:
    object addresses, and so identity hashes and dict probe sequences, then depend on the code
    alone, and identical code gives identical instruction counts (measured from the working tree
    itself, identical code also differed by a steady ~2.5% in wall-clock step latency)."""
    listing = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=root)
    dest = parent / name
    for rel in filter(None, listing.split("\0")):
        src = root / rel
        if src.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    return dest
