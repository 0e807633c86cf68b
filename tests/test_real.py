"""Real mode without SGLang: the driver's parts one by one, and the whole path (environment,
driver processes, run folder, report, gate, frequency map) on a tiny SGLang-shaped tree the test
writes (tests/real_tree.py), run by this interpreter (--real-python) so nothing is installed.
The same commands against sglang 0.5.23 from the registry are tests/test_real_sglang.py."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench.base.errors import UsageError
from bench.real import freqmap, measure, process, source, venv
from bench.real import presets as rp
from bench.real.driver import stubs
from bench.real.driver.phases import PHASES, Phases
from tests import real_tree
from tests.helpers import run_cli

PY = sys.executable


# -- the stubs ------------------------------------------------------------------------------


def test_a_stub_imports_and_raises_when_used() -> None:
    finder = stubs.install(["reqstate_gpu_pkg"], {"reqstate_gpu_pkg": "0.28.0"})
    try:
        mod = importlib.import_module("reqstate_gpu_pkg.ops")
        from reqstate_gpu_pkg.ops import launch  # type: ignore[import-not-found]

        top = importlib.import_module("reqstate_gpu_pkg")
        assert top.__version__ == "0.28.0"
        assert "reqstate_gpu_pkg.ops" in finder.served
        with pytest.raises(stubs.StubReached, match=r"reqstate_gpu_pkg\.ops\.launch was called"):
            launch(1)
        with pytest.raises(stubs.StubReached, match="tested for truth"):
            bool(mod.flag)
        with pytest.raises(stubs.StubReached, match="iterated"):
            list(mod.items)

        class Sub(mod.Base):  # type: ignore[name-defined,misc]
            pass

        with pytest.raises(stubs.StubReached, match="instantiated"):
            Sub()
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n.startswith("reqstate_gpu_pkg")]:
            del sys.modules[name]


def test_stub_versions_pair_torchvision_with_torch() -> None:
    assert stubs.paired_versions("2.13.0+cpu") == {"torchvision": "0.28.0"}
    assert stubs.paired_versions("2.9.1") == {"torchvision": "0.24.0"}


# -- phases and values ----------------------------------------------------------------------


def test_phases_are_exclusive_and_add_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a clock the test controls: time inside a nested phase is the inner phase's alone,
    and 'other' is what the iteration's total leaves."""
    from bench.real.driver import phases as ph_mod

    clock = iter([0, 100, 250, 400, 1000, 1300])  # enter, enter, leave, leave, enter, leave
    monkeypatch.setattr(ph_mod, "now_ns", lambda: next(clock))
    ph = Phases()
    ph.enter("schedule")
    ph.enter("prepare")
    ph.leave()
    ph.leave()
    ph.enter("stand_in")
    ph.leave()
    out = ph.take(2000)
    assert out["schedule"] == 100 + 150  # before and after prepare, not during it
    assert out["prepare"] == 150
    assert out["stand_in"] == 300
    assert out["other"] == 2000 - 700
    assert ph.ns["schedule"] == 0  # take() starts afresh


def _rec(ns: int, mode: str = "DECODE", batch: int = 4, **kw: Any) -> dict[str, Any]:
    phases = dict.fromkeys(PHASES, 0)
    phases["result"] = ns
    base = {"ns": ns, "phases": phases, "mode": mode, "batch": batch, "finished": 0,
            "received": 0, "gc_ns": 0, "gc_collections": [0, 0, 0], "sent_bytes": 10}  # fmt: skip
    return {**base, **kw}


def test_values_are_window_means_by_kind() -> None:
    recs = [_rec(1000), _rec(3000, "EXTEND"), _rec(2000), _rec(4000)]
    vals = measure.values(recs, 2)
    assert vals["iteration"] == [2e-6, 3e-6]
    assert vals["decode"] == [1e-6, 3e-6]
    assert vals["extend"] == [3e-6]
    assert measure.figures(recs)["iteration"] == pytest.approx(2.5e-6)


def test_drift_is_a_rank_correlation() -> None:
    assert measure.drift([1, 2, 3, 4, 5]) == pytest.approx(1.0)
    assert measure.drift([5, 4, 3, 2, 1]) == pytest.approx(-1.0)
    assert measure.drift([1, 2]) is None


# -- the frequency map ----------------------------------------------------------------------


