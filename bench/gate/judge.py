"""How the gate decides: one small rule object per mode, and the baseline files it can read.

A benchmark is a regression when its slowdown is larger than its bound, max(threshold, A/A
noise), and (wall clock) statistically significant: the report's rule (bench/stats/classify.py,
`beyond`) with the gate's bound and words. The gate fails closed: a gated benchmark
without data on a side is a DataError, never a pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import stats
from bench.base.errors import DataError
from bench.base.names import BenchName
from bench.base.storage import read_json
from bench.core.scenarios import get
from bench.gate.config import GateConfig
from bench.stats.classify import gate_verdict

SCHEMA = "reqstate-bench-gate/1"


@dataclass(frozen=True)
class Judgement:
    benchmark: str
    base: float
    candidate: float
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float | None
    threshold_pct: float
    noise_pct: float
    bound_pct: float
    verdict: str  # pass | regression | improvement
    # Step benchmarks in wall-clock mode: the change in seconds per iteration (median over
    # rounds of the per-round paired difference, with its CI), the scenario's forward time, and
    # (when a threshold is set in those units) the bound the change was judged against.
    change_s: float | None = None
    change_s_low: float | None = None
    change_s_high: float | None = None
    forward_s: float | None = None
    bound_s: float | None = None
    # real mode: the smallest change the job's spread lets it flag 80% of the time (percent)
    min_detectable_pct: float | None = None

    @property
    def change_pct(self) -> float:
        return (self.ratio - 1) * 100

    @property
    def share_of_forward(self) -> float | None:
        """The change per iteration as a share of the scenario's forward time."""
        if self.change_s is None or not self.forward_s:
            return None
        return self.change_s / self.forward_s


@dataclass(frozen=True)
class Sides:
    """One benchmark's values on each side: baseline, candidate, and the candidate's A/A copy."""

    base: list[float]
    cand: list[float]
    aa: list[float] | None


@dataclass(frozen=True)
class UnitThreshold:
    """A bound in the units a maintainer decides with (step benchmarks, wall clock): seconds per
    iteration, and/or a share of the scenario's forward time. The larger applies."""

    seconds: float | None = None
    share: float | None = None  # of the forward, e.g. 0.001 = 0.1%

    def bound_s(self, forward_s: float | None) -> float | None:
        parts = [x for x in (self.seconds,) if x is not None]
        if self.share is not None and forward_s:
            parts.append(self.share * forward_s)
        return max(parts) if parts else None


def forward_s_of(name: str) -> float | None:
    """A step benchmark's forward time (its scenario preset), in seconds."""

    bench = BenchName.parse(name)
    scenario = bench.get("scenario")
    if bench.kind != "step" or scenario is None:
        return None
    try:
        return get(scenario).forward_ms / 1e3
    except ValueError:
        return None


def per_round(values: list[float], per_process: int) -> list[float]:
    """Median of each worker process's values (consecutive runs of `per_process`)."""
    if len(values) % per_process:
        raise DataError(f"{len(values)} values do not split into processes of {per_process}")
    return [stats.median(values[i : i + per_process]) for i in range(0, len(values), per_process)]


def paired_per_round(num: list[float], den: list[float], per_process: int) -> list[float]:
    """Per round: the median over its values of num_i / den_i. Value i of every side covers the
    same scheduler steps (same seeded stream, same position), so the ratio cancels what the
    workload does in those steps; the median over the round's values then gives one figure per
    process pair. (Ratios of the two sides' per-process medians paired nothing within the round:
    the medians could come from different steps. Measured on one A/A gate job: the per-round
    spread of step benchmarks fell from sd 2.4-9.0% to 1.9-9.1%, 3.4% to 1.9% for decode.)"""
    if len(num) != len(den):
        raise DataError(f"{len(num)} and {len(den)} values cannot be paired")
    ratios = [n / d for n, d in zip(num, den, strict=True)]
    return per_round(ratios, per_process)


