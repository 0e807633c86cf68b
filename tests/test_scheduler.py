"""The synthetic scheduler loops: every preset runs, verified against the harness's own record,
for every strategy and access pattern; queues emerge as the scenarios say; the same seed gives
the same work for every strategy; row exhaustion aborts; nothing leaks."""

from __future__ import annotations

import gc
import random
import statistics

import pytest
import torch

from bench.commands.scenario_docs import CALIBRATION
from bench.core.callsites import PATTERNS
from bench.core.hostpool import HostPool, host_hidden
from bench.core.rowpool import PoolShape, RowPool
from bench.core.scenarios import PRESETS, Scenario, get
from bench.core.scheduler import (
    DECODE_HISTORY_STEPS,
    DecodeLoop,
    PrefillLoop,
    history_steps,
    make_scheduler,
    run_history,
    warmup_steps,
)
from strategies import Strategy, load_builtin

CPU = torch.device("cpu")
# Presets shrunk to test size (every loop and path still runs; the stall keeps its long waits).
SMALL = {"chunked_prefill_size": 1024, "decode_batch": 48}


def small(name: str, **changes: object) -> Scenario:
    return get(name).with_changes({**SMALL, **changes})


def host(scenario: Scenario, strategy: Strategy, **kwargs: object):  # type: ignore[no-untyped-def]
    return make_scheduler(
        strategy,
        scenario,
        HostPool(scenario.pool_rows),
        hidden=host_hidden(scenario.chunk_tokens),
        **kwargs,  # type: ignore[arg-type]
    )


