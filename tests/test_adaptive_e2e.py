"""Real runs (slow lane): a budget buys further rounds for a family short of its precision and
the manifest says so; the gc suite's repetition forks one child per strategy (one worker
process) or, without fork_strategies, starts a process per strategy, with the same benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.orchestration.adaptive import FURTHER_VALUES
from bench.runformat.pyperf_io import load_pyperf, values_of
from tests.helpers import FIXTURES, run_cli

# Only the budget test judges wall-clock seconds: it runs alone (serial); the others check what
# was measured, not how long it took, and share the machine with the slow lane (make test's
# serial phase leaves a core idle: ~20 s of it, 2026-12-06).
pytestmark = [pytest.mark.slow]
TINY = str(FIXTURES / "tiny_config.json")


def _run(tmp_path: Path, *args: str, config: dict[str, object] | None = None) -> Path:
    cfg = TINY
    if config is not None:
        merged = {**json.loads(Path(TINY).read_text()), **config}
        path = tmp_path / "config.json"
        path.write_text(json.dumps(merged))
        cfg = str(path)
    out = tmp_path / "out"
    proc = run_cli(
        "run", "--config", cfg, "--device", "cpu", "--strategy", "pr652,control", "--no-aa",
        "--scenario", "decode-dspark", "--no-report", "--output-dir", str(out), *args,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


@pytest.mark.serial  # budgets are wall-clock seconds
def test_a_budget_buys_rounds_for_a_family_short_of_its_precision(tmp_path: Path) -> None:
    run = _run(tmp_path, "--suite", "step", "--budget", "12s", "--precision", "0.01")
    manifest = json.loads((run / "manifest.json").read_text())
    record = manifest["suites"]["step"]
    family = record["families"]["scenario=decode-dspark"]
    assert family["rounds"] >= 2  # the plan's one process, then at least one further round
    assert family["stop"] == "budget"
    assert family["target_pct"] == 0.01
    assert family["precision_pct"] is not None
    assert family["precision_pct"] > 0.01
    # one worker for the plan, then one per further round, measuring the families still short
    # of the target: the warm case, its cold twin or both (which, depends on the noise)
    rounds = [f["rounds"] for f in record["families"].values()]
    assert max(rounds) <= len(record["worker_wall_s"]) <= 1 + sum(r - 1 for r in rounds)
    assert record["budget_s"] == pytest.approx(12.0, abs=2.0)
    assert record["wall_s"] <= 12.0 + 15.0  # a round is predicted to fit, not cut short
    values = values_of(load_pyperf(run / "step.json"))
    base = values["step/pr652/scenario=decode-dspark/pattern=per_field"]
    # the plan's worker measured the configured 3 values, every further round FURTHER_VALUES,
    # each twice in cache (the step suite's warm_value_factor)
    assert len(base) == 2 * (3 + max(FURTHER_VALUES, 3) * (family["rounds"] - 1))
    extra = json.loads((run / "step.extra.json").read_text())["extras"]
    assert extra["phases"]["family:scenario=decode-dspark"] > 0
    assert len(extra["requests"]["pr652"]["construct_ns"]) == 5  # timed in the plan's worker only


def test_without_a_budget_the_plan_is_all(tmp_path: Path) -> None:
    run = _run(tmp_path, "--suite", "step", "--budget", "off")
    record = json.loads((run / "manifest.json").read_text())["suites"]["step"]
    assert record["budget_s"] is None
    assert record["families"]["scenario=decode-dspark"]["stop"] == "fixed plan"
    assert record["families"]["scenario=decode-dspark"]["rounds"] == 1


@pytest.mark.parametrize(("fork", "processes"), [(True, 1), (False, 2)])
def test_gc_children_or_processes_measure_the_same_benchmarks(
    tmp_path: Path, fork: bool, processes: int
) -> None:
    run = _run(tmp_path, "--suite", "gc", config={"gc_fork_strategies": fork})
    record = json.loads((run / "manifest.json").read_text())["suites"]["gc"]
    assert record["status"] == "done", record
    assert len(record["worker_wall_s"]) == processes
    names = set(values_of(load_pyperf(run / "gc.json")))
    for s in ("pr652", "control"):
        for mode in ("enabled", "frozen"):
            assert f"gc/{s}/scenario=decode-dspark/gc={mode}" in names
            assert f"gc_full/{s}/scenario=decode-dspark/gc={mode}" in names
        assert f"memory/{s}/metric=request_bytes" in names
