"""The regression gate. Instruction mode end to end (deterministic: callgrind counts), and the
judgement rules on synthetic values. Wall-clock detection rates belong to a benchmark script,
not to unit tests (see docs/GATE.md)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.base.errors import DataError, UsageError
from bench.gate.config import GateConfig, load_gate_config
from bench.gate.git import snapshot
from bench.gate.judge import Judgement, judge, load_baseline
from tests.helpers import FIXTURES, ROOT

needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="valgrind not installed: apt-get install valgrind"
)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway git repo holding a copy of this working tree, committed once."""
    parent = tmp_path_factory.mktemp("gate")
    path = snapshot(ROOT, parent, "repo")
    shutil.copy(FIXTURES / "gate_tiny.toml", path / "gate_tiny.toml")
    _git(path, "init", "-q", "-b", "main")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "base")
    return path


def _gate(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", "gate", "--pyproject", "gate_tiny.toml", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
@needs_valgrind
def test_instruction_gate_aa_passes_with_identical_counts(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "aa.json"
    proc = _gate(
        repo,
        "--mode",
        "instructions",
        "--base",
        "HEAD",
        "--json",
        str(out),
        "--markdown",
        str(tmp_path / "aa.md"),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    (row,) = result["results"]
    assert row["benchmark"] == "step/weakkey/scenario=prefill-dspark/pattern=per_field"
    assert row["verdict"] == "pass"
    assert abs(row["change_pct"]) < 0.5
    assert (
        "| `step/weakkey/scenario=prefill-dspark/pattern=per_field` |"
        in (tmp_path / "aa.md").read_text()
    )


@pytest.mark.slow
@needs_valgrind
def test_instruction_gate_catches_injected_regression(repo: Path, tmp_path: Path) -> None:
    weakkey = repo / "strategies" / "weakkey.py"
    original = weakkey.read_text()
    patched = original.replace(
        "def get(req: Any) -> PDHiddenReqState:\n",
        "def get(req: Any) -> PDHiddenReqState:\n    for _ in range(25):  # injected work\n        pass\n",
    )
    assert patched != original
    weakkey.write_text(patched)
    try:
        proc = _gate(
            repo,
            "--mode",
            "instructions",
            "--base",
            "HEAD",
            "--json",
            str(tmp_path / "r.json"),
            "--markdown",
            str(tmp_path / "r.md"),
        )
    finally:
        weakkey.write_text(original)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "step/weakkey/scenario=prefill-dspark/pattern=per_field" in proc.stdout
    assert "REGRESSION" in proc.stdout
    (row,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert row["change_pct"] > 1.0


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "not valid JSON"),
        ('{"hello": 1}', "not a reqstate-bench gate result"),
        ("", "not valid JSON"),
    ],
)
def test_corrupt_baseline_exits_2(repo: Path, tmp_path: Path, content: str, needle: str) -> None:
    bad = tmp_path / "baseline.json"
    bad.write_text(content)
    proc = _gate(repo, "--baseline", str(bad))
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert str(bad) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_incompatible_baseline_is_refused(tmp_path: Path) -> None:
    cfg = GateConfig(
        strategies=("weakkey",),
        patterns=("per_field",),
        lookup_ops=(),
        scenarios=("prefill-dspark",),
    )
    other = GateConfig(
        strategies=("weakkey",),
        patterns=("per_field",),
        lookup_ops=(),
        scenarios=("decode-dspark",),
    )
    path = tmp_path / "old.json"
    path.write_text(
        json.dumps(
            {
                "schema": "reqstate-bench-gate/1",
                "fingerprint": other.fingerprint("wall"),
                "values": {
                    "candidate": {
                        "step/weakkey/scenario=prefill-dspark/pattern=per_field": [
                            1e-3,
                            1.1e-3,
                            1.2e-3,
                        ]
                    }
                },
            }
        )
    )
    with pytest.raises(DataError, match="incompatible baseline"):
        load_baseline(path, cfg, "wall")
    path.write_text(
        json.dumps(
            {
                "schema": "reqstate-bench-gate/1",
                "fingerprint": cfg.fingerprint("wall"),
                "values": {"candidate": {"x": [0]}},
            }
        )
    )
    with pytest.raises(DataError, match="malformed"):
        load_baseline(path, cfg, "wall")


CFG = GateConfig(
    strategies=("weakkey",),
    patterns=("per_field",),
    lookup_ops=(),
    scenarios=("prefill-dspark",),
    threshold_pct=5.0,
)
NAME = "step/weakkey/scenario=prefill-dspark/pattern=per_field"


def _vals(center: float, spread: float = 0.002, n: int = 48) -> list[float]:
    return [center * (1 + spread * ((i * 7919) % 11 - 5) / 5) for i in range(n)]


def test_wall_judgement_rules() -> None:
    base = _vals(1.0)
    # +10%, significant, above the 5% threshold and quiet A/A: regression
    (j,) = judge(
        CFG,
        "wall",
        {"base": {NAME: base}, "candidate": {NAME: _vals(1.1)}, "aa": {NAME: _vals(1.1)}},
        paired=True,
    )
    assert j.verdict == "regression"
    # +3%: significant but under the threshold: pass
    (j,) = judge(CFG, "wall", {"base": {NAME: base}, "candidate": {NAME: _vals(1.03)}}, paired=True)
    assert j.verdict == "pass"
    # +10% but the A/A twin differs by 15% from the candidate: the A/A bound wins, pass
    (j,) = judge(
        CFG,
        "wall",
        {"base": {NAME: base}, "candidate": {NAME: _vals(1.1)}, "aa": {NAME: _vals(1.265)}},
        paired=True,
    )
    assert j.noise_pct > 10
    assert j.verdict == "pass"
    # faster beyond the bound: improvement, never a failure
    (j,) = judge(CFG, "wall", {"base": {NAME: base}, "candidate": {NAME: _vals(0.8)}}, paired=True)
    assert j.verdict == "improvement"


def test_wall_change_per_iteration_and_unit_thresholds() -> None:
    """Step benchmarks also report the change in seconds per iteration (per-round paired
    difference) and as a share of the forward; with a threshold in those units the verdict
    follows it instead of percent of the harness's loop."""
    base, cand = _vals(100e-6, n=48), _vals(110e-6, n=48)  # +10 µs per iteration on 100 µs
    (j,) = judge(CFG, "wall", {"base": {NAME: base}, "candidate": {NAME: cand}}, paired=True)
    assert j.verdict == "regression"  # +10% > 5%
    assert j.change_s == pytest.approx(10e-6, rel=0.05)
    assert j.forward_s == pytest.approx(1.2)  # prefill-dspark's forward
    assert j.share_of_forward == pytest.approx(10e-6 / 1.2, rel=0.05)
    assert j.bound_s is None
    loose = dataclasses.replace(CFG, threshold_us=50.0)
    (j,) = judge(loose, "wall", {"base": {NAME: base}, "candidate": {NAME: cand}}, paired=True)
    assert (j.verdict, j.bound_s) == ("pass", 50e-6)
    tight = dataclasses.replace(CFG, threshold_us=1.0, threshold_share_pct=0.0005)
    (j,) = judge(tight, "wall", {"base": {NAME: base}, "candidate": {NAME: cand}}, paired=True)
    assert j.bound_s == pytest.approx(6e-6)  # 0.0005% of 1.2 s beats 1 µs
    assert j.verdict == "regression"
    # the A/A copy's difference raises the bound in µs too
    aa = _vals(125e-6, n=48)
    (j,) = judge(
        tight,
        "wall",
        {"base": {NAME: base}, "candidate": {NAME: cand}, "aa": {NAME: aa}},
        paired=True,
    )
    assert j.bound_s == pytest.approx(15e-6, rel=0.05)
    assert j.verdict == "pass"
    lookup = "lookup/weakkey/op=get_hit/live=10000/regime=warm"
    (j,) = judge(
        dataclasses.replace(tight, lookup_ops=("get_hit",), scenarios=("prefill-dspark",)),
        "wall",
        {
            "base": {NAME: base, lookup: _vals(1.0)},
            "candidate": {NAME: cand, lookup: _vals(1.0)},
        },
        paired=True,
    )[1:]
    assert j.change_s is None  # lookups keep the relative rule


def _instr(base: list[float], cand: list[float], aa: list[float] | None = None) -> Judgement:
    values = {"base": {NAME: base}, "candidate": {NAME: cand}}
    if aa is not None:
        values["aa"] = {NAME: aa}
    (j,) = judge(CFG, "instructions", values, paired=True)
    return j


def test_instruction_rule_holds_a_change_to_the_layout_spread() -> None:
    """Counts per heap layout (three a side). What the first instruction-mode A/A of the
    calibration study looked like: identical code, the candidate's layouts all above the
    baseline's by ~2.5%, its copy in other layouts spread over 4.4%: not a regression."""
    base = [100.0, 102.0, 101.0]
    j = _instr(base, [103.0, 103.5, 102.5], aa=[99.0, 101.5, 100.5])
    assert j.p_value == pytest.approx(1 / 20)  # every candidate layout above every baseline one
    assert j.noise_pct == pytest.approx(4.5 / 102 * 100)  # (max - min) / median of six
    assert j.verdict == "pass"
    # +8% with the same spread: beyond it, and apart: a regression
    j = _instr(base, [108.0, 110.2, 109.1], aa=[107.0, 109.6, 108.4])
    assert j.verdict == "regression"
    assert j.change_pct == pytest.approx(109.1 / 101 * 100 - 100)
    # +2% median change, a tight spread, but one candidate layout among the baseline's: no test
    j = _instr([100.0, 100.2, 100.1], [102.0, 99.9, 102.1], aa=[102.0, 102.05, 101.95])
    assert j.p_value == 1.0
    assert j.verdict == "pass"
    # a stable benchmark: +1.1% against a 1% threshold, layouts within 0.1%: caught
    j = _instr([100.0, 100.05, 99.98], [101.1, 101.15, 101.08], aa=[101.12, 101.1, 101.14])
    assert j.bound_pct == 1.0
    assert j.verdict == "regression"
    # faster beyond the bound and apart: improvement, never a failure
    assert _instr(base, [90.0, 91.0, 90.5], aa=[90.2, 90.9, 90.4]).verdict == "improvement"


def test_instruction_rule_with_one_count_a_side_takes_it_as_exact() -> None:
    """A baseline file from a gate that kept one count, or a one-layout test configuration."""
    j = _instr([100.0], [102.0], aa=[102.0])
    assert j.p_value is None
    assert j.noise_pct == 0.0
    assert j.verdict == "regression"
    assert _instr([100.0], [100.5]).verdict == "pass"


def test_missing_data_fails_closed() -> None:
    with pytest.raises(DataError, match="no candidate values"):
        judge(CFG, "wall", {"base": {NAME: [1.0, 1.0, 1.0]}, "candidate": {}}, paired=True)
    with pytest.raises(DataError, match="no baseline values"):
        judge(CFG, "instructions", {"base": {}, "candidate": {NAME: [5.0]}}, paired=True)


def test_gate_config_from_pyproject(tmp_path: Path) -> None:
    cfg = load_gate_config(ROOT / "pyproject.toml")
    wall = cfg.benchmarks("wall")
    for scenario in ("prefill-dspark", "decode-dspark"):  # the default gated set (issue 12)
        for strategy, pattern in (("pr652", "per_field"), ("dynattr", "cached")):
            assert f"step/{strategy}/scenario={scenario}/pattern={pattern}" in wall
    bad = tmp_path / "p.toml"
    bad.write_text("[tool.reqstate-bench.gate]\nthreshhold_pct = 3\n")
    with pytest.raises(UsageError, match=r"unknown .* key 'threshhold_pct'"):
        load_gate_config(bad)
    over = load_gate_config(FIXTURES / "gate_tiny.toml", threshold_pct=7.5)
    assert over.threshold_for(NAME, "wall") == 7.5
    assert over.threshold_for(NAME, "instructions") == 1.0


def test_unwritable_output_is_refused_before_measuring(repo: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = _gate(repo, "--base", "HEAD", "--json", str(blocker / "sub" / "gate.json"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "cannot create its folder" in proc.stderr.strip().splitlines()[-1]
    assert "[gate] round" not in proc.stderr  # nothing was measured


@pytest.mark.parametrize("sides", [2, 3])
def test_every_side_is_built_at_every_position_alike(sides: int) -> None:
    """Over any `sides` consecutive rounds each side is built once at each position: a shuffle
    drawn per round built the base last in 4 of a gate's 6 rounds, and an A/A read it faster."""
    from bench.suites.gate.run import build_order

    names = [f"s{i}" for i in range(sides)]
    for start in range(4):
        orders = [build_order(names, r) for r in range(start, start + sides)]  # type: ignore[arg-type]
        for name in names:
            assert sorted(o.index(name) for o in orders) == list(range(sides))
