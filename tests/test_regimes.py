"""The memory regimes step figures are taken in (bench.measure.regime), the cases and prose that
carry them, the precision of a --target run's change, and the selfcheck's scan."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.base import cpucache
from bench.base.errors import UsageError
from bench.base.names import BenchName, CaseKey
from bench.measure import regime
from bench.orchestration.adaptive import change_precision
from bench.report.comparable import machine_differences
from bench.runformat.schema import Environment, SelfCheck
from bench.stats.cases import Case
from bench.stats.rounds import Rounds


def test_llc_and_sweep_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i, size in enumerate(("32K", "1024K", "49152K")):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "size").write_text(size + "\n")
    monkeypatch.delenv(cpucache.SWEEP_ENV, raising=False)
    monkeypatch.setattr(cpucache, "CACHE_DIR", tmp_path)
    assert cpucache.llc_bytes() == 48 << 20
    assert regime.sweep_bytes() == 96 << 20  # twice the LLC
    assert regime.sweep_bytes(8) == 8 << 20  # as configured
    monkeypatch.setenv(cpucache.SWEEP_ENV, "16")
    assert regime.sweep_bytes() == 16 << 20  # the machine's, where the run sets none
    assert regime.sweep_bytes(8) == 8 << 20
    monkeypatch.setenv(cpucache.SWEEP_ENV, "lots")
    with pytest.raises(UsageError, match="positive number of MiB"):
        regime.sweep_bytes()
    monkeypatch.delenv(cpucache.SWEEP_ENV)
    monkeypatch.setattr(cpucache, "CACHE_DIR", tmp_path / "absent")
    assert cpucache.llc_bytes() is None
    assert regime.sweep_bytes() == regime.DEFAULT_SWEEP_BYTES


def test_hooks() -> None:
    touched: list[object] = []

    class Strategy:
        fields = ("a", "b")

        @staticmethod
        def peek(req: object) -> object:
            touched.append(req)
            return type("S", (), {"a": 1, "b": 2})()

    class Tracked:
        def __init__(self, req: object) -> None:
            self.req = req

    class Sched:
        strategy = Strategy()

        def live_tracked(self) -> list[Tracked]:
            return [Tracked(type("R", (), {})()) for _ in range(3)]

    regime.prepare_hook("warm", Sched(), None)()
    assert len(touched) == 3
    sweep = regime.CacheSweep(1 << 16)
    assert regime.prepare_hook("cold", Sched(), sweep) is sweep
    sweep()  # reads every line, returns nothing
    with pytest.raises(ValueError, match="needs a CacheSweep"):
        regime.prepare_hook("cold", Sched(), None)
    with pytest.raises(ValueError, match="unknown step regime 'tepid'"):
        regime.prepare_hook("tepid", Sched(), None)


def test_step_regimes_are_validated() -> None:
    from bench import suites

    config = suites.default_config()
    assert next(extra for _sc, extra in config.options["step"].cases(config)) == {"regime": "cold"}
    for bad in (("tepid",), ("cold",), ()):
        with pytest.raises(ValueError, match="step_regimes"):
            config.with_suite("step", regimes=bad).validate()


def _case(**extra: str) -> Case:
    return Case(CaseKey.of("decode-dspark", **extra), "decode-dspark", "", (), {}, {}, {}, [], {})


def test_a_case_finds_itself_in_the_other_regime() -> None:
    from bench.report.scenarios.prose import headline_cases

    warm, cold, swept = _case(), _case(regime="cold"), _case(decode_batch="64")
    cases = [warm, cold, swept]
    assert (warm.regime, cold.regime) == ("warm", "cold")
    assert warm.in_regime(cases, "cold") is cold
    assert cold.in_regime(cases, "warm") is warm
    assert swept.in_regime(cases, "cold") is None
    assert headline_cases(cases) == [warm, swept]  # the cold one goes into warm's paragraph


def _rounds(base: list[float], head: list[float], workers: int = 4) -> Rounds:
    """Two benchmarks, `workers` processes of the same per-round values (paired by worker)."""
    names = {
        str(BenchName.of("step", s, scenario="decode-dspark", pattern="as_written")): v
        for s, v in (("base", base), ("head", head))
    }
    return Rounds(
        {n: [list(v) for _ in range(workers)] for n, v in names.items()},
        {n: list(range(workers)) for n in names},
    )


def test_change_precision_is_the_change_between_revisions() -> None:
    rng = random.Random(1)
    base = [100e-6 + rng.uniform(-1e-6, 1e-6) for _ in range(8)]
    # a 10 us change, paired: the baseline's own net cost does not enter
    head = [b + 10e-6 + rng.uniform(-0.5e-6, 0.5e-6) for b in base]
    (p,) = change_precision(
        _rounds(base, head),
        baseline="base",
        others=["head"],
        pattern="as_written",
        within=("pattern",),
    ).values()
    assert p.estimate == pytest.approx(10e-6, rel=0.1)
    assert p.half_width_pct is not None
    assert p.half_width_pct < 15
    # no change at all, resolved to well under 1% of the iteration: precise in absolute terms
    same = [b + rng.uniform(-0.1e-6, 0.1e-6) for b in base]
    (p,) = change_precision(
        _rounds(base, same),
        baseline="base",
        others=["head"],
        pattern="as_written",
        within=("pattern",),
    ).values()
    assert p.reached(15.0)


def test_selfcheck_scan_round_trips_and_judges() -> None:
    check = SelfCheck(
        live=1000,
        request_model="m",
        timeit_ns={},
        scan_batch=256,
        scan_neighbours=19,
        scan_churn=1.25,
        scan_timeit_us={"warm": 38.9, "cold": 100.0},
        scan_suite_us={"warm": 39.0, "cold": 148.5},
    )
    again = SelfCheck.from_json(json.loads(json.dumps(check.to_json())))
    assert again == check
    text = "\n".join(check.lines())
    assert "19 other requests" in text
    assert "1.25 replaced per scan" in text
    assert check.scan_agreement("warm") == pytest.approx(38.9 / 39.0)
    lines = {ln.split()[0]: ln for ln in check.scan_lines()[2:]}
    assert lines["warm"].endswith("agrees")
    assert lines["cold"].endswith("DISAGREES")


def test_selfcheck_times_the_scan_in_both_regimes() -> None:
    from bench.orchestration.selfcheck import time_scan_us

    for name in ("warm", "cold"):
        values = time_scan_us(8, "fork-c96e68b62b", name, neighbours=1, churn=0.5)
        assert len(values) > 10
        assert all(v > 0 for v in values)


def test_two_designs_with_the_same_lookups_read_the_same(tmp_path: Path) -> None:
    """pr652 per_field and cached execute the same lookups on a decode node: medians that differ
    by chance must not be shown as a difference (the paired interval includes zero)."""
    from tests.fixtures.make_run import write_run
    from tests.helpers import run_cli

    run = write_run(tmp_path, cached_noise=0.2)
    r = run_cli("report", str(run), "--long")
    assert r.returncode == 0, r.stderr
    md = (run / "summary.md").read_text()
    row = next(ln for ln in md.splitlines() if ln.startswith("| prefill-dspark | `pr652` cached"))
    assert "(same)" in row
    paragraph = next(ln for ln in md.splitlines() if ln.startswith("- prefill-dspark"))
    assert "once per call site instead of once per field" in paragraph
    assert "within noise: its interval includes zero" in paragraph
    html = (run / "report.html").read_text()
    assert "(same)" in html


def test_the_variation_studys_loaded_arm_reads_through_the_caches() -> None:
    """The loaded arm's other process must evict the measured one's cache lines: ordinary loads
    of every line of a buffer larger than the last-level cache (a memset of that size uses
    non-temporal stores, which bypass the caches)."""
    from bench.commands import variation

    assert "memset" not in variation.HOG
    once = variation.HOG.replace("while True:\n    sweep()\n", "sweep()\n")
    assert once != variation.HOG, "the hog loops over one sweep"
    namespace: dict[str, object] = {}
    exec(compile(once, "<hog>", "exec"), namespace)
    sweep = namespace["sweep"]
    assert isinstance(sweep, regime.CacheSweep)
    assert sweep.size == regime.sweep_bytes()
    assert sweep.size >= regime.DEFAULT_SWEEP_BYTES


def test_the_environment_records_the_llc_and_a_comparison_names_a_change_of_it() -> None:
    def run(**env: object) -> SimpleNamespace:
        return SimpleNamespace(environment=Environment(cpu="Xeon", **env))  # type: ignore[arg-type]

    small, large, unknown = run(llc_bytes=32 << 20), run(llc_bytes=480 << 20), run()
    assert machine_differences(small, large) == [f"llc_bytes (base {32 << 20}, head {480 << 20})"]
    assert machine_differences(unknown, large) == []  # a run that did not record it
    assert machine_differences(small, small) == []
