"""From raw measurements to what people read: per-benchmark summaries and ratios against the
baseline strategy, step percentiles, GC rates, ratios between two values of a parameter, and
scaling fits. Computed when a run folder is read, never stored."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.base.names import BenchName, twin_of
from bench.runformat.schema import GcCounts, StepSeries
from bench.stats import robust
from bench.stats.classify import classify, legacy_classify
from bench.stats.rounds import Rounds

# A step slower than this multiple of the median step counts as a spike.
SPIKE_FACTOR = 3.0
# Log-log slope of marginal cost per live request above which it "grows" with the population:
# 0.15 means +23% per 4x more requests, well above what two noisy medians produce.
GROWTH_SLOPE = 0.15


@dataclass(frozen=True)
class Summary:
    """One benchmark: its values summarised, and its comparison with the baseline strategy."""

    bench: BenchName
    unit: str
    n: int
    median: float
    q1: float
    q3: float
    ci_low: float
    ci_high: float
    noisy: bool
    ratio: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    p_value: float | None = None
    verdict: str | None = None  # faster / slower / same, vs the baseline (classify: one rule)
    reason: str = ""  # why that verdict (classify)
    noise_floor: float | None = None  # the family's A/A deviation the verdict was held to
    legacy_verdict: str | None = None  # the rule before twins (for the A/A self-test)
    processes: int = 1  # worker processes the values came from

    @property
    def name(self) -> str:
        return str(self.bench)

    @property
    def kind(self) -> str:
        return self.bench.kind

    @property
    def strategy(self) -> str:
        return self.bench.strategy

    @property
    def condition(self) -> str:
        return self.bench.condition

    @property
    def twin(self) -> bool:
        """An A/A twin of the baseline: shown in its own row, never ranked."""
        return twin_of(self.strategy) is not None


def aa_deviation(twin: robust.Comparison | Summary) -> float:
    """How far identical code strays from the baseline on one benchmark: the largest deviation
    from 1 within the twin's 95% CI. One twin's point estimate is a single draw of the noise (a
    second copy exceeds it about half the time); its CI bound is a bound on it. Measured in a
    quick run: the point estimate let a verbatim external copy of the baseline through on 4 of
    27 rows, the CI bound on none."""
    if isinstance(twin, Summary):
        ratio, lo, hi = twin.ratio, twin.ratio_low, twin.ratio_high
    else:
        ratio, lo, hi = twin.ratio, twin.ci_low, twin.ci_high
    points = [x for x in (ratio, lo, hi) if x is not None]
    return max(abs(x - 1.0) for x in points) if points else 0.0


def noise_family(bench: BenchName, keys: Mapping[str, Sequence[str]] | None = None) -> object:
    """The family whose A/A deviation a benchmark is held to: the benchmark without its
    strategy, or (keys[kind]) only some of its parameters, when one process per strategy makes
    the noise a property of the process rather than of each case (gc: the GC mode)."""
    if keys and bench.kind in keys:
        return bench.kind, tuple((k, bench.get(k) or "") for k in keys[bench.kind])
    return bench.family


def _groups(runs: Sequence[Sequence[float]]) -> list[list[float]]:
    return [list(r) for r in runs if len(r)]


def summarize(
    runs: Mapping[str, Sequence[Sequence[float]]],
    units: Mapping[str, str],
    *,
    baseline: str,
    paired: bool = True,
    noise_keys: Mapping[str, Sequence[str]] | None = None,
    workers: Mapping[str, Sequence[int]] | None = None,
) -> list[Summary]:
    """Per benchmark, from its values per worker process. paired: the suite measured every
    strategy in the same processes, value i of each in the same round (its comparisons then
    pair them, over the worker processes both have: `workers` gives each run's worker, else
    runs pair by position). CIs and ratios come from a hierarchical bootstrap
    (robust.hierarchical_compare); verdicts from classify(), held to the noise floor of the
    baseline's A/A twins."""
    compared, legacy = _comparisons(runs, baseline, paired, workers)
    deviation = _aa_deviations(compared, baseline, noise_keys)
    out = []
    for text in sorted(runs):
        groups = _groups(runs[text])
        vals = [v for g in groups for v in g]
        if not vals:
            continue
        bench = BenchName.parse(text)
        if len(vals) > 1:
            lo, hi = robust.hierarchical_median_ci(groups)
        else:
            lo, hi = vals[0], vals[0]
        cmp = compared.get(text)
        family = noise_family(bench, noise_keys)
        floors = [d for (fam, t), d in deviation.items() if fam == family and t != bench.strategy]
        floor = max(floors) if floors else None
        verdict: str | None = None
        reason = ""
        if cmp is not None:
            if twin_of(bench.strategy) == baseline and floor is None:
                verdict, reason = "same", "the A/A twin: its deviation is this family's noise floor"
            else:
                c = classify(cmp.ratio, cmp.ci_low, cmp.ci_high, noise_floor=floor)
                verdict, reason = c.verdict, c.reason
        out.append(
            Summary(
                bench=bench,
                unit=units.get(text, "second"),
                n=len(vals),
                median=robust.median(vals),
                q1=robust.quantile(vals, 0.25),
                q3=robust.quantile(vals, 0.75),
                ci_low=lo,
                ci_high=hi,
                noisy=robust.is_noisy(vals),
                ratio=None if cmp is None else cmp.ratio,
                ratio_low=None if cmp is None else cmp.ci_low,
                ratio_high=None if cmp is None else cmp.ci_high,
                p_value=None if cmp is None else cmp.p_value,
                verdict=verdict,
                reason=reason,
                noise_floor=floor,
                legacy_verdict=legacy.get(text),
                processes=len(groups),
            )
        )
    return out


