"""Scenarios: presets with a source for every number, the docs generated from them, the CLI
that lists them, what get-or-create costs per iteration, and every preset through a real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.commands import scenario_docs
from bench.core.counting import count_ops
from bench.core.scenarios import DEFAULT_SET, PARAMS, PRESETS, get, parse_set, parse_sweep
from bench.report import write_report
from bench.report.load import load_run
from bench.report.pr import SUMMARY_LINES
from bench.report.scenarios import cases
from strategies import load_builtin
from tests.helpers import ROOT, run_cli, visible_lines


def test_every_preset_value_has_a_source() -> None:
    for name, scenario in PRESETS.items():
        for key in PARAMS:
            assert scenario.sources.get(key, "").strip(), f"{name}.{key} has no source"


def test_docs_are_generated_from_the_code() -> None:
    """docs/SCENARIOS.md is `python -m bench scenarios --markdown`: regenerate it after a
    change to bench/core/scenarios.py."""
    committed = (ROOT / "docs" / "SCENARIOS.md").read_text(encoding="utf-8")
    assert committed == scenario_docs.markdown()


def test_scenarios_command_lists_every_preset() -> None:
    proc = run_cli("scenarios")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    listed = {line[2:].split()[0]: line.startswith("*") for line in lines[:-1]}
    assert listed == {name: name in DEFAULT_SET for name in PRESETS}
    explained = run_cli("scenarios", "--explain", "decode-dspark")
    assert explained.returncode == 0
    assert "forward_ms" in explained.stdout
    assert "lmsys.org blog 2025-05-05" in explained.stdout  # forward_ms's published source
    bad = run_cli("scenarios", "--explain", "nope")
    assert bad.returncode == 2
    assert "unknown scenario 'nope'" in bad.stderr


def test_set_and_sweep_parse_and_refuse() -> None:
    assert parse_set(["decode_batch=64", "streaming=false", "arrival=2.5"]) == {
        "decode_batch": 64,
        "streaming": False,
        "arrival": 2.5,
    }
    assert parse_set(["arrival=fill"]) == {"arrival": "fill"}
    assert parse_sweep("prompts=sharegpt,random-1k,random-4k") == (
        "prompts",
        ("sharegpt", "random-1k", "random-4k"),
    )
    modified = get("decode-dspark").with_changes({"decode_batch": 64})
    assert modified.modified == ("decode_batch",)
    assert modified.label == "decode-dspark (modified preset)"
    with pytest.raises(ValueError, match="exceeds max_running_requests"):
        get("decode-dspark").with_changes({"decode_batch": 5000})


@pytest.mark.parametrize(("capture", "creates"), [("get", True), ("peek", False)])
def test_decode_creates_a_state_per_admitted_request_only_under_get(
    capture: str, creates: bool
) -> None:
    """Every decode forward scans all B requests; get-or-create makes a state for each newly
    admitted one (its first forward), peek makes none."""
    scenario = get("decode-dspark").with_changes({"decode_batch": 64, "capture": capture})
    pr = load_builtin("pr652")
    counts = count_ops(pr, scenario, pattern="per_field", seed=3, steps=400)
    assert counts.lookups == 64 * 400  # one scan over the whole batch per forward
    admitted = _admitted(scenario, steps=400)
    assert admitted > 0
    assert counts.created == (admitted if creates else 0)


def _admitted(scenario, steps: int) -> int:  # type: ignore[no-untyped-def]
    from bench.core.hostpool import HostPool
    from bench.core.scheduler import make_scheduler, warmup_steps

    sched = make_scheduler(load_builtin("control"), scenario, HostPool(scenario.pool_rows), seed=3)
    sched.run(warmup_steps(scenario))
    total = 0
    for _ in range(steps):
        sched.step()
        total += sched.queue_sample()["admitted"]
    sched.close()
    return total


@pytest.mark.slow
def test_every_preset_through_a_tiny_run(tmp_path: Path) -> None:
    """Every preset, one strategy pair and control, the step suite, report included: structure
    and sanity, never timings."""
    config = tmp_path / "tiny.json"
    config.write_text(
        json.dumps(
            {
                "step_workers": 1,
                "step_values": 3,
                "warmup_values": 1,
                "budget_s": None,  # the fixed plan: no further rounds
                "steps_per_value": 3,
                "count_steps": 20,
                "scenario_overrides": {"chunked_prefill_size": 2048, "decode_batch": 32},
            }
        )
    )
    out = tmp_path / "reports"
    proc = run_cli(
        "run",
        "--config",
        str(config),
        "--suite",
        "step",
        "--strategy",
        "pr652,dynattr,control",
        "--scenario",
        ",".join(PRESETS),
        "--device",
        "cpu",
        "--output-dir",
        str(out),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = out.iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert {c["scenario"] for c in manifest["cases"]} >= set(PRESETS)
    # the PR's short form keeps its cap with every scenario in the run
    md = (run_dir / "summary.md").read_text()
    assert len(visible_lines(md)) <= SUMMARY_LINES, md
    assert all(
        c["modified"] == ["chunked_prefill_size", "decode_batch"]
        or c["modified"] == ["decode_batch"]
        or c["modified"] == ["chunked_prefill_size"]
        for c in manifest["cases"]
        if c["key"].count("/") == 0
    )
    run = load_run(run_dir)
    found = {c.name: c for c in cases(run) if c.regime == "warm"}
    assert set(found) == set(PRESETS)
    assert found["prefill-dspark"].queues["inflight"].mean < 10
    assert found["decode-dspark"].queues["decode_batch"].mean == pytest.approx(32, abs=0.5)
    stall = found["stress-transfer-stall"].queues
    # long residence piles the queue up: 75 iterations x one 4k request per two 2k chunks
    assert stall["inflight"].mean == pytest.approx(75 / 2, rel=0.1)
    pr = found["prefill-dspark"].cost("pr652", "per_field")
    assert pr is not None
    assert pr.net is not None
    assert pr.lookups is not None
    assert pr.lookups > found["prefill-dspark"].cost("pr652", "cached").lookups  # type: ignore[union-attr]
    html = (run_dir / "report.html").read_text()
    assert 'id="scenarios"' in html
    for name in PRESETS:
        assert name in html
    write_report(run_dir, long=True)
    md = (run_dir / "summary.md").read_text()
    assert "**Per scenario**" in md
    assert "modified preset" in md


@pytest.mark.slow
def test_a_sweep_is_named_plotted_and_summarised(tmp_path: Path) -> None:
    config = tmp_path / "tiny.json"
    config.write_text(
        json.dumps(
            {
                "step_workers": 1,
                "step_values": 3,
                "warmup_values": 1,
                "budget_s": None,  # the fixed plan: no further rounds
                "steps_per_value": 3,
                "count_steps": 10,
            }
        )
    )
    out = tmp_path / "reports"
    proc = run_cli(
        "run",
        "--config",
        str(config),
        "--suite",
        "step",
        "--strategy",
        "pr652,declared,control",
        "--scenario",
        "decode-dspark",
        "--sweep",
        "decode_batch=16,64",
        "--device",
        "cpu",
        "--output-dir",
        str(out),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = out.iterdir()
    names = set(json.loads((run_dir / "step.json").read_text())["benchmarks"][0]["metadata"])
    assert names  # a pyperf file
    summary = json.loads((run_dir / "scenarios.json").read_text())
    keys = [c["key"] for c in summary["cases"]]
    assert keys == [
        "scenario=decode-dspark/decode_batch=16",
        "scenario=decode-dspark/decode_batch=16/regime=cold",
        "scenario=decode-dspark/decode_batch=64",
        "scenario=decode-dspark/decode_batch=64/regime=cold",
    ]
    for case in summary["cases"]:
        if case["key"].endswith("/regime=cold"):
            continue
        assert case["modified"] == ["decode_batch"]
        # the batch stays (nearly) full: a finished request's slot waits for the next
        # received one for a step or two, so the mean sits just under B
        assert case["queues"]["decode_batch_mean"] == pytest.approx(
            int(case["key"].rsplit("=", 1)[1]), rel=0.03
        )
    assert any("decode-dspark: per_field vs cached" in s for s in summary["sweep"])
    # the PR's short form keeps its cap under a sweep (each value a row of its own)
    md = (run_dir / "summary.md").read_text()
    assert len(visible_lines(md)) <= SUMMARY_LINES, md
    assert (run_dir / "plots" / "sweep_cost.png").exists()
    assert "Across the sweep" in (run_dir / "report.html").read_text()
