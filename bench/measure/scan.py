"""The PR's decode scan timed with a plain `timeit` loop, outside the suites' machinery: the
self-check's independent figure (bench.orchestration.selfcheck) and the probe that sizes the
cold regime's sweep on this machine (bench.measure.sweep_probe). Nothing of the step suite's
measuring code is used; only the request class (the workload's definition), the strategy and the
regimes' own setters (bench.measure.regime), so that a figure is taken in the regime the suite
names."""

from __future__ import annotations

import timeit
from array import array

from bench.core.workload import make_request_class
from bench.measure.regime import DEFAULT_SWEEP_BYTES, touch_requests
from strategies import load_builtin

# The scan: the PR's capture-layer lookup as ForwardBatch.init_new runs it on a decode node
# (hidden_state.py:35-41 at bytedance-iaas/sglang 32990a0560): get-or-create per request until one
# has layers; no decode request has any.
SCAN = """
for r in reqs:
    layer_ids = get(r).capture_layer_ids
    if layer_ids:
        break
"""
SCAN_STRATEGY = "pr652"
# Scans timed per regime, one per repeat (after a sweep, in the cold regime).
COLD_REPEATS = 200


def time_scan_us(
    batch: int,
    request_model: str,
    regime: str,
    neighbours: int = 0,
    churn: float = 0.0,
    sweep_bytes: int = DEFAULT_SWEEP_BYTES,
    repeats: int = COLD_REPEATS,
    strategy_name: str = SCAN_STRATEGY,
) -> list[float]:
    """µs per decode scan of `batch` requests holding their state, one scan per repeat:
    warm, after the suite's warm read of the batch (every attribute of every request and its
    state: bench.measure.regime.touch_requests, in the timeit setup, untimed), so both figures
    are taken in one regime; cold, after reading one byte of every 64-byte line of a buffer of
    `sweep_bytes` (the suite's sweep; in the timeit setup, untimed, with a loop of its own: a
    plain memset would bypass the caches).
    `neighbours` requests are built after each scanned one and kept: the heap the suite's
    interleaved schedulers give the scan's requests (one request of each other scheduler in
    turn), which sets how many pages a cold scan touches. `churn` requests per scan are
    replaced (on average), as the decode batch replaces finished ones: the new one's state is
    created by the scan, the old one dies in the timed statement (its weak reference's
    callback removes the table entry), as both happen inside a decode iteration.
    strategy_name: whose `get` the loop calls (control's: what the loop costs without the
    state, the requests' own misses included, which the suite's net figures leave out)."""

    strategy = load_builtin(strategy_name)
    cls = make_request_class(strategy, model=request_model)
    plain = make_request_class(None, model=request_model)
    ids = array("q", range(16))
    reqs: list[object] = []
    kept: list[object] = []
    serial = 0

    def build() -> object:
        nonlocal serial
        serial += 1
        kept.extend(plain(f"n-{serial}-{j}", ids, 1) for j in range(neighbours))
        return cls(f"scan-{serial}", ids, 1)

    for _ in range(batch):
        reqs.append(build())
        strategy.get(reqs[-1])
    buf = bytearray(sweep_bytes)
    dead: list[object] = []
    owed = [0.0]

    def setup() -> None:
        owed[0] += churn
        while owed[0] >= 1.0:  # finished requests leave, new ones arrive without state
            owed[0] -= 1.0
            dead.append(reqs.pop(0))
            reqs.append(build())
        if regime == "cold":
            buf[::64]
        else:
            touch_requests(reqs, strategy.peek, strategy.fields)

    names = {"reqs": reqs, "get": strategy.get, "setup": setup, "dead": dead}
    timer = timeit.Timer("dead.clear()" + SCAN, setup="setup()", globals=names)
    timer.timeit(number=1)  # first call: imports and caches out of the way
    return [t * 1e6 for t in timer.repeat(repeats, 1)]
