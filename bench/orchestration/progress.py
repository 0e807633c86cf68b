"""The run's progress line on stderr (bench/orchestration/runner.py feeds it)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from bench.base.timing import wall_s


@dataclass
class Progress:
    """`[suite i/n] label  x% of run, ETA ...` on stderr: on a terminal one line rewritten in
    place, in a log one line per suite when it ends; every suite counts as an equal share of the
    run, and the share shown never goes backwards (a further round adds work to a suite, the
    share stays where it was until the work done passes it)."""

    suites: list[str]
    stream: Any = field(default_factory=lambda: sys.stderr)
    started: float = field(default_factory=wall_s)
    done: int = 0
    shown: float = 0.0
    last: str = ""

    @property
    def live(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def _line(self, suite: str, label: str) -> str:
        frac = self.shown
        elapsed = wall_s() - self.started
        eta = f"ETA {_fmt_s(elapsed * (1 - frac) / frac)}" if frac > 0.02 else "ETA --"
        idx = self.suites.index(suite) + 1 if suite in self.suites else 0
        return f"[{suite} {idx}/{len(self.suites)}] {label[:44]:<44} {frac:6.1%} of run, {eta}"

    def update(self, suite: str, fraction_of_suite: float, label: str) -> None:
        frac = (self.done + min(1.0, fraction_of_suite)) / len(self.suites)
        self.shown = max(self.shown, frac)
        self.last = self._line(suite, label)
        if self.live:
            print("\r" + self.last.ljust(100), end="", file=self.stream, flush=True)

    def suite_done(self, suite: str = "") -> None:
        self.done += 1
        self.shown = max(self.shown, self.done / len(self.suites))
        line = self._line(suite, "done") if suite else self.last
        if self.live:
            print("\r" + line.ljust(100), file=self.stream, flush=True)
        elif line:
            print(line, file=self.stream, flush=True)


def _fmt_s(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"
