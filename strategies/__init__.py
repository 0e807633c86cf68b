"""Registry of storage strategies.

Every sibling module whose name does not start with "_" is a strategy. Each is validated against
the contract in `strategies._contract` when it is discovered; a module that breaks it is refused
with a message naming the file and the missing piece. External strategies (a dotted module path
or a path to a .py file) go through the same validation.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import pkgutil
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

from bench.base.errors import UsageError
from bench.base.names import TWIN_RE
from bench.base.spelling import unknown_name
from strategies._contract import (
    FORWARD_SCANS,
    HOME_KINDS,
    OPTIONAL_ATTRS,
    OPTIONAL_MAPPINGS,
    PD_HIDDEN,
    REQUIRED_ATTRS,
    REQUIRED_FUNCS,
    SITE_NAMES,
    SITE_PATTERN_VALUES,
    GroupSchema,
)

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_EMPTY: Mapping[str, object] = MappingProxyType({})
_EMPTY_STR: Mapping[str, str] = MappingProxyType({})


class StrategyError(UsageError):
    """A strategy module breaks the contract, or a strategy cannot be found or loaded (a user's
    mistake: the command line shows it as one line and exits 2)."""


@dataclass(frozen=True, eq=False)  # compared and hashed by identity
class Strategy:
    """A validated strategy module, with its surface bound for the harness."""

    name: str
    description: str
    thread_safe_create: bool
    holds_state: bool
    release_keeps_state: bool  # release() removes nothing; collecting the request does
    get: Callable[[Any], Any]
    peek: Callable[[Any], Any]
    update: Callable[..., None]
    reset: Callable[[Any], None]
    release: Callable[[Any], None]
    live_states: Callable[[], int]
    request_init_fields: Mapping[str, object]
    request_class_fields: Mapping[str, object]
    source_path: str
    source_sha256: str
    external: bool = False
    module: ModuleType = field(repr=False, compare=False, default=None)  # type: ignore[assignment]
    twin_of: str | None = None  # an A/A twin: the strategy it is a verbatim copy of
    # A revision of a user's tree (strategies/_contract.py, target mode): its own request model,
    # the access pattern of each call site, where the capture scan runs, and where it came from.
    request_model: str | None = None  # path of a request model table
    site_patterns: Mapping[str, str] = field(default_factory=lambda: _EMPTY_STR)
    forward_scan: str = "every_forward"
    capture: str | None = None
    target: Mapping[str, object] = field(default_factory=lambda: _EMPTY)
    # The state group it stores (PD hidden for every built-in), where the fields live, and for
    # another group the access program the scheduler replays through it (strategies/_contract.py).
    group: GroupSchema = PD_HIDDEN
    home: Mapping[str, object] = field(default_factory=lambda: _EMPTY)
    program: Mapping[str, object] | None = None

    @property
    def is_target(self) -> bool:
        """Code of a revision (or a group in a home), measured as written (pattern `as_written`
        only)."""
        return bool(self.site_patterns) or self.program is not None

    @property
    def fields(self) -> tuple[str, ...]:
        """The names of the fields its state holds (its group's schema)."""
        return self.group.names


# A/A twins: "<name>.aa" (then ".aa2", ".aa3"; bench.base.names.TWIN_RE): the baseline's own source
# run as another module.


def twin_name(of: str, index: int = 0) -> str:
    """The name of the index-th twin of `of` (0: '<of>.aa', 1: '<of>.aa2', ...)."""
    return f"{of}.aa" if index == 0 else f"{of}.aa{index + 1}"


def twin(strategy: Strategy, name: str) -> Strategy:
    """A verbatim A/A twin of `strategy`: the same source file executed again as its own module
    object (so module-level tables are its own) under `name`. Measured like any strategy, its
    difference from the original is what the run's noise alone produces."""
    path = getattr(strategy.module, "__file__", None)
    if not path:
        raise StrategyError(f"{strategy.name}: no source file to make an A/A twin from")
    module = _module_from_file(Path(path), f"_reqstate_twin_{name.replace('.', '_')}", name)
    copy = validate(module, external=strategy.external)
    return dataclasses.replace(
        copy,
        name=name,
        description=f"A/A twin: a verbatim copy of {strategy.name} (noise floor)",
        source_path=strategy.source_path,
        twin_of=strategy.name,
    )


def with_twins(chosen: list[Strategy], baseline: str, twins: int) -> list[Strategy]:
    """The chosen strategies plus `twins` A/A twins of the baseline (when it is chosen)."""
    base = next((s for s in chosen if s.name == baseline and s.twin_of is None), None)
    if base is None or twins <= 0:
        return chosen
    have = {s.name for s in chosen}
    extra = [twin(base, twin_name(baseline, i)) for i in range(twins)]
    return [*chosen, *(t for t in extra if t.name not in have)]


def _where(module: ModuleType) -> str:
    path = getattr(module, "__file__", None)
    if not path:
        return module.__name__
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def validate(module: ModuleType, *, external: bool = False) -> Strategy:
    """Check a module against the contract and bind it; raise StrategyError naming the gap."""
    where = _where(module)
    missing = [a for a in REQUIRED_ATTRS if not hasattr(module, a)]
    missing += [f"{f}()" for f in REQUIRED_FUNCS if not callable(getattr(module, f, None))]
    if missing:
        raise StrategyError(f"{where}: strategy is missing {', '.join(missing)}")
    problem = unknown_name(module, (*REQUIRED_ATTRS, *OPTIONAL_ATTRS))
    if problem is not None:
        raise StrategyError(f"{where}: {problem}")
    name, description = module.NAME, module.DESCRIPTION
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise StrategyError(
            f"{where}: NAME must be a short identifier like 'my_strategy' "
            f"(lowercase letters, digits, '_'; at most 40), got {name!r}"
        )
    if not isinstance(description, str) or not description.strip() or "\n" in description:
        raise StrategyError(f"{where}: DESCRIPTION must be a non-empty single line")
    if not isinstance(module.THREAD_SAFE_CREATE, bool):
        raise StrategyError(f"{where}: THREAD_SAFE_CREATE must be True or False")
    holds_state = getattr(module, "HOLDS_STATE", True)
    if not isinstance(holds_state, bool):
        raise StrategyError(f"{where}: HOLDS_STATE must be True or False")
    keeps = getattr(module, "RELEASE_KEEPS_STATE", False)
    if not isinstance(keeps, bool):
        raise StrategyError(f"{where}: RELEASE_KEEPS_STATE must be True or False")
    shaping: dict[str, Mapping[str, object]] = {}
    for attr in OPTIONAL_MAPPINGS:
        value = getattr(module, attr, _EMPTY)
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and k.isidentifier() for k in value
        ):
            raise StrategyError(f"{where}: {attr} must map attribute names to default values")
        shaping[attr] = MappingProxyType(dict(value))
    target = _target_fields(module, where)
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        source = repr(sorted(vars(module)))
    return Strategy(
        name=name,
        description=description.strip(),
        thread_safe_create=module.THREAD_SAFE_CREATE,
        holds_state=holds_state,
        release_keeps_state=keeps,
        get=module.get,
        peek=module.peek,
        update=module.update,
        reset=module.reset,
        release=module.release,
        live_states=module.live_states,
        request_init_fields=shaping["REQUEST_INIT_FIELDS"],
        request_class_fields=shaping["REQUEST_CLASS_FIELDS"],
        source_path=where,
        source_sha256=hashlib.sha256(source.encode()).hexdigest(),
        external=external,
        module=module,
        **target,
    )


