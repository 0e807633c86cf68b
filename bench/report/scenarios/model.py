"""The scenario view's data: bench.stats.cases' model computed from a loaded run."""

from __future__ import annotations

from bench.base.names import BenchName
from bench.report.load import RunData
from bench.stats.cases import Case, RequestRow, build_cases
from bench.stats.cases import request_rows as _request_rows
from bench.stats.derive import GcRates

# The suites this view reads (bench.report.scenarios.READS): the scheduler cases of the step
# suite, the collections of the gc suite.
STEPS, GC = "step", "gc"


def _gc_by_case(run: RunData) -> dict[str, dict[str, GcRates]]:
    """GC rates with the collector enabled, by case key and strategy."""
    data = run.suite(GC)
    out: dict[str, dict[str, GcRates]] = {}
    if data is None:
        return out
    for name, rates in data.gc_rates.items():
        bench = BenchName.parse(name)
        if bench.get("gc") == "enabled":
            out.setdefault(bench.case.text, {})[bench.strategy] = rates
    return out


def cases(run: RunData) -> list[Case]:
    """The run's scheduler cases, computed once per loaded run (the HTML, markdown and JSON
    renderings all read them; each costs a bootstrap per design and scenario)."""
    cached: list[Case] | None = run.__dict__.get("_scenario_cases")
    if cached is not None:
        return cached
    data = run.suite(STEPS)
    built = (
        []
        if data is None
        else build_cases(
            data.net_rounds,
            data.extras.counts,
            data.extras.queues,
            {m.key: m for m in run.manifest.cases},
            _gc_by_case(run),
            run.config.scenarios,
            kind=data.spec.kind if data.spec is not None else STEPS,
        )
    )
    object.__setattr__(run, "_scenario_cases", built)  # a frozen dataclass: a memo, not state
    return built


def request_rows(run: RunData) -> list[RequestRow]:
    data = run.suite(STEPS)
    if data is None:
        return []
    return _request_rows(data.extras.requests, run.strategy_names())