def _comparisons(
    runs: Mapping[str, Sequence[Sequence[float]]],
    baseline: str,
    paired: bool,
    workers: Mapping[str, Sequence[int]] | None,
) -> tuple[dict[str, robust.Comparison], dict[str, str]]:
    """Every benchmark against the baseline's (hierarchical bootstrap), and the legacy verdict."""
    compared: dict[str, robust.Comparison] = {}
    legacy: dict[str, str] = {}
    rounds = Rounds(runs, workers or {})
    for text in runs:
        bench = BenchName.parse(text)
        base_name = str(bench.with_strategy(baseline))
        shared = rounds.groups(text, base_name) if paired else None
        if shared is not None:
            mine, base = _groups(shared[0]), _groups(shared[1])
        else:
            mine, base = _groups(runs[text]), _groups(runs.get(base_name, []))
        flat = [v for g in mine for v in g]
        flat_base = [v for g in base for v in g]
        if bench.strategy == baseline or len(flat) < 2 or len(flat_base) < 2:
            continue
        compared[text] = robust.hierarchical_compare(mine, base, paired=paired)
        old = robust.compare(flat, flat_base, paired=paired)
        legacy[text] = legacy_classify(old.ratio, old.ci_low, old.ci_high, old.p_value)
    return compared, legacy


def _aa_deviations(
    compared: Mapping[str, robust.Comparison],
    baseline: str,
    noise_keys: Mapping[str, Sequence[str]] | None,
) -> dict[tuple[object, str], float]:
    """The noise floor of a family: how far each A/A twin of the baseline strays on it,
    keyed by (family, twin)."""
    deviation: dict[tuple[object, str], float] = {}
    for text, twin_cmp in compared.items():
        bench = BenchName.parse(text)
        if twin_of(bench.strategy) == baseline:
            key = (noise_family(bench, noise_keys), bench.strategy)
            deviation[key] = max(deviation.get(key, 0.0), aa_deviation(twin_cmp))
    return deviation


def noise_floors(
    summaries: Sequence[Summary], noise_keys: Mapping[str, Sequence[str]] | None = None
) -> dict[object, float]:
    """Per family (BenchName.family: the benchmark without its strategy): the largest A/A twin
    deviation (aa_deviation)."""
    out: dict[object, float] = {}
    for s in summaries:
        if s.twin and s.ratio is not None:
            family = noise_family(s.bench, noise_keys)
            out[family] = max(out.get(family, 0.0), aa_deviation(s))
    return out


@dataclass(frozen=True)
class StepPercentiles:
    """Per-step latency of one benchmark. A tail quantile is None where too few steps were
    recorded to support it (robust.supports_quantile)."""

    steps: int
    p50_ns: float
    p99_ns: float | None
    p999_ns: float | None
    max_ns: float
    mean_ns: float
    steps_per_s: float
    spikes: int  # steps slower than SPIKE_FACTOR x the median
    spikes_with_gc: int  # ... during which a collection ran
    steps_with_gc: int
    device_p50_ns: float | None  # None where the device is the CPU

    @property
    def spikes_without_gc(self) -> int:
        return self.spikes - self.spikes_with_gc


def _tail(values: Sequence[float], q: float) -> float | None:
    return robust.quantile(values, q) if robust.supports_quantile(len(values), q) else None


