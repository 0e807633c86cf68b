"""The report's own data types: a headline metric and its cells, and the verdict's rankings and
families. Pure data, so suite views, the headline and the verdict share them without importing
each other."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Cell:
    value: float  # in `unit` (seconds for times, as bench.report.text.fmt expects)
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    significant: bool | None = None  # a finding under classify(); None: no test here
    noisy: bool = False
    baseline: bool = False
    reason: str = ""  # classify()'s reason, shown on hover / as a footnote


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


@dataclass(frozen=True)
class Entry:
    strategy: str
    value: float
    unit: str
    low: float | None = None  # 95% CI of the value, when there is one
    high: float | None = None
    ratio: float | None = None  # against the baseline
    verdict: str = ""  # faster / slower / same vs the baseline; "" when no test applies
    reference: bool = False  # holds no state (control): ranked and shown, never named best

    @property
    def significant(self) -> bool:
        return self.verdict in ("faster", "slower")


@dataclass(frozen=True)
class Ranking:
    condition: str
    entries: list[Entry]  # best (lowest) first

    def candidates(self) -> list[Entry]:
        return [e for e in self.entries if not e.reference] or self.entries

    def leader(self) -> Entry | None:
        candidates = self.candidates()
        return candidates[0] if candidates else None

    def tied_leaders(self) -> list[Entry]:
        """Every candidate with exactly the best value (all zero GC pauses, equal sizes)."""
        lead = self.leader()
        return [e for e in self.candidates() if lead is not None and e.value == lead.value]

    def with_verdict(self, verdict: str) -> list[str]:
        return [e.strategy for e in self.entries if e.verdict == verdict]


@dataclass(frozen=True)
class Change:
    before: str  # condition labels
    after: str
    leaders: tuple[str, str] | None  # set when the best candidate differs
    swaps: int  # pairs whose order reverses
    clear: list[tuple[str, str]]  # (a, b): a ahead in `before`, b ahead in `after`, both clear


@dataclass(frozen=True)
class Family:
    key: str
    title: str
    axis: str  # what varies between rankings: "lookup size", "access pattern", ...
    has_test: bool  # whether entries carry significance against the baseline
    featured: bool = False  # open in the HTML report and summarised in summary.md
    rankings: list[Ranking] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    @property
    def stable(self) -> bool:
        return len(self.rankings) > 1 and not any(c.swaps for c in self.changes)


@dataclass(frozen=True)
class Verdict:
    baseline: str
    families: list[Family]

    def family(self, key: str) -> Family | None:
        return next((f for f in self.families if f.key == key), None)
