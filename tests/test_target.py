"""Target mode: a user's SGLang tree read at two revisions (bench/target), measured with its own
Req, state code and call sites (`bench run --target`), and gated (`bench gate --target`).

The trees are small synthetic repositories the tests write (tests/target_repo.py), one commit
per layout of the state: fields on Req, a side table, a lazy and a declared attribute, a side
table that imports torch, and no state at all."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.base.errors import UsageError
from bench.target.home import HomeNotFound
from bench.target.inspection import inspect_tree
from bench.target.materialize import TargetRefused, materialize
from bench.target.template import module_text
from bench.target.tree import SourceTree
from strategies import load_external
from tests.helpers import ROOT, run_cli
from tests.target_repo import SB, make_repo, write_layout

needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None, reason="valgrind not installed: apt-get install valgrind"
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("target") / "sglang"
    return path, make_repo(path)


def _at(repo: tuple[Path, dict[str, str]], label: str) -> str:
    return f"{repo[0]}@{repo[1][label]}"


# -- inspect --------------------------------------------------------------------------------


def test_fields_on_req(repo: tuple[Path, dict[str, str]]) -> None:
    ins = inspect_tree(SourceTree.open(_at(repo, "fields")))
    assert ins.home.layout == "fields_on_req"
    assert ins.home.prefix == "pd_hidden_"
    assert len(ins.home.fields) == 10
    assert len(ins.model.attrs) == 25  # 12 + 10 fields + 3 from the mixin followed
    assert "init_diffusion_llm" in ins.model.inlined
    assert ins.forward.kind == "batch_field"
    assert ins.forward.prefill_only
    assert ins.profile.forward_scan == "prefill_batch"
    assert set(ins.profile.site_patterns.values()) == {"direct"}
    clear = next(f for f in ins.sites if f.function == "clear_pd_hidden_request_state")
    assert (clear.lookups, clear.accesses, clear.writes) == (0, 10, 10)
    assert any("attribute names" in n for n in ins.profile.not_modelled)


def test_a_group_from_a_mixin_is_located_in_the_mixin(repo: tuple[Path, dict[str, str]]) -> None:
    from bench.target.groups import read_groups

    groups = {g.name: g for g in read_groups(SourceTree.open(_at(repo, "fields"))).groups}
    dllm = groups["dllm_"]
    assert len(dllm.fields) == 3
    assert dllm.home.file == "mixin req.py"  # not a line of schedule_batch.py
    assert dllm.home.line == 3
    assert groups["pd_hidden_"].home.file == SB


def test_side_table(repo: tuple[Path, dict[str, str]]) -> None:
    ins = inspect_tree(SourceTree.open(_at(repo, "side")))
    home = ins.home
    assert home.layout == "side_table"
    assert (home.getter, home.mapping, home.mapping_type) == (
        "get_pd_hidden_req_state",
        "_pd_hidden_req_states",
        "WeakKeyDictionary",
    )
    assert home.scan_helper == "get_pd_hidden_capture_layer_ids"
    assert home.scan_creates
    assert not home.removal
    assert home.loadable
    assert len(ins.model.attrs) == 15  # the ten fields are gone from Req
    assert ins.forward.kind == "scan"
    assert ins.forward.creates
    assert ins.profile.forward_scan == "every_forward"
    assert set(ins.profile.site_patterns.values()) == {"per_field"}
    clear = next(f for f in ins.sites if f.function == "clear_pd_hidden_request_state")
    assert (clear.lookups, clear.accesses) == (10, 10)  # through the `as` alias
    # the getter is the state's implementation, not a call site
    assert not any(f.function == "get_pd_hidden_req_state" for f in ins.sites)
    rows = {r.site: r for r in ins.rows}
    assert rows["clear_state"].accesses == 10
    assert not rows["clear_state"].flags
    assert rows["send_kv_chunk"].pattern == "missing"
    assert rows["send_kv_chunk"].flags
    assert [f.function for f in ins.unmodelled] == [
        "SchedulerDisaggregationPrefillMixin.process_batch_result"
    ]


@pytest.mark.parametrize(
    ("label", "layout"), [("lazy", "lazy_attribute"), ("declared", "declared_attribute")]
)
def test_attribute_layouts(repo: tuple[Path, dict[str, str]], label: str, layout: str) -> None:
    ins = inspect_tree(SourceTree.open(_at(repo, label)))
    assert ins.home.layout == layout
    assert ins.home.attribute == "pd_hidden_state"


def test_no_state_is_one_line(repo: tuple[Path, dict[str, str]]) -> None:
    with pytest.raises(HomeNotFound, match="looked for the fields meta, src_indices"):
        inspect_tree(SourceTree.open(_at(repo, "none")))
    proc = run_cli("target", "inspect", _at(repo, "none"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr


def test_inspect_cli_text_and_json(repo: tuple[Path, dict[str, str]]) -> None:
    proc = run_cli("target", "inspect", _at(repo, "side"))
    assert proc.returncode == 0, proc.stderr
    assert "state home: side table" in proc.stdout
    assert "scans the batch's requests on every forward" in proc.stdout
    assert "! functions touching the state that the model does not run" in proc.stdout
    proc = run_cli("target", "inspect", _at(repo, "fields"), "--json")
    data = json.loads(proc.stdout)
    assert data["state_home"]["layout"] == "fields_on_req"
    assert data["request_class"]["attributes"] == 25
    assert data["forward_batch"]["kind"] == "batch_field"
    assert data["tree"]["commit"] == repo[1]["fields"]


def test_bad_trees_are_one_line(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    for spec, words in (
        (f"{repo[0]}@no-such-rev", "unrecognised revision 'no-such-rev'"),
        (str(tmp_path / "missing"), "no such folder"),
        (f"{tmp_path}@HEAD", "not a git repository"),
        (str(tmp_path), "no sglang/srt/managers/schedule_batch.py"),
    ):
        proc = run_cli("target", "inspect", spec)
        assert proc.returncode == 2, spec
        assert words in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1


def test_working_tree_is_read_as_it_is(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path = tmp_path / "wt"
    shutil.copytree(repo[0], path)
    write_layout(path, "fields")  # uncommitted: HEAD is "none"
    tree = SourceTree.open(str(path))
    assert tree.rev is None
    assert tree.dirty
    assert tree.strategy_name() == "wt_worktree"
    assert inspect_tree(tree).home.layout == "fields_on_req"
    assert SB in tree.files(".py")


# -- materialize -----------------------------------------------------------------------------


@pytest.mark.parametrize("label", ["fields", "side", "lazy", "declared"])
def test_revision_strategies_keep_the_contract(
    repo: tuple[Path, dict[str, str]], tmp_path: Path, label: str
) -> None:
    """Every layout's strategy module: its own Req, state from the revision, the contract kept
    (defaults, identity, update, reset, peek never creating)."""
    from array import array

    from bench.core.workload import RequestSource
    from strategies._contract import FIELD_DEFAULTS

    target = materialize(_at(repo, label), tmp_path)
    s = load_external(str(target.path))
    assert s.is_target
    assert s.name == target.name
    assert s.target["commit"] == repo[1][label]
    req = RequestSource().make(s)("r", array("q", [1, 2]), 1)
    assert len(vars(req)) == len(target.inspection.model.attrs)
    fresh = RequestSource().make(s)("q", array("q", [1]), 1)
    if label != "fields":
        assert s.peek(fresh) is None
    state = s.get(req)
    assert s.get(req) is state
    assert {f: getattr(state, f) for f in FIELD_DEFAULTS} == dict(FIELD_DEFAULTS)
    s.update(req, current_start=7, meta={"a": 1})
    assert s.get(req).current_start == 7
    s.reset(req)
    assert s.get(req).current_start is None
    assert s.get(req).meta is None
    if label == "side":
        assert (target.path.parent / f"{target.name}_state.py").is_file()
        assert s.release_keeps_state  # the PR's module has no removal


def test_forbidden_import_is_refused(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """Executing the side table's own module (--trust-target-code) runs standard-library
    imports only; replayed (the default), the module's imports never run."""
    with pytest.raises(TargetRefused, match="imports torch outside TYPE_CHECKING"):
        materialize(_at(repo, "forbidden"), tmp_path, trust=True)
    proc = run_cli(
        "run", "--quick", "--suite", "step", "--target", _at(repo, "forbidden"),
        "--trust-target-code", "--output-dir", str(tmp_path / "out"),
    )  # fmt: skip
    assert proc.returncode == 2
    assert "imports torch outside TYPE_CHECKING" in proc.stderr
    assert proc.stderr.count("\n") <= 2  # "run folder: ..." may precede it
    target = materialize(_at(repo, "forbidden"), tmp_path / "replayed")
    assert load_external(str(target.path)).name == target.name


