"""Views over several suites (a suite's own view is its bench/suites/<name>/view.py). Each is a
module declaring NAME, TITLE and READS (the suites it shows), with section(run) for report.html,
markdown_lines(run) for summary.md and files(run) for what it writes into the run folder."""

from __future__ import annotations

import importlib
from types import ModuleType

# In report order, after the suites' sections.
CROSS_SUITE = ("bench.report.scenarios",)


def cross_suite() -> list[ModuleType]:
    return [importlib.import_module(name) for name in CROSS_SUITE]