@dataclass(frozen=True)
class WallRule:
    """Wall clock. Values from one worker process are not independent (they share its memory
    layout and hash seed): the unit of replication is the round. Paired (--base): each round
    contributes the median of its value-by-value ratios, and the change is the median over
    rounds with a bootstrap CI over rounds and Wilcoxon's test on their logs. Unpaired
    (--baseline FILE, measured in another job): each process contributes the median of its
    values, compared with Mann-Whitney."""

    values_per_process: int
    paired: bool
    units: UnitThreshold = UnitThreshold()
    # a benchmark's forward time in seconds (None: not a scheduler iteration); real mode's
    # presets have their own (bench.real.gate)
    forward: Callable[[str], float | None] = forward_s_of

    def _difference(self, num: list[float], den: list[float]) -> tuple[float, float, float]:
        """Median over rounds of each round's median paired difference num - den, with a
        bootstrap CI over rounds (unpaired: difference of medians, CI of each round's)."""
        k = self.values_per_process
        if self.paired and len(num) == len(den):
            diffs = per_round([n - d for n, d in zip(num, den, strict=True)], k)
        else:
            a, b = per_round(num, k), per_round(den, k)
            m = stats.median(b)
            diffs = [x - m for x in a]
        lo, hi = stats.bootstrap_median_ci(diffs) if len(diffs) > 1 else (diffs[0], diffs[0])
        return stats.median(diffs), lo, hi

    def _change(self, num: list[float], den: list[float]) -> stats.Comparison:
        k = self.values_per_process
        if self.paired and len(num) == len(den):
            ratios = paired_per_round(num, den, k)
            return stats.compare(ratios, [1.0] * len(ratios), paired=True)
        return stats.compare(per_round(num, k), per_round(den, k), paired=False)

    def judge(self, name: str, sides: Sides, threshold: float) -> Judgement:
        base, cand, aa = sides.base, sides.cand, sides.aa
        cmp = self._change(cand, base)
        base, cand = (
            per_round(base, self.values_per_process),
            per_round(cand, self.values_per_process),
        )
        noise = 0.0
        if aa and len(aa) > 1:
            aa_cmp = self._change(aa, sides.cand)
            # The systematic offset identical code shows in this job; random noise is the
            # significance test's business (adding the A/A CI here counted it twice and put
            # the bound at ~15% on this machine, hiding a real +10%).
            noise = abs(aa_cmp.ratio - 1) * 100
        bound = max(threshold, noise)
        verdict = gate_verdict((cmp.ratio - 1) * 100, bound, significant=cmp.significant)
        forward = self.forward(name)
        diff = self._difference(sides.cand, sides.base) if forward is not None else None
        bound_s = self.units.bound_s(forward) if forward is not None else None
        if bound_s is not None and diff is not None:
            # Judged in seconds per iteration: the paired difference's CI must exclude zero,
            # and the change exceed the bound and what identical code moves (the A/A copy).
            if aa and len(aa) > 1:
                bound_s = max(bound_s, abs(self._difference(aa, sides.cand)[0]))
            verdict = gate_verdict(diff[0], bound_s, significant=not diff[1] <= 0.0 <= diff[2])
        change, lo, hi = diff if diff is not None else (None, None, None)
        return Judgement(
            name,
            stats.median(base),
            stats.median(cand),
            cmp.ratio,
            cmp.ci_low,
            cmp.ci_high,
            cmp.p_value,
            threshold,
            noise,
            bound,
            verdict,
            change_s=change,
            change_s_low=lo,
            change_s_high=hi,
            forward_s=forward,
            bound_s=bound_s,
        )


@dataclass(frozen=True)
class InstructionRule:
    """Instruction counts, one per heap layout and side (bench.gate.instructions: the count of
    identical code moves with the layout, by up to ~4.5% on decode-dspark). The change is the
    ratio of the sides' medians. Significant: every candidate layout beyond every baseline
    layout (an exact one-sided rank test; p = 1 / C(nb + nc, nc), 0.05 with three layouts a
    side). The noise is the spread of identical code, (max - min) / median over the candidate's
    and its A/A copy's layouts (the copy runs in other layouts); the bound is the larger of it
    and the threshold. With one count a side (a baseline file from an older gate, tiny test
    configurations) there is nothing to test and the count is taken as exact."""

    def judge(self, name: str, sides: Sides, threshold: float) -> Judgement:
        base, cand = sides.base, sides.cand
        b_med, c_med = stats.median(base), stats.median(cand)
        ratio = c_med / b_med
        same_code = cand + (sides.aa or [])
        noise = (max(same_code) - min(same_code)) / stats.median(same_code) * 100
        bound = max(threshold, noise)
        p_value: float | None = None
        if len(base) > 1 and len(cand) > 1:
            apart = min(cand) > max(base) if ratio >= 1 else max(cand) < min(base)
            p_value = 1 / math.comb(len(base) + len(cand), len(cand)) if apart else 1.0
            significant = apart
        else:
            significant = True
        return Judgement(
            name,
            b_med,
            c_med,
            ratio,
            min(cand) / max(base),
            max(cand) / min(base),
            p_value,
            threshold,
            noise,
            bound,
            gate_verdict((ratio - 1) * 100, bound, significant=significant),
        )


def judge(
    cfg: GateConfig, mode: str, values: dict[str, dict[str, list[float]]], *, paired: bool
) -> list[Judgement]:
    """Fail closed: a gated benchmark without data on a side is a DataError."""
    units = UnitThreshold(
        seconds=None if cfg.threshold_us is None else cfg.threshold_us / 1e6,
        share=None if cfg.threshold_share_pct is None else cfg.threshold_share_pct / 100,
    )
    rule: WallRule | InstructionRule = (
        InstructionRule() if mode == "instructions" else WallRule(cfg.values, paired, units)
    )
    out = []
    for name in cfg.benchmarks(mode):
        base = values.get("base", {}).get(name)
        cand = values.get("candidate", {}).get(name)
        if not base or not cand:
            side = "baseline" if not base else "candidate"
            raise DataError(f"{name}: no {side} values; the gate cannot judge it")
        aa = values.get("aa", {}).get(name)
        out.append(rule.judge(name, Sides(base, cand, aa), cfg.threshold_for(name, mode)))
    return out


def load_baseline(path: Path, cfg: GateConfig, mode: str) -> dict[str, list[float]]:
    """A gate JSON written earlier (its candidate values become the baseline)."""
    data = read_json(path)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise DataError(f"{path}: not a reqstate-bench gate result (schema {SCHEMA!r} expected)")
    want = cfg.fingerprint(mode)
    got = data.get("fingerprint")
    if got != want:
        diff = sorted(k for k in set(want) | set(got or {}) if (got or {}).get(k) != want.get(k))
        raise DataError(f"{path}: incompatible baseline (differs in {', '.join(diff)})")
    cand = data.get("values", {}).get("candidate")
    if not isinstance(cand, dict) or not all(
        isinstance(v, list) and v and all(isinstance(x, (int, float)) and x > 0 for x in v)
        for v in cand.values()
    ):
        raise DataError(f"{path}: baseline values are missing or malformed")
    return {k: [float(x) for x in v] for k, v in cand.items()}
