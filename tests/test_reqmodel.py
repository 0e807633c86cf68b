"""Request models: import-req on a schedule_batch-like fixture, the shipped tables, and the
request classes generated from them."""

from __future__ import annotations

import gc
import json
import sys
from array import array
from pathlib import Path

import pytest

from bench.core import reqmodel
from bench.core.sglang_req import importable
from bench.core.workload import RequestSource, make_request_class
from strategies import Strategy, resolve
from tests.helpers import FIXTURES, run_cli

FIXTURE = FIXTURES / "reqpkg" / "pkg" / "managers" / "schedule_batch.py"


def test_import_req_reads_init_methods_and_mixins() -> None:
    model = reqmodel.import_req(FIXTURE, "fixture")
    kinds = {a.name: a.kind for a in model.attrs}
    assert len(model.attrs) == 22
    assert kinds["rid"] == "rid"
    assert kinds["origin_input_ids"] == "ids"
    assert kinds["sampling_params"] == "sampling"
    assert kinds["output_ids"] == "array"
    assert kinds["hidden_states_tensor"] == "tensor"
    assert kinds["logprob"] == "object"
    assert kinds["priority"] == "int"  # `priority if priority is not None else 0`, default None
    assert kinds["return_logprob"] == "bool"  # a keyword parameter's default
    assert kinds["lora_id"] == "none"
    # followed into a method of the class and a mixin initialiser in another module
    assert {"prefix_indices", "cached_tokens", "last_node"} <= set(kinds)
    assert {"time_stats", "queue_time_start", "output_times"} <= set(kinds)
    assert model.inlined == ("init_time_stats", "_init_cache")
    mixin = next(a for a in model.attrs if a.name == "output_times")
    assert mixin.where == "mixin.py"
    assert next(a for a in model.attrs if a.name == "extra_logprobs").nested
    assert [p.name for p in model.params] == [
        "return_logprob",
        "top_logprobs_num",
        "stream",
        "lora_id",
        "priority",
    ]
    # the table round-trips through JSON
    again = reqmodel.RequestModel.from_json(json.loads(json.dumps(model.to_json())))
    assert again == model


def test_import_req_cli_prints_count_and_histogram(tmp_path: Path) -> None:
    out = tmp_path / "fixture.json"
    proc = run_cli(
        "workload", "import-req", str(FIXTURE), "--name", "fixture", "--output", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("22 attributes (")
    assert "array 2" in first
    assert "tensor 1" in first
    assert json.loads(out.read_text())["name"] == "fixture"


def test_an_imported_model_lives_in_the_user_data_folder(tmp_path: Path) -> None:
    """import-req writes under $XDG_DATA_HOME, never into the package; the model is then found
    by name; a shipped name is refused (the shipped tables are read-only)."""
    import os
    import subprocess
    import sys

    from tests.helpers import ROOT

    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "bench", *args],
            cwd=ROOT, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip

    before = sorted(reqmodel.DATA_DIR.iterdir())
    proc = cli("workload", "import-req", str(FIXTURE), "--name", "mine")
    assert proc.returncode == 0, proc.stderr
    table = tmp_path / "xdg" / "reqstate-bench" / "request_models" / "mine.json"
    assert table.is_file()
    assert sorted(reqmodel.DATA_DIR.iterdir()) == before  # the package is untouched
    models = cli("workload", "models")
    assert "mine" in models.stdout
    assert "(imported:" in models.stdout
    refused = cli("workload", "import-req", str(FIXTURE), "--name", "sglang-0.5.23")
    assert refused.returncode == 2
    assert "a shipped request model (read-only)" in refused.stderr


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("bad_no_req.py", "no `class Req` in this file"),
        ("bad_syntax.py", "not valid Python"),
        ("no_such_file.py", "no such file"),
    ],
)
def test_import_req_bad_input(tmp_path: Path, name: str, needle: str) -> None:
    out = tmp_path / "t.json"
    path = FIXTURES / "reqpkg" / name
    proc = run_cli("workload", "import-req", str(path), "--name", "x", "--output", str(out))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert needle in lines[0]
    assert not out.exists()


def test_shipped_models_match_workload_facts() -> None:
    # Req.__init__ (schedule_batch.py): 140 attributes at the fork head the PR targets
    # (bytedance-iaas/sglang c96e68b62b), 157 in sglang 0.5.23; ~40 keyword parameters; 3 lists and no floats in the fork.
    fork = reqmodel.load("fork-c96e68b62b")
    release = reqmodel.load("sglang-0.5.23")
    assert fork is not None
    assert release is not None
    assert len(fork.attrs) == 140
    assert len(release.attrs) == 157
    assert 30 <= len(fork.params) <= 50
    hist = fork.histogram()
    assert hist.get("float", 0) == 0
    assert hist.get("array", 0) + hist.get("ids", 0) == 5
    assert reqmodel.load(reqmodel.SYNTHETIC) is None
    assert set(reqmodel.available()) >= {"fork-c96e68b62b", "sglang-0.5.23", "synthetic"}


def test_unknown_model_is_one_line() -> None:
    with pytest.raises(ValueError, match="unknown request model 'nope'; choose from"):
        reqmodel.load("nope")


