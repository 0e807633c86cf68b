"""Real mode's presets of production traffic and scheduler modes without SGLang: --set typing,
the capability check that refuses a feature a revision lacks (one line, exit 2, nothing
written), the coverage tables from counting outputs, and, on the tests' tiny tree
(tests/real_tree.py, run by this interpreter), the lockstep start after the warm-up settles, the
coverage command and the feature-cost command."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bench.base.errors import UsageError
from bench.real import capabilities, coverage, features
from bench.real import presets as rp
from tests import real_tree
from tests.helpers import run_cli

PY = sys.executable


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQSTATE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(scope="module")
def toy_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return real_tree.write_repo(
        tmp_path_factory.mktemp("toy") / "sglang", ("fast", "slow_alloc", "spec")
    )


# -- presets and --set ----------------------------------------------------------------------


def test_set_values_take_their_key_s_type_and_shares_are_bounded() -> None:
    assert rp.parse_value("logprob", "0.25") == 0.25
    assert rp.parse_value("overlap", "1") is True
    assert rp.parse_value("kv_tokens", "800000") == 800000
    with pytest.raises(ValueError, match="from 0 to 1"):
        rp.parse_value("abort", "1.5")
    with pytest.raises(ValueError, match="expected 0 or 1"):
        rp.parse_value("overlap", "maybe")
    changed = rp.with_changes(rp.get("decode-b256"), {"logprob": 1.0, "overlap": True})
    assert changed.features.logprob == 1.0
    assert changed.overlap
    assert rp.get("decode-b256").features.logprob == 0.0


def test_the_production_presets_say_what_they_need_and_where_each_value_comes_from() -> None:
    mix = rp.get("production-mix")
    assert mix.running == 1536
    assert mix.overlap
    assert set(mix.needs()) >= {"logprob", "stop", "regex", "json", "parallel", "abort", "session"}
    rl = rp.get("rl-rollout")
    assert rl.features.logprob == rl.features.parallel == rl.features.session == 1.0
    assert "retraction" in rp.get("retraction").needs()
    assert rp.get("retraction").env()["SGLANG_TEST_RETRACT"] == "1"
    assert "production-mix" not in rp.GATE_DEFAULT  # a default gate with it takes too long


# -- the capability check -------------------------------------------------------------------


def _tree(root: Path, *, logprob: bool = True, mixed_in_fields: bool = False) -> Path:
    srt = root / "sglang" / "srt"
    (srt / "managers").mkdir(parents=True, exist_ok=True)
    (srt / "sampling").mkdir(parents=True, exist_ok=True)
    (srt / "constrained").mkdir(parents=True, exist_ok=True)
    (srt / "arg_groups" / "fields").mkdir(parents=True, exist_ok=True)
    fields = "    return_logprob: bool\n    top_logprobs_num: int\n" if logprob else ""
    (srt / "managers" / "io_struct.py").write_text(
        f"class TokenizedGenerateReqInput:\n    rid: str\n{fields}\nclass AbortReq:\n    rid: str\n"
    )
    (srt / "sampling" / "sampling_params.py").write_text(
        "class SamplingParams:\n    def __init__(self, max_new_tokens=1, stop=None, n=1, regex=None,"
        " json_schema=None):\n        pass\n"
    )
    mixed = "    enable_mixed_chunk: bool = False\n"
    (srt / "server_args.py").write_text(
        "class ServerArgs:\n    model_path: str\n" + ("" if mixed_in_fields else mixed)
    )
    if mixed_in_fields:
        (srt / "arg_groups" / "fields" / "schedule.py").write_text(mixed)
    (srt / "managers" / "scheduler.py").write_text(
        "class Scheduler:\n    def event_loop_overlap(self):\n        pass\n"
    )
    return root / "sglang"


def test_a_feature_the_revision_lacks_is_refused_naming_the_preset_and_the_feature(
    tmp_path: Path,
) -> None:
    files = capabilities.FolderFiles(_tree(tmp_path / "a", logprob=False))
    with pytest.raises(
        UsageError, match=r"preset rl-rollout asks for logprob.*top_logprobs_num|return_logprob"
    ):
        capabilities.check("old@abc", files, [rp.get("rl-rollout")])
    ok = capabilities.FolderFiles(_tree(tmp_path / "b", mixed_in_fields=True))
    mixed = rp.with_changes(rp.get("decode-b256"), {"mixed_chunk": True})
    capabilities.check("new@def", ok, [mixed])  # the field declared in arg_groups/fields
    capabilities.check("new@def", ok, [rp.get("decode-b256")])  # nothing asked, nothing checked
    with pytest.raises(
        UsageError, match=r"preset decode-b256\+ngram asks for speculative=NGRAM.*no NGRAM"
    ):
        capabilities.check("new@def", ok, [rp.get("decode-b256+ngram")])


def test_run_real_refuses_a_missing_feature_before_writing_anything(
    toy_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = run_cli(
        "run", "--real", f"{toy_repo}@fast", "--real-python", PY, "--real-preset",
        "decode-b256", "--set", "abort=0.5", "--set", "hidden=0.2", "--output-dir", str(out),
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ")
    assert "preset decode-b256 asks for abort" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("--real-preset", "decode-b256+eagle"),
            "preset decode-b256+eagle asks for speculative=EAGLE",
        ),
        (
            ("--real-preset", "eagle-chain", "--set", "accept_len=6"),
            "accept_len=6 cannot be reached",
        ),
        (("--real-preset", "eagle-chain", "--set", "spec_draft_tokens=1"), "at least 2"),
        (("--real-preset", "decode-b256", "--set", "accept_len=2"), "runs no speculative decoding"),
    ],
)
def test_run_real_refuses_a_speculation_it_cannot_run_before_writing_anything(
    toy_repo: Path, tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    """A revision without the algorithm, an accept length above what the drafts allow, a draft
    configuration the stand-in cannot serve: one line, exit 2, nothing written."""
    out = tmp_path / "out"
    proc = run_cli(
        "run", "--real", f"{toy_repo}@fast", "--real-python", PY, *args, "--output-dir", str(out)
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ")
    assert said in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_a_draft_configuration_the_revision_refuses_is_refused_before_anything_is_written(
    toy_repo: Path, tmp_path: Path
) -> None:
    """The revision's own checks run first (its scheduler built, no iteration run): what they
    refuse is one line naming the preset and the revision's words, exit 2, no run folder."""
    out = tmp_path / "out"
    proc = run_cli(
        "run", "--real", f"{toy_repo}@spec", "--real-python", PY, "--real-preset",
        "decode-b256+ngram", "--output-dir", str(out), timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if not ln.startswith("[real]")]
    assert len(lines) == 1, proc.stderr
    assert "preset decode-b256+ngram: the revision refuses it" in lines[0]
    assert "the toy verifies at most 8 draft tokens" in lines[0]
    assert not out.exists()


