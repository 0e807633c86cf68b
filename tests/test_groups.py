"""State groups: read at every home, every move between two homes, accesses, the replay through
any home, the generated home modules, and the commands (target groups / diff / advise, --group
for run and gate), on a synthetic repository the tests write (tests/group_repo.py)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

from bench.base.errors import UsageError
from bench.core import scenarios
from bench.core.counting import count_ops
from bench.core.groupsites import blocks, program_of
from bench.target.accesses import read_accesses
from bench.target.diff import find_moves
from bench.target.groups import Revision, read_groups
from bench.target.homes import CANDIDATES, write_home
from bench.target.program import build
from bench.target.report import req_classes
from bench.target.select import _group_at
from bench.target.tree import SourceTree
from strategies import load_external
from tests import group_repo
from tests.helpers import run_cli

# Where the group lives at each commit: (home kind, the group's name there).
EXPECTED = {
    "prefixed": ("inline", "lp_"),
    "slots": ("container", "lp"),
    "dict": ("container", "lp"),
    "lazy_cont": ("container_lazy", "lp"),
    "weak": ("side_table", "lp_states"),
    "rid": ("side_table", "lp_states"),
    "lazy": ("lazy_attribute", "lp_state"),
    "declared": ("declared_attribute", "lp_state"),
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("groups") / "sglang"
    return path, group_repo.build(path)


@pytest.fixture(scope="module")
def revs(repo: tuple[Path, dict[str, str]]) -> dict[str, Revision]:
    path, commits = repo
    return {home: read_groups(SourceTree.open(f"{path}@{sha}")) for home, sha in commits.items()}


def group_of(revs: dict[str, Revision], home: str):  # type: ignore[no-untyped-def]
    if home == "inline":
        return _group_at(revs[home], "lp", revs["slots"].group("lp"))
    return revs[home].group(EXPECTED[home][1])


@pytest.mark.parametrize("home", list(EXPECTED))
def test_groups_at_every_home(revs: dict[str, Revision], home: str) -> None:
    kind, name = EXPECTED[home]
    g = revs[home].group(name)
    assert g.home.kind == kind
    bare = [n.removeprefix("lp_") for n in g.names]
    assert bare == list(group_repo.FIELDS)
    top = g.fields[0]
    assert (top.kind, top.default_expr) == ("int", "0")
    assert all(f.default_expr == "None" for f in g.fields[1:])
    if kind == "container":
        assert g.home.layout == ("slots" if home == "slots" else "dict")
    if kind == "side_table":
        assert g.home.key == ("rid" if home == "rid" else "req")
        assert g.home.mapping_type == ("dict" if home == "rid" else "WeakKeyDictionary")


def test_groups_command(repo: tuple[Path, dict[str, str]]) -> None:
    path, commits = repo
    r = run_cli("target", "groups", f"{path}@{commits['slots']}")
    assert r.returncode == 0, r.stderr
    assert "req.lp: ReqLp (slots)" in r.stdout
    r = run_cli("target", "groups", f"{path}@{commits['weak']}", "--json")
    groups = {g["name"]: g for g in json.loads(r.stdout)["groups"]}
    assert groups["lp_states"]["home"]["kind"] == "side_table"
    assert [f["name"] for f in groups["lp_states"]["fields"]] == list(group_repo.FIELDS)


HOMES = [h for h in group_repo.HOMES if h != "prefixed"]


@pytest.mark.parametrize("base", HOMES)
@pytest.mark.parametrize("head", HOMES)
def test_every_move_between_two_homes(revs: dict[str, Revision], base: str, head: str) -> None:
    if base == head:
        assert find_moves(revs[base], revs[head]) == []
        return
    (move,) = find_moves(revs[base], revs[head])
    assert sorted(b for _, b in move.fields) == sorted(group_repo.FIELDS)
    kinds = {h: EXPECTED.get(h, ("inline",))[0] for h in (base, head)}
    assert (move.base.home.kind, move.head.home.kind) == (kinds[base], kinds[head])


def test_a_prefix_moves_into_a_container_by_name(revs: dict[str, Revision]) -> None:
    (move,) = find_moves(revs["prefixed"], revs["weak"])
    assert dict(move.fields)["lp_top_num"] == "top_num"


def test_a_field_matched_twice_is_refused(
    repo: tuple[Path, dict[str, str]], revs: dict[str, Revision]
) -> None:
    with pytest.raises(UsageError, match="'top_num' matched twice"):
        find_moves(revs["inline"], revs["twice"])
    path, commits = repo
    r = run_cli(
        "target", "diff", str(path), "--base", commits["inline"], "--head", commits["twice"]
    )
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "matched twice" in r.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--base", "slots", "--head", "slots"), "no field changed home"),
        (("--base", "inline", "--head", "slots", "--group", "lpp"), "closest: lp"),
    ],
)
def test_diff_refusals(
    repo: tuple[Path, dict[str, str]], args: tuple[str, ...], words: str
) -> None:
    path, commits = repo
    args = tuple(commits.get(a, a) for a in args)
    r = run_cli("target", "diff", str(path), *args)
    assert r.returncode == 2, r.stdout
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert words in r.stderr, r.stderr


def test_not_an_sglang_tree_and_an_unknown_group(
    tmp_path: Path, repo: tuple[Path, dict[str, str]]
) -> None:
    r = run_cli("target", "groups", str(tmp_path))
    assert r.returncode == 2
    assert "is this an SGLang source tree" in r.stderr
    path, commits = repo
    r = run_cli("target", "advise", f"{path}@{commits['slots']}", "--group", "lpx", "--quick")
    assert r.returncode == 2
    assert "no state group 'lpx'" in r.stderr
    assert "closest: lp" in r.stderr


def test_diff_reports_construction_accesses_and_loads(repo: tuple[Path, dict[str, str]]) -> None:
    path, commits = repo
    r = run_cli(
        "target",
        "diff",
        str(path),
        "--base",
        commits["inline"],
        "--head",
        commits["slots"],
        "--json",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["moves"][0]["group"] == "lp"
    side = out["sides"][0]
    base, head = side["base"], side["head"]
    # one more tracked object per request: the container (its fields default to None)
    assert head["construction"]["tracked"] - base["construction"]["tracked"] == pytest.approx(
        1, abs=0.05
    )
    assert head["construction"]["attributes"] == base["construction"]["attributes"] - 3
    decode = {f["function"]: f for f in head["functions"]}["ScheduleBatch.prepare_for_decode"]
    assert (decode["accesses"], decode["in_batch_loop"], decode["lookups"], decode["loads"]) == (
        1,
        1,
        1,
        2,
    )
    abort = {f["function"]: f for f in head["functions"]}["prepare_abort"]
    assert not abort["on_hot_path"]
    # every access of the decode scan reaches the container too: loads double, accesses stay
    acc = (
        base["accesses_per_iteration"]["decode-dspark"],
        head["accesses_per_iteration"]["decode-dspark"],
    )
    loads = (
        base["loads_per_iteration"]["decode-dspark"],
        head["loads_per_iteration"]["decode-dspark"],
    )
    assert acc[0] == pytest.approx(acc[1])
    assert loads[1] == pytest.approx(2 * loads[0])
    assert acc[0] == pytest.approx(256 + 1.2, abs=1.0)  # B batch requests + finished ones


@pytest.mark.parametrize("home", list(EXPECTED))
def test_accesses_per_function(revs: dict[str, Revision], home: str) -> None:
    g = group_of(revs, home)
    funcs = {f.function: f for f in read_accesses(revs[home].tree, g, req_classes(revs[home]))}
    decode = funcs["ScheduleBatch.prepare_for_decode"]
    assert (decode.count(), decode.count(loop=True)) == (1, 1)
    assert decode.lookups(g.home.kind) == (0 if g.home.kind == "inline" else 1)
    extend = funcs["ScheduleBatch.prepare_for_extend"]
    assert extend.count(loop=True) == 2
    assert {a.guard for a in extend.accesses} == {"self.return_logprob"}
    prog = build(g.name, list(funcs.values()))
    assert "prepare_abort" in {f.function for f in prog.off_path}
    assert {s.function for s in prog.program.sites} >= {
        "ScheduleBatch.prepare_for_decode",
        "ScheduleBatch.prepare_for_extend",
        "release_kv_cache",
    }


def _small(name: str, **changes: object) -> scenarios.Scenario:
    base = scenarios.get(name)
    small = {"decode_batch": 32} if base.loop == "decode" else {"chunked_prefill_size": 2048}
    return base.with_changes({**small, **changes})


@functools.cache
def _homes(folder: str) -> dict[str, Path]:
    """Every candidate home of the slots revision's group, written once."""
    revs = _revs_cache[0]
    g = revs["slots"].group("lp")
    funcs = read_accesses(revs["slots"].tree, g, req_classes(revs["slots"]))
    prog = build(g.name, funcs)
    from bench.target.groups import model_with_holders

    model = model_with_holders(revs["slots"])
    out = {}
    for home in CANDIDATES:
        w = write_home(Path(folder), g, home, f"lp_{home}", model, prog.program, description=home)
        out[home] = w.path
    return out


