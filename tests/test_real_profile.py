"""profile --real's reading of py-spy's samples, its per-function figures and the diff, on
speedscope documents written here (no revision runs)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.base.errors import UsageError
from bench.profiling.stacks import Frame
from bench.real.profile import diff as pdiff
from bench.real.profile import render, samples, spy, table
from tests import real_tree
from tests.helpers import run_cli

MARKS = "bench/real/driver/marks.py"
LOOP = "bench/real/driver/loop.py"
SCHED = "sglang/srt/managers/scheduler.py"
BATCH = "sglang/srt/managers/schedule_batch.py"
STANDIN = "bench/real/driver/standin.py"
PHASES = "bench/real/driver/phases.py"


def _doc(stacks: list[list[tuple[str, str]]]) -> dict[str, Any]:
    """A speedscope document of one thread whose samples are `stacks` (root first)."""
    frames: list[dict[str, Any]] = []
    index: dict[tuple[str, str], int] = {}
    out = []
    for st in stacks:
        row = []
        for name, file in st:
            if (name, file) not in index:
                index[(name, file)] = len(frames)
                frames.append({"name": name, "file": file, "line": 10 + len(frames)})
            row.append(index[(name, file)])
        out.append(row)
    idle = {"type": "sampled", "samples": [[0]] * 3, "weights": [1] * 3}
    main = {"type": "sampled", "samples": out, "weights": [1] * len(out)}
    return {"shared": {"frames": frames}, "profiles": [idle, main]}


LOOPF = ("Scheduler.event_loop_normal", SCHED)


def _mark(name: str) -> list[tuple[str, str]]:
    return [LOOPF, ("Steering.boundary", LOOP), (name, MARKS)]


def _busy(*names: str, file: str = SCHED) -> list[tuple[str, str]]:
    return [LOOPF, *[(n, file) for n in names]]


def test_samples_split_at_the_marks_into_kinds_and_leave_out_warmup_boundary_and_standin():
    stacks = [
        _busy("Scheduler.get_next_batch_to_run"),  # warm-up: before the start mark
        _mark("reqstate_measure_start"),
        _mark("reqstate_measure_start"),
        _busy("Scheduler.run_batch"),
        [LOOPF, ("Phases.timed", PHASES), ("ScheduleBatch.prepare_for_decode", BATCH)],
        [LOOPF, ("ModelRunner.forward", STANDIN)],
        [LOOPF, ("Steering.boundary", LOOP), ("Client.boundary", "bench/real/driver/client.py")],
        _mark("reqstate_after_decode"),
        _mark("reqstate_after_decode"),
        _busy("Scheduler.get_new_batch_prefill"),
        _mark("reqstate_after_extend"),
        _busy("Scheduler.run_batch"),  # after the last mark: the run's end
    ]
    prof = samples.parse(_doc(stacks), 250)
    assert prof.before_start == 1
    assert prof.after_last == 1
    assert prof.samples("decode") == 2
    assert prof.samples("extend") == 1
    assert sum(prof.stand_in.values()) == 1
    assert sum(prof.boundary.values()) == 1
    assert prof.segments == {"decode": 1, "extend": 1}
    decode = {tuple(f.name for f in st) for st in prof.stacks["decode"]}
    # the driver's phase timer is passed through: the revision's frames nest directly
    assert ("Scheduler.event_loop_normal", "ScheduleBatch.prepare_for_decode") in decode


def test_the_thread_without_marks_is_not_the_scheduler():
    doc = _doc([_mark("reqstate_measure_start"), _busy("f"), _mark("reqstate_after_decode")])
    doc["profiles"].reverse()
    prof = samples.parse(doc, 100)
    assert prof.samples("decode") == 1


def _profile(self_counts: dict[str, int], kind: str = "decode") -> samples.Profile:
    stacks = [_mark("reqstate_measure_start")]
    for name, n in self_counts.items():
        for _ in range(n):
            stacks.append(_busy("Scheduler.run_batch", name))
        stacks.append(_mark(f"reqstate_after_{kind}"))
    return samples.parse(_doc(stacks), 250)


def _records(n: int, ns: int, mode: str = "DECODE") -> list[dict[str, Any]]:
    return [{"ns": ns, "mode": mode} for _ in range(n)]


def test_shares_and_us_per_iteration_are_the_process_mean_times_the_share():
    prof = _profile({"A.f": 30, "A.g": 10})
    counted = table.counted(prof, _records(10, 2_000_000))
    rows = table.rows([counted, counted], table.frames_by_key([prof]), "decode")
    by = {r.name: r for r in rows}
    assert by["A.f"].self_pct.mean == pytest.approx(75.0)
    assert by["A.f"].self_us.mean == pytest.approx(1500.0)  # 75% of 2,000 µs
    assert by["Scheduler.run_batch"].incl_pct.mean == pytest.approx(100.0)
    assert by["Scheduler.run_batch"].self_pct.mean == 0.0
    assert rows[0].name == "A.f"
    assert table.rows([counted], table.frames_by_key([prof]), "extend") == []


def _side(rng: random.Random, n: int, f_mean: int, g_mean: int) -> list[Any]:
    out = []
    for _ in range(n):
        prof = _profile(
            {"A.f": max(1, int(rng.gauss(f_mean, 8))), "A.g": int(rng.gauss(g_mean, 8))}
        )
        out.append((prof, table.counted(prof, _records(10, 1_000_000))["all"]))
    return out


def test_a_diff_of_one_revision_against_itself_names_nothing_and_a_real_change_is_named():
    rng = random.Random(3)
    a, b = _side(rng, 6, 200, 200), _side(rng, 6, 200, 200)
    frames = table.frames_by_key([p for p, _ in a + b])
    same = pdiff.diff([c for _, c in a], [c for _, c in b], frames, frames)
    assert same.tested >= 2
    assert same.moved() == []
    small, median = same.resolution_us()
    assert 0 < small <= median
    c = _side(rng, 6, 200, 400)  # g doubles
    moved = pdiff.diff([c_ for _, c_ in a], [c_ for _, c_ in c], frames, frames)
    names = [m.name for m in moved.moved()]
    assert "A.g" in names
    assert "A.f" in names
    g = next(m for m in moved.moved() if m.name == "A.g")
    assert g.delta_us > 0
    assert g.lo_us > 0
    assert "Where it moved" not in render.markdown(
        {"rate_hz": 250, "preset": "p", "sides": []}, 5, None
    )


def test_functions_match_by_qualified_name_when_their_file_moved():
    fa = {"x.py:A.f": Frame("A.f", "x.py", 1), "x.py:A.g": Frame("A.g", "x.py", 5)}
    fb = {"y.py:A.f": Frame("A.f", "y.py", 1), "x.py:A.g": Frame("A.g", "x.py", 5)}
    pairs = dict(pdiff.match(fa, fb))
    assert pairs["x.py:A.f"] == "y.py:A.f"
    assert pairs["x.py:A.g"] == "x.py:A.g"


def test_a_diff_refuses_too_few_processes():
    with pytest.raises(ValueError, match="at least 6"):
        pdiff.diff([], [], {}, {})


def test_files_are_named_from_their_package_whatever_folder_holds_them():
    assert (
        samples.short_file("/c/real/trees/ab12/python/sglang/srt/managers/scheduler.py")
        == "sglang/srt/managers/scheduler.py"
    )
    assert samples.short_file("/v/lib/python3.11/site-packages/zmq/sugar/socket.py") == (
        "zmq/sugar/socket.py"
    )
    assert samples.short_file("/w/x/bench/real/driver/loop.py") == "bench/real/driver/loop.py"
    assert samples.short_file("/p/lib/python3.11/weakref.py") == "python3.11/weakref.py"


def test_the_lockstep_wait_is_neither_an_iteration_nor_the_driver_s_work():
    stacks = [
        _mark("reqstate_measure_start"),
        _busy("f"),
        [LOOPF, ("Steering.boundary", LOOP), ("turn", LOOP)],
        _mark("reqstate_after_decode"),
    ]
    prof = samples.parse(_doc(stacks), 100)
    assert prof.waits == 1
    assert prof.samples() == 1
    assert not prof.boundary


# -- on the tests' tiny tree, sampled by py-spy --------------------------------------------------

PY = sys.executable


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQSTATE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(scope="module")
def toy_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return real_tree.write_repo(tmp_path_factory.mktemp("toy") / "sglang", ("fast", "slow_alloc"))


def _profile_cli(tmp_path: Path, *args: str) -> Any:
    return run_cli(
        "profile", *args, "--real-python", PY, "--real-preset", "prefill-chunked",
        "--set", "warmup=20", "--set", "values=100", "--rate-hz", "500",
        "--output-dir", str(tmp_path),
    )  # fmt: skip


@pytest.mark.real  # a real-mode run on the tiny tree: make test-real (CI runs it)
def test_profile_real_samples_the_measured_iterations_of_each_process(
    toy_repo: Path, tmp_path: Path
) -> None:
    proc = _profile_cli(tmp_path, "--real", f"{toy_repo}@fast", "--rounds", "1", "--processes", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("profile-real-")]
    result = json.loads((folder / "profile.json").read_text())
    (side,) = result["sides"]
    assert side["processes"] == 2
    assert all(n > 0 for n in side["samples"])
    assert all(n == 100 for n in side["iterations"])
    names = {r["name"] for r in side["rows"]["all"]}
    assert "ScheduleBatch.prepare_for_extend" in names
    assert "reqstate_after_extend" not in names  # the marks are not iterations
    assert side["overhead_us"] is not None
    assert "Profiler overhead" in proc.stdout
    html = (folder / "report.html").read_text()
    assert "<svg" in html
    assert "stand-in model" in html
    speedscope = json.loads(next(folder.glob("*.speedscope.json")).read_text())
    assert speedscope["profiles"][0]["samples"]


def test_profile_real_refuses_bad_input_in_one_line_and_writes_nothing(
    toy_repo: Path, tmp_path: Path
) -> None:
    for args, says in (
        (("--real", f"{toy_repo}@fast", "--function", "no_such_function_here"), "--function"),
        (("--real", f"{toy_repo}@fast,{toy_repo}@slow_alloc", "--rounds", "1"), "at least 6"),
        (("--real", f"{toy_repo}@nope"), "nope"),
    ):
        proc = _profile_cli(tmp_path, *args)
        assert proc.returncode == 2, proc.stderr
        assert says in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.real
def test_profile_real_diff_names_the_allocator_a_change_made_slower(
    toy_repo: Path, tmp_path: Path
) -> None:
    proc = _profile_cli(
        tmp_path, "--real", f"{toy_repo}@fast,{toy_repo}@slow_alloc", "--rounds", "3",
        "--processes", "2",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("profile-real-")]
    moved = json.loads((folder / "profile.json").read_text())["diff"]
    named = [r["name"] for r in moved["rows"] if r["resolved"]]
    assert "Pool.alloc" in named, moved["rows"][:5]
    assert "Where it moved" in proc.stdout
    assert "Resolution" in proc.stdout


def test_where_leaves_out_the_callers_of_what_moved():
    def row(name: str, d: float) -> pdiff.Moved:
        return pdiff.Moved(name, "f.py", "f.py", 1, 100.0, 100.0 + d, d, d - 1, d + 1)

    rows = [row("loop", 100.0), row("schedule", 95.0), row("alloc", 90.0), row("other", -20.0)]
    d = pdiff.Diff(
        rows=rows, critical=3.0, tested=4, relabellings=924, processes=(6, 6),
        ancestors={"schedule": {"loop"}, "alloc": {"loop", "schedule"}, "other": {"loop"}},
    )  # fmt: skip
    assert [m.name for m in d.where()] == ["alloc", "other"]


def test_a_py_spy_that_cannot_read_processes_is_one_line_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "py-spy"
    fake.write_text("#!/bin/sh\necho 'Error: Permission Denied (os error 1)' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(spy, "find_py_spy", lambda: str(fake))
    with pytest.raises(UsageError, match=r"Permission Denied.*ptrace_scope"):
        spy.probe()
