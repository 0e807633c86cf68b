"""From a driver's output to the harness's values: per process, one value per window of
`iterations` consecutive measured iterations, for each metric:

    iteration   mean µs per iteration of the loop (all iterations, the stand-in model's time
                left out): what the scheduler's CPU spends per iteration at this load
    decode      mean over the window's decode iterations (batch = the running requests)
    extend      mean over its extend (prefill) iterations
    <phase>     mean time per iteration in one phase (bench.real.driver.phases)
    decode_<phase>  (a process's figure only) the same over its decode iterations

Values are seconds, as every pyperf file of this harness holds. A window with no iteration of
a kind gives no value of that kind (so decode and extend may have fewer values than iteration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bench import stats
from bench.real.driver.phases import PHASES
from bench.stats.drift import rank_trend

KINDS = {"decode": ("DECODE",), "extend": ("EXTEND", "MIXED")}
METRICS = ("iteration", *KINDS, *PHASES)


def values(records: list[dict[str, Any]], iterations: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {m: [] for m in METRICS}
    for start in range(0, len(records) - iterations + 1, iterations):
        window = records[start : start + iterations]
        out["iteration"].append(sum(r["ns"] for r in window) / len(window) / 1e9)
        for kind, modes in KINDS.items():
            picked = [r["ns"] for r in window if r["mode"] in modes]
            if picked:
                out[kind].append(sum(picked) / len(picked) / 1e9)
        for phase in PHASES:
            out[phase].append(sum(r["phases"].get(phase, 0) for r in window) / len(window) / 1e9)
    return {m: v for m, v in out.items() if v}


def figures(records: list[dict[str, Any]]) -> dict[str, float]:
    """One process's figure per metric, over all its measured iterations (seconds): a window's
    value differs from the next by which iterations it holds (every process repeats the same
    stream, so that spread is the workload's); the process is the unit that replicates."""
    out: dict[str, float] = {}
    if not records:
        return out
    out["iteration"] = sum(r["ns"] for r in records) / len(records) / 1e9
    for kind, modes in KINDS.items():
        picked = [r["ns"] for r in records if r["mode"] in modes]
        if picked:
            out[kind] = sum(picked) / len(picked) / 1e9
    for phase in PHASES:
        out[phase] = sum(r["phases"].get(phase, 0) for r in records) / len(records) / 1e9
    decode = [r for r in records if r["mode"] in KINDS["decode"]]
    for phase in PHASES if decode else ():
        out[f"decode_{phase}"] = sum(r["phases"].get(phase, 0) for r in decode) / len(decode) / 1e9
    return out


@dataclass(frozen=True)
class ProcessSummary:
    """What one driver process adds beyond its values (for the report)."""

    iterations: int
    decode_batch: float  # median batch size of its decode iterations
    extend_share: float  # extend iterations / all
    finished_per_iteration: float
    gc_collections: tuple[int, int, int]
    gc_pause_ns: list[int]  # pauses inside measured iterations, ns (one per iteration with any)
    tracked_per_live: float | None
    sent_bytes_per_iteration: float
    occupancy: float | None = None  # the KV pool's mean share in use over measured iterations
    evicting: float | None = None  # the share of measured iterations that evicted
    retracted_per_1000: float = 0.0  # requests retracted per 1,000 measured iterations
    warmup_iterations: int = 0  # iterations before measurement (minimum and settling)
    steady: bool | None = None  # the warm-up's verdict (None: a fixed warm-up)
    settle_note: str = ""
    loop: str = ""  # the event loop the revision ran ("normal", "overlap"; "": not recorded)
    # speculative decoding over the measured iterations: verifies (requests verified), the
    # tokens they gave, and the drafts the stand-in's draws accepted (bench.real.driver.spec)
    verified: int = 0
    verified_tokens: int = 0
    drawn: int = 0
    # the accept length's 95% interval over this process's iterations (accept_interval)
    accept_ci: tuple[float, float] | None = None

    @property
    def accept_length(self) -> float | None:
        """Tokens per verify, the bonus token included, as the revision produced them (SGLang's
        accept length); None without a verify."""
        return self.verified_tokens / self.verified if self.verified else None

    @property
    def drawn_length(self) -> float | None:
        """Tokens per verify the stand-in's draws asked for (the drafts drawn, plus one)."""
        return (self.drawn + self.verified) / self.verified if self.verified else None

    @classmethod
    def of(cls, out: dict[str, Any]) -> ProcessSummary:
        recs = out.get("records") or []
        n = max(1, len(recs))
        decode = sorted(r["batch"] for r in recs if r["mode"] in KINDS["decode"])
        tracked = None
        live = out.get("live_at_end")
        if live and out.get("tracked_at_end") and out.get("tracked_after_build"):
            tracked = (out["tracked_at_end"] - out["tracked_after_build"]) / live
        pool = int(out.get("pool_size") or 0)
        known = [r for r in recs if r.get("available", -1) >= 0]
        settled = out.get("settled") or {}
        return cls(
            occupancy=(
                sum(1 - r["available"] / pool for r in known) / len(known)
                if pool and known
                else None
            ),
            evicting=sum(r.get("evicted", 0) > 0 for r in recs) / n if recs else None,
            retracted_per_1000=sum(r.get("retracted", 0) for r in recs) * 1000 / n,
            warmup_iterations=int(out.get("measure_start") or 0),
            steady=settled.get("steady"),
            settle_note=str(settled.get("why", "")),
            loop=str(out.get("loop") or ""),
            verified=sum(r.get("verified", 0) for r in recs),
            verified_tokens=sum(r.get("verified_tokens", 0) for r in recs),
            drawn=sum(r.get("drawn", 0) for r in recs),
            accept_ci=accept_interval(
                [(r.get("verified_tokens", 0), r.get("verified", 0)) for r in recs]
            ),
            iterations=len(recs),
            decode_batch=float(decode[len(decode) // 2]) if decode else 0.0,
            extend_share=sum(r["mode"] in KINDS["extend"] for r in recs) / n,
            finished_per_iteration=sum(r["finished"] for r in recs) / n,
            gc_collections=(
                sum(r["gc_collections"][0] for r in recs),
                sum(r["gc_collections"][1] for r in recs),
                sum(r["gc_collections"][2] for r in recs),
            ),
            gc_pause_ns=[r["gc_ns"] for r in recs if r["gc_ns"]],
            tracked_per_live=tracked,
            sent_bytes_per_iteration=sum(r["sent_bytes"] for r in recs) / n,
        )


def accept_interval(per_iteration: list[tuple[int, int]]) -> tuple[float, float] | None:
    """The 95% interval of tokens per verify over a process's iterations, each iteration's
    (tokens, verifies) one sample of a ratio estimator (its delta-method variance): the accepts
    are drawn per request and verify, so iterations are the stream's samples. Processes of one
    revision draw the same seeded stream and agree exactly, so an interval over processes has
    no width; this one says how far the stream's own draws lie from the distribution's mean.
    None with fewer than two iterations that verified."""
    pairs = [(t, v) for t, v in per_iteration if v > 0]
    n = len(pairs)
    if n < 2:
        return None
    tokens, verifies = sum(t for t, _ in pairs), sum(v for _, v in pairs)
    ratio = tokens / verifies
    mean_v = verifies / n
    residual = [t - ratio * v for t, v in pairs]
    var = sum(e * e for e in residual) / (n - 1) / (n * mean_v * mean_v)
    half = stats.t975(n - 1) * math.sqrt(var)
    return ratio - half, ratio + half


def drift(series: list[float]) -> float | None:
    """Spearman's rank correlation of a process's values against their order (bench.stats.drift):
    near 0 when the process measured a steady state, near +1 when its cost rose with its age.
    None below 4 values."""
    return rank_trend(series)


PAIRING_KEYS = ("mode", "batch", "received", "finished")
# A choice of this project (no SGLang number): below this share of matched iterations two processes did not serve the same stream in step:
# their iterations are compared as each side's mean, the figure the gate judges in any case.
MIN_MATCHED_SHARE = 0.9


def matched_share(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> float:
    """The share of measured iterations where two processes did the same thing: the same kind
    of iteration, batch size, requests received and finished so far (bench.real.driver.loop's
    record), position by position, over the longer of the two."""
    n = max(len(a), len(b))
    if n == 0:
        return 1.0
    same = sum(all(x.get(k) == y.get(k) for k in PAIRING_KEYS) for x, y in zip(a, b, strict=False))
    return same / n
