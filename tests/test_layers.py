"""The layout's promises: the layer order docs/ARCHITECTURE.md draws holds in the import graph
(imports inside functions and under TYPE_CHECKING included), an import inside a function has a
reason to wait (its cost, or a package named with its reason), no module imports another's
private names, no function runs past 80 lines, no two modules import each other, a suite's measuring half never reaches the report and its reading half never reaches a worker,
the core and the report never import torch, suites describe themselves and misspelt names are
refused, run folders of an older schema are refused in one line, and a strategy file can be
named wherever a strategy is."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from bench import suites
from bench.base.errors import DataError, UsageError
from bench.report import viewspec
from bench.report.load import load_run
from bench.runformat.schema import OLDER_SCHEMAS
from bench.suites.spec import SuiteDeclarationError, SuiteSpec
from tests.helpers import FIXTURES, ROOT, run_cli

# Layers, lowest first (docs/ARCHITECTURE.md): a module's layer is its folder's, read from the
# path alone. A module may import its own layer and below. A suite's folder is the one vertical
# slice: its declaration (and helpers) sit at the suites' layer, its measuring half (run.py) just
# above, its reading half (view.py) with the report.
FOLDERS: tuple[tuple[str, ...], ...] = (
    ("bench.base", "strategies"),
    ("bench.core",),
    ("bench.config", "bench.runformat"),
    ("bench.measure",),
    ("bench.suites",),
    ("bench.suites.*.run",),
    ("bench.stats",),
    ("bench.report", "bench.suites.*.view"),
    ("bench.orchestration",),
    ("bench.gate", "bench.target", "bench.profiling", "bench.real"),
    ("bench.history",),
    ("bench.commands",),
)
LAYERS: dict[str, int] = {folder: i for i, folders in enumerate(FOLDERS) for folder in folders}
# The package itself and its entry-point shims (bench.worker, bench.instr_target: gates run them
# by module path in other trees) sit at the top.
TOP = len(FOLDERS)


# Edges that the order alone would allow but the halves forbid, by kind of module.
FORBIDDEN = {
    "run": ("bench.report", "bench.stats", "bench.suites.*.view"),
    "view": ("bench.measure", "bench.suites.*.run", "bench.worker", "bench.orchestration.runner"),
    "declaration": ("bench.report", "bench.measure", "bench.suites.*.run", "bench.suites.*.view"),
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _half(parts: list[str]) -> str | None:
    """run / view for a module of a suite's folder named run*.py / view*.py."""
    if len(parts) != 4 or parts[:2] != ["bench", "suites"]:
        return None
    return next((h for h in ("run", "view") if parts[3].startswith(h)), None)


def _pattern(module: str) -> str:
    """bench.suites.lookup.run -> bench.suites.*.run (a suite's half; run_x.py, view_x.py too)."""
    half = _half(module.split("."))
    return f"bench.suites.*.{half}" if half else module


def _kind(module: str) -> str | None:
    """run / view: a suite's halves; declaration: the registry, spec.py, a suite's __init__."""
    parts = module.split(".")
    if parts[:2] != ["bench", "suites"]:
        return None
    half = _half(parts)
    if half:
        return half
    return "declaration" if len(parts) <= 3 else None


def _layer(module: str) -> int:
    """The layer of a module's folder (bench.x.y: bench.x's; a suite's half by its file)."""
    name = _pattern(module)
    if name.startswith("bench.suites.*."):
        return LAYERS[name]
    parts = name.split(".")
    folder = ".".join(parts[:2]) if parts[0] == "bench" else parts[0]
    if folder not in LAYERS:
        assert name.count(".") <= 1, f"{module}: a folder no layer names"
        return TOP
    return LAYERS[folder]


def test_every_folder_is_a_layer() -> None:
    """Each folder under bench/ holding modules is named in FOLDERS; no module but the package's
    own and its entry-point shims sits at the top of bench/."""
    folders = {p.parent.relative_to(ROOT).parts[:2] for p in (ROOT / "bench").rglob("*.py")}
    named = {tuple(f.split(".")) for fs in FOLDERS for f in fs if "*" not in f}
    assert {f for f in folders if len(f) == 2} <= named
    top = sorted(p.name for p in (ROOT / "bench").glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "instr_target.py", "worker.py"], top


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_init: bool) -> list[str]:
    """The modules one import statement names (`from pkg import module` names the module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = module.split(".")[: len(module.split(".")) - node.level + is_init]
        name = ".".join([*base, *(node.module.split(".") if node.module else [])])
    else:
        name = node.module or ""
    return [f"{name}.{a.name}" if f"{name}.{a.name}" in MODULES else name for a in node.names]


def _imports_of(module: str, source: str, is_init: bool = False) -> set[str]:
    """Every bench / strategies module a module's source imports, at any depth of its code."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            out.update(_targets(node, module, is_init))
    known = set(MODULES) - {"bench"}  # the package itself: every `from bench import x`
    return {n for n in out if n in known and n != module}


