"""Failures a user can cause or meet: a strategy that raises, interruption and resume,
corrupt result files, concurrent runs, unwritable output, and fuzzed input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import suites
from bench.base.errors import DataError, UsageError
from bench.base.names import BenchName
from bench.base.storage import check_free_space, new_run_dir, write_atomic
from bench.commands.main import build_parser
from bench.commands.run import _config_from_args
from bench.runformat.pyperf_io import load_pyperf, values_of
from tests.helpers import FIXTURES, ROOT, run_cli

TINY = str(FIXTURES / "tiny_config.json")


def _only_dir(folder: Path) -> Path:
    (d,) = [p for p in folder.iterdir() if p.is_dir()]
    return d


@pytest.mark.slow  # judges statuses and files, not time: runs beside the other slow tests
def test_strategy_raising_mid_suite_is_marked_failed_others_complete(tmp_path: Path) -> None:
    proc = run_cli(
        "run",
        "--config",
        TINY,
        "--device",
        "cpu",
        "--suite",
        "lookup,step",
        "--strategy",
        "pr652,declared",
        "--external",
        str(FIXTURES / "flaky_strategy.py"),
        "--output-dir",
        str(tmp_path),
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    run = _only_dir(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    for suite in ("lookup", "step"):
        st_ = manifest["suites"][suite]
        assert st_["status"] == "partial"
        assert "flaky strategy gave up" in st_["failures"]["flaky"]
    names = values_of(load_pyperf(run / "step.json"))
    strategies = {BenchName.parse(n).strategy for n in names}
    assert {"pr652", "declared"} <= strategies
    assert "FAILURES: lookup (partial: flaky failed)" in proc.stdout  # said on the summary
    assert "FAILED flaky" in run_cli("show", "--verbose", str(run)).stdout
    html = (run / "report.html").read_text()
    assert 'id="failures"' in html
    assert "flaky strategy gave up" in html


def _suite_done(run: Path, suite: str) -> bool:
    try:
        manifest = json.loads((run / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(manifest["suites"].get(suite, {}).get("status") == "done")


@pytest.mark.slow
@pytest.mark.serial
def test_sigterm_keeps_finished_suites_and_resume_completes(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench",
            "run",
            "--config",
            TINY,
            "--device",
            "cpu",
            "--suite",
            "lookup,scaling",
            "--strategy",
            "pr652,declared",
            "--no-report",
            "--output-dir",
            str(tmp_path),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # the fixed plan (scaling) runs before the adaptive suite (lookup): bench.suites.run_order
    first, second = suites.run_order(["lookup", "scaling"])
    assert (first, second) == ("scaling", "lookup")
    deadline = time.monotonic() + 240
    run = None
    while time.monotonic() < deadline:
        dirs = [p for p in tmp_path.iterdir() if p.is_dir()]
        if dirs and _suite_done(dirs[0], first):
            run = dirs[0]
            break
        time.sleep(0.2)
    assert run is not None, "the first suite never finished"
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM
    assert "--resume" in err
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "incomplete"
    assert manifest["missing"] == [second]
    assert manifest["suites"][first]["status"] == "done"
    before = (run / f"{first}.json").read_bytes()
    assert not list(run.glob(".*tmp"))  # no half-written files left behind

    resumed = run_cli("run", "--resume", str(run), "--no-report")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resuming" in resumed.stderr
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert (run / f"{first}.json").read_bytes() == before  # only the missing suite was measured
    assert load_pyperf(run / f"{second}.json").get_benchmarks()


@pytest.mark.parametrize(
    ("content", "needle"),
    [("{trunc", "not valid JSON"), ('{"schema": "other"}', ""), ("[1, 2]", "")],
)
def test_report_on_corrupt_manifest_is_one_line_exit_2(
    tmp_path: Path, content: str, needle: str
) -> None:
    (tmp_path / "manifest.json").write_text(content)
    proc = run_cli("report", str(tmp_path))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "manifest.json" in proc.stderr
    assert needle in proc.stderr


def test_concurrent_runs_get_distinct_folders(tmp_path: Path) -> None:
    made: list[Path] = []
    threads = [
        threading.Thread(target=lambda: made.append(new_run_dir(tmp_path))) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(made)) == 8


def test_atomic_writes_never_leave_a_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    payloads = [json.dumps({"w": i, "pad": "x" * 200_000}) for i in range(6)]

    def writer(text: str) -> None:
        for _ in range(5):
            write_atomic(target, text)

    threads = [threading.Thread(target=writer, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for _ in range(200):
        if target.exists():
            assert json.loads(target.read_text())["pad"]  # always whole
    for t in threads:
        t.join()
    assert not [p for p in tmp_path.iterdir() if p.name != "x.json"]


def test_unwritable_output_is_refused_before_measuring() -> None:
    proc = run_cli("run", "--config", TINY, "--output-dir", "/proc/reqstate-bench-out")
    assert proc.returncode == 2
    assert "cannot create output folder" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_disk_full_is_refused_before_measuring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Full:
        f_bavail = 10
        f_frsize = 4096

    monkeypatch.setattr(os, "statvfs", lambda _p: Full())
    with pytest.raises(UsageError, match="MiB free"):
        check_free_space(tmp_path)


_ARG_TOKENS = st.sampled_from(
    [
        "--suite",
        "--strategy",
        "--requests",
        "--workers",
        "--values",
        "--pd-fraction",
        "--pattern",
        "--device",
        "--baseline",
        "--seed",
        "--pool-rows",
        "--quick",
        "--streaming",
        "--scenario",
        "--set",
        "--sweep",
        "decode-dspark",
        "decode_batch=64",
        "decode_batch=64,128",
        "pd_fraction=2",
        "capture=peek",
        "lookup",
        "step",
        "weakkey",
        "nope",
        "0",
        "-1",
        "7",
        "1e9",
        "0.5",
        "2",
        "cpu",
        "cuda",
        "tpu",
        "",
        "per_field",
        ",",
        "x=y",
    ]
)


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.lists(st.one_of(_ARG_TOKENS, st.text(max_size=8)), max_size=8))
def test_fuzzed_run_arguments_give_a_config_or_a_clean_error(tokens: list[str]) -> None:
    parser = build_parser()
    error = None
    try:
        config = _config_from_args(parser.parse_args(["run", *tokens]))
    except UsageError as exc:
        error = str(exc)
    if error is not None:
        assert "\n" not in error
        return
    config.validate()  # a config that came out is valid
    assert config.suites


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)))
def test_fuzzed_result_files_load_or_fail_cleanly(
    tmp_path_factory: pytest.TempPathFactory, blob: bytes
) -> None:
    from bench.gate.config import GateConfig
    from bench.gate.judge import load_baseline
    from bench.report.load import load_run

    folder = tmp_path_factory.mktemp("fuzz")
    for name in ("manifest.json", "step.json"):
        (folder / name).write_bytes(blob)
    for load in (
        lambda: load_pyperf(folder / "step.json"),
        lambda: load_run(folder),
        lambda: load_baseline(folder / "step.json", GateConfig(), "wall"),
    ):
        error = ""
        try:
            load()
        except DataError as exc:
            error = str(exc)
        assert "\n" not in error