def _target_fields(module: ModuleType, where: str) -> dict[str, Any]:
    """The optional target-mode names (strategies/_contract.py), checked."""
    out: dict[str, Any] = {}
    model = getattr(module, "REQUEST_MODEL", None)
    if model is not None:
        path = Path(getattr(module, "__file__", "") or ".").parent / str(model)
        if not isinstance(model, str) or not path.is_file():
            raise StrategyError(f"{where}: REQUEST_MODEL must name a request model file beside it")
        out["request_model"] = str(path)
    patterns = getattr(module, "SITE_PATTERNS", None)
    if patterns is not None:
        if (
            not isinstance(patterns, Mapping)
            or not patterns
            or any(k not in SITE_NAMES or v not in SITE_PATTERN_VALUES for k, v in patterns.items())
        ):
            raise StrategyError(
                f"{where}: SITE_PATTERNS must map call sites ({', '.join(SITE_NAMES)}) to "
                f"{' or '.join(SITE_PATTERN_VALUES)}"
            )
        out["site_patterns"] = MappingProxyType(dict(patterns))
    scan = getattr(module, "FORWARD_SCAN", "every_forward")
    if scan not in FORWARD_SCANS:
        raise StrategyError(f"{where}: FORWARD_SCAN must be one of {', '.join(FORWARD_SCANS)}")
    out["forward_scan"] = scan
    capture = getattr(module, "CAPTURE", None)
    if capture not in (None, "get", "peek"):
        raise StrategyError(f"{where}: CAPTURE must be 'get' or 'peek'")
    out["capture"] = capture
    target = getattr(module, "TARGET", None)
    if target is not None:
        if not isinstance(target, Mapping):
            raise StrategyError(f"{where}: TARGET must be a mapping")
        out["target"] = MappingProxyType(dict(target))
    out.update(_group_fields(module, where))
    return out


