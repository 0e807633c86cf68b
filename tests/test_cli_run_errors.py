"""Bad input to `run`: one line on stderr, exit 2, no traceback, nothing written."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import FIXTURES, ROOT, run_cli

CASES = [
    (["--suite", "nope"], "unknown suite 'nope'"),
    (["--strategy", "nope"], "unknown strategy 'nope'; available: control"),
    (["--requests", "4096"], "--requests is gone: live requests are no longer held"),
    (["--pd-fraction", "0.5"], "--pd-fraction is gone: use --set pd_fraction=X"),
    (["--streaming"], "--streaming is gone: use --set streaming=true"),
    (["--workers", "0"], "expected a positive integer"),
    (["--device", "tpu"], "unknown device 'tpu'"),
    (["--pattern", "sometimes"], "unknown access pattern 'sometimes'"),
    (["--strategy", "declared"], "baseline strategy 'pr652' is not among the measured ones"),
    (["--scenario", "nope"], "unknown scenario 'nope'; choose from prefill-dspark"),
    (["--set", "nope=1"], "unknown scenario parameter 'nope'; known: loop"),
    (["--set", "decode_batch"], "'decode_batch': expected key=value"),
    (["--set", "decode_batch=many"], "decode_batch='many': expected an integer in [1, 65536]"),
    (["--set", "pd_fraction=2"], "pd_fraction=2.0: expected a number in [0, 1]"),
    (["--set", "capture=sometimes"], "capture='sometimes': expected one of get, peek"),
    (["--set", "streaming=maybe"], "streaming='maybe': expected true or false"),
    (
        ["--scenario", "decode-dspark", "--set", "decode_batch=8192"],
        "decode_batch 8192 exceeds max_running_requests 4096",
    ),
    (["--sweep", "nope=1,2"], "unknown scenario parameter 'nope'"),
    (["--sweep", "decode_batch=64"], "give at least two distinct values"),
    (["--sweep", "decode_batch=64,0"], "decode_batch=0: expected an integer in [1, 65536]"),
    (["--config", "missing.json"], "missing.json: no such file"),
    (["--config", str(FIXTURES / "ext_strategy.py")], "not valid JSON"),
    (["--resume", "no/such/run"], "manifest.json: no such file"),
    (["--request-model", "nope"], "unknown request model 'nope'; choose from fork-c96e68b62b"),
    (["--regime", "hot"], "unknown lookup regime 'hot'; choose from warm, cold, mixed"),
]
if importlib.util.find_spec("sglang") is None:
    CASES.append((["--request-class", "sglang"], "sglang cannot be imported here"))
if not torch.cuda.is_available():
    CASES.append((["--device", "cuda"], "torch sees no CUDA device"))


@pytest.mark.parametrize(("args", "needle"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_run_input(tmp_path: Path, args: list[str], needle: str) -> None:
    out = tmp_path / "reports"
    proc = run_cli("run", "--output-dir", str(out), *args, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert needle in lines[0]
    assert not out.exists() or not any(out.iterdir())  # nothing written


def test_bad_config_key(tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text('{"no_such_knob": 1}')
    proc = run_cli("run", "--config", str(cfg), "--output-dir", str(tmp_path / "r"))
    assert proc.returncode == 2
    assert "unknown configuration key 'no_such_knob'" in proc.stderr


def test_an_unexpected_error_exits_2_in_one_line_not_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A full disk or a pip timeout is no verdict: CI's gate reads exit 1 as a regression."""
    from bench.commands import main as main_mod
    from bench.real import venv

    def full(*_a: object, **_k: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setenv("REQSTATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(venv, "ensure", full)
    assert main_mod.main(["real", "build", "sglang==0.5.23"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "No space left on device" in err
    assert "Traceback" not in err
    assert "Traceback" in (tmp_path / "cache" / "last-error.txt").read_text()


# Refused before torch is imported (a second of start-up here): a typo costs a blink.
BEFORE_TORCH = [["--strategy", "nope"], ["--device", "tpu"], ["--resume", "no/such/run"]]


@pytest.mark.parametrize("args", BEFORE_TORCH, ids=[" ".join(a) for a in BEFORE_TORCH])
def test_a_typo_is_refused_before_torch_is_imported(tmp_path: Path, args: list[str]) -> None:
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['bench', 'run', '--output-dir', {str(tmp_path)!r}, *{args!r}]\n"
        "try:\n"
        "    runpy.run_module('bench', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    print(exc.code, 'torch' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.stdout.split() == ["2", "False"], proc.stdout + proc.stderr
