"""Where a revision's code comes from, and what it declares it needs.

    PATH@REV         a commit of the git repository at PATH (a bare repository works): its
                     python/ folder is exported with `git archive` into the user's cache
                     (trees/<commit>/), never checked out in PATH
    PATH             PATH's working tree: its HEAD, or, with uncommitted changes, a commit of
                     them made by `git stash create` (nothing in PATH changes)
    sglang==X.Y.Z    a release from the package registry: its wheel, installed without its
                     dependencies into the revision's environment

The dependency list is the revision's own: [project].dependencies of python/pyproject.toml at
the commit (with the CPU pins python/pyproject_cpu.toml adds, triton's among them), or the
wheel's Requires-Dist. bench/real/venv.py builds the environment from it.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from bench.base.errors import UsageError
from bench.target.tree import SourceTree, split_spec

REGISTRY = re.compile(r"sglang==(?P<version>[0-9][0-9A-Za-z.+!-]*)")
PYPROJECT = "python/pyproject.toml"
PYPROJECT_CPU = "python/pyproject_cpu.toml"
PIP_TIMEOUT_S = 600


@dataclass(frozen=True)
class Source:
    spec: str  # as given
    kind: str  # "git" or "registry"
    version: str | None = None  # registry
    tree: SourceTree | None = None  # git
    commit: str | None = None  # git: the commit measured (a stash commit for a dirty tree)

    @property
    def label(self) -> str:
        """How it is shown: 'sglang==0.5.23', 'sglang@d55f1c28e2' (the folder's name, never a
        machine path)."""
        if self.kind == "registry":
            return f"sglang=={self.version}"
        assert self.tree is not None
        assert self.commit is not None
        name = self.tree.root.name.removesuffix(".git") or "tree"
        dirty = "+changes" if self.tree.rev is None and self.tree.dirty else ""
        return f"{name}@{self.commit[:10]}{dirty}"

    @property
    def name(self) -> str:
        """A benchmark-name-safe identity: 'sglang-0.5.23', 'sglang-d55f1c28e2'."""
        text = self.label.replace("==", "-").replace("@", "-").replace("+", ".")
        return re.sub(r"[^A-Za-z0-9_.-]", "_", text)

    @property
    def key(self) -> str:
        """A file-name-safe identity: 'pypi-0.5.23', 'git-d55f1c28e223'."""
        if self.kind == "registry":
            return f"pypi-{self.version}"
        assert self.commit is not None
        return f"git-{self.commit[:12]}"


def parse(spec: str) -> Source:
    """A source from its spec; UsageError (one line) when it cannot be read."""
    match = REGISTRY.fullmatch(spec.strip())
    if match:
        return Source(spec, "registry", version=match["version"])
    tree = SourceTree.open(spec)
    if not tree.git_dir or tree.commit is None:
        path, _ = split_spec(spec)
        raise UsageError(f"{path}: real mode reads a git repository (PATH@REV) or sglang==VERSION")
    commit = tree.commit
    if tree.rev is None and tree.dirty:
        stash = _git(tree.root, "stash", "create").strip()
        commit = stash or commit
    if not tree.exists(PYPROJECT) and not _has(tree, commit, PYPROJECT):
        raise UsageError(f"{tree.label}: no {PYPROJECT}: not an SGLang source tree")
    return Source(spec, "git", tree=tree, commit=commit)


def _git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise UsageError(f"git {args[0]} in {root.name}: {lines[-1] if lines else 'failed'}")
    return proc.stdout


def _has(tree: SourceTree, commit: str, rel: str) -> bool:
    proc = subprocess.run(
        ["git", "cat-file", "-e", f"{commit}:{rel}"], cwd=tree.root, capture_output=True
    )
    return proc.returncode == 0


def _show(source: Source, rel: str) -> str | None:
    assert source.tree is not None
    proc = subprocess.run(
        ["git", "show", f"{source.commit}:{rel}"],
        cwd=source.tree.root,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout if proc.returncode == 0 else None


# -- the dependency list --------------------------------------------------------------------


def requirements(source: Source, wheels: Path) -> tuple[list[str], list[str]]:
    """(the revision's dependencies, the CPU install's extra pins), as requirement strings.
    A registry source's wheel is downloaded into `wheels` (once)."""
    if source.kind == "registry":
        meta = _wheel_metadata(wheel(source, wheels))
        return [r for r in meta if "extra ==" not in r and "extra==" not in r], []
    main = _toml_dependencies(_show(source, PYPROJECT) or "", PYPROJECT)
    cpu_text = _show(source, PYPROJECT_CPU)
    cpu = _toml_dependencies(cpu_text, PYPROJECT_CPU) if cpu_text else []
    return main, cpu


def _toml_dependencies(text: str, where: str) -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{where}: not valid TOML ({exc})") from None
    deps = data.get("project", {}).get("dependencies", [])
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise UsageError(f"{where}: [project].dependencies is not a list of requirements")
    return list(deps)


def wheel(source: Source, wheels: Path) -> Path:
    """The release's wheel for this interpreter, downloaded once into `wheels`."""
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"sglang-{source.version}-*.whl"))
    if found:
        return found[-1]
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
         "-d", str(wheels), f"sglang=={source.version}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=PIP_TIMEOUT_S,
    )  # fmt: skip
    found = sorted(wheels.glob(f"sglang-{source.version}-*.whl"))
    if proc.returncode != 0 or not found:
        lines = [ln for ln in proc.stderr.strip().splitlines() if "WARNING" not in ln]
        raise UsageError(
            f"sglang=={source.version}: no wheel from the package registry "
            f"({lines[-1] if lines else 'pip download failed'})"
        )
    return found[-1]


def _wheel_metadata(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(name).decode("utf-8")
    return [
        line.partition(":")[2].strip()
        for line in text.splitlines()
        if line.startswith("Requires-Dist:")
    ]


# -- the code -------------------------------------------------------------------------------


def export(source: Source, trees: Path) -> Path | None:
    """The folder to put on sys.path (holding `sglang/`): the commit's python/ exported once
    into trees/<commit>/; None for a registry source (installed into its environment)."""
    if source.kind == "registry":
        return None
    assert source.tree is not None
    assert source.commit is not None
    dest = trees / source.commit
    marker = dest / ".complete"
    if marker.is_file():
        return dest / "python"
    partial = trees / f".{source.commit}.partial"
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    proc = subprocess.run(
        ["git", "archive", "--format=tar", source.commit, "python/"],
        cwd=source.tree.root,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise UsageError(f"{source.label}: git archive failed ({proc.stderr.decode()[-200:]})")
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(partial, filter="data")
    (partial / ".complete").write_text(source.label + "\n", encoding="utf-8")
    partial.rename(dest)
    return dest / "python"
