"""Adaptive measurement under a budget: further rounds go where the answer is not yet clear.

With `--budget DURATION`, every suite first runs its plan (its `workers` processes: the fixed
minimum), then, if it declares ADAPTIVE (bench.config.runconfig.Adaptive), further rounds: one worker
process each, measuring only the families whose reported quantity is still short of
`--precision` (a 95% CI half-width, in percent of the quantity), the nearest to it first,
as many as the suite's share of the budget still pays for. A family stops on the first of:

    precision   its quantity's CI half-width is within the target
    budget      the next round would overrun the suite's share of the budget
    round cap   MAX_ROUNDS processes measured it

Without a budget every suite runs its plan only, and each family is recorded as stopped by
the "fixed plan".

Validity under sequential stopping. A round is added when an interval is too WIDE, never
because of where it lies: the rule never looks at the sign, the size of the effect or a
p-value, so it cannot stop on a lucky draw in the way significance-chasing does. Stopping on
width alone leaves coverage at the nominal level as the target narrows (Chow & Robbins, "On
the asymptotic theory of fixed-width sequential confidence intervals for the mean", Ann. Math.
Statist. 36, 1965); at the few rounds of a short budget the fixed minimum (the plan) keeps the
first interval from resting on one process. What it does to false findings is measured, not
assumed: `python -m bench selftest-aa --budget ...` counts the A/A twin's flagged rows with and
without a budget (docs/ARCHITECTURE.md, "Adaptive measurement").

Budget shares: when a suite starts, it gets the budget still unspent times its BUDGET_SHARE
over the shares of the suites still to run (its own included), so a suite that finishes early
leaves its time to the next ones and one that overruns takes it from them. The suites on a
fixed plan run first (bench.suites.run_order): their cost is spent before the adaptive suites
divide what is left, so a slow hour cannot push the run past its budget through them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from bench import suites
from bench.base.names import BenchName
from bench.base.timing import wall_s
from bench.config.runconfig import Adaptive, RunConfig
from bench.measure.context import FAMILY_PHASE
from bench.orchestration.runner import SuiteState
from bench.runformat.schema import FamilyRecord, LoadSeries
from bench.stats import robust
from bench.stats.cases import NET_STATISTIC, REFERENCE, step_round_values
from bench.stats.derive import paired_difference
from bench.stats.drift import Drift, family_drift
from bench.stats.rounds import Rounds
from bench.suites.spec import Job

# Processes that may measure one family: a bound on a budget given in hours.
MAX_ROUNDS = 40
# Values per further round, at least. A process's own rounds vary less than its median does
# between processes (layout, hash seed), but a median of 3 rounds varied as much again: rounds
# of 3 values left decode-dspark at +-40% after 5 processes where rounds of 6 reached +-24%.
FURTHER_VALUES = 6
# What a worker process costs before it measures anything (interpreter, torch, strategies), in
# seconds, until the suite's own processes have shown it.
DEFAULT_OVERHEAD_S = 3.0


@dataclass(frozen=True)
class Precision:
    """A family's reported quantity and how precise it is so far."""

    quantity: str  # in words
    estimate: float | None
    half_width_pct: float | None  # None: not computable yet (too few values, a zero estimate)

    def reached(self, target_pct: float) -> bool:
        return self.half_width_pct is not None and self.half_width_pct <= target_pct


def half_width_pct(estimate: float, low: float, high: float) -> float | None:
    """A 95% interval's half-width in percent of its estimate (None for a zero estimate)."""
    if estimate == 0 or not all(math.isfinite(x) for x in (estimate, low, high)):
        return None
    return 100.0 * (high - low) / 2.0 / abs(estimate)


def processes_needed(p: Precision, rounds: int, target_pct: float) -> float:
    """About how many more processes bring a family at p after `rounds` of them to
    target_pct, if its half-width narrows as 1/sqrt(processes) (0 for an incomputable one)."""
    if p.half_width_pct is None:
        return 0.0
    return max(rounds, 1) * max((p.half_width_pct / target_pct) ** 2 - 1.0, 0.0)


