"""Everything shipped cites primary sources: no file in the repository, and no rendered report,
points to the project brief's notes (files a clone does not have)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench.report import write_report
from tests.fixtures.make_run import write_run

ROOT = Path(__file__).resolve().parent.parent
# Spelt in pieces so that this file does not cite them itself.
FORBIDDEN = tuple(
    "".join(parts)
    for parts in (("WORK", "LOAD.md"), ("DES", "IGN.md"), ("../", "shared"), ("shared/", "context"))
)


def _shipped_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the shipped files cannot be listed")
    return [ROOT / p for p in out.decode().split("\0") if p]


def _citations(text: str) -> list[str]:
    return [f for f in FORBIDDEN if f in text]


def test_no_shipped_file_cites_the_brief() -> None:
    offenders = []
    for path in _shipped_files():
        if not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary
        for line_no, line in enumerate(text.splitlines(), 1):
            if _citations(line):
                offenders.append(f"{path.relative_to(ROOT)}:{line_no}: {line.strip()[:100]}")
    assert not offenders, "\n".join(offenders)


def test_no_rendered_report_cites_the_brief(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    write_report(run)
    for name in ("report.html", "summary.md"):
        text = (run / name).read_text(encoding="utf-8")
        assert not _citations(text), name
        assert "lmsys.org blog 2025-05-05" in text  # the forward time's published source