@pytest.mark.parametrize("model", reqmodel.available())
def test_every_model_builds_requests(model: str, strategy: Strategy) -> None:
    cls = make_request_class(strategy, model=model)
    ids = array("q", range(100))
    req = cls("r1", ids, 5)
    loaded = reqmodel.load(model)
    n_attrs = 140 if loaded is None else len(loaded.attrs)
    assert len(vars(req)) == n_attrs + len(strategy.request_init_fields)
    if loaded is not None:
        kinds = {a.name: a.kind for a in loaded.attrs}
        values = vars(req)
        for name, kind in kinds.items():
            if kind == "ids":
                assert values[name] is ids
            elif kind == "array":
                assert isinstance(values[name], array)
            elif kind == "rid":
                assert values[name] == "r1"
            elif kind == "none":
                assert values[name] is None
        tracked = sum(gc.is_tracked(v) for k, v in values.items() if k in kinds)
        assert tracked == loaded.tracked()
    # hashed by identity, no __slots__, no __eq__: like SGLang's Req
    assert cls("r1", ids, 5) != req
    assert not hasattr(cls, "__slots__")
    state = strategy.get(req)
    if strategy.holds_state:
        assert strategy.get(req) is state
    strategy.release(req)


def test_model_requests_take_the_real_keyword_parameters() -> None:
    model = reqmodel.load("fork-c96e68b62b")
    assert model is not None
    cls = make_request_class(None, model="fork-c96e68b62b")
    param = next(p for p in model.params if isinstance(p.default, bool))
    req = cls("r", array("q"), 1, **{param.name: not param.default})
    assert req is not None
    with pytest.raises(TypeError):
        cls("r", array("q"), 1, no_such_parameter=1)


def test_request_source_labels_and_builds() -> None:
    (weakkey,) = resolve(["weakkey"])
    source = RequestSource(model="sglang-0.5.23")
    assert source.label == "sglang-0.5.23"
    assert len(vars(source.make(weakkey)("r", array("q"), 1))) == 157


_NOT_IMPORTABLE = importable()  # None where sglang's Req can be imported here


@pytest.mark.skipif(_NOT_IMPORTABLE is None, reason="sglang is importable here")
def test_sglang_class_without_sglang_is_one_line() -> None:
    from bench.core.sglang_req import SglangMissing

    with pytest.raises(SglangMissing, match="sglang cannot be imported here"):
        RequestSource(real=True).make(None)


@pytest.mark.skipif(_NOT_IMPORTABLE is not None, reason=f"sglang not importable: {_NOT_IMPORTABLE}")
def test_the_model_of_the_installed_release_matches_its_req() -> None:  # pragma: no cover
    """Where sglang can be imported: the model of its release has the real class's attributes
    in the real order, as many GC-tracked values, the same dict size, and nested objects
    tracked as the real ones are (timings are reported by `workload compare-real`, not
    asserted)."""
    from bench.core.reqcompare import compare
    from bench.core.sglang_req import sglang_version

    model = f"sglang-{sglang_version()}"
    if model not in reqmodel.available():
        pytest.skip(f"no request model for the installed sglang ({model})")
    result = compare(model, strategy_names=["pr652", "control"])
    assert result.missing == ()
    assert result.extra == ()
    assert result.order_differs == ()
    assert result.real.tracked == result.modelled.tracked
    assert result.real.dict_bytes == result.modelled.dict_bytes
    assert all(real == mine for _n, _rt, real, _mt, mine in result.nested), result.nested
    assert set(result.real.get_hit_ns) == {"pr652"}


@pytest.mark.skipif(_NOT_IMPORTABLE is not None, reason=f"sglang not importable: {_NOT_IMPORTABLE}")
def test_sglang_class_builds_real_requests(strategy: Strategy) -> None:  # pragma: no cover
    cls = RequestSource(real=True).make(strategy)
    req = cls("r", [1, 2, 3], 4)
    assert type(req).__mro__[1].__name__ == "Req"
    strategy.get(req)
    strategy.release(req)
    assert sys.modules.get("sglang") is not None


_STUB_REQ = """
class Req:
    def __init__(self, rid, origin_input_text, origin_input_ids, sampling_params, lora_id=None):
        self.rid = rid
        self.origin_input_ids = origin_input_ids
        self.sampling_params = sampling_params
        self.output_ids = []
        self.lora_id = lora_id
"""
_STUB_SAMPLING = """
class SamplingParams:
    def __init__(self, max_new_tokens=128):
        self.max_new_tokens = max_new_tokens
"""


def test_sglang_class_subclasses_an_importable_req(
    strategy: Strategy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The subclassing code against a stub package laid out like sglang's (the real one is not
    a dependency): the real __init__ runs with the minimal arguments, then the strategy's
    fields, and the strategy's contract holds on the result."""
    for rel, text in {
        "sglang/srt/managers/schedule_batch.py": _STUB_REQ,
        "sglang/srt/sampling/sampling_params.py": _STUB_SAMPLING,
    }.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    # Regular packages (an __init__.py at every level), so the stub wins over an installed
    # sglang: a namespace package would lose to it.
    for package in ("sglang", "sglang/srt", "sglang/srt/managers", "sglang/srt/sampling"):
        (tmp_path / package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "sglang" or m.startswith("sglang.")]:
        monkeypatch.delitem(sys.modules, name)
    try:
        cls = RequestSource(real=True).make(strategy)
        req = cls("r", array("q", [1, 2, 3]), 4)
        assert type(req).__mro__[1].__name__ == "Req"
        label = RequestSource(real=True).label  # what the manifest's environment records
        assert label.startswith("sglang ")
        assert label.endswith(" Req (installed)")
        assert req.sampling_params.max_new_tokens == 4
        assert list(req.origin_input_ids) == [1, 2, 3]
        for name in strategy.request_init_fields:
            assert hasattr(req, name)
        if strategy.holds_state:
            state = strategy.get(req)
            assert strategy.get(req) is state
            assert strategy.peek(req) is state
            strategy.reset(req)
            strategy.release(req)
    finally:
        for name in [m for m in sys.modules if m == "sglang" or m.startswith("sglang.")]:
            del sys.modules[name]
