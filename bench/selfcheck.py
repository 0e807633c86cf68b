"""selfcheck: the lookup suite's warm get-hit figures against a plain `timeit` loop.

`python -m bench selfcheck [RUN]` times `get` on live requests of weakkey, declared and dynattr
the way anyone would check a microbenchmark by hand: requests built in one go, each given its
state, then `timeit.Timer("for r in reqs: get(r)")` with autorange and repeats. Nothing of the
suites' measuring code is used (no Population, no calibrated passes, no worker process, no
clock module); only the request class, which is the workload's definition, is shared. It then
prints each strategy's figure beside the suite's warm get_hit at the same live size, and their
agreement. This is a benchmark, not a test: it says whether the suite measures what a plain loop
measures, it asserts nothing.

One thing it does share with the suite on purpose: hash seeds. A lookup by attribute name
probes the instance dict at positions set by the string hash, so dynattr's get_hit is bimodal
across PYTHONHASHSEED (66 or 85 ns here, seeds 0-5), and the suite's workers run with seeds
1..workers. The check times in one fresh process per seed, the same seeds, and pools the repeats.

The result is written to the run folder as selfcheck.json (the report shows it); `bench run`
does this by itself when its lookup suite measured the warm regime.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import timeit
from array import array
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SELFCHECK_FILE = "selfcheck.json"
STRATEGIES: tuple[str, ...] = ("weakkey", "declared", "dynattr")
# Repeats of one autoranged timing (each >= 0.2 s); the median is reported, as the suite reports
# medians.
REPEATS = 5
# A figure "agrees" when timeit/suite is within this fraction of 1. Measured agreement here is
# within 4% (docs/LOOKUP.md); 15% leaves room for a busy machine and still catches what the
# check is for: a suite measuring something else (cache misses, the wrong population, a unit
# error; the first version of the warm regime was off by 27% on declared and x2 on dynattr).
TOLERANCE = 0.15
DEFAULT_LIVE = 1_000
DEFAULT_WORKERS = 3  # processes (hash seeds) when there is no run to follow


@dataclass
class SelfCheck:
    live: int
    request_model: str
    timeit_ns: dict[str, float]
    suite_ns: dict[str, float] = field(default_factory=dict)  # empty without a run
    run: str = ""  # the run folder's name compared against
    tolerance: float = TOLERANCE
    repeats: int = REPEATS
    hash_seeds: int = DEFAULT_WORKERS  # processes, hash seeds 1..hash_seeds

    def agreement(self, strategy: str) -> float | None:
        """timeit / suite for one strategy, None when the suite has no figure."""
        suite = self.suite_ns.get(strategy)
        mine = self.timeit_ns.get(strategy)
        if not suite or mine is None:
            return None
        return mine / suite

    def agrees(self, strategy: str) -> bool | None:
        a = self.agreement(strategy)
        return None if a is None else abs(a - 1.0) <= self.tolerance

    def ratio(
        self, source: dict[str, float], num: str = "weakkey", den: str = "declared"
    ) -> float | None:
        if not source.get(num) or not source.get(den):
            return None
        return source[num] / source[den]

    def lines(self) -> list[str]:
        head = (
            f"selfcheck: get_hit, warm regime, live={self.live:,}, request model "
            f"{self.request_model}; plain timeit, median of {self.repeats} autoranged repeats "
            f"in each of {self.hash_seeds} processes (hash seeds 1..{self.hash_seeds})"
        )
        out = [head, f"   {'strategy':<12} {'timeit ns':>10} {'suite ns':>10} {'timeit/suite':>13}"]
        for s in self.timeit_ns:
            a = self.agreement(s)
            suite = self.suite_ns.get(s)
            verdict = "" if a is None else ("agrees" if self.agrees(s) else "DISAGREES")
            out.append(
                f"   {s:<12} {self.timeit_ns[s]:>10.1f} "
                f"{'-' if suite is None else f'{suite:.1f}':>10} "
                f"{'-' if a is None else f'{a:.3f}':>13}  {verdict}"
            )
        mine, theirs = self.ratio(self.timeit_ns), self.ratio(self.suite_ns)
        if mine is not None:
            both = f"; suite {theirs:.2f} ({mine / theirs:.3f})" if theirs else ""
            out.append(f"   weakkey/declared: timeit {mine:.2f}{both}")
        checked = [s for s in self.timeit_ns if self.agrees(s) is not None]
        if checked:
            ok = sum(bool(self.agrees(s)) for s in checked)
            out.append(
                f"   {ok} of {len(checked)} within +-{self.tolerance:.0%} of the suite ({self.run})"
            )
        else:
            out.append(
                "   no suite figures to compare with (no run, or no warm get_hit at this size)"
            )
        return out

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: Any) -> SelfCheck:
        """From selfcheck.json; ValueError naming what is wrong."""
        if not isinstance(raw, dict):
            raise ValueError("not a selfcheck object")
        try:
            return cls(
                live=int(raw["live"]),
                request_model=str(raw["request_model"]),
                timeit_ns={str(k): float(v) for k, v in raw["timeit_ns"].items()},
                suite_ns={str(k): float(v) for k, v in raw.get("suite_ns", {}).items()},
                run=str(raw.get("run", "")),
                tolerance=float(raw.get("tolerance", TOLERANCE)),
                repeats=int(raw.get("repeats", REPEATS)),
                hash_seeds=int(raw.get("hash_seeds", DEFAULT_WORKERS)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"selfcheck: {type(exc).__name__}: {exc}") from None


def time_get_hit_ns(strategy_name: str, live: int, request_model: str) -> list[float]:
    """ns per `get` over `live` requests holding state, visited in allocation order: one figure
    per repeat, in this process."""
    from bench.core.workload import make_request_class
    from strategies import load_builtin

    strategy = load_builtin(strategy_name)
    cls = make_request_class(strategy, model=request_model)
    ids = array("q", range(16))
    reqs = [cls(f"selfcheck-{i}", ids, 1) for i in range(live)]
    get = strategy.get
    for r in reqs:
        get(r)
    timer = timeit.Timer("for r in reqs: get(r)", globals={"reqs": reqs, "get": get})
    number, _ = timer.autorange()
    per_op = [t / (number * live) * 1e9 for t in timer.repeat(REPEATS, number)]
    for r in reqs:
        strategy.release(r)
    return per_op


def time_in_processes(
    strategies: Sequence[str], live: int, request_model: str, hash_seeds: Sequence[int]
) -> dict[str, float]:
    """Median ns per get_hit per strategy, repeats pooled over one fresh process per hash seed."""
    pooled: dict[str, list[float]] = {s: [] for s in strategies}
    for seed in hash_seeds:
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        args = [sys.executable, "-m", "bench.selfcheck", ",".join(strategies), str(live)]
        done = subprocess.run(
            [*args, request_model], env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"selfcheck process (hash seed {seed}) failed: {tail}")
        for name, values in json.loads(done.stdout).items():
            pooled[name] += values
    return {s: statistics.median(v) for s, v in pooled.items()}


def suite_figures(run_dir: Path, live: int) -> dict[str, float]:
    """The run's warm get_hit medians (ns) at `live`, per strategy."""
    from bench.report.load import load_run

    data = load_run(run_dir).suite("lookup")
    if data is None:
        return {}
    return {
        s.strategy: s.median * 1e9
        for s in data.summaries
        if s.bench.matches(op="get_hit", live=live, regime="warm")
    }


