"""Target mode runs nothing of a tree unless asked: a side table's state module is replayed from
what ast read (bench/target/replay.py), executed only with --trust-target-code; and every name
read from a tree is a Python identifier or the tree is refused in one line (exit 2).

The trees are small synthetic repositories the tests write (tests/target_repo.py): the side
table commit, with its state module rewritten per test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.target.home import NotAnIdentifier
from bench.target.materialize import TargetRefused, materialize
from bench.target.replay import ReplayRefused
from strategies import load_external
from tests.helpers import FIXTURES, run_cli
from tests.target_repo import PREFILL, STATE, _git, _state, layouts, make_repo

# A side-table module that, executed, appends a line to MARKER (no import statement: the
# "standard library imports only" check never saw it).
_EXECUTES = "__import__('os').system('echo executed >> {marker}')\n\n\n"

# Side-table modules of other shapes than the PR's: (state class and table, getter, removal).
SHAPES = {
    "pr": None,  # tests/target_repo.py's side table as it is
    "dict_try_del": (
        """from typing import Any


class PDHiddenReqState:
    def __init__(self):
{fields}


_states: dict = {{}}


def get_pd_hidden_req_state(req: "Any") -> "PDHiddenReqState":
    try:
        return _states[req]
    except KeyError:
        state = _states[req] = PDHiddenReqState()
        return state


def release_pd_hidden_req_state(req):
    if req in _states:
        del _states[req]
"""
    ),
    "slots_dataclass_setdefault": (
        """import dataclasses
import weakref
from typing import List, Optional


@dataclasses.dataclass(slots=True)
class PDHiddenReqState:
    meta: Optional[dict] = None
    src_indices: Optional[List[int]] = None
    dst_indices: Optional[List[int]] = None
    written: list = dataclasses.field(default_factory=list)
    capture_layer_ids: Optional[List[int]] = None
    current_src_indices: Optional[List[int]] = None
    current_start: Optional[int] = None
    current_row_len: int = 0
    current_is_last: bool = False
    owner_direct_sent: bool = False


_pd_hidden_req_states = weakref.WeakKeyDictionary()


def get_pd_hidden_req_state(req):
    state = _pd_hidden_req_states.get(req)
    if state is None:
        state = _pd_hidden_req_states.setdefault(req, PDHiddenReqState())
    return state


def clear(req):
    _pd_hidden_req_states.pop(req, None)