def queue_means(sched, steps: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(steps):
        sched.step()
        samples.append(sched.queue_sample())
        sched.worker_tick()
    return {k: statistics.mean(s[k] for s in samples) for k in samples[0]}


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_runs_verified(strategy: Strategy, preset: str, pattern: str) -> None:
    scenario = small(preset)
    sched = host(scenario, strategy, pattern=pattern, seed=3, verify=True)
    sched.run(warmup_steps(scenario) + 40)
    assert sched.completed > 0  # requests really flow through the whole lifecycle
    sched.close()
    gc.collect()
    assert strategy.live_states() == 0
    assert sched.allocator.free_rows() == sched.pool.shape.rows  # no row leaked


def test_the_device_pool_is_written(strategy: Strategy) -> None:
    scenario = small("prefill-dspark", pool_rows=4096)
    pool = RowPool(PoolShape(rows=4096, width=4, dtype=torch.float32), CPU)
    sched = make_scheduler(strategy, scenario, pool, seed=1)
    sched.hidden.fill_(1.0)
    sched.run(20)
    assert pool.buffer.sum().item() > 0  # rows were copied for every strategy, control too
    sched.close()


def test_prefill_dspark_queues_stay_small() -> None:
    """A request stays inflight one iteration (PR #7236's ~60 ms transfer is shorter than a
    forward): about the requests finished per iteration."""
    scenario = get("prefill-dspark")
    sched = host(scenario, load_builtin("pr652"), seed=5)
    sched.run(warmup_steps(scenario))
    means = queue_means(sched, 200)
    assert means["inflight"] < 10
    assert 1 <= means["prefill_batch"] <= 8  # random-4k: a few requests per 8k chunk
    assert means["aborted"] == 0
    sched.close()


def test_sharegpt_fills_a_chunk_with_dozens() -> None:
    scenario = get("prefill-sharegpt")
    sched = host(scenario, load_builtin("control"), seed=5)
    sched.run(warmup_steps(scenario))
    assert 25 <= queue_means(sched, 100)["prefill_batch"] <= 45  # #2805: ~224 tokens, ~36 per 8k
    sched.close()


@pytest.mark.parametrize("preset", sorted({row[0] for row in CALIBRATION}))
def test_queues_match_the_published_figures(preset: str) -> None:
    """docs/SCENARIOS.md's calibration table is what the loop gives (500 iterations after
    warm-up, seed 5, pr652), and those figures lie in the published ranges."""
    scenario = get(preset)
    sched = host(scenario, load_builtin("pr652"), seed=5)
    sched.run(warmup_steps(scenario))
    samples = []
    for _ in range(500):
        sched.step()
        samples.append(sched.queue_sample())
        sched.worker_tick()
    sched.close()
    for name, queue, mean, p99, _published in CALIBRATION:
        if name != preset:
            continue
        values = sorted(s[queue] for s in samples)
        assert f"{statistics.mean(values):.2f}".rstrip("0").rstrip(".") == mean, queue
        assert str(values[int(0.99 * (len(values) - 1))]) == p99, queue
    if preset == "prefill-dspark-dp8":  # #11648, per DP rank
        assert max(s["inflight"] for s in samples) <= 5  # #transferring-req 1-5
        assert max(s["waiting"] for s in samples) <= 7  # #queue-req 0-7
        assert max(s["bootstrap"] for s in samples) == 0  # #unbootstrapped-req 0
        assert all(s["prefill_tokens"] <= 1024 for s in samples)  # 8,192 // dp_size 8


def test_transfer_stall_reaches_the_published_queue_lengths() -> None:
    """#5450: ~340 bootstrapping and ~150 inflight per rank."""
    scenario = get("stress-transfer-stall")
    sched = host(scenario, load_builtin("control"), seed=2)
    sched.run(warmup_steps(scenario))
    means = queue_means(sched, 100)
    assert 300 <= means["bootstrap"] <= 380
    assert 130 <= means["inflight"] <= 170
    sched.close()


def test_decode_batch_stays_full_with_churn() -> None:
    scenario = small("decode-dspark")
    sched = host(scenario, load_builtin("weakkey"), seed=4)
    assert isinstance(sched, DecodeLoop)
    sched.run(10)
    means = queue_means(sched, 300)
    assert means["decode_batch"] == pytest.approx(48, abs=0.5)
    assert means["admitted"] > 0  # finished requests are replaced
    req = sched.running[0].req
    assert type(req.output_ids).__name__ == "array"  # output tokens appended to array('q')
    sched.close()


def test_failed_row_allocation_aborts_the_request() -> None:
    """Whole-range mode allocates at finalize; a failure aborts (prefill.py:562-577)."""
    scenario = small("prefill-dspark", streaming=False, pool_rows=6000, prompt_range_ratio=0.5)
    sched = host(scenario, load_builtin("pr652"), seed=1, verify=True)
    assert isinstance(sched, PrefillLoop)
    sched.run(200)
    assert sched.aborted > 0
    assert sched.completed > sched.aborted
    sched.close()
    assert sched.allocator.free_rows() == 6000


def test_streaming_chunk_allocation_failure_aborts_too() -> None:
    scenario = small("prefill-dspark", pool_rows=1024, ack_delay=20)
    sched = host(scenario, load_builtin("slots"), seed=1, verify=True)
    sched.run(200)
    assert sched.aborted > 0
    sched.close()
    assert sched.allocator.free_rows() == 1024


@pytest.mark.parametrize("preset", ["prefill-dspark", "decode-dspark", "colocated"])
def test_same_seed_same_work_for_every_strategy(preset: str) -> None:
    """Paired comparisons rely on every strategy replaying the same iterations."""
    scenario = small(preset)
    traces = []
    for name in ("control", "pr652", "tensor_soa"):
        sched = host(scenario, load_builtin(name), seed=11)
        trace = []
        for _ in range(60):
            sched.step()
            sched.worker_tick()
            trace.append((sched.completed, tuple(sorted(sched.queue_sample().items()))))
        traces.append(trace)
        sched.close()
    assert traces[0] == traces[1] == traces[2]


def test_finished_requests_are_dropped_after_a_few_iterations() -> None:
    scenario = small("prefill-sharegpt", keep_finished=2)
    sched = host(scenario, load_builtin("dynattr"), seed=3)
    sched.run(50)
    kept = sum(len(batch) for batch in sched.finished)
    assert len(sched.finished) <= 2
    assert kept < sched.completed
    gc.collect()
    live_reqs = sum(1 for o in gc.get_objects() if type(o) is sched.req_cls)
    assert live_reqs <= len(sched.live_tracked()) + kept + 1
    sched.close()


def test_pr652_states_vanish_with_their_requests_in_the_loop() -> None:
    pr = load_builtin("pr652")
    scenario = small("decode-dspark")
    sched = host(scenario, pr, seed=9)
    sched.run(400)
    live = len(sched.live_tracked()) + sum(len(b) for b in sched.finished)
    gc.collect()
    assert pr.live_states() <= live  # no entry outlives its request
    sched.close()
    sched.finished.clear()
    del sched
    gc.collect()
    assert pr.live_states() == 0


def test_unknown_pattern_refused() -> None:
    with pytest.raises(ValueError, match="unknown access pattern"):
        host(get("prefill-dspark"), load_builtin("weakkey"), pattern="sometimes")


@pytest.mark.parametrize("preset", ["decode-dspark", "colocated"])
def test_the_history_replaces_the_batch_built_in_one_go(preset: str) -> None:
    """After the interleaved history no request of the initial batch is left, the batch is
    full, and its requests are part-way through their outputs (holding what they generated),
    as the stationary start's were: the layout changed, the workload did not."""
    scenario = small(preset)
    strategy = load_builtin("pr652")
    a, b = (host(scenario, strategy, seed=s) for s in (1, 2))
    assert isinstance(a, DecodeLoop)
    assert isinstance(b, DecodeLoop)
    first = {id(t.req) for t in a.running}
    kept_alive = [t.req for t in a.running]  # ids stay unique while these live
    assert all(len(t.req.output_ids) == t.generated for t in a.running)
    steps = history_steps(scenario)
    run_history([a, b], steps, random.Random(0))
    assert not first & {id(t.req) for t in a.running}
    assert not a._aging
    if preset == "decode-dspark":
        assert len(a.running) > 0.8 * scenario.decode_batch  # full, less this step's finished
        shares = [t.generated / t.output_len for t in a.running]
        assert 0.3 < statistics.mean(shares) < 0.7  # remaining lengths still stationary
        assert all(len(t.req.output_ids) == t.generated for t in a.running)
    a.run(5)  # and the loop goes on as measured: admissions start at the first token again
    assert all(t.generated <= t.output_len for t in a.running)
    del kept_alive
    a.close()
    b.close()


def test_history_lengths() -> None:
    assert history_steps(get("decode-dspark")) == DECODE_HISTORY_STEPS
    prefill = get("prefill-dspark")
    assert 0 < history_steps(prefill) <= warmup_steps(prefill)