def net_cost_precision(
    rounds: Rounds, *, baseline: str, pattern: str, within: Sequence[str]
) -> dict[str, Precision]:
    """Per family: the baseline's cost per round net of the reference (REFERENCE), paired per
    round within each worker, with its bootstrap CI (what the scenario view reports)."""
    out: dict[str, Precision] = {}
    for name in rounds:
        bench = BenchName.parse(name)
        if bench.strategy != baseline or bench.get("pattern") != pattern:
            continue
        groups = rounds.groups(name, str(bench.with_strategy(REFERENCE)))
        family = bench.family_text(within)
        words = f"{baseline} ({pattern}) cost per iteration net of {REFERENCE}"
        if groups is None or sum(len(g) for g in groups[0]) < 3:
            out[family] = Precision(words, None, None)
            continue
        net = paired_difference(groups[0], groups[1], NET_STATISTIC)
        out[family] = Precision(
            words, net.median, half_width_pct(net.median, net.ci_low, net.ci_high)
        )
    return out


# A change between revisions whose interval is this narrow, in percent of the baseline's
# iteration, is resolved whatever its size relative to the change (a change near zero has no
# percentage precision to reach).
CHANGE_FLOOR_PCT_OF_ITERATION = 1.0


def change_precision(
    rounds: Rounds,
    *,
    baseline: str,
    others: Sequence[str],
    pattern: str,
    within: Sequence[str],
) -> dict[str, Precision]:
    """Per family: each other revision's change against the baseline revision per iteration,
    paired per round within each worker, with its bootstrap CI; the family is as precise as its
    least precise change (a --target run's verdict is the change between revisions)."""
    out: dict[str, Precision] = {}
    for name in rounds:
        bench = BenchName.parse(name)
        if bench.strategy != baseline or bench.get("pattern") != pattern:
            continue
        family = bench.family_text(within)
        worst: Precision | None = None
        for other in others:
            groups = rounds.groups(str(bench.with_strategy(other)), name)
            words = f"change per iteration against {baseline} ({pattern})"
            if groups is None or sum(len(g) for g in groups[0]) < 3:
                worst = Precision(words, None, None)
                break
            diff = paired_difference(groups[0], groups[1], NET_STATISTIC)
            pct = half_width_pct(diff.median, diff.ci_low, diff.ci_high)
            base_s = robust.median(rounds.flat(name))
            if base_s > 0 and (diff.ci_high - diff.ci_low) / 2 <= (
                CHANGE_FLOOR_PCT_OF_ITERATION / 100 * base_s
            ):
                pct = min(pct, 0.0) if pct is not None else 0.0  # resolved in absolute terms
            p = Precision(words, diff.median, pct)
            if worst is None or (p.half_width_pct or 1e9) > (worst.half_width_pct or 1e9):
                worst = p
        if worst is not None:
            out[family] = worst
    return out


def ratio_precision(
    rounds: Rounds, *, baseline: str, within: Sequence[str], paired: bool
) -> dict[str, Precision]:
    """Per family: every strategy's ratio to the baseline (hierarchical bootstrap, as the
    report's summaries); the family is as precise as its least precise ratio. The reference
    strategy (the harness's own loop) is left out: its ratio is not a design's."""
    worst: dict[str, tuple[float | None, float | None]] = {}
    for name in rounds:
        bench = BenchName.parse(name)
        family = bench.family_text(within)
        if bench.strategy in (baseline, REFERENCE):
            continue
        base_name = str(bench.with_strategy(baseline))
        both = rounds.groups(name, base_name) if paired else None
        groups, base = both if both else (rounds.runs[name], rounds.runs.get(base_name, []))
        if not base or sum(len(g) for g in groups) < 3 or sum(len(g) for g in base) < 3:
            worst[family] = (None, None)
            continue
        cmp = robust.hierarchical_compare(groups, base, paired=both is not None)
        hw = half_width_pct(cmp.ratio, cmp.ci_low, cmp.ci_high)
        prev = worst.get(family)
        if prev is not None and prev[1] is None:
            continue
        if prev is None or hw is None or hw > (prev[1] or 0.0):
            worst[family] = (cmp.ratio, hw)
    words = f"every strategy's ratio to {baseline} (the least precise)"
    return {f: Precision(words, est, hw) for f, (est, hw) in worst.items()}


