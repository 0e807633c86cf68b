"""gc: GC pressure per strategy, with automatic GC enabled and with gc.freeze() after warm-up,
over a background heap built until the process tracks `background_objects` objects in all, its
imports and torch included (production heaps hold 1e5-1e6; the count reached is recorded).

A GC measurement needs the heap of one strategy alone, so unlike the other suites each process
holds ONE strategy: per repetition, a worker forks one child per strategy in a seeded shuffled
order (on the CPU; `fork_strategies`), or the plan starts one worker per strategy (on a GPU).
Per process and GC mode:
  gc/<strategy>/scenario=<preset>/gc=<mode>       mean scheduler step latency (the PR's
                                                  per_field pattern; a revision as written)
  gc_full/<strategy>/scenario=<preset>/gc=<mode>  pause of a full gc.collect() with the live
                                                  population, the cost production sees as
                                                  100-400 ms stalls (frozen objects are skipped)
and, once per strategy, memory/<strategy>/metric=request_bytes and tracked_objects_per_request
(tracemalloc and gc.get_objects). Raw extras: collections per generation and pause time
(gc.callbacks), per-step latencies with a GC flag, tracked objects in the heap, memory figures
and those of a bare request, and per worker process the tracked objects its heap reached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from bench.base.gcprobe import GC_MODES, RAISED_THRESHOLD
from bench.config.cliargs import SuiteFlag
from bench.config.runconfig import RunConfig, SuiteOptions
from bench.runformat.schema import SuiteExtras, merging

if TYPE_CHECKING:
    from bench.core.scenarios import Scenario

NAME = "gc"
ORDER = 30
KIND = "gc"
PAIRED = False  # one worker process per strategy: values of two strategies share no round
# With one process per strategy, how often collections land is a property of the process, not of
# the scenario: a noise family is the GC mode (the A/A twin's spread by case: docs/REGIMES.md,
# "What the defaults cost").
NOISE_KEYS = {"gc": ("gc",), "gc_full": ("gc",)}
# Its plan's share of the budget (fixed, not adaptive: the heap is built once per process). A
# fixed plan runs before the adaptive suites (bench.suites.run_order), so this only sets the
# share the report prints beside its time: 45-48 s here (2026-12-04), 50-60 s (2026-12-06).
BUDGET_SHARE = 0.8
SHARED = ("GC_PATTERN",)


@dataclass
class MemoryFigures:
    """Bytes and GC-tracked objects one request keeps alive (its state included), and those of
    a bare request (no strategy) measured in the same process, which the state is net of."""

    request_bytes: float
    request_tracked_objects: float
    bare_request_bytes: float
    bare_request_tracked_objects: float

    @property
    def state_bytes(self) -> float:
        return self.request_bytes - self.bare_request_bytes

    @property
    def state_tracked_objects(self) -> float:
        return self.request_tracked_objects - self.bare_request_tracked_objects


@dataclass
class HeapFigures:
    """The background heap one worker process built (bench.base.gcprobe.build_background_heap),
    in tracked objects of the whole process: the target, what the process held before building
    (imports, torch, the harness) and what it reached."""

    target_tracked_objects: int
    before_tracked_objects: int
    reached_tracked_objects: int


@dataclass
class GcExtras(SuiteExtras):
    """The gc suite's raw data: the shared records, and its own (measured once per strategy or
    benchmark, in one process: a later process's figure replaces an earlier one)."""

    memory: dict[str, MemoryFigures] = field(
        default_factory=dict, metadata=merging("replace")
    )  # by strategy
    # the tracked objects each full collection of gc_live/<s>/live=L/gc=<mode> traversed
    # (frozen objects excepted), keyed by that benchmark's name
    gc_live_objects: dict[str, int] = field(default_factory=dict, metadata=merging("replace"))
    # the background heap each worker process built, keyed by its process id
    heaps: dict[str, HeapFigures] = field(default_factory=dict, metadata=merging("replace"))


