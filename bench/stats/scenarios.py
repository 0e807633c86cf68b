"""Per scheduler case, in the units a reviewer decides with: each design's cost per iteration
net of `control` (the harness's own loop) with a CI, that cost as a share of the case's forward
time, lookups and states created per iteration, queue statistics and GC per 1,000 iterations.

The model only: it is computed from a run's raw data (step values, counted operations, queue
series, the manifest's cases, GC rates) and renders nothing; the report's scenario view
(bench/report/scenarios/) turns it into tables, paragraphs, markdown and JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.core.counting import OpCounts
from bench.names import BenchName, CaseKey
from bench.runformat import CaseMeta, QueueSeries, RequestFigures, StepSeries
from bench.stats import robust
from bench.stats.derive import GcRates, NetCost, QueueStat, net_of, queue_stats

# A per-iteration cost "stops mattering" below 1% of a forward in this report's wording:
# host-side scheduler wins of 1-2% of a step get merged, and a step is a fraction of a forward.
MATERIAL_SHARE = 0.01
REFERENCE = "control"  # the strategy whose call sites touch nothing: the harness's own cost
REVIEW = ("dynattr", "cached")  # the review's suggestion: lazy attribute, looked up once


@dataclass(frozen=True)
class Cost:
    bench: BenchName
    median_s: float
    net: NetCost | None  # net of control
    forward_s: float
    lookups: float | None  # per iteration (counted)
    created: float | None

    @property
    def strategy(self) -> str:
        return self.bench.strategy

    @property
    def pattern(self) -> str:
        return self.bench.get("pattern") or ""

    def share(self, value_s: float) -> float:
        return value_s / self.forward_s if self.forward_s else float("nan")


@dataclass(frozen=True)
class Case:
    key: CaseKey  # the scenario and any swept parameter
    name: str  # the preset
    description: str
    modified: tuple[str, ...]
    values: dict[str, Any]
    sources: dict[str, str]
    queues: dict[str, QueueStat]
    costs: list[Cost]
    gc: dict[str, GcRates]  # strategy -> rates (collector enabled, the headline pattern)

    @property
    def forward_ms(self) -> float:
        return float(self.values.get("forward_ms", 0.0))

    @property
    def title(self) -> str:
        extra = "/".join(f"{k}={v}" for k, v in self.key.extra.items())
        return (
            self.name
            + (f" ({extra})" if extra else "")
            + (" [modified preset]" if self.modified else "")
        )

    def cost(self, strategy: str, pattern: str) -> Cost | None:
        return next(
            (c for c in self.costs if c.strategy == strategy and c.pattern == pattern), None
        )


def step_round_values(
    values: Mapping[str, Sequence[float]],
    steps: Mapping[str, StepSeries],
    steps_per_value: int,
) -> dict[str, list[float]]:
    """Every benchmark's values, with the step suite's per round recomputed without the
    iterations during which the cyclic collector ran in any scheduler of the case.

    All schedulers of a case share one process heap: a collection starts in whichever step
    crosses the allocation threshold, so its pause (up to ~13 ms over a ~0.7 ms step, measured
    in a quick run) lands in one strategy's round at random and swamps the difference being
    measured. The gc suite measures each strategy's collections in a heap of its own; the
    costs per iteration here are the collector-free part. Paired: an iteration is dropped from
    every scheduler of the case, so value i of each still covers the same work. A round whose
    every iteration ran a collection keeps its measured values; benchmarks without per-step
    data (or of other kinds) are returned as they are."""
    out = {name: list(v) for name, v in values.items()}
    by_case: dict[CaseKey, list[str]] = {}
    for name, vals in values.items():
        series = steps.get(name)
        bench = BenchName.parse(name)
        if bench.kind == "step" and series and len(series.host_ns) == len(vals) * steps_per_value:
            by_case.setdefault(bench.case, []).append(name)
    for names in by_case.values():
        rounds = len(values[names[0]])
        if any(len(values[n]) != rounds for n in names):
            continue  # not paired (a failed strategy): leave the case as measured
        n_steps = rounds * steps_per_value
        quiet = [not any(steps[n].gc[i] for n in names) for i in range(n_steps)]
        for r in range(rounds):
            kept = [i for i in range(r * steps_per_value, (r + 1) * steps_per_value) if quiet[i]]
            if not kept:
                continue
            for n in names:
                host = steps[n].host_ns
                out[n][r] = sum(host[i] for i in kept) / len(kept) / 1e9
    return out


def ordered_cases(keys: Iterable[CaseKey], order: Sequence[str]) -> list[CaseKey]:
    """Scenario cases in the configuration's scenario order, then by key."""

    def position(key: CaseKey) -> tuple[int, str]:
        name = key.scenario
        return (order.index(name) if name in order else len(order), key.text)

    return sorted(set(keys), key=position)


