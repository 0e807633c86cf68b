"""The renderers on numbers known by construction (tests/fixtures/make_run.py): the terminal
table, summary.md and report.html show the right number in the right place, with the right
verdict word; and the recorders and the loop calibration on a fake clock."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from bench.report import write_report
from bench.report.console import render_table
from bench.report.text import fmt
from tests.fixtures.make_run import STEP_US, lookup_base_ns, write_run

TIMES = "\u00d7"  # the ratio sign the report writes


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = write_run(tmp_path_factory.mktemp("synthetic"))
    write_report(folder)
    return folder


def _lookup_ns(factor: float) -> float:
    return statistics.median(v * factor for w in lookup_base_ns() for v in w) * 1e-9


def _row(text: str, name: str) -> str:
    (line,) = [ln for ln in text.splitlines() if ln.startswith(name + " ")]
    return line


def test_terminal_table(run: Path) -> None:
    text = render_table(run)
    step = "step/{}/scenario=prefill-dspark/pattern=per_field"
    row = _row(text, step.format("declared"))
    assert "80.0 us" in row
    assert "0.800 [0.800, 0.800]" in row
    assert row.endswith("*faster")
    assert _row(text, step.format("pr652")).endswith("baseline")
    assert _row(text, step.format("pr652.aa")).endswith("A/A twin")
    look = "lookup/{}/op=get_hit/live=1000/regime=warm"
    row = _row(text, look.format("declared"))
    assert fmt(_lookup_ns(0.5), "second") in row
    assert "0.500 [0.500, 0.500]" in row
    # costs net of control: 50 and 30 µs, exact paired intervals
    assert re.search(rf"{re.escape(step.format('pr652'))}\s+50\.0 µs \[50\.0, 50\.0\]", text)
    assert re.search(rf"{re.escape(step.format('declared'))}\s+30\.0 µs \[30\.0, 30\.0\]", text)
    # lookups net of control: declared 0.25x of pr652's 0.75x = 0.33
    assert re.search(r"declared\s+warm\s+\S+ ns\s+0\.33 \*", text)
    assert "median 0.0%, largest 0.0%" in text  # the twin is exact: no noise floor


def test_summary_markdown(run: Path) -> None:
    """The short form a PR pastes: one row per scenario, the exact costs, the paired delta."""
    md = (run / "summary.md").read_text()
    assert len(md.splitlines()) <= 40
    assert md.startswith("### Speed Tests and Profiling\n")
    assert "commit 0123456789ab" in md
    assert "python -m bench run --synthetic" in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| prefill-dspark |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # pr652 100 - control 50 = 50 µs; declared 80 - 50 = 30 µs (the cheapest: the run has no
    # dynattr); paired difference -20 µs exactly; 50 µs of a 1,200 ms forward; 160 lookups.
    # The run has 2 worker processes: no interval is printed from so few (MIN_PROCESSES).
    assert cells == [
        "prefill-dspark",
        "50.0 \\[too few processes: 2\\]",
        "declared (per\\_field) 30.0 \\[too few processes: 2\\]",
        "-20.0 \\[too few processes: 2\\]",
        "0.0042%",
        "160.0 / 3.50 → 32.0 / 3.50",
    ]
    assert "evicted" not in row  # no cold case measured: no evicted column
    assert "(noisy)" not in md
    assert "¹" not in md
    verdict = next(ln for ln in md.splitlines() if ln.startswith("**Verdict:**"))
    assert "pr652) costs 50.0 \\[too few processes: 2\\] µs per iteration" in verdict
    assert (
        "(declared, per\\_field) differs from it by -20.0 µs per iteration there, from too few"
        in verdict
    )
    assert verdict.count(". ") + 1 <= 3


def test_summary_markdown_long(run: Path, tmp_path: Path) -> None:
    """`bench report --long`: the headline, every family's verdict and sentence."""
    import shutil

    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    write_report(copy, long=True)
    md = (copy / "summary.md").read_text()
    declared = next(ln for ln in md.splitlines() if ln.startswith("| `declared`"))  # headline
    cells = [c.strip() for c in declared.strip("|").split("|")]
    assert cells[1] == f"0.500{TIMES} \\[0.500, 0.500\\] **faster**"  # get_hit, warm
    assert cells[2] == f"0.800{TIMES} \\[0.800, 0.800\\] **faster**"  # iteration prefill-dspark
    base = next(ln for ln in md.splitlines() if ln.startswith("| `pr652` |"))
    assert f"{fmt(STEP_US['pr652'] * 1e-6, 'second')} (baseline)" in base
    twin = next(ln for ln in md.splitlines() if ln.startswith("| `pr652.aa`"))
    assert f"1.000{TIMES} \\[1.000, 1.000\\] same" in twin
    assert (
        "| prefill-dspark | `pr652` per\\_field | 50.0 µs \\[50.0, 50.0\\] | baseline | 0.0042% | 160.0 / 3.50 |"
        in md
    )
    paragraph = next(ln for ln in md.splitlines() if ln.startswith("- prefill-dspark"))
    assert (
        "costs 50.0 µs \\[50.0, 50.0\\] per iteration net of the harness, 0.0042% of a forward"
        in paragraph
    )
    assert (
        "switching saves 20.0 µs \\[20.0, 20.0\\] per iteration, paired per round (0.0017% of the forward; significant)"
        in paragraph
    )
    assert "shorter than 2.00 ms, so at this forward time it does not" in paragraph
    assert (
        "| `pr652` | fork-c96e68b62b | 140 | 3,328 | 14 | 4,238 | 10.5 | 9.00 \\[9.00, 9.00\\] |"
        not in md
    )  # only with --target


