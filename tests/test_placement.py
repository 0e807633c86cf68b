"""Placing a group's functions on the modelled hot path: a method moved into a mixin or a
renamed class is still placed, known-cold functions are kept apart from ones no table has heard
of, a gate or run whose replay places too little (or nothing) is refused naming them, `target
diff` shows a group that did not move, and an else arm runs for the other requests. On a
synthetic repository the tests write (tests/placement_repo.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.base.errors import UsageError
from bench.core.groupsites import Access, GroupProgram, SiteProgram, compile_program
from bench.core.groupsites import per_iteration as per_iteration_of
from bench.report.placement import placement_html, placement_markdown
from bench.target.accesses import read_accesses
from bench.target.groups import Revision, read_groups
from bench.target.program import Program, build
from bench.target.report import req_classes
from bench.target.select import materialize_targets
from bench.target.tree import SourceTree
from tests import placement_repo
from tests.helpers import run_cli

RESULT = "SchedulerBatchResultProcessor.process_batch_result_decode"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("placement") / "sglang"
    return path, placement_repo.build(path)


def _rev(repo: tuple[Path, dict[str, str]], layout: str) -> Revision:
    path, commits = repo
    return read_groups(SourceTree.open(f"{path}@{commits[layout]}"))


def _program(rev: Revision) -> Program:
    group = rev.group("pl_")
    return build(
        group.name,
        read_accesses(rev.tree, group, req_classes(rev)),
        commit=rev.tree.commit,
        tree=rev.tree,
    )


def _status(prog: Program) -> dict[str, str]:
    assert prog.coverage is not None
    return {p.function.function: p.status for p in prog.coverage.placements}


@pytest.mark.parametrize(
    ("layout", "cls"),
    [
        ("class", "SchedulerBatchResultProcessor"),
        ("mixin", "SchedulerOutputProcessorMixin"),
        ("renamed", "BatchResultHandler"),
    ],
)
def test_a_method_in_a_mixin_or_a_renamed_class_is_still_placed(
    repo: tuple[Path, dict[str, str]], layout: str, cls: str
) -> None:
    prog = _program(_rev(repo, layout))
    name = f"{cls}.process_batch_result_decode"
    assert _status(prog)[name] == ("table" if layout == "class" else "moved")
    site = next(s for s in prog.program.sites if s.function == name)
    assert site.frequency == "per_iteration"  # the typed row's
    assert prog.coverage is not None
    assert prog.coverage.share == 1.0
    if layout != "class":
        assert RESULT in prog.coverage.absent_rows
        assert f"as {RESULT}" in prog.words(name)
    else:
        assert RESULT not in prog.coverage.absent_rows


def test_known_cold_and_never_heard_of_are_kept_apart(repo: tuple[Path, dict[str, str]]) -> None:
    prog = _program(_rev(repo, "new"))
    status = _status(prog)
    assert status["prepare_abort"] == "cold"
    assert status["Scheduler.scan_every_request"] == "unknown"
    assert prog.words("prepare_abort").startswith("known cold: aborts")
    assert prog.words("Scheduler.scan_every_request") == "not in the table"
    cov = prog.coverage
    assert cov is not None
    # placed: prepare_for_decode 1 + process_batch_result_decode 1; unknown: the scan's 6
    assert (cov.accesses("table", "moved"), cov.accesses("unknown")) == (2, 6)
    assert cov.share == pytest.approx(2 / 8)


def test_a_gate_that_would_replay_too_little_exits_2_naming_what_it_cannot_place(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, commits = repo
    gate = run_cli(
        "gate", "--target", str(path), "--base", commits["class"], "--head", commits["new"],
        "--group", "pl_", "--markdown", str(tmp_path / "gate.md"),
    )  # fmt: skip
    assert gate.returncode == 2, gate.stderr
    line = gate.stderr.strip()
    assert len(line.splitlines()) == 1
    assert "Traceback" not in line
    assert "places 25%" in line
    assert "Scheduler.scan_every_request" in line
    run = run_cli(
        "run", "--target", f"{path}@{commits['class']},{path}@{commits['new']}",
        "--group", "pl_", "--output-dir", str(tmp_path / "runs"),
    )  # fmt: skip
    assert run.returncode == 2
    assert "Scheduler.scan_every_request" in run.stderr


def test_an_empty_replay_is_refused_whatever_the_share(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, commits = repo
    specs = [f"{path}@{commits['class']}", f"{path}@{commits['empty']}"]
    with pytest.raises(UsageError, match="no access the replay can place"):
        materialize_targets(specs, tmp_path, group="pl_", min_replayed=0.0)


def test_what_was_not_placed_is_listed_apart_in_gate_md_and_the_report(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    from bench.gate.render import group_markdown
    from bench.target.report import group_summary

    path, commits = repo
    specs = [f"{path}@{commits['mixin']}", f"{path}@{commits['new']}"]
    base, head = materialize_targets(specs, tmp_path, group="pl_", min_replayed=0.0)
    summary = group_summary(base.metadata(), head.metadata(), (base.path, head.path), [])
    text = "\n".join(group_markdown(summary))
    assert "- base: 100% placed (2 of 2 accesses)" in text
    assert f"`SchedulerOutputProcessorMixin.process_batch_result_decode as {RESULT}`" in text
    assert "- head: 25% placed (2 of 8 accesses)" in text
    assert "new since base, not in the table: `Scheduler.scan_every_request` (6)" in text
    assert "known cold: `prepare_abort` (1)" in text
    assert "table rows not defined at this revision (" in text
    assert RESULT in base.metadata()["placement"]["absent_rows"]
    report = "\n".join(
        placement_markdown([(t.name, t.metadata().get("placement")) for t in (base, head)])
    )
    assert "not in the table: `Scheduler.scan_every_request` (6)" in report
    html = "".join(placement_html([(t.name, t.metadata().get("placement")) for t in (base, head)]))
    assert "<code>Scheduler.scan_every_request</code> (6)" in html
    assert "known cold: <code>prepare_abort</code> (1)" in html


def test_target_diff_of_a_group_that_did_not_move(repo: tuple[Path, dict[str, str]]) -> None:
    path, commits = repo
    proc = run_cli(
        "target", "diff", str(path), "--base", commits["mixin"], "--head", commits["new"],
        "--group", "pl_",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "not moved: pl_ stays fields on Req" in out
    assert f"moved: SchedulerOutputProcessorMixin.process_batch_result_decode -> {RESULT}" in out
    assert "new at head: Scheduler.scan_every_request" in out
    assert "new at head, not in the table: Scheduler.scan_every_request" in out
    assert "known cold: aborts a request" in out
    wrong = run_cli("target", "diff", str(path), "--base", commits["mixin"], "--group", "pl")
    assert wrong.returncode == 2
    assert "no state group 'pl' at" in wrong.stderr
    assert "closest: pl_" in wrong.stderr
    # a name the revisions have is never "suggested" as its own closest match
    assert "(closest: pl_)" not in proc.stderr


def test_an_else_arm_runs_for_the_other_requests(repo: tuple[Path, dict[str, str]]) -> None:
    rev = _rev(repo, "branches")
    prog = _program(rev)
    site = next(s for s in prog.program.sites if s.function == "ScheduleBatch.prepare_for_decode")
    assert [a.arm for a in site.accesses] == ["if", "else"]
    events = {"batch": 100.0}
    for share in (0.0, 0.3, 1.0):
        total = per_iteration_of(prog.program, "decode", events, share)
        # one access per request whichever arm it takes (not share of them twice)
        assert total["ScheduleBatch.prepare_for_decode"] == pytest.approx(100.0)


def test_a_compiled_else_arm_runs_for_one_minus_the_share() -> None:
    calls = []
    program = GroupProgram(
        "g",
        (
            SiteProgram(
                "ScheduleBatch.prepare_for_decode",
                "x.py:1",
                "per_iteration",
                ("pd_decode",),  # the "decode" loop is a PD decode node's
                (
                    Access("f", "load", "reach", True, "c"),
                    Access("f", "load", "reach", True, "c", negated=True),
                ),
            ),
        ),
    )
    func = compile_program(
        "s",
        program,
        {"reach": "get(req)"},
        lambda req: calls.append(req) or req,
        {},
        "decode",
        [("per_iteration", True)],
    )
    assert func is not None
    batch = [type("R", (), {"f": 0})() for _ in range(10)]
    func(batch, [], [], [], [], 0.3)
    assert len(calls) == 10  # 3 requests take the branch, the other 7 its else arm


def test_a_function_the_measured_loop_never_called_is_cold_there(
    repo: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change refused for code no CPU scheduler runs (upstream's req.kv container: 13%
    placed, the rest NPU allocators and spec paths): with the revision's measured map, what its
    real loop never called weighs nothing against the replay."""
    import json

    from bench.core import hotpath

    monkeypatch.setenv("REQSTATE_CACHE", str(tmp_path / "cache"))
    path, commits = repo
    rev = _rev(repo, "new")
    without = _program(rev)
    assert without.coverage is not None
    with pytest.raises(UsageError, match="real hotpath"):
        materialize_targets(
            [f"{path}@{commits['class']}", f"{path}@{commits['new']}"], tmp_path, group="pl_"
        )
    called = [p.function.function for p in without.coverage.placements if p.status != "unknown"]
    table = hotpath.MeasuredMap(
        "t", commits["new"], "decode-b256", {"decode": 10}, (), tuple(called)
    )
    target = hotpath.measured_path(commits["new"])
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(table.to_json()))
    status = _status(_program(rev))
    assert status["Scheduler.scan_every_request"] == "cold"
    prog = _program(rev)
    assert prog.coverage is not None
    assert prog.coverage.share == 1.0
    assert "never called in the measured loop" in prog.words("Scheduler.scan_every_request")


def test_group_pd_hidden_is_the_trees_group_and_the_study_is_named_apart(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`--group pd_hidden` selected the project's study, so a tree's own side-table group of
    that name was measured through the transcribed call sites without a word."""
    from bench.target import select

    called: list[str] = []
    monkeypatch.setattr(select, "materialize", lambda *a, **k: called.append("study"))
    monkeypatch.setattr(select, "read_groups", lambda tree: called.append("groups"))
    monkeypatch.setattr(select.SourceTree, "open", staticmethod(lambda s: s))
    select.materialize_targets(["a", "b"], tmp_path, group=select.STUDY, names=["a", "b"])
    assert called == ["study", "study"]
    called.clear()
    with pytest.raises(Exception):  # noqa: B017, PT011 - the stand-ins stop it once it chose
        select.materialize_targets(["a", "b"], tmp_path, group="pd_hidden", names=["a", "b"])
    assert called[0] == "groups"
