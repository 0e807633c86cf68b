"""Read a run folder into typed, validated data, deriving every statistic as it is read.

Everything goes through bench.base.storage.read_json / bench.runformat.pyperf_io.load_pyperf and the typed
extras of bench.runformat.schema. A file the manifest names that is missing, truncated, not JSON, or
not what this harness writes raises DataError with one line naming the file and the problem; a
suite that was never run (or was interrupted) is kept with its status and no data, so the report
still renders and says so. Summaries, ratios, percentiles and GC rates are computed here (by
bench.stats) from the raw values, so re-rendering an old run applies the current analysis.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import suites
from bench.base.errors import DataError
from bench.base.names import BenchName, twin_of
from bench.base.storage import read_json
from bench.config.runconfig import RunConfig
from bench.runformat.pyperf_io import gc_modes_of, load_pyperf, runs_of, workers_of
from bench.runformat.schema import (
    MANIFEST,
    SELFCHECK_FILE,
    Environment,
    FamilyRecord,
    Manifest,
    SelfCheck,
    StrategyMeta,
    SuiteExtras,
    SuiteRecord,
    read_extra_file,
)
from bench.stats.cases import step_round_values
from bench.stats.derive import (
    GcRates,
    StepPercentiles,
    Summary,
    gc_rates,
    noise_floors,
    step_percentiles,
    summarize,
)
from bench.stats.rounds import Rounds
from bench.suites.spec import SuiteSpec

PROFILE_SHARES = Path("profile") / "shares.json"


@dataclass(frozen=True)
class SuiteData:
    """One suite of a run: what the manifest says, what its files hold (empty if not run), and
    what is derived from them."""

    name: str
    status: str
    spec: SuiteSpec | None  # its declaration; None for a suite this version does not know
    baseline: str = ""
    config: RunConfig = field(default_factory=RunConfig)  # the run's configuration
    runs: dict[str, list[list[float]]] = field(default_factory=dict)  # per worker process
    workers: dict[str, list[int]] = field(default_factory=dict)  # each run's worker index
    units: dict[str, str] = field(default_factory=dict)
    gc_modes: dict[str, str] = field(default_factory=dict)  # benchmark -> GC mode
    extras: SuiteExtras = field(default_factory=SuiteExtras)
    failures: dict[str, str] = field(default_factory=dict)
    worker_errors: list[str] = field(default_factory=list)
    wall_s: float | None = None
    budget_s: float | None = None  # its share of an adaptive run's budget
    families: dict[str, FamilyRecord] = field(default_factory=dict)  # rounds and precision

    @property
    def has_data(self) -> bool:
        return bool(self.runs)

    @functools.cached_property
    def values(self) -> dict[str, list[float]]:
        """Every benchmark's values over its runs (run order kept: value i of two benchmarks
        of one interleaved suite come from the same round)."""
        return {name: [v for run in runs for v in run] for name, runs in self.runs.items()}

    @functools.cached_property
    def rounds(self) -> Rounds:
        """Values per worker process with the worker each came from: what paired statistics
        pair (bench.stats.rounds)."""
        return Rounds(self.runs, self.workers)

    @functools.cached_property
    def net_rounds(self) -> Rounds:
        """The rounds costs net of control are taken from: the suite's own without the
        iterations a collection ran in (bench.stats.cases.step_round_values), for a suite that
        keeps per-iteration series of `steps_per_value` iterations a value."""
        opts = self.config.options.get(self.name)
        steps = getattr(opts, "steps_per_value", 0)
        if not steps:
            return self.rounds
        kind = self.spec.kind if self.spec is not None else self.name
        return step_round_values(self.rounds, self.extras.steps, steps, kind)

    @functools.cached_property
    def summaries(self) -> list[Summary]:
        spec = self.spec
        return summarize(
            self.runs,
            self.units,
            baseline=self.baseline,
            paired=True if spec is None else spec.paired,
            noise_keys=None if spec is None else spec.noise_keys,
            workers=self.workers,
        )

    @property
    def noise_floors(self) -> dict[object, float]:
        """Per noise family: the A/A twin's deviation (derive.noise_floors)."""
        keys = None if self.spec is None else self.spec.noise_keys
        return noise_floors(self.summaries, keys)

    def by_name(self) -> dict[str, Summary]:
        return {s.name: s for s in self.summaries}

    @functools.cached_property
    def percentiles(self) -> dict[str, StepPercentiles]:
        out = {}
        for name, series in sorted(self.extras.steps.items()):
            p = step_percentiles(series)
            if p is not None:
                out[name] = p
        return out

    @functools.cached_property
    def gc_rates(self) -> dict[str, GcRates]:
        return gc_rates(self.extras.gc)


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
    manifest: Manifest
    config: RunConfig  # the manifest's configuration, decoded
    suites: dict[str, SuiteData]
    profile: list[ProfileShare] | None
    selfcheck: SelfCheck | None = None

    @property
    def environment(self) -> Environment:
        return self.manifest.environment

    @property
    def strategies(self) -> dict[str, StrategyMeta]:
        return self.manifest.strategies

    @property
    def baseline(self) -> str:
        return self.config.baseline

    @property
    def command(self) -> str:
        return self.manifest.command

    @property
    def status(self) -> str:
        return self.manifest.status

    def is_reference(self, strategy: str) -> bool:
        """A strategy that holds no state (control) measures the harness, not a candidate."""
        meta = self.strategies.get(strategy)
        return meta is not None and not meta.holds_state

    def is_target(self, strategy: str) -> bool:
        """A revision of a user's tree (--target), measured only as written."""
        meta = self.strategies.get(strategy)
        return meta is not None and meta.target

    @property
    def requests_text(self) -> str:
        """The requests the run built, in words: an installed Req class, a request model's
        name, or each revision's own Req (a run of revisions writes one model file per
        revision; its machine path says nothing to a reader)."""
        model = self.environment.request_class or self.config.request_model
        if not model.endswith(".json"):
            return model
        if any(meta.target for meta in self.strategies.values()):
            return "each revision's own Req, read with ast"
        return Path(model).stem

    def pattern_of(self, strategy: str) -> str:
        """The access pattern a strategy's headline figures use: as written for a revision, the
        PR's per_field for the built-in strategies (an A/A twin follows its original)."""
        return self.manifest.pattern_of(strategy)

    @property
    def targets(self) -> dict[str, dict[str, Any]]:
        """Revisions measured (--target), by strategy name: path, revision, full hash, layout."""
        return self.manifest.targets

    def is_twin(self, strategy: str) -> bool:
        """An A/A twin of the baseline (<baseline>.aa): its row is the noise floor, never a
        candidate."""
        return twin_of(strategy) is not None

    def strategy_names(self) -> list[str]:
        """Every strategy in the manifest or the results: baseline first, its A/A twins next,
        then by name."""
        names = set(self.strategies)
        for suite in self.suites.values():
            names.update(BenchName.parse(n).strategy for n in suite.runs)
        return sorted(names, key=lambda n: (n != self.baseline, not self.is_twin(n), n))

    def suite(self, name: str) -> SuiteData | None:
        s = self.suites.get(name)
        return s if s is not None and s.has_data else None

    def with_data(self) -> list[SuiteData]:
        return [s for s in self.suites.values() if s.has_data]


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


