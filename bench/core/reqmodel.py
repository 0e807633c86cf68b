"""Request models: what SGLang's `Req` holds, read from its source with `ast`, and tables of it
the harness ships (bench/data/request_models/<name>.json).

    python -m bench workload import-req PATH/TO/schedule_batch.py --name NAME

reads `class Req`, its `__init__` and the methods and mixin initialisers `__init__` calls on
`self` (a mixin in another module of the same package is followed), and records for every
instance attribute its first assignment: line, source text, and the kind of value it holds when
the request is built with the minimal constructor arguments (rid, origin_input_text,
origin_input_ids, sampling_params; every other parameter at its default):

    none int float bool str      scalars (not tracked by the cyclic GC)
    list dict set tuple          containers (GC-tracked, but the empty tuple)
    array                        array('q') (not tracked)
    tensor                       a torch tensor (tracked)
    object                       a small object (ReqLogprob, time stats: tracked)
    rid text ids sampling        the required parameters: the id, the prompt text, the prompt's
                                 token ids (array('q') of the prompt's length), sampling params

bench.core.workload generates a request class from a model, so dict size, GC-tracked values and
construction cost follow the real class.
"""

from __future__ import annotations

import ast
import functools
import gc
import json
import os
from array import array
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePath
from typing import Any, Protocol

from bench.core.holders import Holder, holders_of

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "request_models"
# The model the PR targets: the fork's head (bytedance-iaas/sglang c96e68b62b).
DEFAULT_MODEL = "fork-c96e68b62b"
SYNTHETIC = "synthetic"  # the earlier generated table (bench.core.workload), kept for comparison
TRACKED_KINDS = frozenset({"list", "dict", "set", "tensor", "object", "sampling"})
_REQUIRED = {
    "rid": "rid",
    "origin_input_text": "text",
    "origin_input_ids": "ids",
    "sampling_params": "sampling",
}
# Inlined methods nest at most this deep (a method calling a method calling ...).
MAX_INLINE_DEPTH = 4


class ImportReqError(ValueError):
    """The file cannot be read as a schedule_batch.py (one line, exit 2 from the CLI)."""


class Files(Protocol):
    """Where source files are read from: the disk, or one revision of a git repository
    (bench.target.tree). Paths are those of the schedule_batch.py given and its siblings."""

    def read_text(self, path: PurePath) -> str: ...

    def is_file(self, path: PurePath) -> bool: ...


class Disk:
    """Files on disk."""

    def read_text(self, path: PurePath) -> str:
        return Path(path).read_text(encoding="utf-8")

    def is_file(self, path: PurePath) -> bool:
        return Path(path).is_file()


@dataclass(frozen=True)
class Attr:
    name: str
    kind: str
    line: int
    source: str
    value: Any = None  # the literal for scalar kinds
    where: str = ""  # the file when not the class's own (a mixin's module)
    nested: bool = False  # first assigned inside an if/for/try block


@dataclass(frozen=True)
class Param:
    name: str
    default: Any  # a literal (None, bool, int, float, str)


@dataclass(frozen=True)
class RequestModel:
    name: str
    origin: str
    attrs: tuple[Attr, ...]
    params: tuple[Param, ...] = ()
    inlined: tuple[str, ...] = ()  # methods whose self-assignments were followed
    notes: tuple[str, ...] = field(default=())
    # Nested objects read from the model's own tree (call -> bench.core.holders.Holder): a
    # revision's containers in target mode; the shipped models' are in holders.HOLDERS.
    holders: tuple[tuple[str, Any], ...] = ()

    def histogram(self) -> dict[str, int]:
        return dict(Counter(a.kind for a in self.attrs).most_common())

    def tracked(self) -> int:
        """Attribute values the cyclic GC tracks at construction, on this interpreter (arrays
        are GC-tracked on some CPython versions and not on others)."""

        kinds = TRACKED_KINDS | ({"array", "ids"} if gc.is_tracked(array("q")) else set())
        sampling = holders_of(self).get("SamplingParams")
        if sampling is not None and sampling.layout == "struct":
            kinds -= {"sampling"}  # a msgspec.Struct of scalars: not tracked
        return sum(1 for a in self.attrs if a.kind in kinds)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "origin": self.origin,
            "attributes": [asdict(a) for a in self.attrs],
            "params": [asdict(p) for p in self.params],
            "inlined": list(self.inlined),
            "notes": list(self.notes),
            **({"holders": {c: h.to_json() for c, h in self.holders}} if self.holders else {}),
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> RequestModel:
        return cls(
            name=str(raw["name"]),
            origin=str(raw["origin"]),
            attrs=tuple(Attr(**a) for a in raw["attributes"]),
            params=tuple(Param(**p) for p in raw.get("params", [])),
            inlined=tuple(raw.get("inlined", [])),
            notes=tuple(raw.get("notes", [])),
            holders=_holders(raw.get("holders", {})),
        )


