"""A revision's environment: a virtualenv in the user's cache folder, built on demand and kept.

Keyed by the revision's dependency list less its GPU-only packages (and, for a release, by the
release itself, which is installed into it): revisions whose lists agree share one. Built as:

1. a venv on this interpreter, with the CPU torch the project uses (TORCH_SPEC);
2. a release's wheel, without its dependencies (a git revision's code is put on sys.path at
   run time instead, so it needs no build);
3. the packages the scheduler's import path is known to need at module level (SEED), each with
   the revision's own pin where its list has one;
4. then the revision is imported and its Scheduler built and stepped for a few iterations by the
   driver, under the stubs, until that succeeds: each module it reports missing is installed
   from the revision's list (or by its own name), and a GPU-only one is stubbed instead.

Nothing GPU-only is installed: sglang-kernel, flashinfer, the CUDA wheels, torchvision (the
registry has no CPU build of it for this torch) are stubbed where imported
(bench/real/driver/stubs.py). A revision that still cannot be imported is refused in one line
naming the module and what is missing; the partial environment is removed. Progress goes to
stderr; the build log stays beside the environment.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.base.errors import UsageError
from bench.base.storage import ROOT, cache_dir, write_atomic
from bench.real import source as src
from bench.real.process import run_one
from bench.real.protocol import probe_job
from bench.real.source import Source

RECIPE = 1  # bump when the build recipe changes: every environment is rebuilt
TORCH_SPEC = os.environ.get("REQSTATE_REAL_TORCH", "torch==2.13.0")  # the CPU wheel (Makefile)
# Where the CPU torch comes from (an index URL; unset: the default index, which on this project's
# machines holds the CPU wheel; the GitHub Action sets PyTorch's CPU index)
TORCH_INDEX = os.environ.get("REQSTATE_REAL_TORCH_INDEX")
PIP_TIMEOUT_S = 1800
PROBE_TIMEOUT_S = 600
MAX_ROUNDS = 40

# Distributions never installed: GPU-only, or the torch family the environment provides itself.
GPU_ONLY = frozenset(
    {
        "torch", "torchvision", "torchaudio", "torchcodec", "torch-memory-saver", "triton",
        "sglang-kernel", "sgl-kernel", "sgl-deep-ep", "sgl-deep-gemm", "sgl-flash-mla",
        "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache", "flash-attn-4",
        "flash-attn", "cuda-python", "cuda-tile", "nvidia-cutlass-dsl", "nvidia-mathdx",
        "nvidia-ml-py", "nvshmem4py-cu13", "humming-kernels", "quack-kernels", "tilelang",
        "tokenspeed-mla", "kernels", "deepseek-recipe", "intel-openmp", "decord2", "av",
    }
)  # fmt: skip
# Modules of GPU-only packages: stubbed when the revision imports them at module level.
GPU_ONLY_MODULES = frozenset(
    {
        "sgl_kernel", "torchvision", "torchaudio", "torchcodec", "torch_memory_saver",
        "flashinfer", "flash_attn", "deep_gemm", "deep_ep", "flash_mla", "cuda", "cutlass",
        "nvshmem", "pynvml", "tilelang", "quack", "humming", "tokenspeed_mla", "decord",
    }
)  # fmt: skip
# Stubbed in every environment: imported at module level on the scheduler's path by every
# revision read (sgl_kernel's CPU ops under SGLANG_USE_CPU_ENGINE, torchvision by the configs of
# vision models and transformers' image processors); the probe adds others a revision needs.
DEFAULT_STUBS = ("sgl_kernel", "torchvision")
# triton is GPU-only in spirit but imported at module level on the scheduler's path and works on
# the CPU (@triton.jit defines, launching fails): installed, with the CPU install's pin.
CPU_CAPABLE = ("triton",)
# What the scheduler's import path needs at module level (found one ModuleNotFoundError at a
# time on sglang 0.5.23 and d55f1c28e2; the probe adds what a revision needs beyond these).
SEED = (
    "numpy", "orjson", "psutil", "pybase64", "requests", "triton", "packaging", "pillow",
    "starlette", "msgspec", "pydantic", "pyzmq", "tqdm", "ipython", "aiohttp", "transformers",
    "tokenizers", "dill", "apache-tvm-ffi", "sentencepiece", "compressed-tensors", "gguf",
    "openai", "partial-json-parser", "setproctitle", "einops", "uvicorn", "fastapi", "xgrammar",
)  # fmt: skip
# A module whose distribution has another name.
MODULE_DIST = {
    "zmq": "pyzmq", "PIL": "pillow", "tvm_ffi": "apache-tvm-ffi", "IPython": "ipython",
    "yaml": "pyyaml", "google": "protobuf", "dateutil": "python-dateutil",
    "multipart": "python-multipart", "cv2": "opencv-python-headless", "sklearn": "scikit-learn",
    "attr": "attrs", "jwt": "pyjwt", "Crypto": "pycryptodome", "grpc": "grpcio",
    "openai_harmony": "openai-harmony", "mistral_common": "mistral-common", "jinja2": "jinja2",
    "partial_json_parser": "partial-json-parser", "compressed_tensors": "compressed-tensors",
    "prometheus_client": "prometheus-client", "llguidance": "llguidance", "smg_grpc_servicer":
    "smg-grpc-servicer", "pydantic_core": "pydantic-core", "dotenv": "python-dotenv",
}  # fmt: skip


def normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


@dataclass
class Env:
    """A built environment and how to run a revision in it."""

    key: str
    path: Path
    source_label: str
    requirements: list[str]
    stubs: list[str]
    installed: dict[str, str]
    build_s: float
    size_bytes: int
    python: str
    log: list[str] = field(default_factory=list)
    given: str | None = None  # an interpreter the user gave (--real-python): nothing was built

    @property
    def interpreter(self) -> Path:
        return Path(self.given) if self.given else self.path / "bin" / "python"

    def sys_path(self, tree: Path | None) -> list[str]:
        """PYTHONPATH for the driver: this harness (for bench.real.driver), then the tree."""
        return [str(ROOT), *([str(tree)] if tree is not None else [])]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["path"] = self.path.name
        return out


def venvs_dir() -> Path:
    return cache_dir() / "real" / "venvs"


def trees_dir() -> Path:
    return cache_dir() / "real" / "trees"


def wheels_dir() -> Path:
    return cache_dir() / "real" / "wheels"


# -- what to install ------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What a revision's environment holds, before the probe adds to it."""

    key: str
    wanted: dict[str, str]  # normalized name -> requirement string (the revision's pins)
    constraints: list[str]  # pins every install respects (the CPU torch, triton's CPU pin)
    wheel: Path | None  # a release's own wheel