def test_the_scheduler_follows_each_revision(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Counted lookups: none with fields on Req; the side table's per-field lookups and the
    per-forward scan on decode, which creates a state per request."""
    from bench.core.counting import count_ops
    from bench.core.scenarios import get

    counts = {}
    for label in ("fields", "side"):
        s = load_external(str(materialize(_at(repo, label), tmp_path).path))
        for scenario in ("prefill-dspark", "decode-dspark"):
            sc = get(scenario).with_changes({"decode_batch": 32, "chunked_prefill_size": 2048})
            counts[label, scenario] = count_ops(s, sc, pattern="as_written", seed=0, steps=5)
    assert counts["fields", "prefill-dspark"].lookups == 0
    assert counts["fields", "decode-dspark"].lookups == 0  # no scan on decode
    assert counts["side", "decode-dspark"].lookups == 5 * 32  # one per request per forward
    assert counts["side", "decode-dspark"].created > 0
    assert counts["side", "prefill-dspark"].lookups > 10 * 5


def test_baseline_and_target_options(repo: tuple[Path, dict[str, str]]) -> None:
    from bench.commands.main import build_parser
    from bench.commands.run import _config_from_args

    specs = f"{_at(repo, 'fields')},{_at(repo, 'side')}"
    args = build_parser().parse_args(
        ["run", "--quick", "--target", specs, "--baseline", _at(repo, "side")]
    )
    config = _config_from_args(args)
    names = [SourceTree.open(_at(repo, x)).strategy_name() for x in ("fields", "side")]
    assert config.strategies == (*names, "control")
    assert config.baseline == names[1]
    with pytest.raises(UsageError, match="same revision"):
        _config_from_args(build_parser().parse_args(["run", "--target", f"{specs},{specs}"]))
    with pytest.raises(UsageError, match="not among the --target"):
        _config_from_args(
            build_parser().parse_args(
                ["run", "--target", _at(repo, "fields"), "--baseline", _at(repo, "side")]
            )
        )


# -- run and gate (tiny) -------------------------------------------------------------------


@pytest.mark.slow
def test_run_with_two_revisions_writes_the_pr_report(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    from tests.helpers import FIXTURES

    proc = run_cli(
        "run", "--config", str(FIXTURES / "tiny_config.json"), "--device", "cpu",
        "--suite", "step", "--output-dir", str(tmp_path),
        "--target", f"{_at(repo, 'fields')},{_at(repo, 'side')}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    manifest = json.loads((run / "manifest.json").read_text())
    short = repo[1]["side"][:10]
    names = {n for n in manifest["targets"]}
    assert any(n.endswith(short) for n in names)
    for meta in manifest["targets"].values():
        assert meta["commit"] in repo[1].values()
        assert meta["path"] == str(repo[0])
    summary = (run / "summary.md").read_text()
    # control builds the base revision's Req, named in words rather than by a machine path
    assert manifest["config"]["request_model"].endswith(".reqmodel.json")
    assert "requests: each revision's own Req" in summary
    assert "Revisions: " in summary  # one line: each revision, its commit and home
    assert "The request class of each revision:" in summary  # folded, with not modelled
    for meta in manifest["targets"].values():
        assert f"at {meta['commit']}; forward batch: " in summary
    assert "pattern=as_written" in (run / "step.json").read_text()
    # the verdict's difference sentence: resolved ("more/less per iteration there") or "within
    # noise" (which, on a tiny configuration, is the machine's to say: not asserted)
    assert "per iteration there" in summary
    assert len(summary.splitlines()) <= 40
    html = (run / "report.html").read_text()
    assert "The request class" in html


def _target_gate(
    repo: tuple[Path, dict[str, str]], base: str, head: str, out: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    toml = out / "gate.toml"
    out.mkdir(parents=True, exist_ok=True)
    toml.write_text(
        "[tool.reqstate-bench.gate]\n"
        'scenarios = ["decode-dspark"]\n'
        "lookup_ops = []\n"
        "steps_per_value = 5\n"
        "values = 3\n"
        "rounds = 6\n"
        "instr_steps = 2\n"
        "instr_heap_shifts = 1\n"
    )
    return subprocess.run(
        [
            sys.executable, "-m", "bench", "gate", "--target", str(repo[0]),
            "--base", repo[1][base], "--head", repo[1][head], "--pyproject", str(toml),
            "--json", str(out / "gate.json"), "--markdown", str(out / "gate.md"), *args,
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.serial
def test_wall_gate_passes_an_aa_and_flags_the_per_forward_scan(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    aa = _target_gate(repo, "side", "side", tmp_path / "aa")
    assert aa.returncode == 0, aa.stdout[-2000:] + aa.stderr[-2000:]
    proc = _target_gate(repo, "fields", "side", tmp_path / "scan")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    md = (tmp_path / "scan" / "gate.md").read_text()
    first = md.splitlines()[0]
    assert "REGRESSION" in first
    assert "scenario=decode-dspark" in first
    assert "µs [" in first
    assert "of 90 ms" in first
    result = json.loads((tmp_path / "scan" / "gate.json").read_text())
    (row,) = result["results"]
    assert row["change_s"] > 0
    assert row["share_of_forward"] > 0
    assert result["meta"]["targets"]["candidate"]["commit"] == repo[1]["side"]


@pytest.mark.slow
@needs_valgrind
def test_instruction_gate_names_where_the_change_is(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    proc = _target_gate(repo, "fields", "side", tmp_path / "instr", "--mode", "instructions")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    md = (tmp_path / "instr" / "gate.md").read_text()
    assert "scenario=decode-dspark" in md.splitlines()[0]
    assert "**Where the change is**" in md
    from bench.gate.attribution import perf_python

    if perf_python() is not None:  # Python >= 3.12 here: the revision's getter is named
        assert "hidden_state.py@" in md
        assert "get_pd_hidden_req_state" in md
        assert "callsite capture_layers_get" in md
    else:
        assert "C functions only" in md


def test_gate_target_refusals(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    proc = run_cli("gate", "--target", str(repo[0]))
    assert proc.returncode == 2
    assert "needs --base REV" in proc.stderr
    proc = _target_gate(repo, "fields", "side", tmp_path / "x", "--strategy", "pr652")
    assert proc.returncode == 2
    assert "no --strategy" in proc.stderr
    proc = run_cli(
        "gate", "--target", str(repo[0]), "--base", "nope", "--markdown", str(tmp_path / "g.md")
    )
    assert proc.returncode == 2
    assert "unrecognised revision 'nope'" in proc.stderr
    assert (tmp_path / "g.md").read_text().startswith("**reqstate-bench gate: ERROR**")


@pytest.mark.parametrize(
    "doc",
    ['a tree at "C:\\\\path"', 'ends with a quote"', 'holds """ a triple quote', "back\\slash\\"],
)
def test_the_code_generator_quotes_any_docstring(doc: str) -> None:
    """One quoting rule: whatever text a tree gives the docstring (quotes, triple quotes,
    backslashes), the generated module parses and its docstring is that text."""
    source = module_text(doc, "tests", constants={"NAME": doc}, blocks=[["x = NAME"]])
    namespace: dict[str, object] = {}
    exec(compile(source, "generated", "exec"), namespace)
    assert namespace["NAME"] == doc
    assert str(namespace["__doc__"]).startswith(doc + "\n\nGenerated by reqstate-bench")