def _group_fields(module: ModuleType, where: str) -> dict[str, Any]:
    """GROUP, HOME and ACCESSES (a strategy of another state group), checked."""
    out: dict[str, Any] = {}
    group = getattr(module, "GROUP", None)
    home = getattr(module, "HOME", None)
    program = getattr(module, "ACCESSES", None)
    if group is None and home is None and program is None:
        return out
    if group is None or home is None or program is None:
        raise StrategyError(f"{where}: GROUP, HOME and ACCESSES go together (one is missing)")
    if not isinstance(group, Mapping):
        raise StrategyError(f"{where}: GROUP must be a mapping with 'name' and 'fields'")
    try:
        out["group"] = GroupSchema.from_mapping(group)
    except ValueError as exc:
        raise StrategyError(f"{where}: {exc}") from None
    if (
        not isinstance(home, Mapping)
        or home.get("kind") not in HOME_KINDS
        or not isinstance(home.get("reach"), str)
    ):
        raise StrategyError(
            f"{where}: HOME must map 'kind' (one of {', '.join(HOME_KINDS)}) and 'reach' "
            "(the expression that reaches the fields' holder from req)"
        )
    if not isinstance(program, Mapping) or not isinstance(program.get("sites"), list):
        raise StrategyError(f"{where}: ACCESSES must be an access program with 'sites'")
    out["home"] = MappingProxyType(dict(home))
    out["program"] = MappingProxyType(dict(program))
    return out


def _check_unique(found: Iterable[Strategy]) -> dict[str, Strategy]:
    by_name: dict[str, Strategy] = {}
    for s in found:
        if s.name in by_name:
            raise StrategyError(
                f"duplicate strategy NAME {s.name!r} in {by_name[s.name].source_path} "
                f"and {s.source_path}"
            )
        by_name[s.name] = s
    return by_name


def discover() -> list[Strategy]:
    """All built-in strategies, validated, sorted by NAME."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"{__name__}.{info.name}")
        except Exception as exc:
            raise StrategyError(
                f"strategies/{info.name}.py: import failed: {type(exc).__name__}: {exc}"
            ) from exc
        found.append(validate(module))
    return sorted(_check_unique(found).values(), key=lambda s: s.name)


def load_builtin(name: str) -> Strategy:
    """One built-in strategy by NAME without importing the others (the instruction-count gate
    runs under callgrind, where the torch import of tensor_soa alone costs a minute). Assumes
    the convention that a built-in lives in strategies/<NAME>.py; falls back to discovery."""
    if _NAME_RE.match(name) and (Path(__file__).parent / f"{name}.py").is_file():
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except Exception as exc:
            raise StrategyError(
                f"strategies/{name}.py: import failed: {type(exc).__name__}: {exc}"
            ) from exc
        strategy = validate(module)
        if strategy.name == name:
            return strategy
    return resolve([name])[0]


def is_strategy_file(spec: str) -> bool:
    """A path to a .py file rather than a strategy NAME or a dotted module path."""
    return spec.endswith(".py") or "/" in spec or "\\" in spec


def _module_from_file(path: Path, mod_name: str, label: str) -> ModuleType:
    """Execute a .py file as module `mod_name` (once per process); StrategyError naming `label`."""
    module = sys.modules.get(mod_name)
    if module is not None:
        return module
    loader_spec = importlib.util.spec_from_file_location(mod_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise StrategyError(f"{label}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[mod_name] = module
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[mod_name]
        raise StrategyError(f"{label}: import failed: {type(exc).__name__}: {exc}") from exc
    return module


def load_external(spec: str) -> Strategy:
    """Load a user's strategy from a dotted module path or a path to a .py file."""
    if is_strategy_file(spec):
        path = Path(spec)
        if not path.is_file():
            raise StrategyError(f"{spec}: no such strategy file")
        digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
        module = _module_from_file(path, f"_reqstate_external_{path.stem}_{digest}", spec)
    else:
        try:
            module = importlib.import_module(spec)
        except Exception as exc:
            raise StrategyError(f"{spec}: import failed: {type(exc).__name__}: {exc}") from exc
    return validate(module, external=True)


def resolve(names: Iterable[str] | None = None, *, external: Iterable[str] = ()) -> list[Strategy]:
    """The built-ins (all, or those named) plus external ones, sorted by NAME."""
    builtin = discover()
    extra = [load_external(spec) for spec in external]
    by_name = _check_unique([*builtin, *extra])
    if names is None:
        chosen = list(by_name.values())
    else:
        chosen = []
        for n in names:
            m = TWIN_RE.match(n)
            if n not in by_name and m is not None and m["of"] in by_name:
                chosen.append(twin(by_name[m["of"]], n))  # a twin asked for by name
                continue
            if n not in by_name:
                known = ", ".join(sorted(by_name))
                raise StrategyError(f"unknown strategy {n!r}; available: {known}")
            chosen.append(by_name[n])
        chosen.extend(s for s in extra if s not in chosen)
    return sorted(chosen, key=lambda s: s.name)


def resolve_run(
    names: Iterable[str] | None,
    *,
    external: Iterable[str] = (),
    baseline: str,
    twins: int,
) -> list[Strategy]:
    """What a run measures: resolve(), plus the baseline's A/A twins, sorted by name."""
    chosen = with_twins(resolve(names, external=external), baseline, twins)
    return sorted(chosen, key=lambda s: s.name)