"""
    ),
}


def _fields() -> str:
    from strategies._contract import FIELD_DEFAULTS, FIELDS

    return "\n".join(f"        self.{f} = {FIELD_DEFAULTS[f]!r}" for f in FIELDS)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trust") / "sglang"
    make_repo(path, ("side",))
    return path


def _commit(repo: Path, files: dict[str, str]) -> str:
    """A commit of the side table with these files replaced; its PATH@REV."""
    side = layouts()["side"]
    for rel, text in {**side, **files}.items():
        assert text is not None
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "variant", "--allow-empty")
    return f"{repo}@{_git(repo, 'rev-parse', 'HEAD')}"


_GET = """    state = _pd_hidden_req_states.get(req)
    if state is None:
        state = PDHiddenReqState()
        _pd_hidden_req_states[req] = state
    return state"""


def _executing(repo: Path, marker: Path) -> str:
    """The side table whose module, executed, writes `marker`."""
    text = _state(
        _GET,
        table=True,
    )
    head, _, tail = text.partition("class PDHiddenReqState")
    return _commit(
        repo, {STATE: head + _EXECUTES.format(marker=marker) + "class PDHiddenReqState" + tail}
    )


def _one_error_line(stderr: str) -> str:
    lines = [x for x in stderr.splitlines() if x.startswith("error: ")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


# -- the side table's module is replayed, not executed -------------------------------------------


def test_list_target_does_not_execute_the_side_table_module(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    spec = _executing(repo, marker)
    proc = run_cli("list", "--target", spec)
    assert proc.returncode == 0, proc.stderr
    assert "side table" in proc.stdout
    assert not marker.exists()  # before: `bench list --target` executed it
    proc = run_cli("list", "--target", spec, "--trust-target-code")
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text() == "executed\n"


def test_replayed_side_table_is_measured_without_executing_it(repo: Path, tmp_path: Path) -> None:
    """The strategy of a side table whose module writes a marker: without trust, the module
    is replayed and the scheduler counts the same lookups and creations as with the module
    itself (its getter's code the same bytecode), and the marker is never written; with trust
    the module runs, and the metadata says so."""
    from bench.core.counting import count_ops
    from bench.core.scenarios import get

    marker = tmp_path / "marker"
    spec = _executing(repo, marker)
    replayed = materialize(spec, tmp_path / "replayed")
    s = load_external(str(replayed.path))
    sc = get("decode-dspark").with_changes({"decode_batch": 32})
    counts = count_ops(s, sc, pattern="as_written", seed=0, steps=5)
    assert counts.lookups == 5 * 32
    assert counts.created > 0
    assert not marker.exists()
    meta = replayed.metadata()
    assert not meta["trusted"]
    assert meta["state_code"].startswith("replayed from python/sglang/srt/disaggregation/")
    assert "never executed" in meta["home"]
    assert "__import__" not in (tmp_path / "replayed" / f"{replayed.name}_state.py").read_text()

    trusted = materialize(spec, tmp_path / "trusted", trust=True)
    t = load_external(str(trusted.path))
    assert marker.read_text() == "executed\n"
    assert trusted.metadata()["trusted"]
    assert trusted.metadata()["state_code"] == (
        f"executed the revision's own {STATE} (--trust-target-code)"
    )
    counted = count_ops(t, sc, pattern="as_written", seed=0, steps=5)
    assert (counted.lookups, counted.created) == (counts.lookups, counts.created)


def _module_of(strategy_path: Path) -> object:
    """The state module a loaded target strategy runs (replayed or the revision's own)."""
    return load_external(str(strategy_path)).module._state


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_replay_has_the_revisions_shape(repo: Path, tmp_path: Path, shape: str) -> None:
    """Replayed and executed, the same mapping type, the same state class layout and fields,
    and the getter and removal compiled to the same bytecode."""
    text = SHAPES[shape]
    spec = _commit(repo, {STATE: text.format(fields=_fields())} if text else {})
    mods = {}
    for trust in (False, True):
        target = materialize(spec, tmp_path / str(trust), trust=trust)
        mods[trust] = (target, _module_of(target.path))
    (rt, replayed), (_tt, own) = mods[False], mods[True]
    home = rt.inspection.home
    assert type(getattr(replayed, home.mapping)) is type(getattr(own, home.mapping))
    for fn in filter(None, (home.getter, home.removal)):
        a, b = getattr(replayed, fn).__code__, getattr(own, fn).__code__
        assert (a.co_code, a.co_names, a.co_varnames) == (b.co_code, b.co_names, b.co_varnames)
    cls_r, cls_o = getattr(replayed, home.state_class), getattr(own, home.state_class)
    assert getattr(cls_r, "__slots__", None) == getattr(cls_o, "__slots__", None)
    x, y = cls_r(), cls_o()
    names = getattr(cls_o, "__slots__", None) or vars(y)
    assert {n: getattr(x, n) for n in names} == {n: getattr(y, n) for n in names}
    # and the strategies behave alike
    from array import array

    from bench.core.workload import RequestSource

    for target, _mod in mods.values():
        s = load_external(str(target.path))
        req = RequestSource().make(s)("r", array("q", [1]), 1)
        assert s.peek(req) is None
        state = s.get(req)
        assert s.get(req) is state
        assert s.live_states() == 1
        s.update(req, current_start=3)
        assert s.get(req).current_start == 3
        s.release(req)
        assert s.live_states() == (1 if s.release_keeps_state else 0)


def test_a_shape_the_replay_cannot_read_is_refused_and_runs_with_trust(
    repo: Path, tmp_path: Path
) -> None:
    """A getter that calls anything else than the mapping and the state class (a lock here)
    is refused in one line that names the line and the flag; with the flag it runs."""
    text = _state(
        """    with _lock:
        state = _pd_hidden_req_states.get(req)
        if state is None:
            state = PDHiddenReqState()
            _pd_hidden_req_states[req] = state
    return state""",
        table=True,
        extra_import="import threading\n",
    ).replace("_pd_hidden_req_states = ", "_lock = threading.Lock()\n_pd_hidden_req_states = ")
    spec = _commit(repo, {STATE: text})
    with pytest.raises(ReplayRefused, match=r"hidden_state\.py:\d+: .*--trust-target-code"):
        materialize(spec, tmp_path / "a")
    out = tmp_path / "out"
    proc = run_cli("run", "--quick", "--suite", "step", "--target", spec, "--output-dir", str(out))
    assert proc.returncode == 2
    assert "--trust-target-code" in _one_error_line(proc.stderr)
    target = materialize(spec, tmp_path / "b", trust=True)
    assert load_external(str(target.path)).name == target.name


@pytest.mark.parametrize(
    "payload",
    [
        "__import__('os').system('echo ran >> {marker}')",
        "def f(x=__import__('os').system('echo ran >> {marker}')):\n        pass",
        "req.__class__",
        "_pd_hidden_req_states.__class__",
        "lambda: 0",
        "for r in []:\n        pass",
        "state = _pd_hidden_req_states.get(req, f'{{0}}')",
        "PDHiddenReqState(__import__('os'))",
    ],
)
def test_only_dictionary_operations_are_replayed(repo: Path, tmp_path: Path, payload: str) -> None:
    """Whatever else a getter holds is refused, never written into the replay."""
    marker = tmp_path / "marker"
    body = "    " + payload.format(marker=marker) + "\n" + _GET
    spec = _commit(repo, {STATE: _state(body, table=True)})
    with pytest.raises(ReplayRefused, match="--trust-target-code"):
        materialize(spec, tmp_path / "m")
    assert not marker.exists()


def test_the_import_check_applies_to_trusted_modules_only(repo: Path, tmp_path: Path) -> None:
    text = _state(
        _GET,
        table=True,
        extra_import="import torch\n",
    )
    spec = _commit(repo, {STATE: text})
    with pytest.raises(TargetRefused, match="imports torch outside TYPE_CHECKING"):
        materialize(spec, tmp_path / "trusted", trust=True)
    target = materialize(spec, tmp_path / "replayed")  # torch is never imported
    assert "import torch" not in (target.path.parent / f"{target.name}_state.py").read_text()


def test_trust_is_refused_where_nothing_is_materialized() -> None:
    for args in (("list",), ("gate",), ("run", "--real", "x@y")):
        proc = run_cli(*args, "--trust-target-code")
        assert proc.returncode == 2, args
        line = _one_error_line(proc.stderr)
        assert "--trust-target-code" in line
        assert "for --target" in line, line


@pytest.mark.slow
def test_run_target_measures_the_replay_without_executing(repo: Path, tmp_path: Path) -> None:
    """`bench run --target` on the side table that writes a marker: the marker stays absent,
    the step figures are there, and the manifest says the module was replayed."""
    marker = tmp_path / "marker"
    spec = _executing(repo, marker)
    out = tmp_path / "out"
    proc = run_cli(
        "run", "--config", str(FIXTURES / "tiny_config.json"), "--device", "cpu",
        "--suite", "step", "--no-aa", "--output-dir", str(out), "--target", spec,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not marker.exists()
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    (meta,) = json.loads((run / "manifest.json").read_text())["targets"].values()
    assert meta["state_code"].startswith("replayed from ")
    step = (run / "step.json").read_text()
    assert "pattern=as_written" in step
    assert "scenario=decode-dspark" in step


# -- names read from a tree are identifiers -------------------------------------------------------


def test_a_getattr_name_that_is_not_an_identifier_is_refused(repo: Path, tmp_path: Path) -> None:
    """The lazy getter's attribute, written into the generated module as `req.NAME = state`:
    a string that is code would have run there. Refused in one line naming file:line."""
    marker = tmp_path / "marker"
    name = f"__class__; __import__('os').system('echo ran >> {marker}'); req.y"
    text = _state(
        f"""    state = getattr(req, "{name}", None)
    if state is None:
        state = PDHiddenReqState()
        req.pd_hidden_state = state
    return state""",
        table=False,
    )
    spec = _commit(repo, {STATE: text})
    with pytest.raises(NotAnIdentifier, match=r"hidden_state\.py:\d+: attribute read with"):
        materialize(spec, tmp_path / "m")
    for args in (("target", "inspect", spec), ("list", "--target", spec)):
        proc = run_cli(*args)
        assert proc.returncode == 2, args
        line = _one_error_line(proc.stderr)
        assert f"{STATE}:" in line
        assert "is not a Python identifier" in line
    assert not marker.exists()


def test_a_group_name_that_is_not_an_identifier_is_refused(repo: Path) -> None:
    prefill = (repo / PREFILL).read_text() + (
        '\n\ndef odd(req):\n    return getattr(req, "not an-identifier", None)\n'
    )
    spec = _commit(repo, {PREFILL: prefill})
    proc = run_cli("target", "groups", spec)
    assert proc.returncode == 2
    line = _one_error_line(proc.stderr)
    assert f"{PREFILL}:" in line
    assert "'not an-identifier' is not a Python identifier" in line


def test_a_path_with_a_line_break_is_refused(tmp_path: Path) -> None:
    """Paths go into comments of the generated code: a line break would start a line there."""
    own = tmp_path / "sglang"  # a repository of its own: the odd file stays in its commits
    make_repo(own, ("side",))
    odd = "python/sglang/srt/odd\nimport os.py"
    spec = _commit(own, {odd: "current_src_indices = owner_direct_sent = None\n"})
    proc = run_cli("target", "inspect", spec)
    assert proc.returncode == 2
    line = _one_error_line(proc.stderr)
    assert "a file name that is not printable text" in line
    assert "odd\\nimport os.py" in line
