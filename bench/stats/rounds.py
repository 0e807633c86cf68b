"""Values by worker process, for pairing: value i of two benchmarks pairs only when both come
from the same worker process (the same round of its interleaving).

Under a budget, further rounds measure a subset of a suite's benchmarks (bench.orchestration.adaptive), so two
benchmarks need not have been measured by the same processes: a pairing by position over all
their values would pair rounds of different processes. Every comparison that pairs therefore
asks for the benchmarks' values over the workers they share.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rounds:
    """Every benchmark's values per worker process (pyperf runs), and the worker index each run
    came from (pyperf run metadata `worker`; run folders without it: the run's position)."""

    runs: Mapping[str, Sequence[Sequence[float]]]
    workers: Mapping[str, Sequence[int]] = field(default_factory=dict)

    def __contains__(self, name: object) -> bool:
        return name in self.runs

    def __iter__(self) -> Iterator[str]:
        return iter(self.runs)

    def flat(self, name: str) -> list[float]:
        return [v for run in self.runs.get(name, ()) for v in run]

    def worker_ids(self, name: str) -> list[int]:
        ids = list(self.workers.get(name, ()))
        n = len(self.runs.get(name, ()))
        return ids if len(ids) == n else list(range(n))

    def groups(self, *names: str) -> list[list[list[float]]] | None:
        """Per name, its runs from the workers every name shares (in one order), keeping only
        workers whose runs have one length across the names; None when none is left."""
        by_worker = []
        for name in names:
            if name not in self.runs:
                return None
            by_worker.append(dict(zip(self.worker_ids(name), self.runs[name], strict=True)))
        shared = [w for w in by_worker[0] if all(w in b for b in by_worker[1:])]
        shared = [w for w in shared if len({len(b[w]) for b in by_worker}) == 1 and by_worker[0][w]]
        if not shared:
            return None
        return [[list(b[w]) for w in shared] for b in by_worker]

    def paired(self, *names: str) -> list[list[float]] | None:
        """Per name, its values over the workers every name shares, flattened in one order:
        value i of each comes from the same worker and round."""
        groups = self.groups(*names)
        if groups is None:
            return None
        return [[v for run in g for v in run] for g in groups]

    def replaced(self, runs: Mapping[str, Sequence[Sequence[float]]]) -> Rounds:
        """The same workers with other values (the same run lengths)."""
        return Rounds({**self.runs, **runs}, self.workers)


def rounds_of(values: Mapping[str, Sequence[float]]) -> Rounds:
    """Flat values as one worker's: for callers (and tests) that pair by position."""
    return Rounds({name: [list(v)] for name, v in values.items()})
