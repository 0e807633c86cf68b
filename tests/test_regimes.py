"""The memory regimes step figures are taken in (bench.measure.regime), the cases and prose that
carry them, the precision of a --target run's change, and the selfcheck's scan."""

from __future__ import annotations

import json
import random
from dataclasses import replace
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
    for i, size in enumerate(("32K", "1024K", "491520K")):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "size").write_text(size + "\n")
    monkeypatch.delenv(cpucache.SWEEP_ENV, raising=False)
    monkeypatch.setattr(cpucache, "CACHE_DIR", tmp_path)
    assert cpucache.llc_bytes() == 480 << 20
    # what a VM reports (the host's cache) never sizes the sweep: the run's probe does
    assert regime.sweep_bytes() == regime.DEFAULT_SWEEP_BYTES
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
    assert lines["cold"].endswith("disagrees")


def _scan_check(warm: float, cold: float, *, sweeps: tuple[int, int] = (256, 256)) -> SelfCheck:
    return SelfCheck(
        live=1000,
        request_model="m",
        timeit_ns={"weakkey": 150.0},
        suite_ns={"weakkey": 152.0},
        scan_batch=256,
        scan_timeit_us={"warm": 40.0 * warm, "cold": 200.0 * cold},
        scan_suite_us={"warm": 40.0, "cold": 200.0},
        scan_sweep_mb=sweeps[0],
        suite_sweep_mb=sweeps[1],
    )


def test_the_selfcheck_says_disagrees_beside_a_ratio_outside_its_tolerance() -> None:
    """The line a run printed: "agrees ... decode scan warm 0.713, decode scan cold 0.540". Every
    figure now carries its own word, and each disagreement its likely cause."""
    check = _scan_check(0.713, 0.540, sweeps=(64, 960))
    brief = check.brief()
    head = brief.splitlines()[0]
    assert "get_hit weakkey 0.987 agrees" in head
    assert "decode scan in cache 0.713 disagrees" in head
    assert "decode scan evicted 0.540 disagrees" in head
    causes = check.disagreements()
    assert len(causes) == 2
    assert "decode scan in cache 0.713" in causes[0]
    assert "whole decode iteration net of control" in causes[0]
    assert "timeit swept 64 MiB" in causes[1]
    assert "the suite 960" in causes[1]
    two = SelfCheck(
        live=1, request_model="m", timeit_ns={"a": 2.0, "b": 2.0}, suite_ns={"a": 1.0, "b": 1.0}
    )
    assert len(two.disagreements()) == 1  # one line per cause, naming every figure it explains
    assert "get_hit a 2.000, get_hit b 2.000" in two.disagreements()[0]
    assert _scan_check(0.95, 1.05).disagreements() == []
    assert "disagrees" not in _scan_check(0.95, 1.05).brief()


def test_a_disagreement_reaches_the_summary_the_markdown_and_the_report_first_screen(
    tmp_path: Path,
) -> None:
    import dataclasses

    from bench.report import pr
    from bench.report.html import pr_section
    from bench.report.load import load_run
    from tests.fixtures.make_run import write_run

    run = dataclasses.replace(load_run(write_run(tmp_path)), selfcheck=_scan_check(0.713, 1.0))
    summary = pr.build(run)
    assert len(summary.warnings) == 1
    assert "0.713" in summary.warnings[0]
    assert "WARNING: selfcheck disagrees: decode scan in cache" in pr.terminal(summary)
    assert "**Warning:** selfcheck disagrees" in pr.markdown(summary, [])
    assert "selfcheck disagrees: decode scan in cache" in str(pr_section(run))
    from bench.report.html import selfcheck_section

    assert "net of control" not in str(selfcheck_section(run))  # an old, gross check
    net = replace(run.selfcheck, scan_control_us={"warm": 12.0, "cold": 80.0})
    assert "decode scan, in cache, net of control" in str(
        selfcheck_section(dataclasses.replace(run, selfcheck=net))
    )


def test_selfcheck_times_the_scan_in_both_regimes() -> None:
    from bench.measure.scan import time_scan_us

    for name in ("warm", "cold"):
        for strategy in ("pr652", "control"):  # control's loop: what the check is net of
            values = time_scan_us(
                8, "fork-c96e68b62b", name, neighbours=1, churn=0.5, strategy_name=strategy
            )
            assert len(values) > 10
            assert all(v > 0 for v in values)