def _imports(path: Path) -> set[str]:
    return _imports_of(_module_name(path), path.read_text(), path.name == "__init__.py")


MODULES: dict[str, Path] = {
    _module_name(p): p
    for top in ("bench", "strategies")
    for p in sorted((ROOT / top).rglob("*.py"))
    if "__pycache__" not in p.parts
}


def _violations(module: str, imported: set[str]) -> list[str]:
    """The imports the layer order or a suite's halves forbid."""
    wrong = []
    mine = _layer(module)
    for target in sorted(imported):
        if _layer(target) > mine:
            wrong.append(f"{module} (layer {mine}) imports {target} (layer {_layer(target)})")
        banned = FORBIDDEN.get(_kind(module) or "", ())
        if any(_pattern(target) == b or target.startswith(b + ".") for b in banned):
            wrong.append(f"{module} imports {target}, which a suite's {_kind(module)} must not")
    return wrong


def test_the_import_graph_follows_the_layers() -> None:
    wrong = [w for module, path in MODULES.items() for w in _violations(module, _imports(path))]
    assert not wrong, "\n".join(wrong)


def test_an_import_inside_a_function_that_reaches_up_is_caught() -> None:
    """The check reads imports at every depth: one inside a function of the core that reaches
    the report fails it, as a module-level one does."""
    source = "def f():\n    if True:\n        from bench.report import load\n    return load\n"
    assert _violations("bench.core.scenarios", _imports_of("bench.core.scenarios", source))
    assert not _violations("bench.report.html", _imports_of("bench.report.html", source))


# Imports inside functions. One of a bench module is lazy only for its import cost: the module it
# imports reaches one of HEAVY at module level and the importer does not (a command that never
# draws a figure or builds a tensor does not pay for matplotlib or torch). Every other package
# imported inside a function is named here with the reason it must be.
HEAVY = ("torch", "numpy", "matplotlib", "pyperf")
LAZY_PACKAGES: dict[str, str] = {
    "torch": "its import cost (about a second): paid where a tensor or a device is made, never "
    "by readers of results, the core's descriptions or the command line",
    "numpy": "its import cost: paid by the resampling statistics, not by every reader",
    "matplotlib": "its import cost: paid where a figure is drawn",
    "sglang": "the revision's own sglang: importable only in that revision's environment (real "
    "mode's driver, the --request-model sglang path), while the harness imports these modules",
    "zmq": "real mode's driver, in the revision's environment (sglang's dependency)",
    "msgspec": "real mode's driver, in the revision's environment, after sglang's own import",
    "tokenizers": "real mode's stand-in tokenizer, trained in the revision's environment (a "
    "dependency of its transformers), never in the harness's",
    "transformers": "real mode's driver, in the revision's environment: the stand-in tokenizer "
    "loaded as the tokenizer manager loads one",
    "tomllib": "the standard library's from Python 3.11, tomli before it",
    "tomli": "the standard library's from Python 3.11, tomli before it",
    "packaging": "real mode's environment planner only; the harness's readers never need it",
    "triton": "real mode's driver, in the revision's environment: its launches wrapped where "
    "that environment has Triton (bench/real/driver/triton_launch.py); the harness has none",
    "importlib": "importlib.metadata (email, zipfile: ~21 ms here, ~0.6 s under callgrind): paid "
    "where sglang's version is asked, not by every process that builds a request class",
}
# Bench modules allowed to import other bench modules inside functions for a reason other than
# HEAVY: they sit on the import path of the instruction gate's target (bench.instr_target), which
# runs under callgrind, where every millisecond of import is ~50x (INSTR_TARGET_SPARES below).
LIGHT_IMPORTERS: dict[str, str] = {
    "bench.suites": "the package of the instruction target's module: the configuration and the "
    "suites' specs it imports cost ~2 s of every callgrind run (2026-12-07)",
}
# What the instruction target must not import (test_the_instruction_target_imports_light).
INSTR_TARGET_SPARES = ("bench.config.runconfig", "bench.suites.spec", "importlib.metadata")