def step_percentiles(series: StepSeries) -> StepPercentiles | None:
    """p50/p99/p99.9/max of per-step latency, steps per second, spikes split by GC."""
    host, flags = series.host_ns, series.gc
    if not host:
        return None
    med = robust.median(host)
    spikes = [i for i, v in enumerate(host) if v > SPIKE_FACTOR * med]
    return StepPercentiles(
        steps=len(host),
        p50_ns=med,
        p99_ns=_tail(host, 0.99),
        p999_ns=_tail(host, 0.999),
        max_ns=max(host),
        mean_ns=sum(host) / len(host),
        steps_per_s=1e9 * len(host) / sum(host) if sum(host) else 0.0,
        spikes=len(spikes),
        spikes_with_gc=sum(1 for i in spikes if flags[i]),
        steps_with_gc=sum(1 for g in flags if g),
        device_p50_ns=robust.median(series.device_ns) if any(series.device_ns) else None,
    )


def param_ratios(
    rounds: Rounds, *, kind: str, key: str, num: str, den: str
) -> dict[str, robust.Comparison]:
    """Per strategy: benchmark with key=num against the same benchmark with key=den (paired over
    the worker processes both have), e.g. step per_field / cached. Keyed by the numerator's
    name without the key."""
    out: dict[str, robust.Comparison] = {}
    for text in rounds:
        bench = BenchName.parse(text)
        if bench.kind != kind or bench.get(key) != num:
            continue
        pair = rounds.paired(text, str(bench.with_params(**{key: den})))
        if pair is not None and len(pair[0]) > 1:
            out[str(bench.without(key))] = robust.compare(pair[0], pair[1], paired=True)
    return out


@dataclass(frozen=True)
class ScalingFit:
    """How step time grows with a size parameter (e.g. the decode batch), per strategy."""

    sizes: list[int]
    step_s: list[float]
    per_request_s: list[float]
    marginal_ns_per_request: float | None = None
    fixed_step_ns: float | None = None
    interval_marginal_ns: list[float] | None = None
    marginal_loglog_slope: float | None = None
    growth: str | None = None  # flat / grows


def scaling_fits(
    values: Mapping[str, Sequence[float]], *, kind: str, key: str
) -> dict[str, ScalingFit]:
    """Per strategy: how step time grows with the size parameter `key`.

    A step has a fixed part and a part proportional to what it walks. The marginal cost between
    consecutive sizes, (step(n2) - step(n1)) / (n2 - n1), is the cost one more request adds to
    a step; its log-log slope against n is ~0 when that cost is constant and clearly positive
    when it grows with the population (table growth, cache misses, O(n) work per lookup).
    """
    by_strategy: dict[str, dict[int, float]] = {}
    for text, vals in values.items():
        bench = BenchName.parse(text)
        if bench.kind != kind or key not in bench or not vals:
            continue
        by_strategy.setdefault(bench.strategy, {})[bench.int(key)] = robust.median(vals)
    fits: dict[str, ScalingFit] = {}
    for strategy, points in sorted(by_strategy.items()):
        sizes = sorted(points)
        steps = [points[n] for n in sizes]
        per_request = [points[n] / n for n in sizes]
        if len(sizes) < 2:
            fits[strategy] = ScalingFit(sizes, steps, per_request)
            continue
        slope, intercept = robust.linear_fit(sizes, steps)
        mids, marginals = [], []
        for n1, n2 in itertools.pairwise(sizes):
            m = (points[n2] - points[n1]) / (n2 - n1)
            if m > 0:
                mids.append((n1 * n2) ** 0.5)
                marginals.append(m)
        loglog = robust.loglog_slope(mids, marginals) if len(marginals) >= 2 else None
        fits[strategy] = ScalingFit(
            sizes,
            steps,
            per_request,
            marginal_ns_per_request=slope * 1e9,
            fixed_step_ns=intercept * 1e9,
            interval_marginal_ns=[m * 1e9 for m in marginals],
            marginal_loglog_slope=loglog,
            growth=None if loglog is None else ("grows" if loglog > GROWTH_SLOPE else "flat"),
        )
    return fits


@dataclass(frozen=True)
class GcRates:
    """Collections per generation and pause time, per 1,000 measured steps."""

    collections_per_kstep: list[float]
    pause_ms_per_kstep: float
    max_pause_ms: float
    steps: int

    @property
    def collections_total_per_kstep(self) -> float:
        return sum(self.collections_per_kstep)


def gc_rates(counts: Mapping[str, GcCounts]) -> dict[str, GcRates]:
    out: dict[str, GcRates] = {}
    for name, c in counts.items():
        if not c.steps:
            continue
        k = 1000 / c.steps
        out[name] = GcRates(
            collections_per_kstep=[x * k for x in c.collections],
            pause_ms_per_kstep=sum(c.pause_ns) * k / 1e6,
            max_pause_ms=c.max_pause_ns / 1e6,
            steps=c.steps,
        )
    return out


@dataclass(frozen=True)
class QueueStat:
    mean: float
    p99: float | None  # None: too few iterations recorded (robust.supports_quantile)
    max: float


