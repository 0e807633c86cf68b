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

from bench.base.names import BenchName, CaseKey
from bench.core.counting import OpCounts
from bench.core.groupsites import GroupProgram, per_iteration
from bench.runformat.schema import CaseMeta, QueueSeries, RequestFigures, StepSeries
from bench.stats import robust
from bench.stats.derive import GcRates, NetCost, QueueStat, net_of, paired_difference, queue_stats
from bench.stats.rounds import Rounds
from strategies._contract import REVIEW_DESIGN

# A per-iteration cost "stops mattering" below 1% of a forward in this report's wording:
# host-side scheduler wins of 1-2% of a step get merged, and a step is a fraction of a forward.
MATERIAL_SHARE = 0.01
REFERENCE = "control"  # the strategy whose call sites touch nothing: the harness's own cost
# The statistic of the paired round differences a cost per iteration is given by: their
# 10%-trimmed mean (bench.stats.robust.TRIM_FRACTION), with a CI over processes then rounds. A
# cost per iteration is a mean, and real mode's paired statistic is the change of the mean
# iteration; the median of the same rounds was the less efficient (one default run here,
# 2026-12-06: the step families' median half-width 12.2% with the median, 8.9% trimmed) and
# the plain mean the less robust (one round in twelve of a run once read 449 us against 30-141
# us for the others and took the mean's interval to +-46%; trimming drops such a round).
NET_STATISTIC = "trimmed"
# Its name in the report's words (column heads, the PR section).
NET_STATISTIC_WORDS = "trimmed mean"
REVIEW = REVIEW_DESIGN  # the review's suggestion: lazy attribute, looked up once


@dataclass(frozen=True)
class Cost:
    bench: BenchName
    median_s: float
    net: NetCost | None  # net of control
    forward_s: float
    lookups: float | None  # per iteration (counted)
    created: float | None
    # a replayed state group's event lists, requests per iteration (counted; None otherwise)
    events: dict[str, float] | None = None

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
        """The forward time as the preset states it (a prefill preset: for a full chunk)."""
        return float(self.values.get("forward_ms", 0.0))

    @property
    def forward_used_ms(self) -> float:
        """The forward its costs are shares of (forward_of_prefilled_s)."""
        return self.costs[0].forward_s * 1e3 if self.costs else self.forward_ms

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

    @property
    def regime(self) -> str:
        """The memory regime its iterations were timed in (bench.measure.regime): warm unless
        the case says cold; runs from before the regimes read as warm."""
        return self.key.extra.get("regime", "warm")

    def in_regime(self, cases: Sequence[Case], regime: str) -> Case | None:
        """The same case (scenario and swept values) timed in another regime."""
        want = {**{k: v for k, v in self.key.extra.items() if k != "regime"}}
        if regime != "warm":
            want["regime"] = regime
        for c in cases:
            if c.key.scenario == self.key.scenario and c.key.extra == want:
                return c
        return None


def step_round_values(
    rounds: Rounds, steps: Mapping[str, StepSeries], steps_per_value: int, kind: str
) -> Rounds:
    """The step suite's values per round recomputed without the iterations during which the
    cyclic collector ran in any scheduler of the case measured by the same worker process.

    All schedulers of a case share one process heap: a collection starts in whichever step
    crosses the allocation threshold, so its pause (up to ~13 ms over a ~0.7 ms step, measured
    in a quick run) lands in one strategy's round at random and swamps the difference being
    measured. The gc suite measures each strategy's collections in a heap of its own; the
    costs per iteration here are the collector-free part. Paired: an iteration is dropped from
    every scheduler of the case in that worker, so value i of each still covers the same work.
    A round whose every iteration ran a collection keeps its measured values; benchmarks
    without per-step data (or of other kinds) keep theirs."""
    # Each benchmark's per-step series is its workers' series one after another, in run order.
    segments: dict[str, dict[int, tuple[list[int], list[int]]]] = {}
    for name in rounds:
        bench = BenchName.parse(name)
        series = steps.get(name)
        runs = rounds.runs[name]
        ids = rounds.worker_ids(name)
        if bench.kind != kind or not series or len(set(ids)) != len(ids):
            continue
        if len(series.host_ns) != sum(len(r) for r in runs) * steps_per_value:
            continue
        offset, mine = 0, {}
        for worker, run in zip(ids, runs, strict=True):
            n = len(run) * steps_per_value
            mine[worker] = (series.host_ns[offset : offset + n], series.gc[offset : offset + n])
            offset += n
        segments[name] = mine
    by_case: dict[tuple[CaseKey, int], list[str]] = {}
    for name, mine in segments.items():
        for worker in mine:
            by_case.setdefault((BenchName.parse(name).case, worker), []).append(name)
    new_runs = {name: [list(r) for r in rounds.runs[name]] for name in segments}
    for (_case, worker), names in by_case.items():
        lengths = {len(segments[n][worker][0]) for n in names}
        if len(lengths) != 1:
            continue  # not paired (a strategy failed in this worker): leave it as measured
        n_steps = lengths.pop()
        quiet = [not any(segments[n][worker][1][i] for n in names) for i in range(n_steps)]
        for name in names:
            host, _gc = segments[name][worker]
            run = new_runs[name][rounds.worker_ids(name).index(worker)]
            for r in range(len(run)):
                window = range(r * steps_per_value, (r + 1) * steps_per_value)
                kept = [host[i] for i in window if quiet[i]]
                if kept:
                    run[r] = sum(kept) / len(kept) / 1e9
    return rounds.replaced(new_runs)