def test_a_scan_check_net_of_control_says_so_and_an_old_gross_one_is_named() -> None:
    """The suite's evicted figure is net of control, whose iteration walks the same requests;
    a gross plain loop read 1.26-1.61x it. A check with control's loop says it is net; one
    without (an old selfcheck.json) names the gross comparison as the likely cause."""
    net = replace(_scan_check(0.5, 1.5), scan_control_us={"warm": 12.0, "cold": 80.0})
    assert "net of the same loop with control's get" in "\n".join(net.scan_lines())
    again = SelfCheck.from_json(json.loads(json.dumps(net.to_json())))
    assert again.scan_control_us == {"warm": 12.0, "cold": 80.0}
    gross = _scan_check(0.5, 1.5)
    (cold,) = [c for c in gross.disagreements() if "decode scan evicted" in c]
    assert "its requests' own misses included" in cold
    (cold,) = [c for c in net.disagreements() if "decode scan evicted" in c]
    assert "own misses" not in cold


def test_an_evicted_scan_below_the_suite_names_the_knee_when_a_deeper_sweep_closes_the_gap() -> (
    None
):
    """The AMD EPYC VM of 2026-12-06: the probe chose 64 MiB, the check's loop read 0.50-0.83
    of the suite evicted, and 181 µs net after 256 MiB against the suite's 174-196."""
    base = replace(
        _scan_check(1.0, 0.5, sweeps=(64, 64)), scan_control_us={"warm": 12.0, "cold": 80.0}
    )
    knee = replace(base, deep_sweep_mb=256, deep_timeit_us=181.0)
    again = SelfCheck.from_json(json.loads(json.dumps(knee.to_json())))
    assert (again.deep_sweep_mb, again.deep_timeit_us) == (256, 181.0)
    (cold,) = [c for c in knee.disagreements() if "decode scan evicted 0.500" in c]
    assert "sits at this machine's knee" in cold
    assert "after 256 MiB the same loop reads 181.0 µs net (timeit/suite 0.905)" in cold
    assert any(
        line.split()[:2] == ["256", "MiB"] and "after a deeper sweep" in line
        for line in knee.scan_lines()
    )
    # no deeper figure, or one that does not close the gap: the layout is the likely cause
    # (0.5 to 0.7 closes less than half the gap)
    for other in (base, replace(base, deep_sweep_mb=256, deep_timeit_us=140.0)):
        (cold,) = [c for c in other.disagreements() if "decode scan evicted" in c]
        assert "knee" not in cold
        assert "heap's layout" in cold


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


def test_the_sweep_is_the_smallest_after_which_the_scan_slows_no_further() -> None:
    from bench.measure import sweep_probe

    # the curve measured here on 2026-12-03 (µs per scan after each sweep, MiB)
    curve = {4: 62.0, 16: 85.0, 64: 95.0, 128: 182.0, 256: 256.0, 512: 229.0, 1024: 233.0}
    assert sweep_probe.choose(curve) == 256
    later = {64: 108.1, 128: 213.0, 256: 225.1, 512: 235.9, 1024: 244.1}  # a later probe here
    assert sweep_probe.choose(later) == 128  # 87% of the plateau
    assert sweep_probe.choose({4: 100.0, 8: 101.0, 1024: 102.0}) == 4  # no cache to leave


def test_a_run_sizes_its_cold_sweep_once_per_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench import suites
    from bench.commands import run as run_cmd
    from bench.measure import sweep_probe

    monkeypatch.setenv("REQSTATE_CACHE", str(tmp_path))
    monkeypatch.delenv(cpucache.SWEEP_ENV, raising=False)
    probes: list[int] = []

    def probe(_model: str = "") -> dict[int, float]:
        probes.append(1)
        return {64: 100.0, 128: 190.0, 1024: 200.0}

    monkeypatch.setattr(sweep_probe, "probe", probe)
    config = suites.default_config()
    for _ in range(2):
        sized = run_cmd.with_measured_sweep(config)
        assert sized.suite("step").cold_sweep_mb == 128
        assert sized.suite("lookup").cold_sweep_mb == 128
    assert len(probes) == 1  # kept in the user's cache, keyed by the machine
    assert (
        run_cmd.with_measured_sweep(config.with_suite("step", cold_sweep_mb=32))
        .suite("step")
        .cold_sweep_mb
        == 32
    )  # a size the user set stands
    monkeypatch.setenv(cpucache.SWEEP_ENV, "16")
    assert run_cmd.with_measured_sweep(config).suite("step").cold_sweep_mb == 0  # the machine's