def load_manifest(run_dir: Path) -> Manifest:
    if not run_dir.is_dir():
        raise DataError(f"{run_dir}: no such run folder")
    return Manifest.read(run_dir)


def run_config(manifest: Manifest, path: Path) -> RunConfig:
    """The run's configuration (keys another version wrote and this one does not know are
    ignored: an old run still renders)."""
    try:
        return suites.config_from_json(json.dumps(manifest.config), strict=False)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{path}: unusable configuration ({exc})") from None


def _pyperf_runs(
    path: Path,
) -> tuple[dict[str, list[list[float]]], dict[str, str], dict[str, str], dict[str, list[int]]]:
    suite = load_pyperf(path)
    runs = runs_of(suite)
    for name, per_run in runs.items():
        try:
            BenchName.parse(name)
        except DataError as exc:
            raise _fail(path, str(exc)) from None
        for vals in per_run:
            if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in vals):
                raise _fail(path, f"benchmark {name!r} holds values that are not finite numbers")
    units = {b.get_name(): str(b.get_unit()) for b in suite.get_benchmarks()}
    return runs, units, gc_modes_of(suite), workers_of(suite)


def load_suite(run_dir: Path, name: str, st: SuiteRecord, config: RunConfig) -> SuiteData:
    manifest_path = run_dir / MANIFEST
    files = st.files
    spec = next((s for s in suites.specs() if s.name == name), None)
    extras = spec.extras() if spec is not None else SuiteExtras()
    runs: dict[str, list[list[float]]] = {}
    units: dict[str, str] = {}
    modes: dict[str, str] = {}
    workers: dict[str, list[int]] = {}
    if "extra" in files:
        path = _inside(run_dir, files["extra"], manifest_path, f"suites.{name}.files.extra")
        extras = read_extra_file(read_json(path), name, path, type(extras))
    if "pyperf" in files:
        path = _inside(run_dir, files["pyperf"], manifest_path, f"suites.{name}.files.pyperf")
        runs, units, modes, workers = _pyperf_runs(path)
    status = SuiteData(
        name,
        st.status,
        spec,
        config.baseline,
        config,
        failures=dict(st.failures),
        worker_errors=list(st.worker_errors),
        wall_s=st.wall_s,
        budget_s=st.budget_s,
        families=dict(st.families),
    )
    return dataclasses.replace(
        status, runs=runs, workers=workers, units=units, gc_modes=modes, extras=extras
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
    """The whole run folder, validated; suites in the registry's order, unknown ones after."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    config = run_config(manifest, run_dir / MANIFEST)
    listed = config.suites or tuple(manifest.suites)
    known = [s.name for s in suites.specs()]
    order = [s for s in known if s in listed or s in manifest.suites]
    order += [s for s in manifest.suites if s not in order]
    loaded = {
        name: load_suite(
            run_dir, name, manifest.suites.get(name, SuiteRecord(status="not run")), config
        )
        for name in order
    }
    return RunData(
        path=run_dir,
        manifest=manifest,
        config=config,
        suites=loaded,
        profile=load_profile(run_dir),
        selfcheck=load_selfcheck(run_dir),
    )


def load_selfcheck(run_dir: Path) -> SelfCheck | None:
    path = run_dir / SELFCHECK_FILE
    if not path.exists():
        return None
    try:
        return SelfCheck.from_json(read_json(path))
    except ValueError as exc:
        raise _fail(path, str(exc)) from None
