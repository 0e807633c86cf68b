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


def test_production_traffic_runs_in_one_cache_regime(built: str, tmp_path: Path) -> None:
    """The mix (its features, the overlap loop) at a smaller batch and pool, the PD prefill node
    on the stand-in transfer backend, and the retraction preset: each runs the release's own
    loop, warms up until its cache is steady and says what regime it measured."""
    proc = run_cli(
        "run", "--real", RELEASE, "--real-preset", "production-mix,pd-prefill,retraction",
        "--set", "running=256", "--set", "kv_tokens=330000", "--budget", "off", "--no-count",
        "--output-dir", str(tmp_path), timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    raws: dict[str, list[dict]] = {}
    for entry in manifest["processes"]:
        raws.setdefault(entry["preset"], []).append(
            json.loads((run_dir / entry["file"]).read_text())
        )
    for preset, outs in raws.items():
        assert all(o["ok"] for o in outs), preset
        assert all(o["settled"]["steady"] for o in outs), (preset, [o["settled"] for o in outs])
    mix = raws["production-mix"][0]
    assert mix["aborts_sent"] > 0
    assert mix["server_args"]["disable_overlap_schedule"] is False  # the overlap loop
    assert sum(r["evicted"] > 0 for r in mix["records"]) > 0
    prefill = raws["pd-prefill"][0]
    assert any("transfer backend" in line for line in prefill["replaced"])
    assert sum(r["phases"]["transfer"] for r in prefill["records"]) > 0
    assert sum(r["retracted"] for r in raws["retraction"][0]["records"]) > 0
    summary = (run_dir / "summary.md").read_text()
    assert "% full, evicting in" in summary


def test_coverage_of_the_release_names_what_the_mix_adds(built: str, tmp_path: Path) -> None:
    out = tmp_path / "coverage.md"
    proc = run_cli(
        "real", "coverage", RELEASE, "--real-preset", "decode-b256,production-mix", "--before",
        "decode-b256", "--set", "running=256", "--set", "kv_tokens=330000", "--iterations", "60",
        "--output", str(out), timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| constrained |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # decode-b256 asks for no grammar (the grammar manager's per-iteration checks still run:
    # 0.7% at 0.5.23); the mix's regex and JSON requests run the backend's own code
    assert float(cells[2].rstrip("%")) > float(cells[1].rstrip("%"))


def test_speculative_presets_run_the_release_s_own_spec_workers(built: str, tmp_path: Path) -> None:
    """NGRAM (its corpus built at first use), an EAGLE chain on spec v2 and MTP on a PD decode
    node run the release's own workers through the stand-in's verify: every process measures,
    the revision runs each preset's loop, and the accept length it produced is the preset's."""
    proc = run_cli(
        "run", "--real", RELEASE, "--real-preset", "decode-b256+ngram,eagle-chain,mtp-decode",
        "--set", "running=64", "--budget", "off", "--no-count", "--output-dir", str(tmp_path),
        timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    summary = (run_dir / "summary.md").read_text()
    assert "ran the" not in summary  # no revision ran another loop than its preset's
    for preset, configured in (
        ("decode-b256+ngram", 2.0),
        ("eagle-chain", 2.08),
        ("mtp-decode", 2.61),
    ):
        line = next(ln for ln in summary.splitlines() if ln.startswith(f"- {preset} "))
        measured = float(re.search(r"accept length ([\d.]+)", line).group(1))  # type: ignore[union-attr]
        assert measured == pytest.approx(configured, rel=0.05), line
    manifest = json.loads((run_dir / "manifest.json").read_text())
    raw = json.loads((run_dir / manifest["processes"][0]["file"]).read_text())
    assert any("verify predicts" in r for r in raw["replaced"])
