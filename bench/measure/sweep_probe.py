"""How large the cold regime's sweep must be on this machine: measured, not read from the
kernel (docs/REGIMES.md, "What evicted means").

The kernel reports a VM's last-level cache as the host's: 480 MiB on the machine this project
runs on, so a sweep of twice it read 960 MiB before every cold iteration (62 ms each, 89% of a
quick step suite's time) and the run's length followed what the hypervisor said. What the cold
regime promises is that the PR's decode scan reads its requests from as far as a larger sweep
would put them. So the probe times that scan (bench.measure.scan, plain timeit) after sweeps of
doubling size and takes the smallest sweep after which the scan costs at least PLATEAU of what
it costs after the largest. Measured 2026-12-03 here (µs per scan of 256 requests, 21
neighbours each): 107 after 32 MiB, 115 after 64, 175 after 128, 254 after 256, 267 after 960;
a later probe 108, 213, 225 and 244 after 64, 128, 256 and 1024 MiB, and chose 128 MiB (8 ms a
sweep).

A probe takes about 4 seconds, once per machine: its result is kept in the user's cache, keyed
by what describes the machine (bench.base.cpucache.machine_key); delete the file to measure
again, or set the size (a --config file's cold_sweep_mb, or bench.base.cpucache.SWEEP_ENV for
the whole machine).
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from bench.base.cpucache import llc_bytes, machine_key
from bench.base.storage import cache_dir, write_json
from bench.core.reqmodel import DEFAULT_MODEL
from bench.measure.scan import time_scan_us

# The sweeps tried, in MiB, doubling: 4 MiB is below any last-level cache this runs on, 1 GiB
# above any a probe has found (the 480 MiB-reporting VM's scan levels off from 128-256).
PROBE_MIB = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
# The share of the largest sweep's scan cost a sweep must reach to count as evicting. Here the
# scan read 213 µs after 128 MiB and 244 after 1 GiB (87%): at 0.85 the sweep is 128 MiB, 8 ms,
# half of 256 MiB's, and the evicted figure about 13% under the plateau (docs/REGIMES.md).
PLATEAU = 0.85
# The scan probed: the step suite's decode-dspark batch in the heap its warm case gives it (one
# request of each of 21 other schedulers after each of its own), scans per sweep size.
BATCH = 256
NEIGHBOURS = 21
SCANS = 15
CACHE_NAME = "cold-sweep"


def probe(request_model: str = DEFAULT_MODEL) -> dict[int, float]:
    """The scan's median cost (µs) after each sweep of PROBE_MIB (MiB)."""
    return {
        mb: statistics.median(
            time_scan_us(BATCH, request_model, "cold", NEIGHBOURS, 0.0, mb << 20, SCANS)
        )
        for mb in PROBE_MIB
    }


def choose(curve_us: dict[int, float]) -> int:
    """The smallest sweep whose scan costs PLATEAU of the largest sweep's (MiB)."""
    top = curve_us[max(curve_us)]
    return min(mb for mb, us in curve_us.items() if us >= PLATEAU * top)


def cached_sweep_mb(request_model: str = DEFAULT_MODEL) -> tuple[int, dict[str, Any]]:
    """This machine's sweep (MiB) and the probe behind it: the cached curve, else a new probe
    (kept in the cache). The curve is the machine's; the choice is made from it by this
    version's rule, every time."""
    key = machine_key()
    path = cache_dir() / CACHE_NAME / f"{key}.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        curve = {int(k): float(v) for k, v in record["curve_us"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        curve = probe(request_model)
        record = {
            "machine": key,
            "reported_llc_mb": (llc_bytes() or 0) >> 20,
            "curve_us": {str(k): round(v, 1) for k, v in curve.items()},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, record)
    return choose(curve), {**record, "plateau": PLATEAU}
