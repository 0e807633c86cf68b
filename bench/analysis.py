"""From merged values to what people read: per-benchmark summaries, ratios against the
baseline strategy with bootstrap CIs and Mann-Whitney verdicts, step percentiles, GC spikes,
scaling fits. Used by the terminal table, the report and the gate; it reads, never measures."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench import stats

# A step slower than this multiple of the median step counts as a spike.
SPIKE_FACTOR = 3.0
# Log-log slope of marginal cost per live request above which it "grows" with the population:
# 0.15 means +23% per 4x more requests, well above what two noisy medians produce.
GROWTH_SLOPE = 0.15


def split_name(name: str) -> tuple[str, str, str]:
    """'step/weakkey/pattern=cached' -> ('step', 'weakkey', 'pattern=cached')."""
    parts = name.split("/", 2)
    if len(parts) < 2:
        return name, "", ""
    return parts[0], parts[1], parts[2] if len(parts) > 2 else ""


def baseline_name(name: str, baseline: str) -> str:
    scenario, _strategy, rest = split_name(name)
    return "/".join(p for p in (scenario, baseline, rest) if p)


@dataclass(frozen=True)
class Summary:
    name: str
    scenario: str
    strategy: str
    params: str
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
    verdict: str | None = None  # faster / slower / same, vs the baseline strategy

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(
    values: Mapping[str, Sequence[float]],
    units: Mapping[str, str],
    *,
    baseline: str,
    paired: bool = True,
) -> list[Summary]:
    """paired: values were taken in interleaved rounds, value i of every benchmark in the same
    round (the runner's layout); comparisons then pair them (see stats.compare)."""
    out = []
    for name in sorted(values):
        vals = list(values[name])
        if not vals:
            continue
        scenario, strategy, params = split_name(name)
        lo, hi = stats.bootstrap_median_ci(vals) if len(vals) > 1 else (vals[0], vals[0])
        ratio = r_lo = r_hi = p = None
        verdict = None
        base = baseline_name(name, baseline)
        if strategy != baseline and base in values and len(vals) > 1 and len(values[base]) > 1:
            cmp = stats.compare(vals, list(values[base]), paired=paired)
            ratio, r_lo, r_hi, p, verdict = (
                cmp.ratio,
                cmp.ci_low,
                cmp.ci_high,
                cmp.p_value,
                cmp.verdict,
            )
        out.append(
            Summary(
                name=name,
                scenario=scenario,
                strategy=strategy,
                params=params,
                unit=units.get(name, "second"),
                n=len(vals),
                median=stats.median(vals),
                q1=stats.quantile(vals, 0.25),
                q3=stats.quantile(vals, 0.75),
                ci_low=lo,
                ci_high=hi,
                noisy=stats.is_noisy(vals),
                ratio=ratio,
                ratio_low=r_lo,
                ratio_high=r_hi,
                p_value=p,
                verdict=verdict,
            )
        )
    return out


def step_percentiles(host_ns: Sequence[int], gc_flags: Sequence[int]) -> dict[str, Any]:
    """p50/p99/p99.9/max of per-step latency, steps per second, spikes split by GC."""
    if not host_ns:
        return {}
    med = stats.median(host_ns)
    spikes = [i for i, v in enumerate(host_ns) if v > SPIKE_FACTOR * med]
    with_gc = sum(1 for i in spikes if gc_flags and gc_flags[i])
    return {
        "steps": len(host_ns),
        "p50_ns": med,
        "p99_ns": stats.quantile(host_ns, 0.99),
        "p999_ns": stats.quantile(host_ns, 0.999),
        "max_ns": max(host_ns),
        "mean_ns": sum(host_ns) / len(host_ns),
        "steps_per_s": 1e9 * len(host_ns) / sum(host_ns),
        "spikes": len(spikes),
        "spikes_with_gc": with_gc,
        "spikes_without_gc": len(spikes) - with_gc,
        "steps_with_gc": sum(1 for g in gc_flags if g),
    }


def pattern_ratios(values: Mapping[str, Sequence[float]], scenario: str = "step") -> dict[str, Any]:
    """per_field / cached for every strategy that has both."""
    out: dict[str, Any] = {}
    for name, vals in values.items():
        sc, strategy, params = split_name(name)
        if sc != scenario or params != "pattern=per_field":
            continue
        other = f"{scenario}/{strategy}/pattern=cached"
        if other in values and len(vals) > 1 and len(values[other]) > 1:
            out[strategy] = asdict(stats.compare(list(vals), list(values[other]), paired=True))
    return out


def scaling_fits(values: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """Per strategy: how step time grows with live requests.

    A step has a fixed part (the prefill batch) and a part proportional to live requests (the
    inflight poll touches every one). The marginal cost between consecutive sizes,
    (step(n2) - step(n1)) / (n2 - n1), is the cost one more live request adds to a step; its
    log-log slope against n is ~0 when that cost is constant and clearly positive when it grows
    with the population (table growth, cache misses, O(n) work per lookup).
    """
    by_strategy: dict[str, dict[int, float]] = {}
    for name, vals in values.items():
        sc, strategy, params = split_name(name)
        if sc != "scaling" or not params.startswith("live="):
            continue
        by_strategy.setdefault(strategy, {})[int(params[5:])] = stats.median(vals)
    fits: dict[str, Any] = {}
    for strategy, points in sorted(by_strategy.items()):
        sizes = sorted(points)
        steps = [points[n] for n in sizes]
        entry: dict[str, Any] = {
            "sizes": sizes,
            "step_s": steps,
            "per_request_s": [points[n] / n for n in sizes],
        }
        if len(sizes) >= 2:
            slope, intercept = stats.linear_fit(sizes, steps)
            entry["marginal_ns_per_request"] = slope * 1e9
            entry["fixed_step_ns"] = intercept * 1e9
            mids, marginals = [], []
            for n1, n2 in itertools.pairwise(sizes):
                m = (points[n2] - points[n1]) / (n2 - n1)
                if m > 0:
                    mids.append((n1 * n2) ** 0.5)
                    marginals.append(m)
            entry["interval_marginal_ns"] = [m * 1e9 for m in marginals]
            if len(marginals) >= 2:
                entry["marginal_loglog_slope"] = stats.loglog_slope(mids, marginals)
                entry["growth"] = (
                    "grows" if entry["marginal_loglog_slope"] > GROWTH_SLOPE else "flat"
                )
        fits[strategy] = entry
    return fits


def gc_rates(per_benchmark: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Collections per generation and pause time, normalised per 1,000 steps."""
    out: dict[str, Any] = {}
    for name, acc in per_benchmark.items():
        steps = acc.get("steps", 0)
        if not steps:
            continue
        k = 1000 / steps
        out[name] = {
            "steps": steps,
            "collections_per_kstep": [c * k for c in acc["collections"]],
            "collections_total_per_kstep": sum(acc["collections"]) * k,
            "pause_ms_per_kstep": sum(acc["pause_ns"]) * k / 1e6,
            "max_pause_ms": acc["max_pause_ns"] / 1e6,
        }
    return out


def fmt_value(value: float, unit: str) -> str:
    if unit == "byte":
        return f"{value:,.0f} B"
    if unit == "integer":
        return f"{value:,.1f}"
    if value == 0 or math.isnan(value):
        return "0"
    for scale, suffix in ((1e-9, "ns"), (1e-6, "us"), (1e-3, "ms"), (1.0, "s")):
        if abs(value) < scale * 1000 or suffix == "s":
            return f"{value / scale:,.1f} {suffix}"
    return f"{value}"


def fmt_ratio(s: Summary) -> str:
    if s.ratio is None:
        return ""
    return f"{s.ratio:.3f} [{s.ratio_low:.3f}, {s.ratio_high:.3f}]"
