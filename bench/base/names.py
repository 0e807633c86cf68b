"""Benchmark identity: one frozen value, one string form, one parser.

A benchmark name reads `<kind>/<strategy>[/<key>=<value>...]`, for example

    lookup/weakkey/op=get_hit/live=10000
    step/declared/pattern=cached

`kind` says what a benchmark measures (lookup, step, gc, gc_full, memory, scaling); the parameters are ordered and open-ended, so a new dimension is one more `key=value`
and every reader that selects by key keeps working. `str()` gives the string stored in pyperf
files; `BenchName.parse()` reads one back and refuses anything else with one line.

Readers never slice or split names themselves: they parse, then ask for `name["live"]`,
`name.condition` (the parameters as text, what a table row is labelled by) or `name.family`
(the name without its strategy: the unit in which strategies are compared).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from bench.base.errors import DataError

# Kinds and parameter keys are identifiers; strategies and values may also hold '-' and '.'
# (scenario presets such as prefill-dspark, sizes, twin names). '/' and '=' are separators.
_KIND_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_STRATEGY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_KEY_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_VALUE_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")


class BenchNameError(DataError):
    """A string that is not a benchmark name of this harness."""


# A/A twins of a run's baseline strategy are named "<baseline>.aa", "<baseline>.aa2", ...
TWIN_RE = re.compile(r"^(?P<of>[a-z][a-z0-9_]{0,39})\.aa(?P<n>[2-9]?)$")


def twin_of(strategy: str) -> str | None:
    """The strategy an A/A twin copies, or None for any other strategy name."""
    m = TWIN_RE.match(strategy)
    return m["of"] if m else None


# How names changed, for gates that compare with an older tree (bench/gate/protocol.py). When a
# parameter key is renamed, record {kind: {new_key: old_key}}; when a parameter is added to a
# kind, record {kind: {key: value}} with the value that a name without it measured (a gate then
# compares with an older base only where the candidate measures that value).
RENAMED_PARAMS: dict[str, dict[str, str]] = {}
ADDED_PARAMS: dict[str, dict[str, str]] = {}


# Parameters that are not part of a scheduler case: the access pattern and the GC mode a case
# was measured under (every other parameter of a step, gc or scaling name is: the scenario and
# any swept or scaled parameter).
NOT_CASE = ("pattern", "gc")


@dataclass(frozen=True, order=True)
class CaseKey:
    """A scheduler case: the scenario and any swept or scaled parameter. Its text form,
    'scenario=decode-dspark/decode_batch=64', keys queue series and the manifest's cases."""

    params: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, scenario: str, **extra: object) -> CaseKey:
        return cls((("scenario", scenario), *((k, str(v)) for k, v in extra.items())))

    @classmethod
    def parse(cls, text: str) -> CaseKey:
        """The text form back; BenchNameError for anything else."""
        params = []
        for part in filter(None, text.split("/")):
            key, sep, value = part.partition("=")
            if not sep or not _KEY_RE.match(key) or not _VALUE_RE.match(value):
                raise BenchNameError(f"not a scheduler case: {text!r}")
            params.append((key, value))
        return cls(tuple(params))

    @property
    def scenario(self) -> str:
        return dict(self.params).get("scenario", "")

    @property
    def extra(self) -> dict[str, str]:
        """The swept or scaled parameters, without the scenario."""
        return {k: v for k, v in self.params if k != "scenario"}

    def as_params(self) -> dict[str, str]:
        return dict(self.params)

    @property
    def text(self) -> str:
        return "/".join(f"{k}={v}" for k, v in self.params)

    @property
    def short(self) -> str:
        """'decode-dspark/decode_batch=64': the scenario bare, the rest as key=value."""
        return "/".join(v if k == "scenario" else f"{k}={v}" for k, v in self.params)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, order=True)
