"""`bench profile`: share computation on hand-written stacks, the derived views, error handling,
and one short real py-spy run."""

from __future__ import annotations

import argparse
import json
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bench.base.errors import UsageError
from bench.commands.profile import register
from bench.profiling import ROOT_FUNCTION, ProfileError, profile_strategies
from bench.profiling import run as profile_run
from bench.profiling import workload as profile_target
from bench.profiling.render import flamegraph_svg, to_speedscope
from bench.profiling.stacks import (
    by_function,
    compute_shares,
    parse_collapsed,
    parse_frame,
    under_root,
)

SVG_NS = "{http://www.w3.org/2000/svg}"
MAIN = "main (bench/profiling/workload.py:95)"
ROOT = f"{ROOT_FUNCTION} (bench/profiling/workload.py:48)"
ROOT_OTHER_LINE = f"{ROOT_FUNCTION} (bench/profiling/workload.py:49)"
STEP = "SyntheticScheduler.step (bench/core/scheduler.py:316)"

RAW = "\n".join(
    [
        # outside the root (imports, setup): not counted at all, even with strategy frames
        f"{MAIN};_find_and_load (<frozen importlib._bootstrap>:1176) 40",
        f"{MAIN};resolve (strategies/__init__.py:182);get (strategies/weakkey.py:23) 9",
        # under the root: 10 + 5 + 4 + 3 + 2 + 6 + 1 = 31 samples
        f"{MAIN};{ROOT};{STEP} 10",
        f"{MAIN};{ROOT};{STEP};write_hidden_rows (<callsite write_hidden_rows:weakkey:per_field>:12) 5",
        f"{MAIN};{ROOT};{STEP};bootstrap_finalize (<callsite bootstrap_finalize:weakkey:cached>:3);"
        "get (strategies/weakkey.py:23);WeakKeyDictionary.get (weakref.py:452) 4",
        # two strategy frames in one stack: the 3 samples count once
        f"{MAIN};{ROOT_OTHER_LINE};release (strategies/weakkey.py:41);"
        "PDHiddenReqState.clear (strategies/_contract.py:80) 3",
        # the registry is not strategy code
        f"{MAIN};{ROOT};discover (strategies/__init__.py:143) 2",
        # a collection triggered by an allocation: GC (the allocator frame itself is not)
        f"0x7f3feee4524a (libc.so.6);{MAIN};{ROOT};Req.__init__ (<generated Req>:1);"
        "_PyObject_GC_Link (libpython3.11.so.1.0);gc_collect_main (libpython3.11.so.1.0) 6",
        f"{MAIN};{ROOT};get (strategies/weakkey.py:23);_PyObject_GC_New (libpython3.11.so.1.0) 1",
        " 7",  # py-spy writes an empty stack line at the end
        "",
    ]
)


def test_parse_frame_forms() -> None:
    f = parse_frame("write_hidden_rows (<callsite write_hidden_rows:weakkey:per_field>:12)")
    assert (f.name, f.file, f.line, f.native) == (
        "write_hidden_rows",
        "<callsite write_hidden_rows:weakkey:per_field>",
        12,
        False,
    )
    n = parse_frame("at::native::copy_(at::Tensor&) (libtorch_cpu.so)")
    assert (n.name, n.file, n.line, n.native) == (
        "at::native::copy_(at::Tensor&)",
        "libtorch_cpu.so",
        None,
        True,
    )


def test_shares_from_handwritten_stacks() -> None:
    samples = parse_collapsed(RAW)
    assert len(samples) == 9  # the empty stack is dropped
    shares = compute_shares(samples)
    assert shares.samples == 31
    assert shares.strategy_samples == 4 + 3 + 1
    assert shares.callsite_samples == 5 + 4
    assert shares.gc_samples == 6
    assert shares.native_frames
    assert shares.strategy_share == pytest.approx(8 / 31)
    assert shares.callsite_share == pytest.approx(9 / 31)
    assert shares.gc_share == pytest.approx(6 / 31)


def test_no_root_means_no_samples() -> None:
    shares = compute_shares(parse_collapsed(f"{MAIN};get (strategies/weakkey.py:23) 5\n"))
    assert shares.samples == 0
    assert shares.strategy_share == 0.0


def test_views_start_at_the_root_and_escape_names() -> None:
    steady = by_function(under_root(parse_collapsed(RAW)))
    svg = flamegraph_svg(steady, title="weakkey <test> & co", subtitle="a \"quoted\" 'line'")
    root = ET.fromstring(svg)  # escaping of <callsite ...> names is checked by parsing
    assert root.tag == f"{SVG_NS}svg"
    titles = [t.text or "" for t in root.iter(f"{SVG_NS}title")]
    # both root lines merge into one box that holds every sample
    assert f"{ROOT_FUNCTION} (bench/profiling/workload.py): 31 samples (100.00%)" in titles
    assert any(t.startswith("write_hidden_rows (<callsite") for t in titles)

    doc = to_speedscope(steady, name="weakkey")
    (profile,) = doc["profiles"]
    assert profile["type"] == "sampled"
    assert sum(profile["weights"]) == profile["endValue"] == 31
    assert len(profile["samples"]) == len(profile["weights"])
    frames = doc["shared"]["frames"]
    for stack in profile["samples"]:
        assert frames[stack[0]]["name"] == ROOT_FUNCTION
        assert all(0 <= i < len(frames) for i in stack)