def load_fields(series: LoadSeries | None) -> dict[str, Any]:
    """A family's FamilyRecord load fields from its rounds' loads (all its processes)."""
    if series is None:
        return {}
    return {
        "loaded_rounds": series.loaded_rounds,
        "remeasured_rounds": series.remeasured,
        "load_max_cores": round(series.max_cores, 2) if series.rounds else None,
    }


@dataclass
class _SuiteBudget:
    budget_s: float | None
    stopped: dict[str, str]  # family -> why it stopped


class AdaptivePolicy:
    """bench.orchestration.runner.RoundPolicy: the suites' further rounds under config.budget_s. Without a
    budget it adds none and records each family as measured by the fixed plan."""

    def __init__(self, config: RunConfig, suite_names: Sequence[str], *, spent_s: float = 0.0):
        self.config = config
        self.todo = list(suite_names)
        self.started = wall_s() - spent_s  # a resumed run has spent its finished suites' time
        self.budgets: dict[str, _SuiteBudget] = {}
        self.pattern = "per_field"
        self.targets: tuple[str, ...] = ()

    def with_baseline_pattern(self, pattern: str) -> AdaptivePolicy:
        """The baseline's headline pattern (as_written for a revision)."""
        self.pattern = pattern
        return self

    def with_targets(self, names: Sequence[str]) -> AdaptivePolicy:
        """A --target run's revisions: its families are measured to the precision of the change
        between them, not of the baseline revision's own net cost."""
        self.targets = tuple(names)
        return self

    # -- the runner's hooks -------------------------------------------------------------------

    def begin(self, suite: str) -> float | None:
        remaining = self.todo[self.todo.index(suite) :] if suite in self.todo else [suite]
        budget = None
        if self.config.budget_s is not None:
            left = max(0.0, self.config.budget_s - (wall_s() - self.started))
            shares = [suites.get(s).budget_share for s in remaining]
            budget = left * suites.get(suite).budget_share / (sum(shares) or 1.0)
        self.budgets[suite] = _SuiteBudget(budget, {})
        return budget

    def further(self, state: SuiteState) -> tuple[list[Job], str]:
        spec = suites.get(state.suite)
        mine = self.budgets[state.suite]
        if spec.adaptive is None or mine.budget_s is None or not state.jobs:
            return [], ""
        if spec.adaptive.quantity == "net_cost" and not any(
            BenchName.parse(n).strategy == REFERENCE for n in state.merged
        ):
            return [], ""  # no reference measured: no net cost to make precise
        precision = self._precision(spec.adaptive, state)
        target = self._target(spec.adaptive)
        rounds = self._rounds(spec.adaptive, state)
        short = []
        drift = self._drift(spec.adaptive, state)
        for family, p in precision.items():
            if family in mine.stopped:
                continue
            moving = drift.get(family)
            if p.reached(target) and not (moving is not None and moving.drifting):
                mine.stopped[family] = "precision"
            elif rounds.get(family, 0) >= MAX_ROUNDS:
                mine.stopped[family] = "round cap"
            else:
                short.append(family)
        if not short:
            return [], ""
        # The nearest to its target first: a half-width narrows as 1/sqrt(processes), so a
        # family at hw% after n of them needs about n((hw/target)^2 - 1) more; the budget goes
        # to the families it can bring to the target (an incomputable one first: one more
        # process makes it computable). Furthest first (until 2026-12-04) offered a further
        # process first to the family furthest from its target: in one default run
        # prefill-no-dspark evicted at +-33% after six processes, ~60 short of +-10%.
        short.sort(key=lambda f: processes_needed(precision[f], rounds.get(f, 0), target))
        # A further round measures whole families: every strategy and pattern of them, as the
        # plan did. (A round of the baseline and control alone cost a seventh as much, but with
        # 3 schedulers interleaved instead of 20 their data stayed in cache: decode-dspark's
        # control iteration took 173 us against 502-535 us, and its net cost halved.)
        further = spec.adaptive.further_values or FURTHER_VALUES
        base = replace(
            state.jobs[0].config,
            only_families=(),
            values=max(further, state.jobs[0].config.values),
        )
        round_cost = self._round_cost_s(spec.adaptive, state, base)
        overhead = self._overhead_s(state)
        left = mine.budget_s - state.elapsed_s
        chosen, predicted = [], overhead
        for family in short:
            cost = round_cost.get(family, 0.0)
            if predicted + cost <= left:
                chosen.append(family)
                predicted += cost
        for family in short:
            if family not in chosen:
                mine.stopped[family] = "budget"
        if not chosen:
            return [], ""
        index = max(j.worker_index for j in state.jobs) + 1
        job = Job(index, replace(base, only_families=tuple(sorted(chosen))))
        worst = max(short, key=lambda f: precision[f].half_width_pct or math.inf)
        hw = precision[worst].half_width_pct
        label = (
            f"round {len({j.worker_index for j in state.jobs}) + 1}: {len(chosen)} "
            f"famil{'y' if len(chosen) == 1 else 'ies'} short of ±{target:g}% "
            f"({worst} at {'?' if hw is None else f'±{hw:.0f}%'})"
        )
        return [job], label

    def families(self, state: SuiteState) -> dict[str, FamilyRecord]:
        spec = suites.get(state.suite)
        if spec.adaptive is None or not state.jobs:
            return {}
        mine = self.budgets.get(state.suite, _SuiteBudget(None, {}))
        precision = self._precision(spec.adaptive, state)
        rounds = self._rounds(spec.adaptive, state)
        drift = self._drift(spec.adaptive, state)
        target = self._target(spec.adaptive)
        out = {}
        for family, p in sorted(precision.items()):
            moving = drift.get(family)
            drifting = moving is not None and moving.drifting
            if mine.budget_s is None:
                stop = "fixed plan"
            elif p.reached(target) and not drifting:
                stop = "precision"
            elif p.reached(target):
                stop = "drift"  # precise, but over processes whose values trend: not converged
            else:
                stop = mine.stopped.get(family, "budget")
            out[family] = FamilyRecord(
                rounds=rounds.get(family, 0),
                quantity=p.quantity,
                estimate=p.estimate,
                precision_pct=None if p.half_width_pct is None else round(p.half_width_pct, 2),
                target_pct=target,
                stop=stop,
                drift_pct=None if moving is None else round(moving.pct, 2),
                drift_low_pct=None if moving is None else round(100 * (moving.ratio_low - 1), 2),
                drift_high_pct=None if moving is None else round(100 * (moving.ratio_high - 1), 2),
                drifting=drifting,
                **load_fields(state.extras.loads.get(family)),
            )
        return out

    def _target(self, adaptive: Adaptive) -> float:
        """The half-width a suite's families are measured to: the run's --precision, else the
        suite's own."""
        given = self.config.precision_pct
        return adaptive.precision_pct if given is None else given

    # -- what the suite has so far ------------------------------------------------------------

    @staticmethod
    def _measured(adaptive: Adaptive, state: SuiteState) -> Rounds:
        """The suite's values so far, per worker in the order measured (a step suite's per
        round, as its figures are taken)."""
        rounds = Rounds(
            {n: [b.values for b in bvs] for n, bvs in state.merged.items()},
            {
                n: [b.worker if b.worker is not None else -1 for b in bvs]
                for n, bvs in state.merged.items()
            },
        )
        if adaptive.quantity == "net_cost":
            steps = state.jobs[0].config.suite(state.suite).steps_per_value
            kind = suites.get(state.suite).kind
            rounds = step_round_values(rounds, state.extras.steps, steps, kind)
        return rounds

    def _drift(self, adaptive: Adaptive, state: SuiteState) -> dict[str, Drift]:
        """Per family, the trend within its processes of what its precision is taken over:
        the baseline's cost net of the reference (a net-cost family), else the baseline's own
        values (bench.stats.drift)."""
        rounds = self._measured(adaptive, state)
        out: dict[str, Drift] = {}
        for name in rounds.runs:
            bench = BenchName.parse(name)
            if bench.strategy != self.config.baseline:
                continue
            series: list[list[float]] | None
            if adaptive.quantity == "net_cost":
                if bench.get("pattern") != self.pattern:
                    continue
                groups = rounds.groups(name, str(bench.with_strategy(REFERENCE)))
                series = (
                    None
                    if groups is None
                    else [
                        [b - r for b, r in zip(bs, rs, strict=True)]
                        for bs, rs in zip(groups[0], groups[1], strict=True)
                    ]
                )
            else:
                series = [list(run) for run in rounds.runs[name]]
            found = family_drift(series) if series else None
            family = bench.family_text(adaptive.within)
            if found is not None and (family not in out or abs(found.pct) > abs(out[family].pct)):
                out[family] = found
        return out

    def _precision(self, adaptive: Adaptive, state: SuiteState) -> dict[str, Precision]:
        baseline = self.config.baseline
        rounds = self._measured(adaptive, state)
        if adaptive.quantity == "net_cost":
            others = [t for t in self.targets if t != baseline]
            if others:
                return change_precision(
                    rounds,
                    baseline=baseline,
                    others=others,
                    pattern=self.pattern,
                    within=adaptive.within,
                )
            return net_cost_precision(
                rounds, baseline=baseline, pattern=self.pattern, within=adaptive.within
            )
        return ratio_precision(
            rounds,
            baseline=baseline,
            within=adaptive.within,
            paired=suites.get(state.suite).paired,
        )

    @staticmethod
    def _rounds(adaptive: Adaptive, state: SuiteState) -> dict[str, int]:
        """Per family, the processes that measured it."""
        out: dict[str, int] = {}
        for name, bvs in state.merged.items():
            family = BenchName.parse(name).family_text(adaptive.within)
            out[family] = max(out.get(family, 0), len(bvs))
        return out

    @staticmethod
    def _round_cost_s(adaptive: Adaptive, state: SuiteState, config: RunConfig) -> dict[str, float]:
        """Per family, what a further process of it costs: its wall time in the workers (the
        family phases they record) per process that measured it, scaled by the further
        round's values and warm-ups against the plan's. (Per value, as until 2026-12-04, it
        left out that a warm step case takes several times the run's values.)"""
        seconds = {
            k[len(FAMILY_PHASE) :]: v
            for k, v in state.extras.phases.items()
            if k.startswith(FAMILY_PHASE)
        }
        rounds = AdaptivePolicy._rounds(adaptive, state)
        plan = state.jobs[0].config
        scale = (config.values + config.warmup_values) / max(1, plan.values + plan.warmup_values)
        return {f: s / rounds[f] * scale for f, s in seconds.items() if rounds.get(f)}

    @staticmethod
    def _overhead_s(state: SuiteState) -> float:
        """What a worker costs beyond its families: start-up, imports (the smallest seen)."""
        families = sum(s for k, s in state.extras.phases.items() if k.startswith(FAMILY_PHASE))
        walls = state.worker_wall_s
        if not walls:
            return DEFAULT_OVERHEAD_S
        return max(0.5, (sum(walls) - families) / len(walls))
