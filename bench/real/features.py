"""`python -m bench real features SRC`: what each request feature and scheduler mode costs the
revision's scheduler per iteration, against the plain preset at the same batch.

Each round starts, together, one driver process for the plain preset and one for each variant
(the plain preset with one feature at `share` of its requests, or one mode on), and lets them
measure in lockstep (bench.real.process: each its window in turn, moments apart). A variant's
figure in a round is its mean µs per iteration less the plain process's of the same round;
over rounds, the mean with a 95% Student t interval. Where a variant changes the batch (a
retraction, a mixed chunk) its median decode batch is shown beside it.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.base.errors import EXIT_FAILED, EXIT_OK, DataError, UsageError
from bench.base.storage import write_atomic, write_json
from bench.base.timing import wall_s
from bench.real import presets as rp
from bench.real.measure import KINDS, figures
from bench.real.presets import RealPreset
from bench.real.process import run_lockstep
from bench.real.run import job, prepare
from bench.stats import mean_t_ci

DEFAULT_SHARE = rp.VARIANT_SHARE  # of the requests, for each feature (the mix's are assumptions)
DEFAULT_ROUNDS = 3
# every feature and mode; speculative decoding (+ngram, +eagle, ...) when asked by --variants:
# a revision without an algorithm would refuse the whole command
DEFAULT_VARIANTS = tuple(v for v in rp.VARIANTS if v not in rp.SPEC_VARIANTS)


def progress(msg: str) -> None:
    print(f"[features] {msg}", file=sys.stderr, flush=True)


def variant(base: RealPreset, name: str, share: float) -> RealPreset:
    """The plain preset with one feature at `share`, or one mode on."""
    try:
        return rp.variant(base, name, share)
    except ValueError as exc:
        raise UsageError(f"--variants {name}: {exc}") from None


@dataclass
class Row:
    name: str
    deltas_us: list[float] = field(default_factory=list)  # per round, variant - plain
    plain_us: list[float] = field(default_factory=list)
    batch: list[float] = field(default_factory=list)  # median decode batch per process

    def summary(self) -> dict[str, Any]:
        if not self.deltas_us:
            return {"name": self.name, "rounds": 0}
        mean, lo, hi = (
            mean_t_ci(self.deltas_us) if len(self.deltas_us) > 1 else (self.deltas_us[0],) * 3
        )
        plain = sum(self.plain_us) / len(self.plain_us)
        return {
            "name": self.name,
            "rounds": len(self.deltas_us),
            "delta_us": mean,
            "ci_us": [lo, hi],
            "plain_us": plain,
            "delta_pct": 100 * mean / plain if plain else float("nan"),
            "decode_batch": sorted(self.batch)[len(self.batch) // 2] if self.batch else None,
        }


def _decode_batch(out: dict[str, Any]) -> float:
    sizes = sorted(r["batch"] for r in out.get("records") or [] if r["mode"] in KINDS["decode"])
    return float(sizes[len(sizes) // 2]) if sizes else 0.0


def measure(
    rev: Any, base: RealPreset, variants: list[RealPreset], rounds: int, seed: int
) -> dict[str, Row]:
    rng = random.Random(seed)
    rows = {v.name: Row(v.name) for v in variants}
    plain_batch: list[float] = []
    plain_us: list[float] = []
    presets = [base, *variants]
    for r in range(rounds):
        progress(f"round {r + 1}/{rounds}: {len(presets)} processes in lockstep")
        units = [
            (rev.env, rev.tree, job(rev, p, seed=seed, worker=r * len(presets) + k))
            for k, p in enumerate(presets)
        ]
        outs = run_lockstep(units, rng)
        for p, out in zip(presets, outs, strict=True):
            if not out.get("ok"):
                raise DataError(f"{p.name}: {out.get('message')}")
        plain = figures(outs[0]["records"])["iteration"] * 1e6
        plain_us.append(plain)
        plain_batch.append(_decode_batch(outs[0]))
        for p, out in zip(variants, outs[1:], strict=True):
            mine = figures(out["records"])["iteration"] * 1e6
            rows[p.name].deltas_us.append(mine - plain)
            rows[p.name].plain_us.append(plain)
            rows[p.name].batch.append(_decode_batch(out))
    rows[base.name] = Row(base.name, [0.0] * rounds, plain_us, plain_batch)
    return rows


def markdown(label: str, base: RealPreset, share: float, rows: dict[str, Row]) -> str:
    plain = rows[base.name]
    batch = sorted(plain.batch)[len(plain.batch) // 2] if plain.batch else 0
    out = [
        f"What each feature and mode costs {label}'s scheduler per iteration against "
        f"`{base.name}` (decode batch {batch:.0f}); a feature on {share:g} of the requests, "
        "a mode on; µs per iteration, mean over rounds with its 95% t interval.",
        "",
        "| variant | Δ µs per iteration [95% CI] | Δ | decode batch |",
        "|---|---:|---:|---:|",
    ]
    for name, row in rows.items():
        if name == base.name:
            continue
        s = row.summary()
        if not s["rounds"]:
            continue
        lo, hi = s["ci_us"]
        out.append(
            f"| {name.removeprefix(base.name + '+')} | {s['delta_us']:+,.1f} [{lo:+,.1f}, {hi:+,.1f}] "
            f"| {s['delta_pct']:+.1f}% | {s['decode_batch']:.0f} |"
        )
    if plain.plain_us:
        mean = sum(plain.plain_us) / len(plain.plain_us)
        out += ["", f"The plain preset: {mean:,.1f} µs per iteration."]
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class FeatureRun:
    source: str
    base: RealPreset
    variants: tuple[str, ...] = DEFAULT_VARIANTS
    share: float = DEFAULT_SHARE
    rounds: int = DEFAULT_ROUNDS
    seed: int = 0
    interpreter: str | None = None
    output_dir: Path = Path("reports")


def execute(cfg: FeatureRun) -> int:
    if not 0 < cfg.share <= 1:
        raise UsageError(f"--share {cfg.share}: a share of requests, above 0 and at most 1")
    if cfg.rounds < 2:
        raise UsageError(f"--rounds {cfg.rounds}: at least 2 (an interval needs two rounds)")
    variants = [variant(cfg.base, v, cfg.share) for v in cfg.variants]
    (rev,) = prepare([cfg.source], cfg.interpreter, [cfg.base, *variants])
    t0 = wall_s()
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = cfg.output_dir / f"features-{stamp}-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    status = EXIT_OK
    try:
        rows = measure(rev, cfg.base, variants, cfg.rounds, cfg.seed)
    except DataError as exc:
        progress(f"a process failed: {exc}")
        write_json(folder / "features.json", {"status": "failed", "error": str(exc)})
        return EXIT_FAILED
    text = markdown(rev.source.label, cfg.base, cfg.share, rows)
    result = {
        "status": "complete",
        "revision": rev.source.label,
        "base": cfg.base.name,
        "share": cfg.share,
        "rounds": cfg.rounds,
        "wall_s": round(wall_s() - t0, 1),
        "rows": {name: row.summary() for name, row in rows.items()},
        "values": {name: row.deltas_us for name, row in rows.items()},
    }
    write_json(folder / "features.json", result)
    write_atomic(folder / "features.md", text)
    print(text, end="")
    print(f"features folder: {folder}")
    return status
