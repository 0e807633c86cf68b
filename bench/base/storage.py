"""Files on disk: atomic writes, JSON reads with one-line errors, run folders.

A run folder under reports/ is named `<UTC timestamp>-<git commit>[-<n>]`; what it holds is
described in bench/runformat/schema.py. Every file is written to a unique temporary name in the same
folder and renamed into place, so a reader never sees half a file and an interrupted run keeps
every suite already finished.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.base.errors import DataError, UsageError

ROOT = Path(__file__).resolve().parents[2]  # bench/base/storage.py -> the checkout
DEFAULT_REPORTS_DIR = ROOT / "reports"
# The user's cache folder (built environments and exported trees of real mode, bench/real/):
# $REQSTATE_CACHE, else $XDG_CACHE_HOME/reqstate-bench, else ~/.cache/reqstate-bench. Never
# inside the checkout.
CACHE_ENV = "REQSTATE_CACHE"


def cache_dir() -> Path:
    """The user's cache folder for this harness (created on first use by whoever writes)."""
    own = os.environ.get(CACHE_ENV)
    if own:
        return Path(own).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "reqstate-bench"


# Free space a run folder needs before anything is measured (the largest runs write ~10 MiB).
MIN_FREE_BYTES = 16 * 2**20


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write text or bytes to path so that readers see the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot be read ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


def git_commit(cwd: Path = ROOT) -> str:
    """The checkout's short commit, with '-dirty' for uncommitted changes; 'nogit' outside git."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
        commit = out.stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "nogit"


def new_run_dir(base: Path) -> Path:
    """A fresh, uniquely named run folder (mkdir is atomic: concurrent runs never share one)."""
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{base}: cannot create output folder ({exc.strerror})") from None
    if not os.access(base, os.W_OK):
        raise UsageError(f"{base}: output folder is not writable")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = f"{stamp}-{git_commit()}"
    for n in range(1000):
        path = base / (name if n == 0 else f"{name}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise UsageError(f"{base}: could not create a unique run folder")


def latest_run_dir(base: Path) -> Path | None:
    """The newest run folder under base (names start with a UTC timestamp), or None."""
    if not base.is_dir():
        return None
    runs = sorted(p for p in base.iterdir() if (p / "manifest.json").is_file())
    return runs[-1] if runs else None


def check_free_space(path: Path, need_bytes: int = MIN_FREE_BYTES) -> None:
    """Fail before measuring, not after, when results could not be written."""
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    if free < need_bytes:
        raise UsageError(
            f"{path}: only {free // 2**20} MiB free; results need ~{need_bytes // 2**20} MiB"
        )
    probe = path / f".probe-{os.getpid()}"
    try:
        probe.write_text("x")
    except OSError as exc:
        raise UsageError(f"{path}: cannot write results ({exc.strerror})") from None
    finally:
        probe.unlink(missing_ok=True)
