"""Read a run folder into typed, validated data for the report.

Everything goes through bench.results.read_json / load_pyperf. A file the manifest names that
is missing, truncated, not JSON, or not what this harness writes raises DataError with one line
naming the file and the problem; a suite that was never run (or was interrupted) is kept with
its status and no data, so the report still renders and says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from bench.analysis import Summary
from bench.config import SUITES
from bench.errors import DataError
from bench.results import SCHEMA, load_pyperf, read_json, values_of

MANIFEST = "manifest.json"
PROFILE_SHARES = Path("profile") / "shares.json"

_MANIFEST_KEYS: dict[str, type] = {
    "command": str,
    "config": dict,
    "environment": dict,
    "strategies": dict,
    "suites": dict,
    "status": str,
}
_NUMBER_FIELDS = ("median", "q1", "q3", "ci_low", "ci_high")
_OPTIONAL_NUMBER_FIELDS = ("ratio", "ratio_low", "ratio_high", "p_value")


@dataclass(frozen=True)
class SuiteData:
    """One suite of a run: what the manifest says and what its files hold (empty if not run)."""

    name: str
    status: str
    summaries: list[Summary] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    values: dict[str, list[float]] = field(default_factory=dict)
    gc_modes: tuple[str, ...] = ()
    failures: dict[str, str] = field(default_factory=dict)
    worker_errors: list[str] = field(default_factory=list)
    wall_s: float | None = None

    @property
    def has_data(self) -> bool:
        return bool(self.summaries or self.values)

    def by_name(self) -> dict[str, Summary]:
        return {s.name: s for s in self.summaries}


@dataclass(frozen=True)
class ProfileShare:
    strategy: str
    samples: int
    strategy_share: float
    gc_share: float
    flamegraph: str | None
    speedscope: str | None


@dataclass(frozen=True)
class RunData:
    path: Path
    manifest: dict[str, Any]
    suites: dict[str, SuiteData]
    profile: list[ProfileShare] | None

    @property
    def environment(self) -> dict[str, Any]:
        return dict(self.manifest["environment"])

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.manifest["config"])

    @property
    def strategies(self) -> dict[str, dict[str, Any]]:
        return dict(self.manifest["strategies"])

    @property
    def baseline(self) -> str:
        return str(self.manifest["config"].get("baseline", ""))

    @property
    def command(self) -> str:
        return str(self.manifest["command"])

    @property
    def status(self) -> str:
        return str(self.manifest["status"])

    def strategy_names(self) -> list[str]:
        """Every strategy in the manifest or the results, baseline first, then by name."""
        names = set(self.strategies)
        for suite in self.suites.values():
            names.update(s.strategy for s in suite.summaries if s.strategy)
        return sorted(names, key=lambda n: (n != self.baseline, n))

    def suite(self, name: str) -> SuiteData | None:
        s = self.suites.get(name)
        return s if s is not None and s.has_data else None


def _fail(path: Path, problem: str) -> DataError:
    return DataError(f"{path}: {problem}")


def _expect(value: Any, kind: type | tuple[type, ...], path: Path, where: str) -> Any:
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _fail(path, f"{where} should be {names}, got {type(value).__name__}")
    return value


def _number(value: Any, path: Path, where: str) -> float:
    _expect(value, (int, float), path, where)
    return float(value)


def _inside(run_dir: Path, rel: str, path: Path, where: str) -> Path:
    """A relative file name from a result file, refused if it leaves the run folder."""
    _expect(rel, str, path, where)
    target = run_dir / rel
    if not target.resolve().is_relative_to(run_dir.resolve()):
        raise _fail(path, f"{where} points outside the run folder ({rel!r})")
    return target


def load_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / MANIFEST
    if not run_dir.is_dir():
        raise DataError(f"{run_dir}: no such run folder")
    data = read_json(path)
    if not isinstance(data, dict):
        raise _fail(path, f"not a reqstate-bench manifest (a JSON {type(data).__name__})")
    schema = data.get("schema")
    if schema is None:
        raise _fail(path, f"not a reqstate-bench manifest (no 'schema'; expected {SCHEMA!r})")
    if schema != SCHEMA:
        raise _fail(path, f"incompatible schema {schema!r} (this version reads {SCHEMA!r})")
    for key, kind in _MANIFEST_KEYS.items():
        if key not in data:
            raise _fail(path, f"manifest has no {key!r}")
        _expect(data[key], kind, path, key)
    for name, meta in data["strategies"].items():
        _expect(meta, dict, path, f"strategies.{name}")
    for name, st in data["suites"].items():
        _expect(st, dict, path, f"suites.{name}")
        _expect(st.get("status", "missing"), str, path, f"suites.{name}.status")
        _expect(st.get("files", {}), dict, path, f"suites.{name}.files")
        _expect(st.get("failures", {}), dict, path, f"suites.{name}.failures")
        _expect(st.get("worker_errors", []), list, path, f"suites.{name}.worker_errors")
    return data


def _summary(raw: Any, path: Path, i: int) -> Summary:
    where = f"summaries[{i}]"
    _expect(raw, dict, path, where)
    known = {f.name for f in fields(Summary)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise _fail(path, f"{where} has unknown key {unknown[0]!r}")
    try:
        s = Summary(**raw)
    except TypeError as exc:
        raise _fail(path, f"{where} is not a benchmark summary ({exc})") from None
    for key in ("name", "scenario", "strategy", "params", "unit"):
        _expect(getattr(s, key), str, path, f"{where}.{key}")
    for key in _NUMBER_FIELDS:
        _number(getattr(s, key), path, f"{where}.{key}")
    for key in _OPTIONAL_NUMBER_FIELDS:
        if getattr(s, key) is not None:
            _number(getattr(s, key), path, f"{where}.{key}")
    return s


def _check_mapping_of(
    extra: Mapping[str, Any], key: str, path: Path, numbers: tuple[str, ...] = ()
) -> None:
    """extra[key], when present, maps names to objects whose `numbers` keys are numeric."""
    if key not in extra:
        return
    _expect(extra[key], dict, path, key)
    for name, entry in extra[key].items():
        _expect(entry, dict, path, f"{key}.{name}")
        for n in numbers:
            if entry.get(n) is not None:
                _number(entry[n], path, f"{key}.{name}.{n}")


def _validate_extra(extra: Any, suite: str, path: Path) -> tuple[dict[str, Any], list[Summary]]:
    if not isinstance(extra, dict) or "summaries" not in extra:
        raise _fail(path, "not a reqstate-bench results file (no 'summaries')")
    if extra.get("schema", SCHEMA) != SCHEMA:
        raise _fail(path, f"incompatible schema {extra['schema']!r} (expected {SCHEMA!r})")
    if extra.get("suite", suite) != suite:
        raise _fail(path, f"holds suite {extra['suite']!r}, the manifest expects {suite!r}")
    summaries = [
        _summary(s, path, i)
        for i, s in enumerate(_expect(extra["summaries"], list, path, "summaries"))
    ]
    _check_mapping_of(extra, "percentiles", path, ("p50_ns", "p99_ns", "p999_ns", "max_ns"))
    _check_mapping_of(extra, "pattern_ratios", path, ("ratio", "ci_low", "ci_high"))
    _check_mapping_of(extra, "fits", path, ("marginal_ns_per_request", "marginal_loglog_slope"))
    if "step_host_ns" in extra:
        for name, vals in _expect(extra["step_host_ns"], dict, path, "step_host_ns").items():
            for v in _expect(vals, list, path, f"step_host_ns.{name}"):
                _number(v, path, f"step_host_ns.{name}[]")
    for name, fit in extra.get("fits", {}).items():
        for key in ("sizes", "step_s", "per_request_s"):
            for v in _expect(fit.get(key, []), list, path, f"fits.{name}.{key}"):
                _number(v, path, f"fits.{name}.{key}[]")
    if "gc_rates" in extra:
        for mode, rates in _expect(extra["gc_rates"], dict, path, "gc_rates").items():
            _check_mapping_of(
                {f"gc_rates.{mode}": rates},
                f"gc_rates.{mode}",
                path,
                ("pause_ms_per_kstep", "max_pause_ms", "steps"),
            )
            for name, r in rates.items():
                where = f"gc_rates.{mode}.{name}.collections_per_kstep"
                for v in _expect(r.get("collections_per_kstep", []), list, path, where):
                    _number(v, path, f"{where}[]")
    if "memory" in extra:
        for name, m in _expect(extra["memory"], dict, path, "memory").items():
            if isinstance(m, dict):
                for k, v in m.items():
                    _number(v, path, f"memory.{name}.{k}")
            else:
                _number(m, path, f"memory.{name}")
    return extra, summaries


def _pyperf_values(path: Path) -> tuple[dict[str, list[float]], tuple[str, ...]]:
    suite = load_pyperf(path)
    values = values_of(suite)
    modes = set()
    for bench in suite.get_benchmarks():
        mode = bench.get_metadata().get("gc_mode")
        if isinstance(mode, str):
            modes.add(mode)
    for name, vals in values.items():
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in vals):
            raise _fail(path, f"benchmark {name!r} holds values that are not finite numbers")
    return values, tuple(sorted(modes))


def load_suite(run_dir: Path, name: str, st: Mapping[str, Any]) -> SuiteData:
    manifest_path = run_dir / MANIFEST
    files = st.get("files", {})
    extra: dict[str, Any] = {}
    summaries: list[Summary] = []
    values: dict[str, list[float]] = {}
    gc_modes: tuple[str, ...] = ()
    if "extra" in files:
        path = _inside(run_dir, files["extra"], manifest_path, f"suites.{name}.files.extra")
        extra, summaries = _validate_extra(read_json(path), name, path)
    if "pyperf" in files:
        path = _inside(run_dir, files["pyperf"], manifest_path, f"suites.{name}.files.pyperf")
        values, gc_modes = _pyperf_values(path)
    wall = st.get("wall_s")
    return SuiteData(
        name=name,
        status=str(st.get("status", "missing")),
        summaries=summaries,
        extra=extra,
        values=values,
        gc_modes=gc_modes,
        failures={str(k): str(v) for k, v in st.get("failures", {}).items()},
        worker_errors=[str(e) for e in st.get("worker_errors", [])],
        wall_s=float(wall) if isinstance(wall, (int, float)) else None,
    )


def load_profile(run_dir: Path) -> list[ProfileShare] | None:
    path = run_dir / PROFILE_SHARES
    if not path.exists():
        return None
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise _fail(path, "not a profile shares file (expected an object keyed by strategy)")
    out = []
    for strategy, entry in sorted(raw.items()):
        _expect(entry, dict, path, strategy)
        for key in ("samples", "strategy_share", "gc_share"):
            if key not in entry:
                raise _fail(path, f"{strategy} has no {key!r}")
            _number(entry[key], path, f"{strategy}.{key}")
        links = {}
        for key in ("flamegraph", "speedscope"):
            rel = entry.get(key)
            if rel is not None:
                _inside(run_dir, rel, path, f"{strategy}.{key}")
            links[key] = rel
        out.append(
            ProfileShare(
                strategy=str(strategy),
                samples=int(entry["samples"]),
                strategy_share=float(entry["strategy_share"]),
                gc_share=float(entry["gc_share"]),
                flamegraph=links["flamegraph"],
                speedscope=links["speedscope"],
            )
        )
    return out


def load_run(run_dir: Path) -> RunData:
    """The whole run folder, validated; suites in the order the run lists them."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    listed = manifest["config"].get("suites") or list(manifest["suites"])
    order = [s for s in SUITES if s in listed or s in manifest["suites"]]
    order += [s for s in manifest["suites"] if s not in order]
    suites = {
        name: load_suite(run_dir, name, manifest["suites"].get(name, {"status": "not run"}))
        for name in order
    }
    return RunData(path=run_dir, manifest=manifest, suites=suites, profile=load_profile(run_dir))