def plan_for(source: Source) -> Plan:
    from packaging.requirements import InvalidRequirement, Requirement

    main, cpu = src.requirements(source, wheels_dir())
    wanted: dict[str, str] = {}
    for text in main:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate():
            continue
        name = normalize(req.name)
        if name in GPU_ONLY and name not in CPU_CAPABLE:
            continue
        req.marker = None
        wanted[name] = str(req)
    for text in cpu:  # the CPU install's pins for what the main list leaves to the GPU stack
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = normalize(req.name)
        if name in CPU_CAPABLE:
            req.marker = None
            wanted[name] = str(req)
    constraints = [TORCH_SPEC]
    if "triton" in wanted and any(op in wanted["triton"] for op in "=<>"):
        constraints.append(wanted["triton"])
    wheel = src.wheel(source, wheels_dir()) if source.kind == "registry" else None
    identity = {
        "recipe": RECIPE,
        "python": list(sys.version_info[:2]),
        "torch": TORCH_SPEC,
        "wanted": sorted(wanted.values()),
        "release": source.label if source.kind == "registry" else None,
    }
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    prefix = source.key if source.kind == "registry" else "deps"
    return Plan(f"{prefix}-{digest}", wanted, constraints, wheel)


def dist_for(module: str, wanted: dict[str, str]) -> str:
    """The requirement that provides a missing top-level module."""
    name = MODULE_DIST.get(module, module)
    return wanted.get(normalize(name), normalize(name))


# -- building -------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def load(key: str) -> Env | None:
    """A built environment, or None."""
    path = venvs_dir() / key
    meta = path / "env.json"
    if not meta.is_file():
        return None
    raw = json.loads(meta.read_text(encoding="utf-8"))
    raw["path"] = path
    return Env(**raw)


def given(source: Source, interpreter: str) -> tuple[Env, Path | None, bool]:
    """An environment the user prepared (--real-python): its interpreter, nothing installed
    or probed; the default stubs."""
    path = Path(interpreter).absolute()  # the driver runs in another folder
    if not path.is_file() or not os.access(path, os.X_OK):
        raise UsageError(f"--real-python {interpreter}: no such interpreter")
    env = Env(
        key="given",
        path=path.parent,
        source_label=source.label,
        requirements=[],
        stubs=list(DEFAULT_STUBS),
        installed={},
        build_s=0.0,
        size_bytes=0,
        python="",
        given=str(path),
    )
    tree = src.export(source, trees_dir())
    result = probe(env, tree, [])
    if not result.get("ok"):
        raise UsageError(f"{source.label} cannot be run by {path.name}: {result.get('message')}")
    return env, tree, False