def test_classify_tells_per_iteration_from_per_request() -> None:
    events = [{"per_iteration": 1.0, "per_batch_request": float(b), "per_new_request": float(n),
               "per_finished_request": 0.0, "per_prefill_chunk": 0.0}
              for b, n in ((4, 1), (6, 0), (5, 2), (7, 1))]  # fmt: skip
    per_req = freqmap.classify([8, 12, 10, 14], events)
    assert per_req is not None
    assert (per_req.frequency, per_req.rate) == ("per_batch_request", pytest.approx(2.0))
    once = freqmap.classify([1, 1, 1, 1], events)
    assert once is not None
    assert once.frequency == "per_iteration"
    arrivals = freqmap.classify([1, 0, 2, 1], events)
    assert arrivals is not None
    assert arrivals.frequency == "per_new_request"
    # a constant batch: B calls fit "once per iteration" (rate B) and "per request" (rate 1)
    flat = [{**e, "per_batch_request": 256.0} for e in events]
    tie = freqmap.classify([256, 256, 256, 256], flat)
    assert tie is not None
    assert tie.frequency == "per_batch_request"


def test_compare_says_agree_differ_missing_new() -> None:
    recs = [_rec(1, "DECODE", 4), _rec(1, "DECODE", 6)]
    calls = [
        {"a.py:1:ScheduleBatch.prepare_for_decode": 1, "a.py:9:Req.update_finish_state": 4,
         "sglang/srt/managers/x.py:3:Helper.per_request": 8},
        {"a.py:1:ScheduleBatch.prepare_for_decode": 1, "a.py:9:Req.update_finish_state": 6,
         "sglang/srt/managers/x.py:3:Helper.per_request": 12},
    ]  # fmt: skip
    out = {
        "records": recs,
        "calls": calls,
        "functions": {
            k: [k.split(":")[2], k.split(":")[0], int(k.split(":")[1])] for k in calls[0]
        },
        "defined": {"Req.check_finished": False},
    }
    m = freqmap.build(out, revision="t", preset="p")
    rows = {r.name: r for r in freqmap.compare(m)}
    assert rows["ScheduleBatch.prepare_for_decode"].status == "agree"
    assert rows["Req.update_finish_state"].status == "agree"
    assert rows["Req.check_finished"].measured == "not defined at this revision"
    assert rows["ScheduleBatch.check_decode_mem"].status == "missing"
    assert rows["Helper.per_request"].status == "new"
    table = m.as_table("c0ffee")
    assert {h.name for h in table.rows} >= {"ScheduleBatch.prepare_for_decode"}


# -- sources and environments ---------------------------------------------------------------


@pytest.fixture(scope="module")
def toy_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    variants = ("fast", "slow_alloc", "gpu_import", "gpu_call", "missing", "side_table")
    return real_tree.write_repo(tmp_path_factory.mktemp("toy") / "sglang", variants)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQSTATE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def test_sources_are_parsed_and_refused_in_one_line(toy_repo: Path, tmp_path: Path) -> None:
    reg = source.parse("sglang==0.5.23")
    assert (reg.kind, reg.name, reg.key) == ("registry", "sglang-0.5.23", "pypi-0.5.23")
    git = source.parse(f"{toy_repo}@fast")
    assert git.kind == "git"
    assert git.name.startswith("sglang-")
    assert len(git.commit or "") == 40
    with pytest.raises(UsageError, match="unrecognised revision"):
        source.parse(f"{toy_repo}@nope")
    with pytest.raises(UsageError, match="no such folder"):
        source.parse(f"{tmp_path}/absent@HEAD")
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UsageError, match="git repository"):
        source.parse(str(plain))


def test_the_dependency_list_less_gpu_packages_keys_the_environment(toy_repo: Path) -> None:
    plan = venv.plan_for(source.parse(f"{toy_repo}@fast"))
    names = set(plan.wanted)
    assert {"aiohttp", "transformers", "xgrammar", "triton"} <= names
    assert not names & {"sglang-kernel", "flashinfer-python", "torch", "torchvision", "decord2"}
    assert plan.wanted["triton"] == "triton==3.7.0"  # the CPU install's pin
    assert "triton==3.7.0" in plan.constraints
    assert venv.TORCH_SPEC in plan.constraints
    again = venv.plan_for(source.parse(f"{toy_repo}@slow_alloc"))
    assert again.key == plan.key  # same dependency list: one environment
    assert venv.dist_for("zmq", plan.wanted) == "pyzmq"
    assert venv.dist_for("transformers", plan.wanted) == "transformers==5.12.1"