def extras_of(extras: SuiteExtras) -> GcExtras:
    """A loaded gc suite's extras, as the type it declared (EXTRAS)."""
    if not isinstance(extras, GcExtras):
        raise TypeError(f"gc suite extras of type {type(extras).__name__}")
    return extras


EXTRAS = GcExtras

FLAGS = (
    SuiteFlag(
        "--background-objects",
        "background_objects",
        "the GC background heap: tracked objects in the whole process, imports included, the "
        "heap is built up to (default: the scheduler's 1.08M)",
        type=int,
        metavar="N",
    ),
)
GC_PATTERN = (
    "per_field"  # the PR's access pattern (revisions: as written); GC does not depend on it
)


@dataclass(frozen=True, kw_only=True)
class Options(SuiteOptions):
    SUITE: ClassVar[str] = "gc"
    KEYS: ClassVar[dict[str, str]] = {
        "background_objects": "background_objects",
        "memory_sample_requests": "memory_sample_requests",
    }
    # Not in the quick set (a minute of its own here): --quick --suite gc runs it.
    IN_QUICK: ClassVar[bool] = False
    QUICK: ClassVar[dict[str, Any]] = {
        "workers": 1,
        "steps_per_value": 40,
        "background_objects": 200_000,
        "memory_sample_requests": 500,
    }
    REPETITION: ClassVar[frozenset[str]] = frozenset(
        {"workers", "steps_per_value", "memory_sample_requests", "fork_strategies"}
    )
    POSITIVE_EXEMPT: ClassVar[tuple[str, ...]] = ("background_objects",)

    # repetitions: each strategy measured alone in a process per repetition (the plan)
    workers: int = 1
    # On the CPU, a repetition's processes are children forked from one worker that imported
    # torch once (~2.5 s saved per strategy here); False: a fresh interpreter per strategy, as on
    # a GPU, where a forked child cannot use CUDA.
    fork_strategies: bool = True
    # enabled (CPython's defaults), frozen after warm-up (SGLang's default since PR #34999),
    # raised thresholds (bench/base/gcprobe.py says where each comes from)
    modes: tuple[str, ...] = ("enabled", "frozen", "raised")
    raised_threshold: tuple[int, ...] = RAISED_THRESHOLD
    # The run's scenarios this suite measures (none in common: all of them). By default the two
    # DSpark headline cases, where requests hold the state: prefill-no-dspark creates none, and
    # prefill-sharegpt's steps cost ~4x prefill-dspark's; add them with gc_scenarios.
    scenarios: tuple[str, ...] = ("prefill-dspark", "decode-dspark")
    # The scheduler's long-lived population: ~1.08M gen2 objects measured in SGLang's scheduler
    # process (sgl-project/sglang PR #30693: "the scheduler's ~1.08M gen2 objects"; #30596
    # counts ~2.5-2.7M across tokenizer manager, scheduler and detokenizer). That count is the
    # whole process, imports included, so the heap is built up to it in all: what the process
    # tracks already (~165k with torch imported here) counts towards it.
    background_objects: int = 1_080_000
    steps_per_value: int = 50
    memory_sample_requests: int = 1_000
    # Live requests a full collection is timed with: ~1,500, where automatic gen2 collections
    # were reported pausing the scheduler 100-350 ms (PR #36366), and 4,096, the high end of
    # max_running_requests per DP worker (kv_cache_configurator.py:1622-1627 at c96e68b62b).
    live_sizes: tuple[int, ...] = (1_500, 4_096)

    def gc_cases(self, config: RunConfig) -> list[tuple[Scenario, dict[str, str]]]:
        """The run's cases whose scenario is in `scenarios` (all of them when none is)."""
        cases = config.cases()
        chosen = [c for c in cases if c[0].name in self.scenarios]
        return chosen or cases

    def validate(self, config: RunConfig) -> None:
        super().validate(config)

        if not isinstance(self.background_objects, int) or self.background_objects < 0:
            raise ValueError("background-objects must be >= 0")
        for m in self.modes:
            if m not in GC_MODES:
                raise ValueError(f"unknown GC mode {m!r}; choose from {', '.join(GC_MODES)}")