_revs_cache: list[dict[str, Revision]] = []


@pytest.fixture(scope="module")
def homes(revs: dict[str, Revision], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    _revs_cache[:] = [revs]
    return _homes(str(tmp_path_factory.mktemp("homes")))


@pytest.mark.parametrize("home", CANDIDATES)
def test_replay_through_every_home(homes: dict[str, Path], home: str) -> None:
    s = load_external(str(homes[home]))
    assert s.is_target
    assert s.program is not None
    decode = _small("decode-dspark", outputs="sharegpt")  # short outputs: requests come and go
    c = count_ops(s, decode, pattern="as_written", seed=1, steps=40)
    per = c.lookups / c.iterations
    batch = c.events["batch"] / c.iterations
    finished = c.events["finished"] / c.iterations
    # prepare_for_decode reaches the holder once per batch request, release_kv_cache once per
    # finished request; fields on Req reach nothing
    assert per == (0 if home == "inline" else pytest.approx(batch + finished))
    lazy = home in ("slots_lazy", "lazy_attr", "declared", "weak_table", "rid_dict")
    assert finished > 0
    # a lazy home creates the state of every new request in its first iteration, once
    assert c.created == (c.events["new"] if lazy else 0)
    # the guarded extend accesses run for branch_share of the requests
    prefill = _small("prefill-dspark")
    full = count_ops(s, prefill, pattern="as_written", seed=1, steps=10)
    none = count_ops(
        s, prefill.with_changes({"branch_share": 0.0}), pattern="as_written", seed=1, steps=10
    )
    if home != "inline":
        chunks = full.events["chunks"]
        assert full.lookups - none.lookups == pytest.approx(2 * chunks)


@pytest.mark.parametrize("home", CANDIDATES)
def test_home_modules_keep_the_contract(homes: dict[str, Path], home: str) -> None:
    from bench.core.workload import RequestSource

    s = load_external(str(homes[home]))
    cls = RequestSource().make(s)
    req = cls("r1", __import__("array").array("q", [1, 2]), 4)
    state = s.get(req)
    assert {f: getattr(state, f) for f in s.fields} == {
        "top_num": 0,
        "ids_val": None,
        "out_val": None,
        "out_idx": None,
    }
    s.update(req, top_num=5)
    assert s.peek(req).top_num == 5
    s.reset(req)
    assert s.get(req).top_num == 0
    with pytest.raises(TypeError, match="unknown lp field"):
        s.update(req, meta=1)
    s.release(req)
    assert s.live_states() == 0


def test_every_strategy_compiles_the_same_loops(homes: dict[str, Path]) -> None:
    """The run's union of blocks: control runs the same loops with empty bodies."""
    programs = [program_of(load_external(str(p)).program) for p in homes.values()]
    layout = blocks([p for p in programs if p], "decode")
    assert ("per_iteration", True) in layout
    assert ("per_finished_request", True) in layout
    from strategies import load_builtin

    control = load_builtin("control")
    c = count_ops(
        control, _small("decode-dspark"), pattern="per_field", seed=1, steps=5, group_layout=layout
    )
    assert c.lookups == 0
    assert c.events["batch"] == 5 * 32


@pytest.mark.slow
def test_run_target_measures_a_move(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, commits = repo
    r = run_cli(
        "run", "--quick", "--suite", "step", "--scenario", "decode-dspark", "--target",
        f"{path}@{commits['inline']},{path}@{commits['weak']}", "--output-dir", str(tmp_path),
        "--budget", "off",  # the quick plan's five processes: the verdict's form, not a study
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    (run_dir,) = tmp_path.iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    metas = list(manifest["targets"].values())
    assert {m["group"] for m in metas} == {"lp_states"}
    summary = (run_dir / "summary.md").read_text()
    # the verdict, head against base: its size, with an interval only from enough processes
    # (the quick plan has five; "too few processes" where workers were lost). A difference
    # within noise carries the sign the machine gave it: in the parallel slow phase one run read
    # -10.2 [-130.5, 120.6] (2026-12-07)
    sized = re.search(  # summary.md escapes brackets
        r"differs from it by [+-][\d,.]+ µs per iteration there, from too few processes \([1-4]\)"
        r"|costs [\d,.]+ µs \\\[[\d,.]+, [\d,.]+\\\] more per iteration"
        r"|differs from it by [+-][\d,.]+ µs \\\[[-\d,.]+, [-\d,.]+\\\] per iteration there: "
        r"within noise",
        summary,
    )
    assert sized, summary
    assert "where: prepare\\_for\\_decode" in summary
    assert "group lp\\_states (4 fields)" in summary


@pytest.mark.slow
@pytest.mark.serial
def test_gate_target_group(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, commits = repo
    md = tmp_path / "gate.md"
    toml = tmp_path / "gate.toml"  # the decode node only, short values: the verdict, not a study
    toml.write_text(
        '[tool.reqstate-bench.gate]\nscenarios = ["decode-dspark"]\nlookup_ops = ["get_hit"]\n'
        "steps_per_value = 5\nvalues = 3\nrounds = 6\n"
    )
    r = run_cli(
        "gate", "--target", str(path), "--base", commits["inline"], "--head", commits["weak"],
        "--group", "lp_states", "--markdown", str(md), "--json", str(tmp_path / "gate.json"),
        "--pyproject", str(toml),
    )  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    text = md.read_text()
    assert "step/target/scenario=decode-dspark" in text
    assert "REGRESSION" in text
    assert "**State group `lp_states`**" in text
    assert "prepare_for_decode" in text
    # at the base the fields are on Req: a get returns the request, so no lookup row is judged
    assert "lookup/target" not in text
    assert "Not gated: lookup rows not gated" in text
    r = run_cli(
        "gate", "--target", str(path), "--base", commits["weak"], "--head", commits["weak"],
        "--group", "lp_states", "--json", str(tmp_path / "aa.json"), "--pyproject", str(toml),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow
def test_advise_ranks_every_home(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, commits = repo
    r = run_cli(
        "target", "advise", f"{path}@{commits['slots']}", "--group", "lp", "--quick",
        "--scenario", "decode-dspark", "--output-dir", str(tmp_path), "--budget", "off",
        "--home", "inline,weak_table",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    blocks = [b for b in r.stdout.split("\n\n") if " µs [" in b]
    assert len(blocks) == 1  # decode-dspark in cache (the quick set measures no evicted case)
    for block in blocks:
        rows = [ln for ln in block.splitlines() if " µs [" in ln]
        # the current home (slots), fields on Req, the side table: one row each
        assert len(rows) == 3
        assert sum(1 for ln in rows if ln.startswith(" *")) == 1
        assert {h for ln in rows for h in ("slots", "inline", "weak_table") if f" {h} " in ln} == {
            "slots",
            "inline",
            "weak_table",
        }
        # every other home carries its paired verdict against the current one
        marks = [ln for ln in rows if not ln.startswith(" *")]
        assert all(any(f" {m} " in ln for m in ("better", "worse", "same")) for ln in marks)


def test_docs_hold_the_hot_path_table() -> None:
    from bench.core.hotpath import markdown
    from tests.helpers import ROOT

    text = (ROOT / "docs" / "TARGET.md").read_text()
    inside = text.split("<!-- hotpath:begin -->\n", 1)[1].split("<!-- hotpath:end -->", 1)[0]
    assert inside == markdown(), "docs/TARGET.md: run python -m bench target hotpath"


def test_lookup_rows_are_gated_only_where_both_gets_do_work() -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    from bench.gate.config import GateConfig
    from bench.gate.revisions import Revisions, without_void_lookups

    def side(label: str, kind: str) -> Any:
        return SimpleNamespace(tree=SimpleNamespace(label=label), group={"home_kind": kind})

    cfg = GateConfig()
    moved = cast(Any, Revisions)(side("t@a", "inline"), side("t@b", "container"))
    gated, note = without_void_lookups(cfg, moved)
    assert gated.lookup_ops == ()
    assert note is not None
    assert "t@a" in note
    assert not any(b.startswith("lookup/") for b in gated.benchmarks("wall"))
    both = cast(Any, Revisions)(side("t@a", "container"), side("t@b", "side_table"))
    assert without_void_lookups(cfg, both) == (cfg, None)