def test_export_puts_the_commit_in_the_cache_not_the_repository(toy_repo: Path) -> None:
    src = source.parse(f"{toy_repo}@slow_alloc")
    tree = source.export(src, venv.trees_dir())
    assert tree is not None
    assert (tree / "sglang" / "srt" / "managers" / "scheduler.py").is_file()
    assert "free_slots[:n]" in (tree / "sglang/srt/managers/scheduler.py").read_text()
    assert not (toy_repo / ".complete").exists()
    assert source.export(src, venv.trees_dir()) == tree  # once


# -- the whole path, on the toy tree --------------------------------------------------------

SMALL = ["--set", "running=16", "--set", "warmup=5", "--set", "iterations=10", "--set", "values=3"]


def _run(toy: Path, rev: str, out: Path, *extra: str) -> Any:
    return run_cli(
        "run", "--real", f"{toy}@{rev}", "--real-python", PY, "--real-preset", "decode-b256",
        *SMALL, "--budget", "off", "--output-dir", str(out), *extra, timeout=300,
    )  # fmt: skip


@pytest.mark.slow
def test_run_real_writes_figures_pyperf_report_and_map(toy_repo: Path, tmp_path: Path) -> None:
    proc = _run(toy_repo, "gpu_import", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert sum(p["mode"] == "measure" and p["ok"] for p in manifest["processes"]) == 3
    summary = (run_dir / "summary.md").read_text()
    assert "µs per iteration [95% CI]" in summary
    assert "decode-b256" in summary
    assert "stubbed" in summary
    assert "sgl_kernel" in summary
    assert "ModelRunner.forward" in summary  # what the driver replaced
    assert "µs per iteration" in proc.stdout
    assert len(proc.stdout.splitlines()) < 40
    import pyperf

    suite = pyperf.BenchmarkSuite.load(str(run_dir / "real.json"))
    names = suite.get_benchmark_names()
    assert any(n.endswith("preset=decode-b256/metric=iteration") for n in names)
    assert "<img" in (run_dir / "report.html").read_text()
    fm = json.loads(next((run_dir / "raw").rglob("freqmap.json")).read_text())
    assert "ScheduleBatch.prepare_for_decode" in {f["qualname"] for f in fm["functions"].values()}


@pytest.mark.slow
def test_a_stub_reached_in_the_loop_fails_the_run_naming_it(toy_repo: Path, tmp_path: Path) -> None:
    proc = _run(toy_repo, "gpu_call", tmp_path, "--no-count")
    assert proc.returncode != 0
    # the environment's probe steps the loop, so the stub is met before anything is measured
    assert "sgl_kernel.ops.launch was called" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_revision_that_cannot_be_imported_is_refused_in_one_line(
    toy_repo: Path, tmp_path: Path
) -> None:
    proc = _run(toy_repo, "missing", tmp_path)
    assert proc.returncode == 2
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert "reqstate_not_installed_pkg" in line
    assert "sglang.srt.managers.scheduler" in line
    assert not any(tmp_path.iterdir())  # refused before a run folder was made


def test_run_real_refuses_synthetic_options_and_bad_presets(toy_repo: Path) -> None:
    proc = run_cli("run", "--real", f"{toy_repo}@fast", "--suite", "step")
    assert proc.returncode == 2
    assert "not with --real" in proc.stderr
    proc = run_cli("run", "--real", f"{toy_repo}@fast", "--real-preset", "decode-b7")
    assert proc.returncode == 2
    assert "unknown real preset" in proc.stderr
    proc = run_cli("run", "--real", f"{toy_repo}@fast", "--set", "decode_batch=4")
    assert proc.returncode == 2
    assert "with --real, KEY is one of" in proc.stderr
    proc = run_cli("gate", "--real", str(toy_repo))
    assert proc.returncode == 2
    assert "needs --base" in proc.stderr
    proc = run_cli(
        "gate", "--real", str(toy_repo), "--base", "fast", "--rounds", "5", "--real-python", PY
    )
    assert proc.returncode == 2
    assert "at least 6" in proc.stderr


@pytest.mark.real  # a real-mode run on the tiny tree: make test-real (CI runs it)
def test_gate_real_fails_a_slower_admission(toy_repo: Path, tmp_path: Path) -> None:
    # fewer turns than the preset's 400 per process: the toy's slowdown is large
    args = ["--real-python", PY, "--real-preset", "prefill-chunked", "--rounds", "6"]
    args += ["--set", "warmup=100", "--set", "values=120", "--where", "never"]
    slow = run_cli(
        "gate", "--real", str(toy_repo), "--base", "fast", "--head", "slow_alloc", *args,
        "--json", str(tmp_path / "slow.json"), "--markdown", str(tmp_path / "slow.md"), timeout=600,
    )  # fmt: skip
    assert slow.returncode == 1, slow.stderr[-2000:]
    md = (tmp_path / "slow.md").read_text()
    assert "REGRESSION" in md.splitlines()[0]
    assert "real/scheduler/preset=prefill-chunked" in md
    assert "resolution (identical code, A/A)" in md
    assert "ModelRunner.sample" in md
    result = json.loads((tmp_path / "slow.json").read_text())
    assert result["mode"] == "real"
    assert result["meta"]["resolution"]["prefill-chunked"]["aa_half_width_pct"] > 0


@pytest.mark.real
def test_an_aa_gate_on_the_tiny_tree_passes_with_every_iteration_matched(
    toy_repo: Path, tmp_path: Path
) -> None:
    """The same revision on both sides: a pass, the pairing check at 100%, no side following
    the other's code more often, and the re-warm iteration of every turn run unrecorded."""
    args = ["--real-python", PY, "--real-preset", "prefill-chunked", "--rounds", "6"]
    args += ["--set", "warmup=100", "--set", "values=60", "--set", "rewarm=1"]
    proc = run_cli(
        "gate", "--real", str(toy_repo), "--base", "fast", "--head", "fast", *args,
        "--where", "never", "--json", str(tmp_path / "aa.json"),
        "--markdown", str(tmp_path / "aa.md"), timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    meta = json.loads((tmp_path / "aa.json").read_text())["meta"]
    pairing = meta["pairing"]["prefill-chunked"]
    assert pairing["base~candidate"] == 1.0
    assert pairing["base~base_copy"] == 1.0
    for side in ("base", "base_copy", "candidate", "candidate_copy"):
        assert 0.5 <= pairing[f"followed_other:{side}"] <= 0.85
    md = (tmp_path / "aa.md").read_text()
    assert "iterations matched" in md
    assert "mean iteration" in md  # the columns say the statistic judged, not the wall gate's


@pytest.mark.real
def test_lockstep_rewarm_runs_unrecorded_iterations_at_each_turn(toy_repo: Path) -> None:
    import random as _random

    from bench.real.process import run_lockstep
    from bench.real.run import job, prepare

    (rev,) = prepare([f"{toy_repo}@fast"], PY)
    from dataclasses import replace

    preset = replace(rp.get("prefill-chunked"), warmup=50).in_lockstep({"rewarm": 2, "values": 30})
    units = [(rev.env, rev.tree, job(rev, preset, seed=0, worker=k)) for k in range(2)]
    turns: list[int] = []
    outs = run_lockstep(units, _random.Random(0), turns=turns)
    for out in outs:
        assert out["ok"], out.get("message")
        assert len(out["records"]) == 30
        assert len(out["rewarm_ns"]) == 2 * 30
    assert len(turns) == 2 * 30
    # each driver of the group binds its own torch distributed port, none from the kernel's
    # ephemeral range (two drivers started together could be handed the same one there)
    ports = [out["server_args"]["nccl_port"] for out in outs]
    assert len(set(ports)) == 2
    assert all(p < process._ephemeral_low() for p in ports)


@pytest.mark.real
def test_gate_real_says_where_a_significant_change_moved(toy_repo: Path, tmp_path: Path) -> None:
    md = tmp_path / "gate.md"
    proc = run_cli(
        "gate", "--real", str(toy_repo), "--base", "fast", "--head", "slow_alloc",
        "--real-python", PY, "--real-preset", "prefill-chunked", "--set", "warmup=20",
        "--set", "values=100", "--json", str(tmp_path / "gate.json"), "--markdown", str(md),
        timeout=900,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-2000:]
    text = md.read_text()
    assert "**Where it moved** (prefill-chunked" in text
    moved = text.split("**Where it moved**", 1)[1]
    first = next(line for line in moved.splitlines() if line.startswith("| `"))
    assert first.startswith("| `Pool.alloc`"), first  # where it moved, before its callers
    assert (tmp_path / "where" / "prefill-chunked" / "where.json").is_file()


@pytest.mark.slow
def test_real_hotpath_prints_the_map_and_keeps_it_for_target_mode(
    toy_repo: Path, tmp_path: Path
) -> None:
    proc = run_cli(
        "real", "hotpath", f"{toy_repo}@fast", "--real-python", PY, "--preset", "decode-b256"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "beside bench/core/hotpath.py" in proc.stdout
    assert "ScheduleBatch.prepare_for_decode" in proc.stdout
    from bench.core import hotpath

    commit = source.parse(f"{toy_repo}@fast").commit
    find, table = hotpath.resolver(commit)
    assert table.startswith("measured at")
    row = find("ScheduleBatch.prepare_for_decode")
    assert row is not None
    assert "measured" in row.called


def test_docs_real_holds_the_presets_table() -> None:
    """docs/REAL.md's preset tables are `python -m bench real presets --markdown`."""
    from bench.real import presets
    from tests.helpers import ROOT

    text = (ROOT / "docs" / "REAL.md").read_text(encoding="utf-8")
    begin, end = "<!-- presets:begin -->\n", "<!-- presets:end -->"
    committed = text[text.index(begin) + len(begin) : text.index(end)]
    assert committed == presets.markdown(), "regenerate: python -m bench real presets --markdown"


def test_every_preset_value_has_a_source() -> None:
    from bench.real import presets

    for p in presets.PRESETS.values():
        for key, value, src in p.rows():
            if (key in ("prefix_groups", "prefix_len") and value == "0") or value == "":
                continue  # not this preset's kind (no shared prefix; colocated)
            assert src, f"{p.name}.{key} has no source"


@pytest.mark.slow
def test_a_built_in_strategy_replaces_a_side_table_home(toy_repo: Path, tmp_path: Path) -> None:
    proc = run_cli(
        "run", "--real", f"{toy_repo}@side_table,{toy_repo}@fast", "--real-python", PY,
        "--real-home", "rid_dict", "--real-preset", "decode-b256", *SMALL,
        "--budget", "off", "--no-count", "--output-dir", str(tmp_path), timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no PD hidden side table, measured as written only" in proc.stderr
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    names = sorted(manifest["revisions"])
    assert len(names) == 3  # side_table as written and with rid_dict; fast as written
    assert sum(n.endswith(".rid_dict") for n in names) == 1
    injected = next(p for p in manifest["processes"] if p["revision"].endswith(".rid_dict"))
    raw = json.loads((run_dir / injected["file"]).read_text())
    assert raw["injected"] == "rid_dict"
    assert any("PD hidden state home: rid_dict" in line for line in raw["replaced"])
    assert raw["ok"]


@pytest.mark.slow
def test_an_interrupted_run_keeps_what_it_measured(toy_repo: Path, tmp_path: Path) -> None:
    import signal
    import subprocess
    import time

    from tests.helpers import ROOT

    proc = subprocess.Popen(
        [PY, "-m", "bench", "run", "--real", f"{toy_repo}@fast", "--real-python", PY,
         "--real-preset", "decode-b256", *SMALL, "--budget", "10m", "--precision", "0.01",
         "--no-count", "--output-dir", str(tmp_path)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.time() + 120
    manifest = None
    while time.time() < deadline:
        runs = [p for p in tmp_path.iterdir() if (p / "manifest.json").is_file()]
        if runs and len(json.loads((runs[0] / "manifest.json").read_text())["processes"]) >= 2:
            manifest = runs[0] / "manifest.json"
            break
        time.sleep(0.5)
    assert manifest is not None, "no process finished in time"
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err[-2000:]
    data = json.loads(manifest.read_text())
    assert data["status"] == "incomplete"
    assert len(data["processes"]) >= 2
    assert (manifest.parent / "summary.md").is_file()
    assert "interrupted" in err


def test_a_working_tree_with_changes_is_measured_as_a_commit_of_them(
    toy_repo: Path, tmp_path: Path
) -> None:
    import shutil
    import subprocess

    work = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(toy_repo), str(work)], check=True)
    clean = source.parse(str(work))
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True)
    assert clean.commit == head.stdout.strip()
    sched = work / "python/sglang/srt/managers/scheduler.py"
    sched.write_text(sched.read_text() + "\n# an uncommitted change\n")
    dirty = source.parse(str(work))
    assert dirty.commit != clean.commit  # a stash commit of the change; nothing in PATH moved
    assert dirty.label.endswith("+changes")
    tree = source.export(dirty, venv.trees_dir())
    assert tree is not None
    assert "an uncommitted change" in (tree / "sglang/srt/managers/scheduler.py").read_text()
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=work, capture_output=True, text=True
    )
    assert "scheduler.py" in status.stdout  # the change is still there, uncommitted
    shutil.rmtree(work)


def _drivers_with(marker: str) -> list[int]:
    """Live processes whose environment holds `marker` (the test's own cache folder)."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            env = (proc / "environ").read_bytes()
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in env and b"bench.real.driver" in cmd:
            out.append(int(proc.name))
    return out


@pytest.mark.real
def test_a_gate_killed_with_sigterm_leaves_no_driver_running(
    toy_repo: Path, tmp_path: Path
) -> None:
    import os
    import signal
    import subprocess
    import time

    cache = os.environ["REQSTATE_CACHE"]
    proc = subprocess.Popen(
        [PY, "-m", "bench", "gate", "--real", str(toy_repo), "--base", "fast", "--head", "fast",
         "--real-python", PY, "--real-preset", "prefill-chunked", "--where", "never",
         "--set", "warmup=50000",  # still warming up when killed: they would not stop alone
         "--json", str(tmp_path / "g.json"), "--markdown", str(tmp_path / "g.md")],
        stderr=subprocess.DEVNULL, env={**os.environ},
    )  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline and len(_drivers_with(cache)) < 4:  # the round, not the probe
        time.sleep(0.5)
    assert len(_drivers_with(cache)) >= 4, "the round did not start"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) != 0
    for _ in range(20):
        if not _drivers_with(cache):
            break
        time.sleep(0.5)
    assert _drivers_with(cache) == []


def test_a_later_environment_of_a_job_takes_the_first_ones_versions_for_what_is_unpinned() -> None:
    """Unpinned requirements resolved at each build's own time, so a gate of a PR that edits
    pyproject.toml measured the registry's drift between two builds beside its code."""
    plan = venv.Plan("k", {"numpy": "numpy", "pydantic": "pydantic>=2", "tqdm": "tqdm"}, [], None)
    out = venv.aligned(plan, {"numpy": "1.26.4", "pydantic": "2.9.0", "Tqdm": "4.66.5"})
    assert sorted(out.constraints) == ["numpy==1.26.4", "tqdm==4.66.5"]
    assert venv.aligned(plan, {}) is plan


def _env(tmp_path: Path, key: str, installed: dict[str, str]) -> venv.Env:
    (tmp_path / key).mkdir(parents=True, exist_ok=True)
    return venv.Env(key, tmp_path / key, "sglang@aaaaaaaaaa", [], [], installed, 0.0, 0, "3.11")


def test_a_shared_environment_is_probed_once_for_each_revision_it_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was probed for the revision it was built for only, so a revision that cannot run in
    it failed mid-measurement."""
    env = _env(tmp_path, "deps-x", {})
    probes: list[str] = []
    answer = {"ok": False, "message": "ImportError: cannot import name 'X'"}
    monkeypatch.setattr(venv, "probe", lambda e, tree, log: probes.append(str(tree)) or answer)
    other = SimpleNamespace(kind="git", commit="b" * 40, label="sglang@bbbbbbbbbb")
    with pytest.raises(UsageError, match="cannot run in the environment deps-x"):
        venv._probe_shared(env, other, Path("tree-b"), lambda _m: None)
    answer = {"ok": True}
    venv._probe_shared(env, other, Path("tree-b"), lambda _m: None)
    venv._probe_shared(env, other, Path("tree-b"), lambda _m: None)  # kept: not probed again
    assert probes == ["tree-b", "tree-b"]
    built_for = SimpleNamespace(kind="git", commit="a" * 40, label="sglang@aaaaaaaaaa")
    venv._probe_shared(env, built_for, Path("tree-a"), lambda _m: None)
    assert len(probes) == 2


def test_the_installed_versions_two_sides_differ_in_are_named(tmp_path: Path) -> None:
    a = _env(tmp_path, "deps-a", {"numpy": "1.26.4", "tqdm": "4.66.5", "old": "1"})
    b = _env(tmp_path, "deps-b", {"numpy": "2.0.1", "tqdm": "4.66.5", "new": "2"})
    assert venv.installed_diff(a, b) == ["new - -> 2", "numpy 1.26.4 -> 2.0.1", "old 1 -> -"]
    assert venv.installed_diff(a, a) == []


def test_a_lockstep_group_draws_different_free_ports_below_the_ephemeral_range() -> None:
    import random as _random
    import socket

    low = process._ephemeral_low()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", low - 1))
        ports = process.distinct_ports(200, _random.Random(1))
        assert len(set(ports)) == 200
        assert all(low - process.PORT_SPAN <= p < low for p in ports)
        assert low - 1 not in ports  # a port in use is never handed out