class BenchName:
    kind: str
    strategy: str
    params: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not _KIND_RE.match(self.kind):
            raise BenchNameError(f"benchmark kind {self.kind!r} is not an identifier")
        if not _STRATEGY_RE.match(self.strategy):
            raise BenchNameError(
                f"benchmark strategy {self.strategy!r} has a character out of place"
            )
        keys = [k for k, _ in self.params]
        if len(set(keys)) != len(keys):
            raise BenchNameError(f"benchmark parameters repeat a key: {keys}")
        for key, value in self.params:
            if not _KEY_RE.match(key) or not _VALUE_RE.match(value):
                raise BenchNameError(f"benchmark parameter {key}={value!r} is malformed")

    @classmethod
    def of(cls, kind: str, strategy: str, **params: object) -> BenchName:
        """BenchName.of("lookup", "weakkey", op="get_hit", live=1000): keyword order is kept."""
        return cls(kind, strategy, tuple((k, str(v)) for k, v in params.items()))

    @classmethod
    def parse(cls, text: str) -> BenchName:
        """The name `str()` wrote; one-line BenchNameError for anything else."""
        if not isinstance(text, str):
            raise BenchNameError(f"not a benchmark name: {text!r}")
        parts = text.split("/")
        if len(parts) < 2 or "=" in parts[0] or "=" in parts[1]:
            raise BenchNameError(
                f"not a reqstate-bench benchmark name: {text!r} "
                "(expected kind/strategy[/key=value...])"
            )
        params = []
        for part in parts[2:]:
            key, sep, value = part.partition("=")
            if not sep:
                raise BenchNameError(f"benchmark name {text!r}: {part!r} is not key=value")
            params.append((key, value))
        try:
            return cls(parts[0], parts[1], tuple(params))
        except BenchNameError as exc:
            raise BenchNameError(f"benchmark name {text!r}: {exc}") from None

    def __str__(self) -> str:
        return "/".join([self.kind, self.strategy, *(f"{k}={v}" for k, v in self.params)])

    # -- reading ------------------------------------------------------------------------------

    def get(self, key: str, default: str | None = None) -> str | None:
        for k, v in self.params:
            if k == key:
                return v
        return default

    def __getitem__(self, key: str) -> str:
        value = self.get(key)
        if value is None:
            raise KeyError(f"{self} has no parameter {key!r}")
        return value

    def __contains__(self, key: object) -> bool:
        return any(k == key for k, _ in self.params)

    def int(self, key: str) -> int:
        value = self[key]
        try:
            return int(value)
        except ValueError:
            raise BenchNameError(f"{self}: {key}={value!r} is not an integer") from None

    @property
    def condition(self) -> str:
        """The parameters as text ('op=get_hit/live=1000'): a row label within a kind."""
        return "/".join(f"{k}={v}" for k, v in self.params)

    @property
    def case(self) -> CaseKey:
        """The scheduler case a step, gc or scaling benchmark measured (its parameters without
        the access pattern and the GC mode)."""
        return CaseKey(tuple(p for p in self.params if p[0] not in NOT_CASE))

    @property
    def family(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        """(kind, params): what two strategies' benchmarks share when they are compared."""
        return self.kind, self.params

    def matches(self, **params: object) -> bool:
        """True when every given parameter has the given value."""
        return all(self.get(k) == str(v) for k, v in params.items())

    # -- deriving -----------------------------------------------------------------------------

    def with_strategy(self, strategy: str) -> BenchName:
        return BenchName(self.kind, strategy, self.params)

    def with_params(self, **params: object) -> BenchName:
        """Replace the values of existing keys in place; new keys go at the end."""
        given = {k: str(v) for k, v in params.items()}
        kept = tuple((k, given.pop(k, v)) for k, v in self.params)
        return BenchName(self.kind, self.strategy, kept + tuple(given.items()))

    def family_text(self, within: Iterable[str]) -> str:
        """The parameters but those `within` a family, as text: 'live=1000/regime=warm' for
        a lookup benchmark within=('op',). What an adaptive round measures alone."""
        dropped = set(within)
        return "/".join(f"{k}={v}" for k, v in self.params if k not in dropped)

    def without(self, *keys: str) -> BenchName:
        return BenchName(
            self.kind, self.strategy, tuple(p for p in self.params if p[0] not in keys)
        )


def parse_all(texts: Iterable[str]) -> dict[str, BenchName]:
    """Every name of an iterable of strings, parsed (raises on the first foreign one)."""
    return {t: BenchName.parse(t) for t in texts}