def run_sizes(run_dir: Path) -> list[int]:
    """The live sizes the run's lookup suite measured get_hit at, warm."""
    from bench.report.load import load_run

    data = load_run(run_dir).suite("lookup")
    if data is None:
        return []
    return sorted(
        {
            s.bench.int("live")
            for s in data.summaries
            if s.bench.matches(op="get_hit", regime="warm") and s.strategy in STRATEGIES
        }
    )


def selfcheck(
    run_dir: Path | None,
    *,
    live: int | None = None,
    request_model: str | None = None,
    strategies: Sequence[str] = STRATEGIES,
    write: bool = True,
) -> SelfCheck:
    """Time the strategies with timeit and compare with the run (if any); write selfcheck.json
    into the run folder unless write is False."""
    from bench.storage import write_json

    model = request_model
    workers = DEFAULT_WORKERS
    if run_dir is not None:
        from bench.report.load import load_manifest

        config = load_manifest(run_dir)["config"]
        model = model or str(config.get("request_model") or "")
        workers = int(config.get("lookup_workers") or config.get("workers") or DEFAULT_WORKERS)
        if live is None:
            found = run_sizes(run_dir)
            live = found[0] if found else None
    if not model:
        from bench.core.reqmodel import DEFAULT_MODEL

        model = DEFAULT_MODEL
    live = live or DEFAULT_LIVE
    result = SelfCheck(
        live=live,
        request_model=model,
        # the suite's lookup workers run with hash seeds 1..lookup_workers (bench/runner.py)
        timeit_ns=time_in_processes(strategies, live, model, range(1, workers + 1)),
        hash_seeds=workers,
    )
    if run_dir is not None:
        result.suite_ns = suite_figures(run_dir, live)
        result.run = run_dir.name
        if write:
            write_json(run_dir / SELFCHECK_FILE, result.to_json())
    return result


def main(argv: list[str]) -> int:
    """python -m bench.selfcheck STRATEGIES LIVE MODEL: one process's repeats, as JSON."""
    names, live, model = argv
    out = {name: time_get_hit_ns(name, int(live), model) for name in names.split(",")}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