def _holders(raw: dict[str, Any]) -> tuple[tuple[str, Any], ...]:

    return tuple((str(c), Holder.from_json(h)) for c, h in raw.items())


# -- reading the source -------------------------------------------------------------------------


def _literal(node: ast.AST) -> tuple[bool, Any]:
    if isinstance(node, ast.Constant) and isinstance(
        node.value, (type(None), bool, int, float, str)
    ):
        return True, node.value
    return False, None


class _Reader:
    def __init__(self, path: PurePath, files: Files) -> None:
        self.path = path
        self.files = files
        self.tree = _parse(path, files)
        self.params: dict[str, Any] = {}
        self.required: dict[str, str] = {}
        self.attrs: dict[str, Attr] = {}
        self.inlined: list[str] = []
        self.notes: list[str] = []

    def classes(self, tree: ast.Module) -> dict[str, ast.ClassDef]:
        return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def read(self) -> None:
        classes = self.classes(self.tree)
        req = classes.get("Req")
        if req is None:
            raise ImportReqError(f"{self.path}: no `class Req` in this file")
        methods = self._methods(req, self.tree, self.path)
        init = methods.get("__init__")
        if init is None:
            raise ImportReqError(f"{self.path}: class Req has no __init__")
        self._signature(init[0])
        self._walk(init[0].body, methods, init[1], depth=0, nested=False)

    def _methods(
        self, cls: ast.ClassDef, tree: ast.Module, where: PurePath
    ) -> dict[str, tuple[ast.FunctionDef, PurePath]]:
        """A class's methods, then its bases' (same module, or a module of the package)."""
        out: dict[str, tuple[ast.FunctionDef, PurePath]] = {}
        for base in cls.bases:
            name = base.id if isinstance(base, ast.Name) else None
            if name is None:
                continue
            found = self._base(name, tree, where)
            if found is None:
                self.notes.append(f"base class {name} not found beside {where.name}: not followed")
                continue
            base_cls, base_tree, base_path = found
            for k, v in self._methods(base_cls, base_tree, base_path).items():
                out.setdefault(k, v)
        for node in cls.body:
            if isinstance(node, ast.FunctionDef):
                out[node.name] = (node, where)
        return out

    def _base(
        self, name: str, tree: ast.Module, where: PurePath
    ) -> tuple[ast.ClassDef, ast.Module, PurePath] | None:
        local = self.classes(tree).get(name)
        if local is not None:
            return local, tree, where
        for node in tree.body:
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and any(a.name == name for a in node.names)
            ):
                parts = node.module.split(".")
                for parent in where.parents:
                    candidate = parent.joinpath(*parts).with_suffix(".py")
                    if parent.name != parts[0] and self.files.is_file(candidate):
                        other = _parse(candidate, self.files)
                        cls = self.classes(other).get(name)
                        if cls is not None:
                            return cls, other, candidate
        return None

    def _signature(self, init: ast.FunctionDef) -> None:
        args = init.args
        positional = args.args[1:]  # without self
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
        defaults += list(args.defaults)
        pairs = list(zip(positional, defaults, strict=True))
        pairs += list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
        for arg, default in pairs:
            if default is None:
                self.required[arg.arg] = _REQUIRED.get(arg.arg, "object")
                continue
            ok, value = _literal(default)
            self.params[arg.arg] = value if ok else None

    def _walk(
        self,
        body: list[ast.stmt],
        methods: dict[str, tuple[ast.FunctionDef, PurePath]],
        where: PurePath,
        *,
        depth: int,
        nested: bool,
    ) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if stmt.value is None:
                    continue
                for target in targets:
                    self._assign(target, stmt.value, stmt.lineno, where, nested)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                func = stmt.value.func
                if (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and func.value.id == "self"
                    and func.attr in methods
                    and depth < MAX_INLINE_DEPTH
                ):
                    method, method_where = methods[func.attr]
                    self.inlined.append(func.attr)
                    self._walk(method.body, methods, method_where, depth=depth + 1, nested=nested)
            children = ("body", "orelse", "finalbody")
            if isinstance(stmt, ast.If) and self._truth(stmt.test) is False:
                # the branch the minimal arguments take first: its values are the instance's
                children = ("orelse", "body", "finalbody")
            for child in children:
                if not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and isinstance(
                    getattr(stmt, child, None), list
                ):
                    self._walk(getattr(stmt, child), methods, where, depth=depth, nested=True)
            for handler in getattr(stmt, "handlers", []):
                self._walk(handler.body, methods, where, depth=depth, nested=True)

    def _assign(
        self, target: ast.expr, value: ast.expr, line: int, where: PurePath, nested: bool
    ) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._assign(t, value, line, where, nested)
            return
        if not (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            return
        if target.attr in self.attrs:
            return
        kind, literal = self._kind(value)
        self.attrs[target.attr] = Attr(
            name=target.attr,
            kind=kind,
            line=line,
            source=ast.unparse(value)[:120],
            value=literal,
            where="" if where == self.path else where.name,
            nested=nested,
        )

    def _truth(self, node: ast.expr) -> bool | None:
        """The value of a condition with the minimal constructor arguments, when the reader can
        tell (a parameter's literal default, `not`, `is None`, `and`/`or` of those)."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self._truth(node.operand)
            return None if inner is None else not inner
        if isinstance(node, ast.Name) and node.id in self.params:
            return bool(self.params[node.id])
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.left, ast.Name)
            and node.left.id in self.params
            and isinstance(node.comparators[0], ast.Constant)
            and node.comparators[0].value is None
            and isinstance(node.ops[0], (ast.Is, ast.IsNot))
        ):
            is_none = self.params[node.left.id] is None
            return is_none if isinstance(node.ops[0], ast.Is) else not is_none
        if isinstance(node, ast.BoolOp):
            values = [self._truth(v) for v in node.values]
            if isinstance(node.op, ast.And):
                if False in values:
                    return False
                return True if all(v is True for v in values) else None
            if True in values:
                return True
            return False if all(v is False for v in values) else None
        return None

    def _falsy(self, node: ast.expr) -> bool:
        """Does this expression evaluate falsy with minimal constructor arguments?"""
        kind, value = self._kind(node)
        if kind in ("none",):
            return True
        if kind in ("int", "float", "bool", "str"):
            return not value
        return False

    def _kind(self, node: ast.expr) -> tuple[str, Any]:
        ok, value = _literal(node)
        if ok:
            if value is None:
                return "none", None
            return {bool: "bool", int: "int", float: "float", str: "str"}[type(value)], value
        if isinstance(node, ast.List):
            return "list", None
        if isinstance(node, ast.Dict):
            return "dict", None
        if isinstance(node, ast.Set):
            return "set", None
        if isinstance(node, ast.Tuple):
            return ("tuple", None) if node.elts else ("none", None)  # () is an untracked singleton
        if isinstance(node, ast.Name):
            if node.id in self.required:
                return self.required[node.id], None
            if node.id in self.params:
                return self._kind(ast.Constant(self.params[node.id]))
            return "object", None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "self" and node.attr in self.attrs:  # an attribute set earlier
                earlier = self.attrs[node.attr]
                return earlier.kind, earlier.value
            return "object", None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            kind, value = self._kind(node.operand)
            if kind in ("int", "float") and value is not None:
                return kind, -value if isinstance(node.op, ast.USub) else value
            return kind, None
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ("array", "array.array"):
                return "array", None
            if name.startswith("torch."):
                return "tensor", None
            simple = {
                "list": "list",
                "dict": "dict",
                "set": "set",
                "len": "int",
                "int": "int",
                "float": "float",
                "str": "str",
                "bool": "bool",
            }
            if name in simple:
                return simple[name], (
                    {"int": 0, "float": 0.0, "str": "", "bool": False}.get(simple[name])
                )
            return "object", None
        if isinstance(node, ast.IfExp):
            return self._kind(node.orelse if self._falsy(node.test) else node.body)
        if isinstance(node, ast.BoolOp):
            pick = node.values[-1]
            for v in node.values[:-1]:
                falsy = self._falsy(v)
                if (isinstance(node.op, ast.Or) and not falsy) or (
                    isinstance(node.op, ast.And) and falsy
                ):
                    pick = v
                    break
            return self._kind(pick)
        if isinstance(node, (ast.Compare,)) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
        ):
            return "bool", False
        if isinstance(node, ast.BinOp):
            return self._kind(node.left)
        return "object", None


def _parse(path: PurePath, files: Files) -> ast.Module:
    try:
        text = files.read_text(path)
    except FileNotFoundError:
        raise ImportReqError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ImportReqError(f"{path}: cannot be read ({exc})") from None
    try:
        return ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise ImportReqError(f"{path}: not valid Python ({exc.msg} at line {exc.lineno})") from None


def import_req(
    path: PurePath, name: str, origin: str = "", files: Files | None = None
) -> RequestModel:
    """Read a schedule_batch.py (from disk, or from `files`: one revision of a repository);
    ImportReqError (one line) when it is not one."""
    reader = _Reader(path if files is not None else Path(path), files or Disk())
    reader.read()
    # In the order __init__ first assigns them, a mixin's initialiser at its call: the order of
    # a real instance's __dict__ (its keys' order decides nothing but is part of being equal).
    attrs = tuple(reader.attrs.values())
    params = tuple(Param(k, v) for k, v in reader.params.items())
    return RequestModel(
        name=name,
        origin=origin or str(PurePath(path).name),
        attrs=attrs,
        params=params,
        inlined=tuple(dict.fromkeys(reader.inlined)),
        notes=tuple(reader.notes),
    )


# -- the shipped tables -------------------------------------------------------------------------


def user_dir() -> Path:
    """Where `workload import-req` keeps a user's models: $XDG_DATA_HOME (default
    ~/.local/share)/reqstate-bench/request_models. The shipped tables (DATA_DIR) are read-only:
    a harness installed into site-packages could not write there, and a checkout would show
    the imported file as its own."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "reqstate-bench" / "request_models"


