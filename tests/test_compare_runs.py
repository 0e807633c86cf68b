"""bench report --compare on synthetic run folders with known numbers (tests/fixtures/make_run.py):
runs that measured different things are refused (one line, exit 2) unless --force, which lists
the differences; drift of the machine cancels through the in-run anchor (per round, the median
of the other strategies whose code did not change); a real change in one strategy is still
found, the baseline's included; the twin's drift between runs raises the noise floor."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from bench.report import compare
from bench.report.comparable import NotComparable, check, measurement_differences
from bench.report.load import load_run
from tests.fixtures.make_run import write_run
from tests.helpers import run_cli

STEP = "step/{}/scenario=prefill-dspark/pattern=per_field"
LOOK = "lookup/{}/op=get_hit/live=1000/regime=warm"


def _pair(tmp_path: Path, **head: object) -> tuple[Path, Path]:
    base = write_run(tmp_path / "base")
    return base, write_run(tmp_path / "head", **head)  # type: ignore[arg-type]


def _diff(base: Path, head: Path) -> compare.Diff:
    b, h = load_run(base), load_run(head)
    return compare.diff(b, h, differences=check(b, h, force=True))


def _rows(d: compare.Diff) -> dict[str, compare.Row]:
    return {r.name: r for r in d.rows}


def test_drift_of_the_machine_cancels_through_the_anchor(tmp_path: Path) -> None:
    d = _diff(*_pair(tmp_path, drift=1.12))
    rows = _rows(d)
    assert d.anchor is not None
    assert d.anchor.strategies == ("control", "declared", "pr652")  # no twin
    assert d.by_verdict("faster") == []
    assert d.by_verdict("slower") == []
    assert d.by_verdict(compare.UNRESOLVABLE) == []
    declared = rows[STEP.format("declared")]
    assert declared.raw is not None
    assert declared.raw.ratio == pytest.approx(1.12)  # what a ratio of medians would report
    assert declared.comparison.ratio == pytest.approx(1.0)
    assert declared.verdict == "same"
    line = d.drift_line()
    assert "head's unchanged strategies ran 12.0% slower than base's" in line
    assert "head's pr652 ran 12.0% slower than base's" in line
    assert "head's control ran 12.0% slower than base's" in line


def test_a_real_change_in_one_strategy_is_found_despite_drift(tmp_path: Path) -> None:
    d = _diff(
        *_pair(tmp_path, drift=1.12, slower={"declared": 1.3}, sources={"declared": "cd" * 32})
    )
    assert d.anchor is not None
    assert d.anchor.changed == ("declared",)  # its code changed: not an anchor
    rows = _rows(d)
    for name in (STEP.format("declared"), LOOK.format("declared")):
        assert rows[name].verdict == "slower"
        assert rows[name].comparison.ratio == pytest.approx(1.3)
    assert {r.name for r in d.by_verdict("slower")} == {
        STEP.format("declared"),
        LOOK.format("declared"),
    }
    assert rows[STEP.format("control")].verdict == "same"
    assert rows[STEP.format("pr652")].verdict == "same"


def test_a_change_of_the_baseline_itself_is_found(tmp_path: Path) -> None:
    changed = {"pr652": "cd" * 32, "pr652.aa": "cd" * 32}
    d = _diff(
        *_pair(tmp_path, drift=0.9, slower={"pr652": 1.25, "pr652.aa": 1.25}, sources=changed)
    )
    assert d.anchor is not None
    assert d.anchor.strategies == ("control", "declared")
    rows = _rows(d)
    assert rows[STEP.format("pr652")].verdict == "slower"
    assert rows[STEP.format("pr652")].comparison.ratio == pytest.approx(1.25)
    assert rows[STEP.format("declared")].verdict == "same"
    assert rows[STEP.format("control")].verdict == "same"
    assert "unchanged strategies ran 10.0% faster" in d.drift_line()


def test_without_an_unchanged_strategy_beside_it_a_change_is_unresolvable(tmp_path: Path) -> None:
    every = {s: "cd" * 32 for s in ("control", "declared", "pr652", "pr652.aa")}
    d = _diff(*_pair(tmp_path, drift=1.2, sources=every))
    assert {r.verdict for r in d.rows} == {compare.UNRESOLVABLE}
    assert "use bench gate" in d.rows[0].classification.reason
    row = d.rows[0]
    assert compare._words(dataclasses.replace(row, unit="byte")) == compare.UNRESOLVABLE


def test_the_twins_drift_between_runs_raises_the_noise_floor(tmp_path: Path) -> None:
    # the twin strays 6% from its baseline between the runs: a 5% change is within that floor
    d = _diff(*_pair(tmp_path, slower={"pr652.aa": 1.06, "declared": 1.05}))
    row = _rows(d)[STEP.format("declared")]
    assert row.comparison.ratio == pytest.approx(1.05)
    assert row.verdict == "same"
    assert "noise floor 6.0%" in row.classification.reason


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"config_changes": {"lookup_sizes": [1000, 10000]}}, "lookup_sizes"),
        ({"config_changes": {"lookup_regimes": ["warm", "cold"]}}, "lookup_regimes"),
        ({"config_changes": {"gc_modes": ["enabled"]}}, "gc_modes"),
        ({"config_changes": {"request_model": "sglang-0.5.23"}}, "request_model"),
        ({"environment": {"request_class": "sglang 0.5.23 Req (installed)"}}, "request_class"),
        ({"environment": {"device": "cuda"}}, "device"),
        ({"case_changes": {"inflight_residence": 2}}, "inflight_residence 1 -> 2"),
        ({"strategies": ("control", "pr652", "pr652.aa")}, "only in base: declared"),
    ],
)
def test_runs_that_measured_different_things_are_refused(
    tmp_path: Path, changes: dict[str, object], needle: str
) -> None:
    base, head = _pair(tmp_path, **changes)
    b, h = load_run(base), load_run(head)
    found = measurement_differences(b, h)
    assert any(needle in f for f in found), found
    with pytest.raises(NotComparable, match="--force"):
        check(b, h, force=False)
    proc = run_cli("report", "--compare", str(base), str(head), "--output-dir", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    forced = run_cli(
        "report", "--compare", str(base), str(head), "--output-dir", str(tmp_path / "f"), "--force"
    )
    assert forced.returncode == 0, forced.stderr
    md = (tmp_path / "f" / "compare.md").read_text()
    assert "Compared with --force although the runs measured different things" in md
    assert needle.replace("_", "\\_").split(" ")[0] in md


def test_the_spread_of_unchanged_strategies_raises_the_floor() -> None:
    from bench.stats.robust import Comparison

    def cmp(r: float) -> Comparison:
        return Comparison(ratio=r, ci_low=r * 0.99, ci_high=r * 1.01, p_value=0.0, significant=True)

    names = [STEP.format(s) for s in ("a", "b", "c", "d", "e", "f")]
    changes = dict(zip(names, map(cmp, (1.0, 1.1, 0.9, 1.05, 0.95, 1.8)), strict=True))
    unchanged = {"a", "b", "c", "d", "e"}  # the anchor's strategies; f's code changed
    (floor,) = compare.spreads(names, changes, unchanged, dict.fromkeys(names)).values()
    # log changes of the five unchanged: MAD 0.0513 -> 3 x 1.4826 x MAD -> exp(..) - 1 = 25.6%
    assert floor == pytest.approx(0.256, abs=0.01)
    assert abs(1.8 - 1) > floor  # the changed strategy's 80% still stands out


def test_a_machine_difference_is_shown_not_refused(tmp_path: Path) -> None:
    base, head = _pair(tmp_path, environment={"cpu": "Other CPU", "python": "3.12.1"})
    b, h = load_run(base), load_run(head)
    assert measurement_differences(b, h) == []
    md = compare.render_compare_md(_diff(base, head))
    assert "different machines or software" in md
    assert "Other CPU" in md


def test_a_scenario_parameter_added_later_reads_as_what_older_runs_measured(
    tmp_path: Path,
) -> None:
    base, head = _pair(tmp_path, case_changes={"dp_size": 1})
    manifest = base / "manifest.json"
    raw = json.loads(manifest.read_text())
    del raw["cases"][0]["values"]["dp_size"]  # a run from before the parameter existed
    manifest.write_text(json.dumps(raw))
    assert measurement_differences(load_run(base), load_run(head)) == []


def test_repetition_settings_may_differ(tmp_path: Path) -> None:
    base, head = _pair(tmp_path, config_changes={"values": 9, "budget_s": 100.0})
    assert measurement_differences(load_run(base), load_run(head)) == []