# -- coverage from counting outputs ------------------------------------------------------


def _counted(covered: list[int], reached: list[str]) -> dict:
    return {
        "coverage": {
            "sglang/srt/managers/a.py": {
                "executable": [1, 2, 3, 4],
                "covered": covered,
                "functions": ["f:1", "g:3"],
                "reached": reached,
            }
        },
        "defined": {"f": True, "g": True, "Scheduler.run_batch": False},
    }


def test_coverage_unions_the_presets_and_names_what_none_reaches() -> None:
    cov = coverage.Coverage.build(
        "rev", {"p1": _counted([1, 2], ["f:1"]), "p2": _counted([2], ["f:1"])}
    )
    assert cov.totals("p1")["managers"] == (2, 4, 1, 2)
    assert cov.totals()["managers"] == (2, 4, 1, 2)
    text = coverage.markdown(cov)
    assert "| managers | 50.0% | 25.0% | 50.0% (2 of 4) | 1 of 2 |" in text
    assert coverage.NO_MEASURED_MAP in text
    cov.measured_functions = ["f", "g"]
    assert cov.unreached_measured() == ["g"]
    text = coverage.markdown(cov)
    assert "Functions of the measured map that no preset reaches: 1" in text
    assert "- `g`" in text
    assert coverage.NO_MEASURED_MAP not in text
    assert coverage.traced("sglang/srt/managers/scheduler.py:10")
    assert coverage.traced("sglang/srt/model_executor/forward_batch_info.py:3")
    assert not coverage.traced("sglang/srt/utils/common.py:5")
    assert not coverage.traced("sglang/srt/model_executor/model_runner.py:5")
    assert "speculative/ a preset reached" not in text  # no speculative file: no table