def shipped() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in DATA_DIR.glob("*.json")))


def imported() -> tuple[str, ...]:
    """The user's own models (user_dir()), those a shipped name does not hide."""
    folder = user_dir()
    if not folder.is_dir():
        return ()
    return tuple(sorted(p.stem for p in folder.glob("*.json") if p.stem not in shipped()))


def available() -> tuple[str, ...]:
    return (*shipped(), *imported(), SYNTHETIC)


def load(name: str) -> RequestModel | None:
    """A model by name, shipped or the user's own (None for `synthetic`, the generated table),
    or a table file
    (a path ending in .json: a target revision's own Req); ValueError if unknown."""
    if name == SYNTHETIC:
        return None
    if name.endswith(".json"):
        if not Path(name).is_file():
            raise ValueError(f"request model table {name}: no such file")
        return _read(Path(name))
    path = DATA_DIR / f"{name}.json"
    if not path.is_file():
        path = user_dir() / f"{name}.json"
    if not path.is_file():
        raise ValueError(f"unknown request model {name!r}; choose from {', '.join(available())}")
    return _read(path)


@functools.lru_cache(maxsize=16)
def _read(path: Path) -> RequestModel:
    return RequestModel.from_json(json.loads(path.read_text(encoding="utf-8")))


def describe(model: RequestModel) -> str:
    """What import-req prints: the count and a kind histogram."""
    hist = ", ".join(f"{k} {n}" for k, n in model.histogram().items())
    lines = [
        f"{len(model.attrs)} attributes ({hist})",
        f"{model.tracked()} GC-tracked values at construction; {len(model.params)} keyword parameters",
    ]
    if model.inlined:
        lines.append(f"followed from __init__: {', '.join(model.inlined)}")
    lines += [f"note: {n}" for n in model.notes]
    return "\n".join(lines)
