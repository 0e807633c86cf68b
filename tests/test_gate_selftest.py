"""The calibration study's bookkeeping: counts, and --resume reading what was already measured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.gate import selftest


def _result(status: str) -> dict[str, Any]:
    verdict = "regression" if status == "regression" else "pass"
    return {
        "status": status,
        "results": [
            {
                "benchmark": "step/pr652/scenario=decode-dspark",
                "verdict": verdict,
                "change_pct": 7.0,
            },
            {"benchmark": "lookup/pr652/op=get_hit", "verdict": "pass", "change_pct": 0.2},
        ],
    }


def test_resume_reads_earlier_results_and_measures_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "aa-0.json").write_text(json.dumps(_result("regression")))
    measured: list[str] = []

    def fake_gate(repo: Path, out: Path, mode: str, extra: list[str]) -> dict[str, Any]:
        measured.append(out.name)
        slowed = "_real_step" in (repo / "bench/core/scheduler.py").read_text()
        return _result("regression" if slowed else "pass")

    monkeypatch.setattr(selftest, "_gate", fake_gate)
    argv = ["--runs", "2", "--slowdown-pct", "10", "--output-dir", str(tmp_path), "--resume"]
    assert selftest.main(argv) == 0
    assert measured == ["aa-1.json", "slow10-0.json", "slow10-1.json"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["aa"]["runs_flagged"] == 1  # the earlier result, read back
    assert summary["aa"]["step_benchmarks_flagged"] == "1/2"
    assert summary["slow10"]["runs_flagged"] == 2


def test_without_resume_everything_is_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "aa-0.json").write_text(json.dumps(_result("regression")))
    measured: list[str] = []

    def fake_gate(repo: Path, out: Path, mode: str, extra: list[str]) -> dict[str, Any]:
        measured.append(out.name)
        return _result("pass")

    monkeypatch.setattr(selftest, "_gate", fake_gate)
    assert selftest.main(["--runs", "1", "--output-dir", str(tmp_path), "--slowdown-pct", "5"]) == 0
    assert measured == ["aa-0.json", "slow5-0.json"]
    assert json.loads((tmp_path / "summary.json").read_text())["aa"]["runs_flagged"] == 0


def test_instruction_runs_each_get_another_heap_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counts are deterministic: without a layout change per run, ten runs are one."""
    pads: list[tuple[str, int]] = []

    def fake_gate(repo: Path, out: Path, mode: str, extra: list[str]) -> dict[str, Any]:
        text = (repo / "bench/core/scheduler.py").read_text()
        marker = '_SELFTEST_LAYOUT_PAD = "'
        pad = len(text.split(marker)[1].split('"')[0]) if marker in text else 0
        pads.append((out.name, pad))
        return _result("pass")

    monkeypatch.setattr(selftest, "_gate", fake_gate)
    argv = ["--mode", "instructions", "--runs", "2", "--output-dir", str(tmp_path)]
    assert selftest.main(argv) == 0
    names = [name for name, _ in pads]
    assert names == [
        "calibration.json",
        "aa-0.json",
        "aa-1.json",
        "instr+1.1-0.json",
        "instr+1.1-1.json",
    ]
    by_name = dict(pads)
    assert by_name["calibration.json"] == 0
    assert by_name["aa-0.json"] != by_name["aa-1.json"]
    assert by_name["aa-0.json"] == by_name["instr+1.1-0.json"] > 0
