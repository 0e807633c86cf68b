"""The headline table: one row per strategy, one column per metric a reviewer asks about,
each cell a ratio against the baseline strategy with its 95% CI and significance.

Timing metrics reuse the summaries' paired comparisons. The p99 step latency gets a percentile
bootstrap over the recorded steps; bytes per request and GC pause are single aggregate
measurements, shown as plain ratios without a test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bench.analysis import Summary
from bench.report.load import RunData

# Resamples for the p99 bootstrap: p99 of <= 5,000 steps; 1,000 keeps the CI ends to ~2%.
P99_RESAMPLES = 1000


@dataclass(frozen=True)
class Cell:
    value: float  # in `unit` (seconds for times, as bench.analysis.fmt_value expects)
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    significant: bool | None = None  # None: no test for this metric
    noisy: bool = False
    baseline: bool = False


@dataclass(frozen=True)
class Metric:
    key: str
    title: str
    unit: str
    words: tuple[str, str]  # (lower than baseline, higher than baseline)
    note: str
    cells: dict[str, Cell] = field(default_factory=dict)

    def word(self, cell: Cell) -> str:
        """faster/slower/same, or '' where no test applies."""
        if cell.baseline or cell.ratio is None or cell.significant is None:
            return ""
        if not cell.significant:
            return "same"
        return self.words[0] if cell.ratio < 1 else self.words[1]


def _from_summary(s: Summary, baseline: str) -> Cell:
    return Cell(
        value=s.median,
        ratio=s.ratio,
        ci_low=s.ratio_low,
        ci_high=s.ratio_high,
        significant=None if s.verdict is None else s.verdict in ("faster", "slower"),
        noisy=s.noisy,
        baseline=s.strategy == baseline,
    )


def _summary_metric(
    run: RunData, suite: str, scenario: str, params: str, key: str, title: str, note: str
) -> Metric | None:
    data = run.suite(suite)
    if data is None:
        return None
    rows = [s for s in data.summaries if s.scenario == scenario and s.params == params]
    if not rows:
        return None
    words = ("smaller", "larger") if rows[0].unit != "second" else ("faster", "slower")
    metric = Metric(key=key, title=title, unit=rows[0].unit, words=words, note=note)
    base = next((s for s in rows if s.strategy == run.baseline), None)
    for s in rows:
        cell = _from_summary(s, run.baseline)
        if s.n < 2 and base is not None and base.median and s.strategy != run.baseline:
            cell = Cell(value=s.median, ratio=s.median / base.median, baseline=False)
        metric.cells[s.strategy] = cell
    return metric


def lookup_sizes(run: RunData, op: str = "get_hit") -> list[int]:
    data = run.suite("lookup")
    if data is None:
        return []
    sizes = set()
    for s in data.summaries:
        parts = dict(p.split("=", 1) for p in s.params.split("/") if "=" in p)
        if parts.get("op") == op and parts.get("live", "").isdigit():
            sizes.add(int(parts["live"]))
    return sorted(sizes)


def quantile_ratio_ci(
    values: list[float], baseline: list[float], q: float, *, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile-bootstrap CI of quantile(values, q) / quantile(baseline, q)."""
    rng = np.random.default_rng(seed)
    a = np.asarray(values, dtype=float)
    b = np.asarray(baseline, dtype=float)
    qa = np.quantile(a[rng.integers(0, a.size, (P99_RESAMPLES, a.size))], q, axis=1)
    qb = np.quantile(b[rng.integers(0, b.size, (P99_RESAMPLES, b.size))], q, axis=1)
    ratios = qa / np.where(qb > 0, qb, np.nan)
    tail = (1 - level) / 2
    lo, hi = np.nanquantile(ratios, [tail, 1 - tail])
    return float(lo), float(hi)


