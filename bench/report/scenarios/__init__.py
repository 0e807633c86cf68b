"""The scenario view: one section over several suites (the step suite's costs, counts and queues,
the gc suite's rates), per scheduler case, in the units a reviewer decides with.

A declared view, as a suite's view is: the report asks it for its HTML section, its summary.md
lines and its files, and knows nothing else of it. Its model is bench.stats.cases; here:

    model.py     the model computed from a loaded run
    prose.py     verdict paragraphs, sentences across a sweep, the terminal's cost lines
    html.py      the report.html section
    markdown.py  the summary.md lines
    summary.py   scenarios.json
    figure.py    the sweep figure
"""

from __future__ import annotations

from typing import Any

from bench.report.load import RunData
from bench.report.markup import Html
from bench.report.scenarios import html, markdown, summary
from bench.report.scenarios.model import GC, STEPS, cases

NAME = "scenarios"
TITLE = "Scenarios"
READS = (STEPS, GC)  # the suites whose data it shows


def section(run: RunData) -> Html | None:
    return html.scenario_section(run, cases(run))


def markdown_lines(run: RunData) -> list[str]:
    return markdown.scenario_markdown(run, cases(run))


def files(run: RunData) -> dict[str, Any]:
    """Files the view writes into the run folder (name -> JSON data)."""
    return {"scenarios.json": summary.scenario_summary(run, cases(run))}


__all__ = ["NAME", "READS", "TITLE", "cases", "files", "markdown_lines", "section"]