def test_root_name_matches_the_target() -> None:
    assert profile_target.reqstate_profile_root.__name__ == ROOT_FUNCTION


def _handler_args(tmp_path: Path, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench")
    register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["profile", *argv])


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--strategy", "nope"], "unknown strategy 'nope'"),
        (["--strategy", "weakkey", "--duration-s", "0"], "duration must be a positive"),
        (["--strategy", "weakkey", "--duration-s", "nan"], "duration must be a positive"),
        (["--strategy", "weakkey", "--scenario", "nope"], "unknown scenario 'nope'"),
        (["--strategy", "weakkey", "--pattern", "sometimes"], "unknown access pattern"),
        (["--strategy", "weakkey", "--device", "tpu"], "unknown device 'tpu'"),
    ],
)
def test_handler_refuses_bad_input(tmp_path: Path, argv: list[str], needle: str) -> None:
    out = tmp_path / "reports"
    args = _handler_args(tmp_path, *argv, "--output-dir", str(out))
    with pytest.raises(UsageError, match=needle):
        args.func(args)
    assert not out.exists()  # nothing written


def test_handler_refuses_missing_run_folder(tmp_path: Path) -> None:
    args = _handler_args(tmp_path, "--strategy", "weakkey", "--run", str(tmp_path / "none"))
    with pytest.raises(UsageError, match="no such run folder"):
        args.func(args)


def _fake_py_spy(tmp_path: Path, body: str) -> str:
    script = tmp_path / "py-spy"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_missing_py_spy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile_run.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError, match="py-spy not found"):
        profile_run.find_py_spy()


def test_py_spy_that_cannot_attach(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_py_spy(
        tmp_path, 'echo "Error: Permission denied (os error 13)" >&2\necho "  0: main" >&2\nexit 1'
    )
    monkeypatch.setattr(profile_run, "find_py_spy", lambda: fake)
    with pytest.raises(UsageError, match=r"Error: Permission denied .*hint: .*ptrace"):
        profile_strategies(["weakkey"], out_dir=tmp_path / "p", scenario="prefill-dspark")


def test_target_failure_is_reported_per_strategy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _fake_py_spy(tmp_path, f'echo "{profile_target.ERROR_PREFIX} RuntimeError: boom" >&2')
    monkeypatch.setattr(profile_run, "find_py_spy", lambda: fake)
    out = tmp_path / "p"
    with pytest.raises(ProfileError) as info:
        profile_strategies(["slots", "weakkey"], out_dir=out, scenario="prefill-dspark")
    assert info.value.failures == {
        "slots": "RuntimeError: boom (see slots.error.txt)",
        "weakkey": "RuntimeError: boom (see weakkey.error.txt)",
    }
    assert json.loads((out / "shares.json").read_text()) == {}
    assert "boom" in (out / "weakkey.error.txt").read_text()


def test_hung_profile_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_py_spy(tmp_path, "sleep 30")
    monkeypatch.setattr(profile_run, "find_py_spy", lambda: fake)
    monkeypatch.setattr(profile_run, "SETUP_TIMEOUT_S", 0.5)
    with pytest.raises(ProfileError, match=r"weakkey: timed out after 1 s"):
        profile_strategies(
            ["weakkey"], out_dir=tmp_path / "p", duration_s=0.5, scenario="prefill-dspark"
        )


@pytest.mark.slow
def test_profile_one_strategy(tmp_path: Path) -> None:
    out = tmp_path / "profile"
    try:
        shares = profile_strategies(
            ["weakkey"], out_dir=out, duration_s=2.0, scenario="prefill-dspark"
        )
    except UsageError as exc:
        if "py-spy" in str(exc):
            pytest.skip(str(exc))
        raise
    entry = shares["weakkey"]
    assert json.loads((out / "shares.json").read_text()) == shares
    assert entry["samples"] > 0
    for key in ("strategy_share", "callsite_share", "gc_share"):
        assert 0.0 <= entry[key] <= 1.0
    assert entry["strategy_share"] > 0.0  # weakkey's get() runs in every step
    assert entry["gc_share_source"] == "gc.callbacks"

    assert ET.parse(out / entry["flamegraph"]).getroot().tag == f"{SVG_NS}svg"
    speedscope = json.loads((out / entry["speedscope"]).read_text())
    assert speedscope["profiles"]
    assert ROOT_FUNCTION in (out / entry["raw"]).read_text()
    loop = json.loads((out / entry["gc_probe"]).read_text())
    assert loop["steps"] > 0
    assert loop["loop_ns"] >= 2_000_000_000