def ensure(
    source: Source,
    progress: Callable[[str], None] = lambda _m: None,
    *,
    rebuild: bool = False,
    interpreter: str | None = None,
    align: dict[str, str] | None = None,
) -> tuple[Env, Path | None, bool]:
    """(the revision's environment, the folder to put on sys.path, whether it was built now).
    Built once per key, under a lock (a second process waits for the first); `interpreter`:
    the user's own instead (nothing is built). `align`: another environment of the same job
    (name -> installed version); a build pins what its own list leaves unpinned to those
    versions, so that two revisions' environments differ where their lists do, not where the
    registry moved between two builds."""
    if interpreter:
        return given(source, interpreter)
    plan = aligned(plan_for(source), align or {})
    with _locked(venvs_dir() / f".{plan.key}.lock"):
        tree = src.export(source, trees_dir())
        env = None if rebuild else load(plan.key)
        if env is not None:
            _probe_shared(env, source, tree, progress)
            return env, tree, False
        if rebuild and (venvs_dir() / plan.key).exists():
            shutil.rmtree(venvs_dir() / plan.key)
        return _build(source, plan, tree, progress), tree, True


def aligned(plan: Plan, installed: dict[str, str]) -> Plan:
    """The plan with its unpinned requirements pinned to `installed`'s versions."""
    extra = []
    versions = {normalize(k): v for k, v in installed.items()}
    for name, req in plan.wanted.items():
        version = versions.get(name)
        bare = not any(op in req for op in "=<>~!@")
        if version and bare and not any(c.startswith(f"{name}==") for c in plan.constraints):
            extra.append(f"{name}=={version}")
    return replace(plan, constraints=[*plan.constraints, *extra]) if extra else plan


PROBED = "probed.json"  # the revisions an environment was probed with (beside env.json)


def _probe_shared(
    env: Env, source: Source, tree: Path | None, progress: Callable[[str], None]
) -> None:
    """A cached environment serves every revision with its dependency list, but it was probed
    with the one it was built for: probe each other revision once (kept in PROBED), so one that
    cannot run in it is refused in one line, not left to fail mid-measurement."""
    if source.kind != "git" or not source.commit:
        return
    path = env.path / PROBED
    probed = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
    if source.commit in probed or source.label == env.source_label:
        return
    progress(f"{source.label}: probing it in the shared environment {env.key}")
    result = probe(env, tree, [])
    if not result.get("ok"):
        raise UsageError(
            f"{source.label} cannot run in the environment {env.key} built for "
            f"{env.source_label}: {result.get('message')}"
        )
    write_atomic(path, json.dumps([*probed, source.commit]))


def installed_diff(a: Env, b: Env) -> list[str]:
    """The packages whose installed versions differ between two environments (`name a -> b`,
    a missing side '-'): what a gate of two revisions measures besides their code."""
    if a.key == b.key:
        return []
    names = sorted(set(a.installed) | set(b.installed), key=str.lower)
    return [
        f"{n} {a.installed.get(n, '-')} -> {b.installed.get(n, '-')}"
        for n in names
        if a.installed.get(n) != b.installed.get(n)
    ]


def _run(
    cmd: list[str], log: list[str], timeout: float = PIP_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    log.append("$ " + " ".join(Path(c).name if c.startswith("/") else c for c in cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    tail = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "WARNING: Location" not in ln]
    log.extend(tail[-20:])
    return proc


def _pip(
    python: Path, args: list[str], constraints: Path, log: list[str]
) -> subprocess.CompletedProcess[str]:
    return _run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "-c", str(constraints), *args],
        log,
    )  # fmt: skip


def _last_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [
        ln for ln in (proc.stderr or proc.stdout).strip().splitlines()
        if ln.strip() and "WARNING" not in ln
    ]  # fmt: skip
    return lines[-1] if lines else f"exit status {proc.returncode}"