def queue_stats(lengths: Mapping[str, Sequence[int]]) -> dict[str, QueueStat]:
    """Mean, p99 and max of every queue's length over the measured iterations."""
    out = {}
    for name, values in lengths.items():
        if values:
            out[name] = QueueStat(
                mean=sum(values) / len(values),
                p99=_tail(values, 0.99),
                max=float(max(values)),
            )
    return out


# The fewest worker processes an interval over processes is printed from. A process's layout
# and hash seed move all its rounds (docs/REGIMES.md: a process's in-cache figure moved 1.8x
# between its halves on this VM), so the interval resamples processes first; from 2 there are 3
# distinct resamples, and prefill-sharegpt's candidate read 163.3 [-482.9, 188.4], its point at
# the top of its own interval. Below this the report says "too few processes".
MIN_PROCESSES = 5


@dataclass(frozen=True)
class NetCost:
    """A benchmark's value net of a reference strategy's (the harness's own cost), per round."""

    median: float  # the centre, in the benchmark's unit (seconds per iteration): the statistic's
    ci_low: float
    ci_high: float
    n: int
    processes: int = 0  # the worker processes its rounds came from (0: not known)

    @property
    def too_few_processes(self) -> bool:
        """Whether its interval rests on fewer processes than one needs (MIN_PROCESSES)."""
        return 0 < self.processes < MIN_PROCESSES

    @property
    def significant(self) -> bool:
        return not self.ci_low <= 0.0 <= self.ci_high


def net_of(
    rounds: Rounds, *, reference: str, kind: str, statistic: str = "median"
) -> dict[str, NetCost]:
    """Per benchmark of `kind`: value minus the reference strategy's value of the same round
    (paired: same scheduler steps, measured moments apart, in the same worker process), with a
    bootstrap CI of the `statistic` of those differences (median, or mean: a cost per
    iteration is a mean; NetCost.median then holds the mean)."""
    out: dict[str, NetCost] = {}
    for text in rounds:
        bench = BenchName.parse(text)
        if bench.kind != kind or bench.strategy == reference:
            continue
        groups = rounds.groups(text, str(bench.with_strategy(reference)))
        if groups is None or sum(len(g) for g in groups[0]) < 2:
            continue
        out[text] = paired_difference(groups[0], groups[1], statistic)
    return out


def paired_difference(
    a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], statistic: str
) -> NetCost:
    """a minus b per round, the rounds grouped by worker process (value i of a group of each
    from the same round): the median ("median") or the 10%-trimmed mean ("trimmed") of the
    differences with a hierarchical bootstrap CI (processes, then rounds: a process's layout
    and hash seed move every round of it), or their mean with a bootstrap CI over rounds."""
    diffs = [[x - y for x, y in zip(ga, gb, strict=True)] for ga, gb in zip(a, b, strict=True)]
    flat = [d for g in diffs for d in g]
    if statistic == "trimmed":
        lo, hi = robust.hierarchical_trimmed_ci(diffs)
        centre = robust.trimmed_mean(flat)
    elif statistic == "mean":
        lo, hi = robust.bootstrap_mean_ci(flat)
        centre = sum(flat) / len(flat)
    else:
        lo, hi = robust.hierarchical_median_ci(diffs)
        centre = robust.median(flat)
    return NetCost(median=centre, ci_low=lo, ci_high=hi, n=len(flat), processes=len(diffs))


@dataclass(frozen=True)
class NetRatio:
    """One strategy's cost net of the reference against the baseline's net cost, per round."""

    ratio: float
    ci_low: float
    ci_high: float

    @property
    def significant(self) -> bool:
        return not self.ci_low <= 1.0 <= self.ci_high


def net_ratios(rounds: Rounds, *, reference: str, baseline: str, kind: str) -> dict[str, NetRatio]:
    """Per benchmark of `kind`: (value - reference) / (baseline - reference) of the same round,
    median with a bootstrap CI. Left out where the baseline's net cost is not positive in every
    round (a ratio to nothing)."""
    out: dict[str, NetRatio] = {}
    for text in rounds:
        bench = BenchName.parse(text)
        if bench.kind != kind or bench.strategy in (reference, baseline):
            continue
        triple = rounds.paired(
            text, str(bench.with_strategy(reference)), str(bench.with_strategy(baseline))
        )
        if triple is None or len(triple[0]) < 2:
            continue
        vals, ref, base = triple
        dens = [b - r for b, r in zip(base, ref, strict=True)]
        if min(dens) <= 0:
            continue
        ratios = [(v - r) / d for v, r, d in zip(vals, ref, dens, strict=True)]
        lo, hi = robust.bootstrap_median_ci(ratios)
        out[text] = NetRatio(ratio=robust.median(ratios), ci_low=lo, ci_high=hi)
    return out
