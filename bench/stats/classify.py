"""When a difference is a finding: the one rule every table, sentence and colour uses.

A strategy is "faster" or "slower" than the baseline on a benchmark only when both hold:

  significant  the 95% CI of the ratio (hierarchical bootstrap: worker processes, then rounds
               within them) excludes 1;
  relevant     the effect |ratio - 1| exceeds the noise floor of the benchmark's family: how far
               the run's A/A twin of the baseline (a verbatim copy, <baseline>.aa) strays from
               the baseline on that same family, counted with its uncertainty (the largest
               deviation within its 95% CI: derive.aa_deviation), never less than MIN_EFFECT.

Otherwise "same", with the reason kept for the reader (HTML title, markdown footnote, terminal
legend). A family is the benchmark without its strategy: one lookup op at one size and regime,
one scheduler scenario and pattern, one GC mode.
"""

from __future__ import annotations

from dataclasses import dataclass

# The smallest effect reported as a finding, whatever the twin says. Two runs' warm get_hit
# figures of identical code moved by up to ~2% (docs/LOOKUP.md, three runs), and a scheduler
# change below 2% of a step is below what a reviewer acts on (scheduler wins of 1-2% of a
# forward are what get merged; a step is a small part of a forward).
MIN_EFFECT = 0.02


@dataclass(frozen=True)
class Classification:
    verdict: str  # faster | slower | same
    reason: str  # why, in one clause

    @property
    def finding(self) -> bool:
        return self.verdict in ("faster", "slower")


def beyond(change: float, bound: float, *, significant: bool) -> str:
    """The rule's core, on a signed change (positive: slower) against a bound in the same
    units: "slower" / "faster" only when significant and |change| exceeds the bound, else
    "same". classify() applies it to a ratio and the family's noise floor; the regression gate
    (bench/gate/judge.py) to a percent change and max(threshold, A/A noise), or to seconds per
    iteration and a bound in those units, its words being GATE_WORDS."""
    if significant and change > bound:
        return "slower"
    if significant and -change > bound:
        return "faster"
    return "same"


# The gate's words for the rule's verdicts.
GATE_WORDS = {"slower": "regression", "faster": "improvement", "same": "pass"}


def gate_verdict(change: float, bound: float, *, significant: bool) -> str:
    """The gate's verdict: pass | regression | improvement."""
    return GATE_WORDS[beyond(change, bound, significant=significant)]


def classify(
    ratio: float, ci_low: float, ci_high: float, *, noise_floor: float | None
) -> Classification:
    """The rule. noise_floor: the family's A/A deviation |twin/baseline - 1| (None: no twin)."""
    floor = max(MIN_EFFECT, noise_floor or 0.0)
    effect = abs(ratio - 1.0)
    significant = not ci_low <= 1.0 <= ci_high
    word = beyond(ratio - 1.0, floor, significant=significant)
    if not significant:
        return Classification("same", "the 95% CI includes 1")
    if word == "same":
        source = f"A/A twin {noise_floor:.1%}" if noise_floor is not None else "no twin measured"
        return Classification(
            "same",
            f"significant but {effect:.1%} is within the noise floor {floor:.1%} "
            f"({source}; minimum {MIN_EFFECT:.0%})",
        )
    return Classification(
        word, f"CI excludes 1 and {effect:.1%} exceeds the noise floor {floor:.1%}"
    )


def legacy_classify(ratio: float, ci_low: float, ci_high: float, p_value: float) -> str:
    """The rule before twins (values treated as independent, no relevance): kept so the A/A
    self-test can count what it flagged."""
    if p_value < 0.05 and not ci_low <= 1.0 <= ci_high:
        return "slower" if ratio > 1.0 else "faster"
    return "same"
