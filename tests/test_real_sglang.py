"""Real mode against a released sglang from the package registry (0.5.23): its environment
built into the cache, its own Scheduler measured, gated against itself, its hot path counted.

Marked `real`: `make test-real` runs them (CI does, after `make test`; the first build takes a
few minutes and ~2.5 GB of the cache); `make test` does not. No SGLang file is in this
repository: the wheel comes from the registry at test time.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.real
RELEASE = "sglang==0.5.23"


@pytest.fixture(scope="module")
def built() -> str:
    proc = run_cli("real", "build", RELEASE, timeout=2400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_the_environment_is_built_once_and_says_its_cost(built: str) -> None:
    assert re.search(r"(built in \d+ s|already built \(in \d+ s\)), [\d.]+ GB", built), built
    assert "stubbed: sgl_kernel, torchvision" in built
    again = run_cli("real", "build", RELEASE, timeout=600)
    assert again.returncode == 0
    assert "already built" in again.stdout


def test_run_real_measures_the_release_s_own_loop(built: str, tmp_path: Path) -> None:
    proc = run_cli(
        "run", "--real", RELEASE, "--real-preset", "decode-b256", "--budget", "90s",
        "--output-dir", str(tmp_path), timeout=1200,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    measured = [p for p in manifest["processes"] if p["mode"] == "measure"]
    assert len(measured) >= 3
    assert all(p["ok"] for p in measured)
    raw = json.loads((run_dir / measured[0]["file"]).read_text())
    assert raw["sglang_version"] == "0.5.23"
    modes = {r["mode"] for r in raw["records"]}
    assert "DECODE" in modes
    decode = [r["batch"] for r in raw["records"] if r["mode"] == "DECODE"]
    assert sorted(decode)[len(decode) // 2] == 256  # the running batch is held at B
    summary = (run_dir / "summary.md").read_text()
    row = next(ln for ln in summary.splitlines() if ln.startswith("| decode-b256"))
    figure = re.search(r"([\d,.]+) µs \[([\d,.]+), ([\d,.]+)\]", row)
    assert figure, row
    assert "sgl_kernel" in summary  # stubbed, and said so
    fm = json.loads(next((run_dir / "raw").rglob("freqmap.json")).read_text())
    assert fm["iterations"]["decode"] > 0


def test_gate_real_of_the_release_against_itself_passes(built: str, tmp_path: Path) -> None:
    proc = run_cli(
        "gate", "--real", "--base", RELEASE, "--head", RELEASE, "--real-preset",
        "prefill-chunked", "--rounds", "6", "--json", str(tmp_path / "g.json"),
        "--markdown", str(tmp_path / "g.md"), timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = (tmp_path / "g.md").read_text()
    assert md.startswith("**reqstate-bench gate: PASS**")
    assert "resolution (identical code, A/A)" in md
    assert "stubbed" in md


def test_real_hotpath_of_the_release_agrees_with_the_table_where_it_should(built: str) -> None:
    proc = run_cli("real", "hotpath", RELEASE, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = re.search(r"(\d+) agree, (\d+) differ, (\d+) missing, (\d+) new", proc.stdout)
    assert counts, proc.stdout[-2000:]
    assert int(counts[1]) >= 15
    assert "ScheduleBatch.prepare_for_decode" in proc.stdout