def build_cases(
    values: Mapping[str, Sequence[float]],
    counts: Mapping[str, OpCounts],
    queues: Mapping[str, QueueSeries],
    metas: Mapping[str, CaseMeta],
    gc: Mapping[str, dict[str, GcRates]],
    order: Sequence[str],
) -> list[Case]:
    """Every case of a run's step benchmarks: values by benchmark name, counted operations,
    queue series by case key, the manifest's cases by key, GC rates by case key and strategy,
    the configuration's scenario order."""
    net = net_of(values, reference=REFERENCE, kind="step")
    names = {n: BenchName.parse(n) for n in values}
    keys = ordered_cases((b.case for b in names.values() if b.kind == "step"), order)
    out = []
    for key in keys:
        meta = metas.get(key.text)
        case_values = dict(meta.values) if meta else {}
        forward_s = float(case_values.get("forward_ms", 0.0)) / 1e3
        costs = []
        for name in sorted(values):
            bench = names[name]
            if bench.kind != "step" or bench.case != key:
                continue
            c = counts.get(name)
            per = c.iterations if c and c.iterations else 0
            costs.append(
                Cost(
                    bench=bench,
                    median_s=robust.median(values[name]),
                    net=net.get(name),
                    forward_s=forward_s,
                    lookups=c.lookups / per if per and c else None,
                    created=c.created / per if per and c else None,
                )
            )
        series = queues.get(key.text)
        out.append(
            Case(
                key=key,
                name=meta.scenario if meta else key.scenario,
                description=meta.description if meta else "",
                modified=tuple(meta.modified) if meta else (),
                values=case_values,
                sources=dict(meta.sources) if meta else {},
                queues=queue_stats(series.lengths) if series else {},
                costs=costs,
                gc=dict(gc.get(key.text, {})),
            )
        )
    return out


def difference(values: Mapping[str, Sequence[float]], a: BenchName, b: BenchName) -> NetCost | None:
    """a minus b per round (paired: the same scheduler steps, moments apart), in seconds:
    median with a bootstrap CI; None without paired values."""
    va, vb = values.get(str(a)), values.get(str(b))
    if not va or not vb or len(va) != len(vb) or len(va) < 2:
        return None
    diffs = [x - y for x, y in zip(va, vb, strict=True)]
    lo, hi = robust.bootstrap_median_ci(diffs)
    return NetCost(median=robust.median(diffs), ci_low=lo, ci_high=hi, n=len(diffs))


def negated(diff: NetCost) -> NetCost:
    return NetCost(median=-diff.median, ci_low=-diff.ci_high, ci_high=-diff.ci_low, n=diff.n)


@dataclass(frozen=True)
class RequestRow:
    """One strategy's request class as its workers built it."""

    strategy: str
    model: str
    attributes: int
    dict_bytes: int
    tracked_values: int
    construct_ns: float  # median over repetitions (all workers)
    construct_ci_ns: tuple[float, float]


def request_rows(figures: Mapping[str, RequestFigures], order: Sequence[str]) -> list[RequestRow]:
    rows = []
    for strategy in order:
        f = figures.get(strategy)
        if f is None or not f.construct_ns:
            continue
        if len(f.construct_ns) > 1:
            lo, hi = robust.bootstrap_median_ci(f.construct_ns)
        else:
            lo = hi = f.construct_ns[0]
        rows.append(
            RequestRow(
                strategy,
                f.model,
                f.attributes,
                f.dict_bytes,
                f.tracked_values,
                robust.median(f.construct_ns),
                (lo, hi),
            )
        )
    return rows