def test_coverage_lists_every_speculative_file_a_preset_reached() -> None:
    spec = _counted([1, 2, 3], ["f:1"])
    spec["coverage"] = {
        "sglang/srt/speculative/eagle_worker_v2.py": spec["coverage"]["sglang/srt/managers/a.py"],
        "sglang/srt/speculative/unused.py": {
            "executable": [1, 2],
            "covered": [],
            "functions": ["h:1"],
            "reached": [],
        },
    }
    cov = coverage.Coverage.build("rev", {"p1": spec, "p2": _counted([1], ["f:1"])})
    text = coverage.markdown(cov)
    assert "Every file of speculative/ a preset reached" in text
    assert "| sglang/srt/speculative/eagle_worker_v2.py | 75.0% | 0.0% | 75.0% (3 of 4) |" in text
    assert "speculative/unused.py" not in text  # reached by no preset


# -- on the tiny tree -------------------------------------------------------------------------


@pytest.mark.real  # a real-mode run on the tiny tree: make test-real (CI runs it)
def test_processes_in_lockstep_start_measuring_at_the_same_iteration(
    toy_repo: Path, tmp_path: Path
) -> None:
    proc = run_cli(
        "run", "--real", f"{toy_repo}@fast,{toy_repo}@slow_alloc", "--real-python", PY,
        "--real-preset", "prefill-chunked", "--set", "warmup=20", "--budget", "off",
        "--no-count", "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    starts = {}
    for entry in manifest["processes"]:
        raw = json.loads((run_dir / entry["file"]).read_text())
        starts.setdefault(entry["index"] // 2, set()).add(raw["measure_start"])
        assert raw["settled"]["at"] >= 21
    assert all(len(s) == 1 for s in starts.values()), starts


@pytest.mark.real  # a real-mode run on the tiny tree: make test-real (CI runs it)
def test_real_coverage_prints_the_tables_and_writes_them(toy_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "coverage.md"
    proc = run_cli(
        "real", "coverage", f"{toy_repo}@fast", "--real-python", PY, "--real-preset",
        "decode-b256,prefill-chunked", "--set", "warmup=20", "--iterations", "30",
        "--output", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "managers" in proc.stdout
    text = out.read_text()
    assert "| package | `decode-b256` | `prefill-chunked` | all presets |" in text
    assert "sglang/srt/managers/scheduler.py" in text


@pytest.mark.real  # a real-mode run on the tiny tree: make test-real (CI runs it)
def test_real_features_measures_each_variant_against_the_plain_preset(
    toy_repo: Path, tmp_path: Path
) -> None:
    proc = run_cli(
        "real", "features", f"{toy_repo}@fast", "--real-python", PY, "--variants",
        "logprob,session", "--set", "warmup=20", "--set", "values=60", "--rounds", "2",
        "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("features-")]
    result = json.loads((folder / "features.json").read_text())
    assert result["status"] == "complete"
    assert set(result["rows"]) == {"decode-b256", "decode-b256+logprob", "decode-b256+session"}
    assert all(len(v) == 2 for k, v in result["values"].items())
    assert "| session |" in (folder / "features.md").read_text()


def test_a_feature_variant_is_the_plain_preset_with_one_thing_on() -> None:
    base = rp.get("decode-b256")
    v = features.variant(base, "regex", 0.1)
    assert v.features.regex == 0.1
    assert v.name == "decode-b256+regex"
    assert features.variant(base, "overlap", 0.1).overlap
    with pytest.raises(UsageError, match="unknown"):
        features.variant(base, "teleport", 0.1)
