"""The layout's promises: the core and the report never import torch, suites describe
themselves, run folders of an older schema are refused in one line, and a strategy file can be
named wherever a strategy is."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench import suites
from bench.errors import DataError, UsageError
from bench.report.load import load_run
from bench.runformat import OLDER_SCHEMAS
from tests.helpers import FIXTURES, ROOT, run_cli


def _fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_core_is_torch_free() -> None:
    proc = _fresh(
        "import sys\n"
        "import bench.core.workload, bench.core.callsites, bench.core.scheduler\n"
        "import bench.core.allocator, bench.core.hostpool, bench.gate.instr_target\n"
        "import bench.core.scenarios, bench.core.arrivals, bench.core.counting\n"
        "from bench.core.hostpool import HostPool, host_hidden\n"
        "from bench.core.scenarios import PRESETS\n"
        "from bench.core.scheduler import make_scheduler\n"
        "from strategies import load_builtin\n"
        "for sc in PRESETS.values():\n"
        "    sc = sc.with_changes({'decode_batch': 32, 'chunked_prefill_size': 1024})\n"
        "    s = make_scheduler(load_builtin('pr652'), sc, HostPool(sc.pool_rows),"
        " hidden=host_hidden(1024))\n"
        "    s.run(20)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_report_is_torch_free(tiny_run: Path, tmp_path: Path) -> None:
    """Rendering a whole report, the terminal table and a comparison imports no torch."""
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    proc = _fresh(
        "import sys\n"
        "import bench.report\n"
        "assert 'torch' not in sys.modules\n"
        "from bench.report import write_report, write_compare\n"
        "from bench.report.console import render_table\n"
        f"write_report({str(run)!r})\n"
        f"render_table(__import__('pathlib').Path({str(run)!r}))\n"
        f"write_compare({str(run)!r}, {str(run)!r}, {str(tmp_path / 'cmp')!r})\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    assert proc.returncode == 0, proc.stderr


def test_suites_describe_themselves() -> None:
    specs = suites.specs()
    assert [s.name for s in specs if s.public] == list(suites.public_names())
    assert set(suites.public_names()) == {"lookup", "step", "gc", "scaling"}
    assert "gate" not in suites.public_names()  # the gate's worker suite is internal
    for spec in specs:
        assert spec.title
        assert spec.note
        assert suites.get(spec.name) is spec
    names = [f.name for s in specs for f in s.figures]
    assert len(names) == len(set(names))


def test_suite_modules_do_not_import_each_other() -> None:
    folder = ROOT / "bench" / "suites"
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "measure", "spec"}
    for path in folder.glob("*.py"):
        text = path.read_text()
        for other in modules - {path.stem}:
            assert f"bench.suites.{other}" not in text, f"{path.name} imports {other}"


def test_unknown_suite_is_refused() -> None:
    with pytest.raises(UsageError, match=r"unknown suite 'nope'; choose from lookup"):
        suites.get("nope")


@pytest.mark.slow
def test_older_schema_is_refused_naming_the_version(tiny_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "old"
    shutil.copytree(tiny_run, run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["schema"] = "reqstate-bench/1"
    (run / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError) as info:
        load_run(run)
    text = str(info.value)
    assert "older reqstate-bench (schema 'reqstate-bench/1')" in text
    assert OLDER_SCHEMAS["reqstate-bench/1"] in text  # the commit that still reads it
    assert "\n" not in text
    proc = run_cli("report", str(run))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_strategy_file_in_list() -> None:
    proc = run_cli("list", "--strategy", str(FIXTURES / "ext_strategy.py"))
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert "external: " in line


def test_strategy_file_in_run_is_measured(tmp_path: Path) -> None:
    from bench.cli import _config_from_args, build_parser

    args = build_parser().parse_args(
        ["run", "--strategy", f"weakkey,{FIXTURES / 'ext_strategy.py'}", "--quick"]
    )
    config = _config_from_args(args)
    assert config.external == (str(FIXTURES / "ext_strategy.py"),)
    assert config.strategies == ("weakkey", "ext_dict_attr")
    proc = run_cli("list", "--strategy", str(tmp_path / "missing.py"))
    assert proc.returncode == 2
    assert "no such strategy file" in proc.stderr