def test_p99_headline_only_where_the_iterations_support_it(tmp_path: Path) -> None:
    def headline(iterations: int) -> list[str]:
        folder = write_run(tmp_path / str(iterations), step_iterations=iterations)
        write_report(folder, long=True)
        lines = (folder / "summary.md").read_text().splitlines()
        start = next(i for i, ln in enumerate(lines) if ln.startswith("| strategy |"))
        return lines[start : start + 6]

    assert "p99" not in headline(999)[0]  # fewer than 1000 iterations support no p99
    many = headline(1000)
    assert "p99 iteration prefill-dspark" in many[0]
    declared = next(ln for ln in many if ln.startswith("| `declared`"))
    assert declared.endswith("0.800\u00d7 \\[0.800, 0.800\\] **faster** |")  # 80 / 100 µs


def test_report_html(run: Path) -> None:
    html = (run / "report.html").read_text()
    # the summary first, the environment last
    order = re.findall(r'<section id="([a-z_-]+)"', html)
    assert order[0] == "summary"
    assert order[-1] == "env"
    assert order.index("scenarios") < order.index("verdict") < order.index("lookup")
    summary = html[html.index('<section id="summary"') : html.index('<section id="scenarios"')]
    assert "declared (per_field) 30.0 [too few processes: 2]" in summary
    assert "-20.0 [too few processes: 2]" in summary
    # the verdict section's headline row of declared: its ratios and verdict word
    verdict = html[html.index('<section id="verdict"') :]
    row = re.search(r"<tr><td><code>declared</code>.*?</tr>", verdict, re.S)
    assert row is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)
    assert any(f"0.500{TIMES}" in c and "[0.500, 0.500]" in c for c in cells)
    assert any(f"0.800{TIMES}" in c and "[0.800, 0.800]" in c for c in cells)
    assert html.count("▼ faster") >= 4  # control and declared, lookup and step
    assert "50.0 µs [50.0, 50.0]" in html
    assert "30.0 µs [30.0, 30.0]" in html
    assert "switching saves 20.0 µs [20.0, 20.0] per iteration" in html
    assert "A/A twin (noise floor)" in html
    # the request class table, every figure as written
    assert re.search(
        r"fork-c96e68b62b</td><td[^>]*>140</td><td[^>]*>3,328</td><td[^>]*>14</td><td[^>]*>4,238</td>"
        r"<td[^>]*>10\.5</td><td[^>]*>9\.00 \[9\.00, 9\.00\]",
        html,
    )


def test_step_recorder_and_clock_on_a_fake_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each step is timed between start and stop of the one clock; the transfer worker's tick
    runs outside; a value is the mean over its steps, in seconds; warm-ups are not kept."""
    import torch

    from bench.base import timing
    from bench.base.gcprobe import GcProbe
    from bench.measure.steps import StepRecorder

    ticks = iter(range(0, 10**9, 1000))  # every reading 1 µs after the last
    monkeypatch.setattr(timing, "now_ns", lambda: next(ticks))

    class Loop:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def step(self) -> None:
            self.calls.append("step")
            timing.now_ns()  # the step itself reads the clock once: one more µs inside

        def worker_tick(self) -> None:
            self.calls.append("tick")
            timing.now_ns()  # outside the timed step

        def queue_sample(self) -> dict[str, int]:
            return {"inflight": len(self.calls)}

    loop = Loop()
    with GcProbe() as probe:
        rec = StepRecorder(
            loop,
            timing.StepClock(torch.device("cpu")),
            probe,
            keep_steps=True,
            keep_queues=True,  # type: ignore[arg-type]
        )
        assert rec.measure(3, warmup=True) == pytest.approx(2e-6)
        assert rec.kept.host_ns == []  # warm-up steps are timed, not kept
        assert rec.measure(2, warmup=False) == pytest.approx(2e-6)
    assert rec.kept.host_ns == [2000, 2000]
    assert rec.kept.device_ns == [0, 0]
    assert loop.calls == ["step", "tick"] * 5
    assert rec.queues.lengths["inflight"] == [8, 10]


def test_loop_calibration_on_a_fake_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm value lasts at least min_value_ns: passes = ceil(min / one pass)."""
    from bench.base import timing
    from bench.measure import lookups

    now = [0]

    def clock() -> int:
        return now[0]

    def one_pass() -> None:
        now[0] += 1_500  # one pass takes 1.5 µs

    monkeypatch.setattr(timing, "now_ns", clock)
    assert lookups._passes(one_pass, 5_000) == 4  # 4 x 1.5 µs >= 5 µs > 3 x 1.5 µs
    assert lookups._passes(one_pass, 1_000) == 1
    assert lookups._timed_passes(one_pass, 4, None) == 6_000