def _module_level(source: str) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported (inside top-level try and if blocks too,
    TYPE_CHECKING blocks excepted)."""
    out: list[ast.Import | ast.ImportFrom] = []

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                out.append(node)
            elif isinstance(node, ast.Try):
                walk(node.body)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                walk(node.body)
                walk(node.orelse)

    walk(ast.parse(source).body)
    return out


def _heavy_modules() -> set[str]:
    """The bench / strategies modules whose import (at module level, transitively, packages
    included) imports one of HEAVY."""
    edges: dict[str, set[str]] = {}
    heavy: set[str] = set()
    for module, path in MODULES.items():
        edges[module] = set()
        for node in _module_level(path.read_text()):
            for target in _targets(node, module, path.name == "__init__.py"):
                if target.split(".")[0] in HEAVY:
                    heavy.add(module)
                parts = target.split(".")
                edges[module] |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    while more := {m for m, es in edges.items() if m not in heavy and es & heavy}:
        heavy |= more
    return heavy


def _function_imports(source: str) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for fn in ast.walk(ast.parse(source)):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            found += [n for n in ast.walk(fn) if isinstance(n, ast.Import | ast.ImportFrom)]
    return list({id(n): n for n in found}.values())


def test_every_import_inside_a_function_has_a_reason() -> None:
    heavy = _heavy_modules()
    wrong = []
    for module, path in MODULES.items():
        for node in _function_imports(path.read_text()):
            for target in _targets(node, module, path.name == "__init__.py"):
                root = target.split(".")[0]
                if root in ("bench", "strategies"):
                    parts = target.split(".")
                    chain = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
                    if module not in LIGHT_IMPORTERS and (module in heavy or not chain & heavy):
                        wrong.append(
                            f"{module}:{node.lineno} imports {target} inside a function "
                            "with no import cost to defer: import it at module level"
                        )
                elif root not in LAZY_PACKAGES:
                    wrong.append(
                        f"{module}:{node.lineno} imports {root} inside a function: "
                        "import it at module level, or name its reason in LAZY_PACKAGES"
                    )
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_another_modules_private_names() -> None:
    wrong = [
        f"{module}:{node.lineno} imports {a.name} from {node.module}"
        for module, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        for a in node.names
        if a.name.startswith("_") and not a.name.startswith("__")
    ]
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles() -> None:
    graph = {m: _imports(p) for m, p in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, cycles


def _fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_core_is_torch_free() -> None:
    proc = _fresh(
        "import sys\n"
        "import bench.core.workload, bench.core.callsites, bench.core.scheduler\n"
        "import bench.core.allocator, bench.core.hostpool, bench.suites.gate.run_instructions\n"
        "import bench.core.scenarios, bench.core.arrivals, bench.core.counting\n"
        "import bench.commands.main, bench.suites\n"
        "bench.suites.specs()\n"
        "from bench.core.hostpool import HostPool, host_hidden\n"
        "from bench.core.scenarios import PRESETS\n"
        "from bench.core.scheduler import make_scheduler\n"
        "from strategies import load_builtin, discover\n"
        "discover()\n"
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
    """Rendering a whole report, the terminal table and a comparison imports no torch, and no
    suite's measuring half."""
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
        "halves = [m for m in sys.modules if m.startswith('bench.suites.') and m.endswith('.run')]\n"
        "assert not halves, halves\n"
        "assert not [m for m in sys.modules if m.startswith('bench.measure')]\n"
    )
    assert proc.returncode == 0, proc.stderr


def test_suites_describe_themselves() -> None:
    specs = suites.specs()
    assert [s.name for s in specs if s.public] == list(suites.public_names())
    assert set(suites.public_names()) == {s.name for s in specs if s.view_module}
    assert "gate" not in suites.public_names()  # the gate's worker suite is internal
    for spec in specs:
        assert suites.get(spec.name) is spec
    for view in viewspec.views():
        assert view.title
        assert view.note
    names = [f.name for v in viewspec.views() for f in v.figures]
    assert len(names) == len(set(names))
    assert set(suites.option_types()) == set(suites.public_names())


def test_the_worker_imports_no_view() -> None:
    proc = _fresh(
        "import sys, bench.worker, bench.suites\n"
        "for s in bench.suites.specs():\n"
        "    s._runner()\n"
        "views = [m for m in sys.modules if m.endswith('.view') or m.startswith('bench.report')]\n"
        "assert not views, views\n"
        "assert 'matplotlib' not in sys.modules\n"
    )
    assert proc.returncode == 0, proc.stderr


