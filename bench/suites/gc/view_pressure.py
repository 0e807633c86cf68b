"""GC pressure in the units a maintainer decides with, from the gc suite's raw data.

A strategy's state adds tracked objects to every live request; a full collection traverses
every tracked object, so at L live requests it costs that many more objects' worth of the
collection. Timing the difference directly is out of reach (a 3,000-object difference in a
1.4M-object collection of ~200 ms is well inside the collection's own run-to-run spread), so
the harness counts and measures separately:

    objects    tracked objects per live request, net of a bare request, signed (exact:
               gc.get_objects over 1,000 requests; the A/A twin's count equals its original's by
               construction, so it is no noise floor)
    per object the cost of a full collection per tracked object it traversed: each process's
               measured pause at L live requests over the objects that collection traversed
               (gc_live), pooled over every strategy's process (the same heap and interpreter)
    extra      objects x L x per object: MODELLED, with an interval from the pooled per-object
               costs only (not the pause's own spread)

The model is checked against what is measured (bench.suites.gc.pause_slope): the measured pause's
slope per tracked object between two live sizes, against the pooled per-object cost; and its
noise floor is the A/A twin's difference in the measured pause, not in the counts.

and, from the collector's own counters over the measured iterations, the collections per
generation, their pause, and how fast the long-lived generation grows: CPython starts a full
collection once the objects promoted since the last pass a quarter of the long-lived ones, so a
run too short to see one still says when the next would come.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.base.names import BenchName
from bench.runformat.schema import GcCounts
from bench.stats import robust
from bench.suites.gc import MemoryFigures

# CPython starts a full collection when long_lived_pending > long_lived_total / 4 (Modules/
# gcmodule.c, since 3.4): promoted objects needed, as a share of the long-lived ones.
FULL_COLLECTION_SHARE = 0.25


@dataclass(frozen=True)
class PerObject:
    """A full collection's cost per tracked object traversed, in seconds, pooled."""

    median: float
    low: float
    high: float
    samples: int


@dataclass(frozen=True)
class Extra:
    """What a strategy's state adds to one full collection at `live` requests, modelled (not
    measured): signed, negative for a state that removes tracked objects from a request."""

    strategy: str
    live: int
    mode: str
    objects_per_request: float
    extra_s: float
    low_s: float
    high_s: float
    pause_s: float | None  # the strategy's own measured pause at that size (median)

    @property
    def share(self) -> float | None:
        return self.extra_s / self.pause_s if self.pause_s else None


def per_object(
    live_medians: Mapping[str, float], live_objects: Mapping[str, int], live: int, mode: str
) -> PerObject | None:
    """The pooled cost per traversed object of the full collections at `live` in `mode`:
    each strategy's median pause over the objects its collection traversed."""
    ratios = []
    for name, pause in live_medians.items():
        b = BenchName.parse(name)
        if b.kind != "gc_live" or b.get("gc") != mode or b.int("live") != live:
            continue
        objects = live_objects.get(name)
        if objects:
            ratios.append(pause / objects)
    if not ratios:
        return None
    lo, hi = robust.bootstrap_median_ci(ratios) if len(ratios) > 1 else (ratios[0], ratios[0])
    return PerObject(robust.median(ratios), lo, hi, len(ratios))


def extras(
    memory: Mapping[str, MemoryFigures],
    live_medians: Mapping[str, float],
    live_objects: Mapping[str, int],
    live_sizes: Sequence[int],
    modes: Sequence[str] = ("enabled", "frozen"),
) -> list[Extra]:
    """Per strategy, live size and mode: the extra full-collection pause its state costs,
    modelled (counted objects x live x the pooled per-object cost), signed."""
    out = []
    for mode in modes:
        for live in live_sizes:
            cost = per_object(live_medians, live_objects, live, mode)
            if cost is None:
                continue
            for strategy, m in sorted(memory.items()):
                # signed: a state that removes tracked objects from a request (lists moved
                # into a slots container) shortens the collection, and reads negative
                n = m.state_tracked_objects
                own = str(BenchName.of("gc_live", strategy, live=live, gc=mode))
                low, high = sorted((n * live * cost.low, n * live * cost.high))
                out.append(
                    Extra(
                        strategy,
                        live,
                        mode,
                        n,
                        n * live * cost.median,
                        low,
                        high,
                        live_medians.get(own),
                    )
                )
    return out


@dataclass(frozen=True)
class Collections:
    """The collector over one gc benchmark's measured iterations."""

    per_kstep: tuple[float, float, float]  # collections per 1,000 iterations, per generation
    pause_ms_per_kstep: float
    max_pause_ms: float
    steps: int
    gen2_objects: float | None  # the oldest generation's size (mean over processes)
    gen2_growth_per_step: float | None  # its net growth per iteration (a lower bound on
    # promotions: objects promoted and dying old are not counted)

    @property
    def full_every_steps(self) -> float | None:
        """Iterations between full collections CPython's rule implies (None: no growth)."""
        if not self.gen2_objects or not self.gen2_growth_per_step or self.gen2_growth_per_step <= 0:
            return None
        return FULL_COLLECTION_SHARE * self.gen2_objects / self.gen2_growth_per_step

    def not_exercised(self, generation: int) -> bool:
        return self.per_kstep[generation] == 0


def collections(counts: GcCounts) -> Collections | None:
    if not counts.steps:
        return None
    k = 1000 / counts.steps
    growth = None
    size = None
    pairs = list(zip(counts.gen2_at_start, counts.gen2_at_end, counts.gen2_steps, strict=False))
    if pairs:
        size = sum(a for a, _b, _s in pairs) / len(pairs)
        steps = sum(s for _a, _b, s in pairs)
        growth = sum(b - a for a, b, _s in pairs) / steps if steps else None
    return Collections(
        tuple(c * k for c in counts.collections),  # type: ignore[arg-type]
        sum(counts.pause_ns) / 1e6 * k,
        counts.max_pause_ns / 1e6,
        counts.steps,
        size,
        growth,
    )
