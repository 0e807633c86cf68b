"""The gate across a project history: a base tree that lacks a configuration key the candidate
has, one that has a key the candidate removed, and one that names a gated benchmark's parameter
differently. Each gate must give a verdict, not an error; a difference that changes what is
measured, and a base older than the protocol, must stop with one line and exit 2.

Tiny configurations (tests/fixtures/gate_history.toml). The rename's wall gate must pass (its
trees measure the same code), so it runs alone (serial); the added and removed key's wall gates
check that a verdict is given and the base's notes name the key, whatever the verdict, so they
share the machine with the slow lane (~26 s of make test's serial phase, 2026-12-06)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.gate.git import snapshot
from tests.helpers import FIXTURES, ROOT

# measures (make test runs it, make test-fast does not); the wall gates judge timings: alone
pytestmark = [pytest.mark.slow]
WALL = pytest.param("wall", marks=pytest.mark.serial)

needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="valgrind not installed: apt-get install valgrind"
)

EXTRA_LINE = "    extra: dict[str, Any] = field(default_factory=dict)\n"
KNOB_LINE = "    history_knob: int = 7  # a knob a later commit adds (test history)\n"


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip()


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path.name}: {old!r} not found"
    path.write_text(text.replace(old, new))


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def _rename_live_to_size(repo: Path) -> None:
    """lookup/<s>/op=<op>/live=<n>/regime=<r> becomes .../size=<n>/... in the gate's names."""
    _edit(
        repo / "bench/gate/config.py",
        'op=op, live=live, regime="warm"',
        'op=op, size=live, regime="warm"',
    )
    _edit(
        repo / "bench/suites/gate/__init__.py",
        'LOOKUP: ("op", "live", "regime")',
        'LOOKUP: ("op", "size", "regime")',
    )
    _edit(
        repo / "bench/suites/gate/run.py",
        "op=op, live=live, regime=GATE_REGIME",
        "op=op, size=live, regime=GATE_REGIME",
    )
    _edit(
        repo / "bench/suites/gate/run_instructions.py",
        'n = bench.int("live")',
        'n = bench.int("size")',
    )
    _edit(
        repo / "bench/base/names.py",
        "RENAMED_PARAMS: dict[str, dict[str, str]] = {}",
        'RENAMED_PARAMS: dict[str, dict[str, str]] = {"lookup": {"size": "live"}}',
    )


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """c_old: no protocol; c0: this tree; c1 adds a configuration key; c2 removes it; the
    working tree (uncommitted) renames the lookup's `live` parameter to `size`."""
    repo = snapshot(ROOT, tmp_path_factory.mktemp("history"), "repo")
    shutil.copy(FIXTURES / "gate_history.toml", repo / "gate_history.toml")
    _git(repo, "init", "-q", "-b", "main")
    protocol = repo / "bench/gate/protocol.py"
    saved = protocol.read_text()
    protocol.unlink()
    c_old = _commit(repo, "before the protocol")
    protocol.write_text(saved)
    c0 = _commit(repo, "the protocol")
    _edit(repo / "bench/config/runconfig.py", EXTRA_LINE, KNOB_LINE + EXTRA_LINE)
    c1 = _commit(repo, "adds a configuration key")
    _edit(repo / "bench/config/runconfig.py", KNOB_LINE, "")
    c2 = _commit(repo, "removes it again")
    return {"repo": repo, "c_old": c_old, "c0": c0, "c1": c1, "c2": c2}


def _gate(repo: Path, base: str, mode: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "gate",
            "--pyproject",
            "gate_history.toml",
            "--mode",
            mode,
            "--base",
            base,
            "--json",
            str(out / f"{mode}.json"),
            "--markdown",
            str(out / f"{mode}.md"),
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def _checkout(repo: Path, commit: str) -> None:
    _git(repo, "checkout", "-q", "--force", commit)


def _given(proc: subprocess.CompletedProcess[str], out: Path, mode: str) -> dict[str, object]:
    """A verdict, not an error: exit 0 (pass) or 1 (a regression), both benchmarks judged."""
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    result = json.loads((out / f"{mode}.json").read_text())
    assert result["status"] in ("pass", "regression")
    assert len(result["results"]) == 2  # the step and the lookup benchmark
    assert {r["verdict"] for r in result["results"]} <= {"pass", "improvement", "regression"}
    return result


def _verdict(proc: subprocess.CompletedProcess[str], out: Path, mode: str) -> dict[str, object]:
    """A pass: the trees measure the same code."""
    result = _given(proc, out, mode)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert result["status"] == "pass"
    assert {r["verdict"] for r in result["results"]} <= {"pass", "improvement"}
    return result


MODES = [WALL, pytest.param("instructions", marks=needs_valgrind)]
# Adding and removing a configuration key reach both modes through the same base-config code
# (bench/gate/history.py): instruction mode (~30 s each under callgrind) runs on the rename.


def test_candidate_adds_a_configuration_key(history: dict, tmp_path: Path) -> None:
    repo = history["repo"]
    _checkout(repo, history["c1"])
    result = _given(_gate(repo, history["c0"], "wall", tmp_path), tmp_path, "wall")
    assert any("history_knob" in n for n in result["meta"]["base_notes"])


def test_candidate_removes_a_configuration_key(history: dict, tmp_path: Path) -> None:
    repo = history["repo"]
    _checkout(repo, history["c2"])
    result = _given(_gate(repo, history["c1"], "wall", tmp_path), tmp_path, "wall")
    assert any("history_knob" in n for n in result["meta"]["base_notes"])


@pytest.mark.parametrize("mode", MODES)
def test_candidate_renames_a_gated_parameter(history: dict, mode: str, tmp_path: Path) -> None:
    repo = history["repo"]
    _checkout(repo, history["c2"])
    _rename_live_to_size(repo)
    try:
        result = _verdict(_gate(repo, history["c2"], mode, tmp_path), tmp_path, mode)
    finally:
        _checkout(repo, history["c2"])
    names = [r["benchmark"] for r in result["results"]]
    assert "lookup/weakkey/op=get_hit/size=100/regime=warm" in names or (
        "lookup/weakkey/op=get_hit/size=200/regime=warm" in names
    )
    assert any("size is live in the base" in n for n in result["meta"]["base_notes"])


def test_a_difference_that_changes_what_is_measured_is_exit_2(
    history: dict, tmp_path: Path
) -> None:
    repo = history["repo"]
    _checkout(repo, history["c1"])
    _edit(
        repo / "bench/config/runconfig.py",
        "ABSENT_MEANS: dict[str, Any] = {",
        'ABSENT_MEANS: dict[str, Any] = {"history_knob": 0, ',
    )
    try:
        proc = _gate(repo, history["c0"], "wall", tmp_path)
    finally:
        _checkout(repo, history["c1"])
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr
    assert "has no configuration key 'history_knob'" in lines[-1]
    assert "history_knob=7 changes what is measured" in lines[-1]


def test_a_base_older_than_the_protocol_is_one_line(history: dict, tmp_path: Path) -> None:
    repo = history["repo"]
    _checkout(repo, history["c0"])
    proc = _gate(repo, history["c_old"], "wall", tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "predates the gate's cross-tree protocol; the oldest base this gate supports is" in last
