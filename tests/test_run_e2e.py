"""`python -m bench run` end to end in a tiny configuration: structure and sanity of what it
writes, never timings. One run (module-scoped) feeds every check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.report.load import load_run
from bench.runformat.pyperf_io import gc_modes_of, load_pyperf, values_of
from bench.runformat.schema import SCHEMA
from bench.suites import public_names
from bench.suites.gc import extras_of
from bench.suites.lookup import OPS as LOOKUP_OPS
from conftest import STRATEGY_NAMES as STRATEGIES
from tests.helpers import ROOT, run_cli

pytestmark = pytest.mark.slow  # measures: make test runs it, make test-fast does not

SUITES = public_names()


@pytest.fixture(scope="module")
def run_dir(tiny_run: Path) -> Path:
    return tiny_run


def test_manifest_records_a_complete_run(run_dir: Path) -> None:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert list(manifest["config"]["suites"]) == list(SUITES)
    assert all(manifest["suites"][s]["status"] == "done" for s in SUITES)
    env = manifest["environment"]
    for key in ("python", "torch", "device", "cpu", "git_commit"):
        assert env[key]
    assert env["request_class"] == manifest["config"]["request_model"]  # a model, not sglang
    assert "sglang" not in env
    assert sorted(manifest["strategies"]) == sorted([*STRATEGIES, "hostile_x", "pr652.aa"])
    assert manifest["strategies"]["pr652.aa"]["twin_of"] == "pr652"
    assert manifest["config"]["aa_twins"] == 1
    assert all(len(m["source_sha256"]) == 64 for m in manifest["strategies"].values())
    assert manifest["strategies"]["control"]["holds_state"] is False
    assert manifest["strategies"]["weakkey"]["holds_state"] is True
    assert manifest["schema"] == SCHEMA
    assert manifest["command"].startswith("python -m bench run")
    if hasattr(os, "getloadavg"):  # pyperf's load_avg_1min, where the OS has one
        assert env["load_avg_1min"] >= 0.0


@pytest.mark.parametrize("suite", SUITES)
def test_every_suite_writes_pyperf_json_that_pyperf_opens(run_dir: Path, suite: str) -> None:
    path = run_dir / f"{suite}.json"
    values = values_of(load_pyperf(path))
    assert values
    assert all(v and all(x > 0 for x in v) for v in values.values())
    proc = subprocess.run(
        [sys.executable, "-m", "pyperf", "stats", str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Number of values" in proc.stdout or "Total duration" in proc.stdout


def test_benchmark_names_cover_every_strategy(run_dir: Path) -> None:
    names = {suite: set(values_of(load_pyperf(run_dir / f"{suite}.json"))) for suite in SUITES}
    for s in [*STRATEGIES, "pr652.aa"]:  # the baseline's A/A twin is measured like the others
        for op in LOOKUP_OPS:
            for regime in ("warm", "cold"):
                assert f"lookup/{s}/op={op}/live=200/regime={regime}" in names["lookup"]
        for scenario in ("prefill-dspark", "decode-dspark"):
            for pattern in ("per_field", "cached"):
                assert f"step/{s}/scenario={scenario}/pattern={pattern}" in names["step"]
            for mode in ("enabled", "frozen", "raised"):
                assert f"gc/{s}/scenario={scenario}/gc={mode}" in names["gc"]
        assert f"memory/{s}/metric=request_bytes" in names["gc"]
        for n in (16, 32):
            name = f"scaling/{s}/scenario=decode-dspark/pattern=per_field/decode_batch={n}"
            assert name in names["scaling"]
    # the cold memory regime: a case of its own, for the headline designs only, each in the
    # pattern the report's evicted figures read (control in both: every net figure's reference)
    cold = {n for n in names["step"] if n.endswith("/regime=cold")}
    headline = {"pr652", "pr652.aa", "control", "dynattr"}  # dynattr: the review's design
    assert {n.split("/")[1] for n in cold} == headline
    pairs = {(n.split("/")[1], n.split("pattern=")[1].split("/")[0]) for n in cold}
    assert pairs == {
        ("pr652", "per_field"),
        ("pr652.aa", "per_field"),
        ("dynattr", "cached"),
        ("control", "per_field"),
        ("control", "cached"),
    }
    # full-collection pauses (the slow part of the gc suite): the headline designs only
    full = {n.split("/")[1] for n in names["gc"] if n.startswith("gc_full/")}
    assert full == headline
    for scenario in ("prefill-dspark", "decode-dspark"):
        assert f"step/pr652/scenario={scenario}/pattern=per_field/regime=cold" in cold


def test_a_warm_case_takes_twice_the_values_and_an_evicted_one_its_warm_up_as_one(
    run_dir: Path,
) -> None:
    suite = load_pyperf(run_dir / "step.json")
    values = values_of(suite)
    name = "step/pr652/scenario=decode-dspark/pattern=per_field"
    assert len(values[name]) == 6  # the tiny configuration's 3 values, warm_value_factor 2
    assert len(values[f"{name}/regime=cold"]) == 4  # 3 values and the warm-up round's
    (cold,) = [b for b in suite.get_benchmarks() if b.get_name() == f"{name}/regime=cold"]
    assert all(not run.warmups for run in cold.get_runs())


def test_pyperf_compare_to_works_between_suites_files(run_dir: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyperf",
            "compare_to",
            str(run_dir / "step.json"),
            str(run_dir / "step.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr


def test_gc_mode_is_recorded_per_benchmark(run_dir: Path) -> None:
    modes = gc_modes_of(load_pyperf(run_dir / "gc.json"))
    assert modes["gc/weakkey/scenario=decode-dspark/gc=frozen"] == "frozen"
    assert modes["gc/weakkey/scenario=decode-dspark/gc=raised"] == "raised"
    assert modes["gc_full/pr652/scenario=decode-dspark/gc=frozen"] == "frozen"
    assert modes["gc/weakkey/scenario=decode-dspark/gc=enabled"] == "enabled"
    assert set(gc_modes_of(load_pyperf(run_dir / "step.json")).values()) == {"deferred"}
    assert set(gc_modes_of(load_pyperf(run_dir / "scaling.json")).values()) == {"frozen"}
    assert set(gc_modes_of(load_pyperf(run_dir / "lookup.json")).values()) == {"disabled"}


def test_extras_are_raw_and_the_reader_derives_the_rest(run_dir: Path) -> None:
    step = json.loads((run_dir / "step.extra.json").read_text())
    assert step["schema"] == SCHEMA
    series = step["extras"]["steps"]["step/weakkey/scenario=prefill-dspark/pattern=per_field"]
    # values (3, twice in cache: warm_value_factor) x steps per value
    assert len(series["host_ns"]) == len(series["gc"]) == 6 * 3
    assert "summaries" not in step
    assert "percentiles" not in step
    # every family's rounds metered for the machine's other load (bench.base.cpuload): one
    # figure per kept round, 6 values per worker here in cache, 4 evicted (3 and the warm-up
    # round's)
    loads = step["extras"]["loads"]
    assert {"scenario=prefill-dspark", "scenario=decode-dspark"} <= set(loads)
    assert len(loads["scenario=prefill-dspark"]["others_cores"]) == 6
    assert len(loads["scenario=prefill-dspark/regime=cold"]["others_cores"]) == 4
    lookup_loads = json.loads((run_dir / "lookup.extra.json").read_text())["extras"]["loads"]
    assert all(len(v["loaded"]) == 3 for v in lookup_loads.values())

    run = load_run(run_dir)
    data = run.suites["step"]
    p = data.percentiles["step/weakkey/scenario=prefill-dspark/pattern=per_field"]
    assert p.p50_ns <= p.max_ns
    assert p.p99_ns is None  # 18 iterations: too few for a tail
    assert p.p999_ns is None
    assert p.steps == 6 * 3
    summaries = data.by_name()
    declared = summaries["step/declared/scenario=prefill-dspark/pattern=per_field"]
    assert declared.ratio is not None
    assert declared.ratio_low is not None
    assert declared.ratio_high is not None
    assert declared.ratio_low <= declared.ratio <= declared.ratio_high
    assert declared.verdict in ("faster", "slower", "same")
    assert (
        summaries["step/pr652/scenario=prefill-dspark/pattern=per_field"].ratio is None
    )  # baseline

    gc_data = run.suites["gc"]
    assert {name.rsplit("=", 1)[1] for name in gc_data.gc_rates} == {"enabled", "frozen", "raised"}
    memory = extras_of(gc_data.extras).memory
    assert memory["weakkey"].state_tracked_objects >= 1  # the state object at least
    assert memory["control"].state_tracked_objects == pytest.approx(0, abs=0.05)

    from bench.stats.derive import scaling_fits

    fit = scaling_fits(run.suites["scaling"].values, kind="scaling", key="decode_batch")["weakkey"]
    assert fit.sizes == [16, 32]
    assert fit.marginal_ns_per_request is not None


def test_terminal_table_was_printed(run_dir: Path) -> None:
    short = run_cli("run", "--resume", str(run_dir))
    assert short.returncode == 0
    assert "nothing to resume" in short.stderr
    assert len(short.stdout.splitlines()) <= 50  # the PR section: a screenful
    assert "Verdict:" in short.stdout
    proc = run_cli("run", "--resume", str(run_dir), "--verbose")  # every suite's table
    assert proc.returncode == 0
    assert "ratio [95% CI]" in proc.stdout
    assert "step/declared/scenario=prefill-dspark/pattern=per_field" in proc.stdout
    twin_rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("step/pr652.aa/")]
    assert twin_rows
    assert all(ln.rstrip().endswith("A/A twin") for ln in twin_rows)
    assert "A/A noise floor (pr652's twin vs pr652)" in proc.stdout