def _p99_metric(run: RunData, pattern: str) -> Metric | None:
    data = run.suite("step")
    if data is None:
        return None
    pct = data.extra.get("percentiles", {})
    raw = data.extra.get("step_host_ns", {})
    metric = Metric(
        key=f"p99_{pattern}",
        title=f"p99 step ({pattern})",
        unit="second",
        words=("faster", "slower"),
        note="99th percentile of per-step host latency; CI: bootstrap over recorded steps",
    )
    base_name = f"step/{run.baseline}/pattern={pattern}"
    base_p99 = pct.get(base_name, {}).get("p99_ns")
    base_raw = [float(v) for v in raw.get(base_name, [])]
    for name, p in sorted(pct.items()):
        scenario, _, rest = name.partition("/")
        strategy, _, params = rest.partition("/")
        if scenario != "step" or params != f"pattern={pattern}" or "p99_ns" not in p:
            continue
        value = float(p["p99_ns"]) / 1e9
        if strategy == run.baseline or not base_p99:
            metric.cells[strategy] = Cell(value=value, baseline=strategy == run.baseline)
            continue
        mine = [float(v) for v in raw.get(name, [])]
        ratio = float(p["p99_ns"]) / float(base_p99)
        if len(mine) >= 2 and len(base_raw) >= 2:
            lo, hi = quantile_ratio_ci(mine, base_raw, 0.99)
            cell = Cell(value, ratio, lo, hi, significant=not lo <= 1.0 <= hi)
        else:
            cell = Cell(value, ratio)
        metric.cells[strategy] = cell
    return metric if metric.cells else None


def _gc_pause_metric(run: RunData) -> Metric | None:
    data = run.suite("gc")
    if data is None:
        return None
    rates = data.extra.get("gc_rates", {})
    mode = "enabled" if "enabled" in rates else next(iter(rates), None)
    if mode is None:
        return None
    metric = Metric(
        key="gc_pause",
        title=f"GC pause / 1k steps (gc={mode})",
        unit="second",
        words=("less", "more"),
        note="total collector pause per 1,000 scheduler steps; one aggregate, no test",
    )
    by_strategy = {name.split("/")[1]: r for name, r in rates[mode].items() if "/" in name}
    base = by_strategy.get(run.baseline, {}).get("pause_ms_per_kstep")
    for strategy, r in sorted(by_strategy.items()):
        value = float(r.get("pause_ms_per_kstep", 0.0)) / 1e3
        ratio = value * 1e3 / base if base and strategy != run.baseline else None
        metric.cells[strategy] = Cell(value, ratio, baseline=strategy == run.baseline)
    return metric if metric.cells else None


def headline(run: RunData) -> list[Metric]:
    """The metrics present in this run, in reading order."""
    metrics: list[Metric | None] = []
    sizes = lookup_sizes(run)
    if sizes:
        metrics.append(
            _summary_metric(
                run,
                "lookup",
                "lookup",
                f"op=get_hit/live={sizes[-1]}",
                "get_hit",
                f"get_hit per op (live={sizes[-1]:,})",
                "state lookup of a live request at the largest table size measured",
            )
        )
    patterns = [str(p) for p in run.config.get("patterns", ("per_field", "cached"))]
    for pattern in patterns:
        metrics.append(
            _summary_metric(
                run,
                "step",
                "step",
                f"pattern={pattern}",
                f"step_{pattern}",
                f"step ({pattern})",
                "median scheduler step time, paired per round against the baseline",
            )
        )
    metrics.append(_p99_metric(run, patterns[0] if patterns else "per_field"))
    metrics.append(
        _summary_metric(
            run,
            "gc",
            "memory",
            "metric=request_bytes",
            "request_bytes",
            "bytes / request",
            "deep size of one request with its state (mean over sampled requests)",
        )
    )
    metrics.append(
        _summary_metric(
            run,
            "gc",
            "memory",
            "metric=tracked_objects_per_request",
            "tracked_objects",
            "GC-tracked objects / request",
            "objects the cyclic collector tracks per request, state included",
        )
    )
    metrics.append(
        _summary_metric(
            run,
            "gc",
            "gc_full",
            "gc=enabled",
            "gc_full",
            "full GC pause (gc=enabled)",
            "one full gc.collect() with the live population: the stall production sees",
        )
    )
    metrics.append(_gc_pause_metric(run))
    return [m for m in metrics if m is not None]