def ordered_cases(keys: Iterable[CaseKey], order: Sequence[str]) -> list[CaseKey]:
    """Scenario cases in the configuration's scenario order, then by key."""

    def position(key: CaseKey) -> tuple[int, str]:
        name = key.scenario
        return (order.index(name) if name in order else len(order), key.text)

    return sorted(set(keys), key=position)


def forward_of_prefilled_s(values: Mapping[str, Any], series: QueueSeries | None) -> float:
    """The forward time a prefill case's cost is a share of: its forward_ms is stated for a full
    chunk (chunked_prefill_size // dp_size tokens); where a cap keeps chunks part-full, the
    forward of the tokens actually prefilled (mean per iteration, recorded as the
    `prefill_tokens` queue series), taken as proportional to tokens. Other loops, and runs that
    did not record the series: forward_ms as stated."""
    forward_s = float(values.get("forward_ms", 0.0)) / 1e3
    tokens = series.lengths.get("prefill_tokens") if series else None
    if values.get("loop") != "prefill" or not tokens:
        return forward_s
    chunk = int(values.get("chunked_prefill_size", 0)) // max(1, int(values.get("dp_size", 1)))
    if chunk <= 0:
        return forward_s
    return forward_s * min(1.0, (sum(tokens) / len(tokens)) / chunk)


def build_cases(
    rounds: Rounds,
    counts: Mapping[str, OpCounts],
    queues: Mapping[str, QueueSeries],
    metas: Mapping[str, CaseMeta],
    gc: Mapping[str, dict[str, GcRates]],
    order: Sequence[str],
    kind: str,
) -> list[Case]:
    """Every case of a run's scheduler benchmarks of `kind` (the step suite's): values per
    worker (collector-free), counted
    operations, queue series by case key, the manifest's cases by key, GC rates by case key and
    strategy, the configuration's scenario order."""
    net = net_of(rounds, reference=REFERENCE, kind=kind, statistic=NET_STATISTIC)
    names = {n: BenchName.parse(n) for n in rounds}
    keys = ordered_cases((b.case for b in names.values() if b.kind == kind), order)
    out = []
    for key in keys:
        meta = metas.get(key.text)
        case_values = dict(meta.values) if meta else {}
        series = queues.get(key.text)
        forward_s = forward_of_prefilled_s(case_values, series)
        costs = []
        for name in sorted(rounds):
            bench = names[name]
            if bench.kind != kind or bench.case != key:
                continue
            # a cold case replays its warm twin's stream: the same counted operations
            c = counts.get(name) or counts.get(str(bench.without("regime")))
            per = c.iterations if c and c.iterations else 0
            costs.append(
                Cost(
                    bench=bench,
                    median_s=robust.median(rounds.flat(name)),
                    net=net.get(name),
                    forward_s=forward_s,
                    lookups=c.lookups / per if per and c else None,
                    created=c.created / per if per and c else None,
                    events={k: v / per for k, v in c.events.items()}
                    if per and c and c.events
                    else None,
                )
            )
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


def difference(rounds: Rounds, a: BenchName, b: BenchName) -> NetCost | None:
    """a minus b per round (paired: the same scheduler steps, moments apart, in the same worker
    process), in seconds: NET_STATISTIC with a bootstrap CI over processes then rounds; None
    without paired values."""
    groups = rounds.groups(str(a), str(b))
    if groups is None or sum(len(g) for g in groups[0]) < 2:
        return None
    return paired_difference(groups[0], groups[1], NET_STATISTIC)


def negated(diff: NetCost) -> NetCost:
    return NetCost(
        median=-diff.median,
        ci_low=-diff.ci_high,
        ci_high=-diff.ci_low,
        n=diff.n,
        processes=diff.processes,
    )


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
    bytes: float = 0.0  # kept per request (0: not recorded)
    tracked_objects: float = 0.0


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
                f.bytes,
                f.tracked_objects,
            )
        )
    return rows


def change_sources(
    base: Mapping[str, Any] | None,
    head: Mapping[str, Any] | None,
    loop: str,
    events: Mapping[str, float],
    share: float,
    *,
    top: int = 3,
) -> list[tuple[str, float, float]]:
    """Where a change between two revisions lies: per hot-path function, its attribute loads
    and lookups per iteration at each (the accesses of its program, the manifest's target
    metadata, through its home, times the events counted in the run), the `top` that moved
    most. (function, base, head)."""

    def per(meta: Mapping[str, Any] | None) -> dict[str, float]:
        if meta is None or "program" not in meta:
            return {}
        program = GroupProgram.from_json(meta["program"])
        kind = str(meta.get("home_kind", "inline"))
        return per_iteration(program, loop, events, share, home_kind=kind)

    a, b = per(base), per(head)
    moved = [(f, a.get(f, 0.0), b.get(f, 0.0)) for f in {*a, *b}]
    moved = [m for m in moved if abs(m[2] - m[1]) > 1e-9 or m[1] != m[2]]
    moved.sort(key=lambda m: (-abs(m[2] - m[1]), -m[2], m[0]))
    return moved[:top]
