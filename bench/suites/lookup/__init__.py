"""lookup: seconds per get (hit, miss/create), peek (hit, miss), update of the ten fields and
reset, with 1,500 live requests holding state (a production scheduler's live set; other sizes by
lookup_sizes), in declared memory regimes (REGIME_SENTENCES below): warm and cold by default.

Names: lookup/<strategy>/op=<op>/live=<n>/regime=<regime>. A warm value is calibrated passes
over the live requests' sample (at least `min_value_ns`); a cold value is whole passes, each timed
alone after an untimed eviction of the CPU caches. Creation of requests is never timed: get_miss
times `get` over a batch of requests built just before, and releases them just after, untimed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from bench.config.cliargs import SuiteFlag, csv_list
from bench.config.runconfig import Adaptive, RunConfig, SuiteOptions

NAME = "lookup"
ORDER = 10
KIND = "lookup"
# Under --budget: a family is a (live, regime) cell, every operation of it (a population is
# built per cell), measured until every strategy's ratio to the baseline reaches the precision:
# +-25% unless the run names one (a cell is as precise as the least precise of its ~40 ratios;
# the precision the README promises for a default run).
# A further process takes the plan's 3 values, not the policy's 6: a cell's ratios move
# between processes, not within one (over nine processes the cold cell's least precise ratios
# varied by 19-31% between processes' means, against 5-7% of a process's own standard error,
# 2026-12-04), so a further round buys a process, as cheaply as it can.
ADAPTIVE = Adaptive("ratio", within=("op",), precision_pct=25.0, further_values=3)
# Its weight in the run's budget (~80 s of the default 305): its plan (5 processes of ~9 s
# here) and about three further rounds of the evicted cell, the least precise (its peek ratios
# move with each process: docs/LOOKUP.md, "One live size").
BUDGET_SHARE = 1.5
FLAGS = (
    SuiteFlag(
        "--regime",
        "regimes",
        "lookup memory regimes: warm,cold (also: mixed, the old one)",
        type=csv_list,
    ),
)
SHARED = ("OPS", "REFERENCE", "MAX_LIVE_REQUESTS", "REGIMES", "DEFAULT_REGIMES", "REGIME_SENTENCES")
OPS: tuple[str, ...] = ("get_hit", "get_miss", "peek_hit", "peek_miss", "update", "reset")
# The harness's own cost (the loop and a call) is this strategy's: figures net of it are the
# strategies' own.
REFERENCE = "control"
# Upper bound on live requests in a lookup table: beyond ~1M the synthetic requests alone
# outgrow this machine.
MAX_LIVE_REQUESTS = 1 << 20
# How a lookup population lies in memory and is visited (bench.measure.lookups.Population); "mixed" is the regime of
# the harness before regimes were declared, kept so its old figures can be explained.
REGIMES: tuple[str, ...] = ("warm", "cold", "mixed")
DEFAULT_REGIMES: tuple[str, ...] = ("warm", "cold")
REGIME_SENTENCES = {
    "warm": "warm: one strategy's requests built together and visited in allocation order, "
    "pass after pass, so what they touch stays in cache (what a timeit-style microbenchmark "
    "sees).",
    "cold": "cold: every strategy's requests built interleaved, visited in random order, with "
    "the CPU caches evicted before every timed pass (what a scheduler sees when it touches a "
    "request again after a forward).",
    "mixed": "mixed: each strategy's requests built together, visited in random order, passes "
    "repeated without eviction or an untimed first pass (the implicit regime of this harness "
    "before regimes were declared).",
}


@dataclass(frozen=True, kw_only=True)
class Options(SuiteOptions):
    SUITE: ClassVar[str] = "lookup"
    QUICK: ClassVar[dict[str, Any]] = {
        "workers": 1,
        "values": 3,
        "min_value_ns": 1_000_000,
        "miss_batch": 500,
    }
    REPETITION: ClassVar[frozenset[str]] = frozenset(
        {"workers", "values", "min_value_ns", "cold_lookups", "miss_batches"}
    )

    # The plan: five worker processes of 3 values (the minimum: no interval from fewer
    # processes, bench.stats.derive.MIN_PROCESSES; under --budget further processes measure the
    # cells short of --precision while the suite's share lasts). Two processes left the warm
    # cells at +-49-80% here.
    workers: int = 5
    values: int = 3
    # Live requests holding state: ~1,500, the live set at which sgl-project/sglang#36366
    # reports automatic gen-2 collections pausing the scheduler, and at which #36369's py-spy
    # profile found the scheduler thread ~99% busy (the gc suite's first live size). One size,
    # not the decades 1e3 and 1e4 (until 2026-12-04), which no source gave: a worker measured
    # both in 20 s, one in ~10 s, so the suite's share buys twice the processes, and its
    # intervals rest on them (docs/LOOKUP.md, "One live size"). Others by lookup_sizes, e.g.
    # [1500, 4096] (4,096: max_running_requests' high end per DP worker,
    # python/sglang/srt/mem_cache/kv_cache_configurator.py:1622-1627 at c96e68b62b).
    sizes: tuple[int, ...] = (1_500,)
    # calibrate loops so one value takes at least 2 ms (5 ms before 2026-12-03: a lookup worker
    # went from 25 to 23 s here with the five processes the plan now has; a value of 2 ms is
    # still ~1,000x the clock's resolution)
    min_value_ns: int = 2_000_000
    miss_batch: int = 1_000  # fresh requests per get_miss batch (creation is untimed)
    # Batches a warm get_miss value times (one until 2026-12-04: ~0.4 ms, against the 2 ms
    # the other ops' values take; dynattr's values moved 240-700 ns within a process). Each
    # batch costs ~10 ms of untimed building. Over ten processes the warm cell read +-22.7%
    # with one batch, +-9.4% with five (a worker 8.7 s -> 13.9 s); three: docs/LOOKUP.md,
    # "One live size".
    miss_batches: int = 3
    # Live requests one timed pass visits (the table still holds them all): warm, a window in
    # allocation order; cold, a random sample. 1e3, not 1e4 (until 2026-12-03): a warm pass
    # over 1e4 requests did not stay in cache on this VM, and its ratios moved 0.56-1.59x
    # between processes (+-56% over five); with 1e3 the cell read +-12%, and a worker took 11 s
    # instead of 18 (docs/LOOKUP.md, "How many requests a pass visits").
    max_pass: int = 1_000
    # memory regimes (REGIMES): how populations lie and are visited
    regimes: tuple[str, ...] = ("warm", "cold")
    # a cold value: whole passes, each after an eviction (~20 ms here), until this many
    # lookups (a cold lookup costs ~0.2-1 us here, so a value lasts ~0.2-1 ms: one pass of the
    # 1e3 table, or 1e3 of a larger table's sample)
    cold_lookups: int = 1_000
    # The eviction before each cold pass, in MiB (0: the size `bench run` measured this machine
    # to need, bench.measure.sweep_probe; bench.measure.regime.sweep_bytes, as the step suite's).
    cold_sweep_mb: int = 0

    POSITIVE_EXEMPT: ClassVar[tuple[str, ...]] = ("cold_sweep_mb",)

    def validate(self, config: RunConfig) -> None:
        super().validate(config)
        for n in self.sizes:
            if not isinstance(n, int) or not 16 <= n <= MAX_LIVE_REQUESTS:
                raise ValueError(
                    f"lookup sizes must be integers in [16, {MAX_LIVE_REQUESTS}], got {n}"
                )
        bad = [r for r in self.regimes if r not in REGIMES]
        if bad or not self.regimes:
            raise ValueError(
                f"unknown lookup regime {bad[0] if bad else '(none)'!r}; choose from {', '.join(REGIMES)}"
            )
