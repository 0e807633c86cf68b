"""Discovery, validation, external loading and the `list` command."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

import strategies
from strategies import StrategyError, discover, load_external, resolve
from tests.helpers import FIXTURES, run_cli

# Built-ins live in strategies/<NAME>.py (load_builtin relies on it): the files are the list.
EXPECTED = sorted(
    p.stem for p in Path(strategies.__file__).parent.glob("*.py") if not p.stem.startswith("_")
)


def test_discovers_every_strategy_module_sorted() -> None:
    assert {"pr652", "weakkey", "control"} <= set(EXPECTED)
    assert [s.name for s in discover()] == EXPECTED


def test_every_strategy_has_source_hash_and_one_line_description() -> None:
    for s in discover():
        assert len(s.source_sha256) == 64
        assert s.description
        assert "\n" not in s.description


def test_external_by_file_and_by_dotted_path() -> None:
    by_file = load_external(str(FIXTURES / "ext_strategy.py"))
    by_module = load_external("tests.fixtures.ext_strategy")
    assert by_file.name == by_module.name == "ext_dict_attr"
    assert by_file.external
    assert by_module.external


def test_missing_contract_names_file_and_pieces() -> None:
    with pytest.raises(StrategyError) as info:
        load_external(str(FIXTURES / "broken_strategy.py"))
    message = str(info.value)
    assert "broken_strategy.py" in message
    assert "THREAD_SAFE_CREATE" in message
    assert "release()" in message


def test_duplicate_names_refused_naming_both_files(tmp_path: Path) -> None:
    clone = tmp_path / "weakkey_copy.py"
    shutil.copy(Path(strategies.__file__).parent / "weakkey.py", clone)
    with pytest.raises(StrategyError, match=r"duplicate strategy NAME 'weakkey' in .*weakkey.*"):
        resolve(external=[str(clone)])


def test_bad_name_refused(tmp_path: Path) -> None:
    src = (FIXTURES / "ext_strategy.py").read_text()
    bad = tmp_path / "bad_name.py"
    bad.write_text(src.replace('NAME = "ext_dict_attr"', 'NAME = "Bad Name!"'))
    with pytest.raises(StrategyError, match="NAME must be"):
        load_external(str(bad))


def test_unknown_strategy_lists_the_available_ones() -> None:
    with pytest.raises(StrategyError, match="unknown strategy 'nope'; available: control, "):
        resolve(["nope"])


def test_cli_list_shows_all_and_external() -> None:
    out = run_cli("list", "--external", str(FIXTURES / "ext_strategy.py"))
    assert out.returncode == 0, out.stderr
    names = [line.split()[0] for line in out.stdout.splitlines()]
    assert names == sorted([*EXPECTED, "ext_dict_attr"])
    assert "external:" in out.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("list", "--external", "no.such.module"), "no.such.module: import failed"),
        (("list", "--external", str(FIXTURES / "broken_strategy.py")), "broken_strategy.py"),
        (("list", "--external", "missing_file.py"), "missing_file.py: no such strategy file"),
        (("frobnicate",), "invalid choice"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(args: tuple[str, ...], needle: str) -> None:
    out = run_cli(*args)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert needle in out.stderr


def test_external_module_is_not_reimported_twice() -> None:
    a = load_external(str(FIXTURES / "ext_strategy.py"))
    b = load_external(str(FIXTURES / "ext_strategy.py"))
    assert a.module is b.module
    assert a.module.__name__ in sys.modules
