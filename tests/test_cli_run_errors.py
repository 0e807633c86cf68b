"""Bad input to `run`: one line on stderr, exit 2, no traceback, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.helpers import FIXTURES, run_cli

CASES = [
    (["--suite", "nope"], "unknown suite 'nope'"),
    (["--strategy", "nope"], "unknown strategy 'nope'; available: control"),
    (["--requests", "0"], "expected a positive integer, got 0"),
    (["--requests", "-5"], "expected a positive integer"),
    (["--requests", "many"], "expected a positive integer, got 'many'"),
    (["--requests", "100000000"], "beyond this harness's limit"),
    (["--workers", "0"], "expected a positive integer"),
    (["--pd-fraction", "2"], "expected a number in [0, 1]"),
    (["--device", "tpu"], "unknown device 'tpu'"),
    (["--pool-rows", "1099511627776"], "lower --pool-rows"),
    (["--pattern", "sometimes"], "unknown access pattern 'sometimes'"),
    (["--strategy", "declared"], "baseline strategy 'weakkey' is not among the measured ones"),
    (["--config", "missing.json"], "missing.json: no such file"),
    (["--config", str(FIXTURES / "ext_strategy.py")], "not valid JSON"),
    (["--resume", "no/such/run"], "manifest.json: no such file"),
]
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