def test_the_instruction_target_imports_light() -> None:
    proc = _fresh(
        "import sys, bench.instr_target\n"
        f"spared = {INSTR_TARGET_SPARES!r}\n"
        "loaded = [m for m in spared if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    assert proc.returncode == 0, proc.stderr


def test_misspelt_names_are_refused_with_the_closest(tmp_path: Path) -> None:
    declaration = types.ModuleType("toy")
    source = tmp_path / "toy.py"
    source.write_text('NAME = "toy"\nORDER = 1\nKIND = "toy"\nPAIRD = False\n')
    declaration.__file__ = str(source)
    exec(source.read_text(), declaration.__dict__)
    sys.modules["toy"] = declaration
    try:
        with pytest.raises(
            SuiteDeclarationError, match=r"unknown name PAIRD \(did you mean PAIRED\?"
        ):
            SuiteSpec.from_package(declaration)
    finally:
        del sys.modules["toy"]
    view = types.ModuleType("toy_view")
    (tmp_path / "toy_view.py").write_text('TITLE = "t"\nNOTE = "n"\nFIGURE = ()\n')
    view.__file__ = str(tmp_path / "toy_view.py")
    from bench.suites.spec import refuse_unknown_names

    with pytest.raises(SuiteDeclarationError, match="did you mean FIGURES"):
        refuse_unknown_names(view, viewspec.VIEW_NAMES, "suite view")
    strategy = tmp_path / "typo_strategy.py"
    strategy.write_text((FIXTURES / "ext_strategy.py").read_text() + "\nREQUEST_INIT_FIELD = {}\n")
    proc = run_cli("list", "--strategy", str(strategy))
    assert proc.returncode == 2
    assert "unknown name REQUEST_INIT_FIELD (did you mean REQUEST_INIT_FIELDS?" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_a_constant_of_a_strategy_file_far_from_every_declared_name_is_accepted(
    tmp_path: Path,
) -> None:
    from bench.base.spelling import edit_distance

    assert edit_distance("FIGURE", "FIGURES") == 1
    assert edit_distance("PAIRD", "PAIRED") == 1
    assert edit_distance("kitten", "sitting") == 3
    strategy = tmp_path / "own_constants.py"
    strategy.write_text(
        (FIXTURES / "ext_strategy.py").read_text()
        + '\nSOURCE_COMMIT = "abc123"\nCAPTURE_LAYERS = (1, 2)\nMAX_ROWS = 4\n'
    )
    proc = run_cli("list", "--strategy", str(strategy))
    assert proc.returncode == 0, proc.stderr


def test_unknown_suite_is_refused() -> None:
    with pytest.raises(UsageError, match=r"unknown suite 'nope'; choose from lookup"):
        suites.get("nope")


def test_workers_one_plans_one_process_per_suite() -> None:
    from bench.commands.main import build_parser
    from bench.commands.run import _config_from_args

    config = _config_from_args(build_parser().parse_args(["run", "--workers", "1"]))
    for spec in suites.specs():
        if not spec.public:
            continue
        jobs = spec.plan(config)
        strategies = 1 if spec.paired else len({j.config.strategies for j in jobs})
        assert len(jobs) == strategies, (spec.name, len(jobs))
    values = _config_from_args(build_parser().parse_args(["run", "--values", "5"]))
    assert values.values == 5
    assert values.suite("step").values == 5  # the step suite's own count follows --values


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
    from bench.commands.main import build_parser
    from bench.commands.run import _config_from_args

    args = build_parser().parse_args(
        ["run", "--strategy", f"weakkey,{FIXTURES / 'ext_strategy.py'}", "--quick"]
    )
    config = _config_from_args(args)
    assert config.external == (str(FIXTURES / "ext_strategy.py"),)
    assert config.strategies == ("weakkey", "ext_dict_attr")
    proc = run_cli("list", "--strategy", str(tmp_path / "missing.py"))
    assert proc.returncode == 2
    assert "no such strategy file" in proc.stderr


def test_no_module_outside_a_suite_names_one_in_a_call() -> None:
    """A suite's options and data are reached by a name only its own folder spells: elsewhere a
    call `x.suite("gc")`, `x.with_suite("lookup", ...)` or `options.get("step")` is refused;
    the views and tools that read given suites name them once, in a declared constant."""
    names = {s.name for s in suites.specs()}
    wrong = []
    for module, path in MODULES.items():
        if module.startswith("bench.suites."):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            first = node.args[0] if node.args else None
            if (
                node.func.attr in ("suite", "with_suite", "get")
                and isinstance(first, ast.Constant)
                and first.value in names
                and (node.func.attr != "get" or ast.unparse(node.func.value).endswith("options"))
            ):
                wrong.append(f"{module}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert not wrong, "\n".join(wrong)


MAX_FUNCTION_LINES = 80


def test_no_function_runs_past_80_lines() -> None:
    long = [
        f"{module}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for module, path in MODULES.items()
        if module.startswith("bench")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, "\n".join(long)


def test_tests_run_under_the_environments_bytecode_setting() -> None:
    # conftest.py lets pytest write bytecode while it collects, then puts the setting back
    assert sys.dont_write_bytecode == bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
