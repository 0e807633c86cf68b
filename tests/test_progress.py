"""The run's progress line: rewritten in place on a terminal, one line per suite in a log, and
the share of the run it shows never goes backwards (a suite that adds a round adds work)."""

from __future__ import annotations

import io
import re

from bench.orchestration.progress import Progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _shares(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"([\d.]+)% of run", text)]


def test_share_never_goes_backwards_when_a_round_is_added() -> None:
    out = Tty()
    p = Progress(suites=["lookup", "step"], stream=out)
    p.update("lookup", 0.5, "get_hit")
    p.update("lookup", 1.0, "get_hit")
    p.suite_done("lookup")
    p.update("step", 0.6, "worker 3/5")  # 80.0% of the run
    p.update("step", 0.5, "worker 4/6")  # a round added: 4 of 6 is less than 3 of 5
    p.update("step", 0.9, "worker 6/6")
    p.suite_done("step")
    shares = _shares(out.getvalue())
    assert shares == sorted(shares), shares
    assert shares[-1] == 100.0
    assert "\r" in out.getvalue()  # on a terminal: rewritten in place
    assert out.getvalue().count("\n") == 2  # a new line only when a suite ends


def test_a_log_gets_one_line_per_suite() -> None:
    out = io.StringIO()  # not a terminal
    p = Progress(suites=["lookup", "step"], stream=out)
    for suite in p.suites:
        for i in range(10):
            p.update(suite, i / 10, f"value {i}")
        p.suite_done(suite)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("[lookup 1/2] done")
    assert "50.0% of run" in lines[0]
    assert lines[1].startswith("[step 2/2] done")
    assert "100.0% of run" in lines[1]
    assert "\r" not in out.getvalue()