def _build(source: Source, plan: Plan, tree: Path | None, progress: Callable[[str], None]) -> Env:
    started = time.time()
    final = venvs_dir() / plan.key
    partial = venvs_dir() / f".{plan.key}.partial"
    if partial.exists():
        shutil.rmtree(partial)
    log: list[str] = []
    try:
        env = _build_into(source, plan, tree, partial, log, progress)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    env.build_s = round(time.time() - started, 1)
    env.size_bytes = _size(partial)
    env.key = plan.key
    (partial / "env.json").write_text(json.dumps(env.to_json(), indent=1), encoding="utf-8")
    (partial / "build.log").write_text("\n".join(log) + "\n", encoding="utf-8")
    partial.rename(final)
    env.path = final
    return env


def _build_into(
    source: Source,
    plan: Plan,
    tree: Path | None,
    where: Path,
    log: list[str],
    progress: Callable[[str], None],
) -> Env:
    progress(f"creating the environment for {source.label} ({plan.key})")
    proc = _run([sys.executable, "-m", "venv", str(where)], log)
    if proc.returncode != 0:
        raise UsageError(f"python -m venv failed: {_last_error(proc)}")
    python = where / "bin" / "python"
    constraints = where / "constraints.txt"
    constraints.write_text("\n".join(plan.constraints) + "\n", encoding="utf-8")
    progress(f"installing {TORCH_SPEC}")
    index = ["--index-url", TORCH_INDEX] if TORCH_INDEX else []
    proc = _pip(python, [*index, TORCH_SPEC], constraints, log)
    if proc.returncode != 0:
        raise UsageError(f"{TORCH_SPEC} could not be installed: {_last_error(proc)}")
    if plan.wheel is not None:
        progress(f"installing {plan.wheel.name} without its dependencies")
        proc = _pip(python, ["--no-deps", str(plan.wheel)], constraints, log)
        if proc.returncode != 0:
            raise UsageError(f"{plan.wheel.name} could not be installed: {_last_error(proc)}")
    seeds = [plan.wanted.get(normalize(s), s) for s in SEED]
    progress(f"installing {len(seeds)} packages the scheduler imports at module level")
    proc = _pip(python, seeds, constraints, log)
    if proc.returncode != 0:  # one at a time: a package the registry refuses is reported alone
        for req in seeds:
            one = _pip(python, [req], constraints, log)
            if one.returncode != 0:
                progress(f"  {req}: not installable ({_last_error(one)}); the probe decides")
    stubs = list(DEFAULT_STUBS)
    env = Env(
        key=plan.key,
        path=where,
        source_label=source.label,
        requirements=sorted(plan.wanted.values()),
        stubs=stubs,
        installed={},
        build_s=0.0,
        size_bytes=0,
        python=".".join(map(str, sys.version_info[:3])),
        log=[],
    )
    tried: set[str] = set()
    for round_ in range(1, MAX_ROUNDS + 1):
        progress(f"probe {round_}: importing the revision and stepping its Scheduler")
        result = probe(env, tree, log)
        if result.get("ok"):
            break
        kind = result.get("kind")
        module = str(result.get("module") or "").partition(".")[0]
        if kind == "missing" and module in GPU_ONLY_MODULES and module not in env.stubs:
            progress(f"  {module} (GPU-only, imported by {result.get('importer')}): stubbed")
            env.stubs = sorted({*env.stubs, module})
            continue
        if kind == "missing" and module and module not in tried:
            tried.add(module)
            req = dist_for(module, plan.wanted)
            progress(f"  {result.get('importer')} imports {module}: installing {req}")
            proc = _pip(python, [req], constraints, log)
            if proc.returncode == 0:
                continue
            raise UsageError(
                f"{source.label} cannot be imported on the CPU: {result.get('importer')} imports "
                f"{module}, and {req} could not be installed ({_last_error(proc)})"
            )
        raise UsageError(f"{source.label} cannot be imported on the CPU: {result.get('message')}")
    else:
        raise UsageError(f"{source.label}: still not importable after {MAX_ROUNDS} probes")
    env.installed = _freeze(python, log)
    return env


def probe(env: Env, tree: Path | None, log: list[str]) -> dict[str, Any]:
    """Import the revision and step its Scheduler through a few tiny iterations."""

    return run_one(env, tree, probe_job(env.stubs), log=log, timeout=PROBE_TIMEOUT_S)


def _freeze(python: Path, log: list[str]) -> dict[str, str]:
    proc = _run(
        [str(python), "-m", "pip", "list", "--format=json", "--disable-pip-version-check"], log
    )
    try:
        return {p["name"]: p["version"] for p in json.loads(proc.stdout)}
    except (json.JSONDecodeError, KeyError, TypeError):
        return {}


def _size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total
