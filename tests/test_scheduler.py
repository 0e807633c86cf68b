"""The synthetic scheduler: lifecycle, steady population, and call sites checked against the
harness's own record (verify=True) for every strategy, access pattern and transfer mode."""

from __future__ import annotations

import gc

import pytest
import torch

from bench.core.callsites import PATTERNS
from bench.core.scheduler import SchedulerParams, SyntheticScheduler
from bench.rowpool import PoolShape, RowPool
from strategies import Strategy, resolve

CPU = torch.device("cpu")


def small_pool(rows: int = 16384) -> RowPool:
    return RowPool(PoolShape(rows=rows, width=4, dtype=torch.float32), CPU)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streaming"])
def test_lifecycle_verified(strategy: Strategy, pattern: str, streaming: bool) -> None:
    params = SchedulerParams(
        live_requests=64,
        chunked_prefill_size=2048,
        pattern=pattern,
        streaming=streaming,
        pd_fraction=0.7,
        seed=3,
    )
    sched = SyntheticScheduler(strategy, params, small_pool(), verify=True)
    sched.run(150)
    assert sched.completed > 20  # requests really flow through the whole lifecycle
    assert abs(sched.live - 64) <= 1
    assert sched.tokens_prefilled > 100 * 2048 * 0.9
    sched.close()
    assert strategy.live_states() == 0
    assert sched.allocator.free_rows() == sched.pool.shape.rows  # no row leaked


def test_pool_pressure_makes_bootstrap_wait_not_fail() -> None:
    (weakkey,) = resolve(["weakkey"])
    params = SchedulerParams(live_requests=32, chunked_prefill_size=1024, pd_fraction=1.0)
    sched = SyntheticScheduler(weakkey, params, small_pool(rows=16384), verify=True)
    sched.run(100)
    assert sched.completed > 0
    sched.close()


def test_finished_requests_are_dropped_after_a_few_iterations() -> None:
    (dynattr,) = resolve(["dynattr"])
    params = SchedulerParams(live_requests=32, chunked_prefill_size=4096, keep_finished_steps=2)
    sched = SyntheticScheduler(dynattr, params, small_pool())
    sched.run(50)
    kept = sum(len(batch) for batch in sched.finished)
    assert len(sched.finished) <= 2
    assert kept < sched.completed
    gc.collect()
    live_reqs = sum(1 for o in gc.get_objects() if type(o) is sched.req_cls)
    assert live_reqs <= sched.live + kept + 1
    sched.close()


def test_same_seed_same_work_for_every_strategy() -> None:
    """Paired comparisons rely on every strategy replaying the same steps."""
    params = SchedulerParams(live_requests=48, chunked_prefill_size=2048, seed=11)
    traces = []
    for s in resolve(["control", "weakkey", "tensor_soa"]):
        sched = SyntheticScheduler(s, params, small_pool())
        trace = []
        for _ in range(60):
            sched.step()
            trace.append((sched.completed, sched.tokens_prefilled, sched.allocator.free_rows()))
        traces.append(trace)
        sched.close()
    assert traces[0] == traces[1] == traces[2]


@pytest.mark.parametrize(
    "bad",
    [{"live_requests": 3}, {"chunked_prefill_size": 0}, {"pattern": "sometimes"}],
)
def test_params_refuse_nonsense(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the CLI tests check the messages
        SchedulerParams(**bad)  # type: ignore[arg-type]
