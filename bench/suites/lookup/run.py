"""The lookup suite's measuring half (bench.suites.spec): populations of every strategy in
each size and regime, every operation interleaved round by round."""

from __future__ import annotations

import random
from typing import Any

from bench.base.gcprobe import gc_paused
from bench.base.names import BenchName
from bench.config.runconfig import RunConfig
from bench.measure.context import (
    Subject,
    SuiteOutput,
    WorkerContext,
    failure_text,
    family_phase,
    interleave,
    phase,
)
from bench.measure.lookups import Population, build_populations, lookup_subject
from bench.measure.regime import CacheSweep, sweep_bytes
from bench.suites.lookup import KIND, OPS
from bench.suites.spec import Job, with_values


def _build(
    ctx: WorkerContext, out: SuiteOutput, n: int, regime: str, evict: CacheSweep | None
) -> tuple[list[Population], list[Subject]]:
    cfg = ctx.config
    opts = cfg.suite(KIND)

    def build(strategies: list[Any], size: int) -> list[Population]:
        return build_populations(
            strategies,
            size,
            regime=regime,
            miss_batch=opts.miss_batch,
            max_pass=opts.max_pass,
            rng=random.Random(cfg.seed + n),
            requests=cfg.requests,
        )

    # A strategy that raises is found on a population of its own, so the others are still
    # built together (the cold regime needs them interleaved) and measured.
    def fail(name: str, exc: BaseException) -> None:
        out.failures[name] = f"lookup/{name} setup at live={n} regime={regime}: {failure_text(exc)}"

    def alone(s: Any, size: int) -> bool:
        try:
            for pop in build([s], size):
                pop.close()
            return True
        except Exception as exc:
            fail(s.name, exc)
            return False

    usable = [s for s in ctx.strategies if s.name not in out.failures and alone(s, 16)]
    try:
        populations = build(usable, n)
    except Exception:
        usable = [s for s in usable if alone(s, n)]
        try:
            populations = build(usable, n)
        except Exception as exc:
            for s in usable:
                fail(s.name, exc)
            return [], []
    subjects: list[Subject] = []
    kept: list[Population] = []
    for pop in populations:
        name = pop.strategy.name
        try:  # building a subject runs the operation (calibration, the warm regime's first pass)
            subjects += [
                lookup_subject(
                    pop,
                    op,
                    BenchName.of(KIND, name, op=op, live=n, regime=regime),
                    opts.min_value_ns,
                    evict if regime == "cold" else None,
                    opts.cold_lookups,
                    opts.miss_batches,
                )
                for op in OPS
            ]
            kept.append(pop)
        except Exception as exc:
            fail(name, exc)
            subjects = [x for x in subjects if x.strategy != name]
            pop.close()
    populations = kept
    return populations, subjects


def run(ctx: WorkerContext) -> SuiteOutput:
    out = SuiteOutput()
    sizes = ctx.config.suite(KIND).sizes
    regimes = ctx.config.suite(KIND).regimes
    sweep_mb = ctx.config.suite(KIND).cold_sweep_mb
    evict = CacheSweep(sweep_bytes(sweep_mb)) if "cold" in regimes else None
    cells = [(n, r) for n in sizes for r in regimes if ctx.config.measures(f"live={n}/regime={r}")]
    # The cyclic GC is off throughout, as timeit has it: a lookup's figure is the operation's
    # own cost; what the collector costs is the gc suite's subject. (With it on, a full
    # collection over 1e6 live requests would land in some values and not others.)
    with gc_paused(collect=False):
        for i, (n, regime) in enumerate(cells):
            with phase(out, family_phase(f"live={n}/regime={regime}")):
                with phase(out, f"lookup:build live={n} regime={regime}"):
                    populations, subjects = _build(ctx, out, n, regime, evict)
                with phase(out, f"lookup:measure live={n} regime={regime}"):
                    interleave(
                        ctx,
                        out,
                        subjects,
                        label=f"lookup live={n} regime={regime}",
                        family=f"live={n}/regime={regime}",
                        progress_base=i / len(cells),
                        progress_span=1 / len(cells),
                        # A cold value follows its own eviction, so nothing of the values before
                        # it carries into it: over 600 cold values (ten processes, 2026-12-04)
                        # the first round's read 0.993x its process's mean (p10-p90 0.90-1.10),
                        # the values' own spread. Its round cost a quarter of the cell's sweeps.
                        warmups=0 if regime == "cold" else None,
                    )
                with phase(out, f"lookup:close live={n} regime={regime}"):
                    for pop in populations:
                        pop.close()
                del populations, subjects
    return out


def plan(config: RunConfig) -> list[Job]:
    opts = config.suite(KIND)
    return [Job(w, with_values(config, opts.values)) for w in range(opts.workers)]
