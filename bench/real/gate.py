"""`python -m bench gate --real PATH --base REV --head REV`: two revisions' own schedulers,
gated on their cost per iteration.

The revisions cannot share an interpreter, so each round starts one driver process per side
(base, candidate, and an A/A copy of the candidate) per preset, together, and lets them measure
their windows in turns (bench.real.process, lockstep: window i of every side within a second or
so of the others', in a seeded shuffled order, never at the same time): value i of every side
comes from the same round, moments apart, and covers the same iterations of the same request
stream. The judgement is the wall gate's own (bench.gate.judge.WallRule): per round the
median of the value-by-value ratios and differences, over rounds the median with a bootstrap
CI; a benchmark fails when its slowdown is significant and beyond its bound, the larger of the
threshold and what the A/A copy moved. The threshold is a share of the iteration (percent), and
optionally µs per iteration or a share of the forward (the preset's forward time).

gate.md and gate.json say what was stubbed and replaced in the revisions, and the gate's
measured resolution: the half-width of the A/A copy's interval, the smallest change the job
could have told from identical code.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.base.errors import EXIT_FAILED, EXIT_OK, DataError, UsageError
from bench.base.names import BenchName
from bench.base.storage import ROOT, write_atomic, write_json
from bench.gate.judge import Judgement, Sides, UnitThreshold, WallRule
from bench.gate.render import render_markdown, render_terminal
from bench.real import presets as rp
from bench.real.measure import values
from bench.real.presets import RealPreset
from bench.real.process import run_lockstep
from bench.real.profile.render import where_section
from bench.real.profile.run import where_moved
from bench.real.run import Revision, job, prepare, progress

SCHEMA = "reqstate-bench-gate/1"
# The judgement's test is Wilcoxon's signed-rank over rounds (bench.stats.robust.compare): with
# fewer than 6 rounds no outcome reaches p < 0.05, so a smaller gate could never fail.
MIN_ROUNDS = 6
SIDES = ("base", "candidate", "aa")
GATED_METRIC = "iteration"
INFO_METRICS = ("decode", "extend")
WHERE_ROWS = 5  # gate.md's rows of the functions whose time moved


@dataclass(frozen=True)
class RealGate:
    base: str  # a source spec (bench.real.source)
    head: str
    presets: tuple[RealPreset, ...]
    rounds: int = 6
    threshold_pct: float = 5.0
    threshold_us: float | None = None
    threshold_share_pct: float | None = None
    seed: int = 0
    # --where: profile both sides where a preset's change is significant (auto), for every
    # preset (always) or never: the functions whose time moved (bench.real.profile)
    where: str = "auto"
    interpreter: str | None = None  # --real-python
    changed: Mapping[str, Any] = field(default_factory=dict)  # --set (kept in lockstep)


def bench_name(preset: str, metric: str = GATED_METRIC) -> str:
    return str(BenchName.of("real", "scheduler", preset=preset, metric=metric))


def _forward_s(name: str) -> float | None:
    preset = BenchName.parse(name).get("preset")
    try:
        return rp.get(preset).forward_ms / 1e3 if preset else None
    except ValueError:
        return None


def measure(
    cfg: RealGate, sides: dict[str, Revision]
) -> tuple[dict[str, dict[str, list[float]]], dict[str, Any]]:
    """Values per side and benchmark, round by round; and what the processes reported."""
    rng = random.Random(cfg.seed)
    out: dict[str, dict[str, list[float]]] = {s: {} for s in SIDES}
    seen: dict[str, Any] = {"stubbed": {}, "replaced": {}, "processes": 0}
    index = 0
    for r in range(cfg.rounds):
        for preset in cfg.presets:
            progress(
                f"gate round {r + 1}/{cfg.rounds}, {preset.name}: base, candidate, A/A in lockstep"
            )
            units = []
            for k, side in enumerate(SIDES):
                rev = sides["candidate" if side == "aa" else side]
                units.append((rev.env, rev.tree, job(rev, preset, seed=cfg.seed, worker=index + k)))
            index += len(SIDES)
            results = run_lockstep(units, rng)
            for side, res in zip(SIDES, results, strict=True):
                rev = sides["candidate" if side == "aa" else side]
                if not res.get("ok"):
                    raise DataError(
                        f"{side} ({rev.source.label}) {preset.name}: {res.get('message')}"
                    )
                vals = values(res["records"], preset.iterations)
                for metric in (GATED_METRIC, *INFO_METRICS):
                    if metric in vals:
                        out[side].setdefault(bench_name(preset.name, metric), []).extend(
                            vals[metric]
                        )
                seen["processes"] += 1
                for m, imp in res.get("stubbed", {}).items():
                    seen["stubbed"].setdefault(m.partition(".")[0], imp)
                for line in res.get("replaced", []):
                    seen["replaced"][line] = None
    return out, seen


def judge(cfg: RealGate, vals: dict[str, dict[str, list[float]]]) -> list[Judgement]:
    units = UnitThreshold(
        seconds=None if cfg.threshold_us is None else cfg.threshold_us / 1e6,
        share=None if cfg.threshold_share_pct is None else cfg.threshold_share_pct / 100,
    )
    out = []
    for preset in cfg.presets:
        rule = WallRule(preset.values, True, units, forward=_forward_s)
        name = bench_name(preset.name)
        base, cand = vals["base"].get(name), vals["candidate"].get(name)
        if not base or not cand:
            raise DataError(f"{name}: no values on one side; the gate cannot judge it")
        out.append(rule.judge(name, Sides(base, cand, vals["aa"].get(name)), cfg.threshold_pct))
    return out


def resolution(
    cfg: RealGate, vals: dict[str, dict[str, list[float]]]
) -> dict[str, dict[str, float]]:
    """Per preset, what identical code moved in this job: the A/A copy's change and the
    half-width of its interval (percent of the iteration, and µs)."""
    out = {}
    for preset in cfg.presets:
        name = bench_name(preset.name)
        aa, cand = vals["aa"].get(name), vals["candidate"].get(name)
        if not aa or not cand:
            continue
        rule = WallRule(preset.values, True, UnitThreshold(), forward=_forward_s)
        j = rule.judge(name, Sides(cand, aa, None), 0.0)
        half_pct = (j.ci_high - j.ci_low) / 2 * 100
        half_us = None
        if j.change_s_low is not None and j.change_s_high is not None:
            half_us = (j.change_s_high - j.change_s_low) / 2 * 1e6
        out[preset.name] = {
            "aa_change_pct": j.change_pct,
            "aa_half_width_pct": half_pct,
            "aa_half_width_us": half_us if half_us is not None else float("nan"),
        }
    return out


def real_markdown(meta: dict[str, Any]) -> list[str]:
    """gate.md's real-mode lines: resolution, what was stubbed and replaced."""
    lines = [
        "**Real scheduler**: each side is the revision's own Scheduler, on the CPU with a stand-in model."
    ]
    for preset, r in meta.get("resolution", {}).items():
        lines.append(
            f"- {preset}: resolution (identical code, A/A): {r['aa_change_pct']:+.2f}%, its 95% "
            f"interval ±{r['aa_half_width_pct']:.2f}% (±{r['aa_half_width_us']:,.1f} µs per iteration)"
        )
    for preset, w in meta.get("moved", {}).items():
        lines += ["", f"**Where it moved** ({preset}, py-spy at {w['rate_hz']} Hz):", ""]
        lines += [*where_section(w, WHERE_ROWS), ""]
    for line in meta.get("replaced", []):
        lines.append(f"- replaced: {line}")
    stubbed = meta.get("stubbed", {})
    if stubbed:
        lines.append(
            "- stubbed (GPU-only packages imported at module level; a call raises): "
            + "; ".join(f"{m} (imported by {i})" for m, i in sorted(stubbed.items()))
        )
    return lines


def run(
    cfg: RealGate, *, json_out: Path | None, markdown_out: Path | None, root: Path = ROOT
) -> int:
    if cfg.rounds < MIN_ROUNDS:
        raise UsageError(
            f"gate --real --rounds {cfg.rounds}: at least {MIN_ROUNDS} (Wilcoxon's signed-rank "
            "test over fewer rounds can never reach p < 0.05, so such a gate could not fail)"
        )
    for out in (json_out, markdown_out):
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
    if cfg.base != cfg.head:
        base, head = prepare([cfg.base, cfg.head], cfg.interpreter, cfg.presets)
    else:
        base, head = _same(cfg.base, cfg.interpreter, cfg.presets)
    sides = {"base": base, "candidate": head}
    progress(
        f"gate: {base.source.label} vs {head.source.label}, {len(cfg.presets)} preset(s), "
        f"{cfg.rounds} rounds of {len(SIDES)} processes"
    )
    cfg = replace(cfg, presets=tuple(p.in_lockstep(cfg.changed) for p in cfg.presets))
    vals, seen = measure(cfg, sides)
    judgements = judge(cfg, vals)
    meta: dict[str, Any] = {
        "base": base.source.label,
        "candidate": head.source.label,
        "real": True,
        "resolution": resolution(cfg, vals),
        "stubbed": seen["stubbed"],
        "replaced": list(seen["replaced"]),
        "revisions": {"base": base.meta(), "candidate": head.meta()},
    }
    if json_out is None or markdown_out is None:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        folder = root / "reports" / f"gate-real-{stamp}-{os.getpid()}"
        folder.mkdir(parents=True, exist_ok=True)
        json_out = json_out or folder / "gate.json"
        markdown_out = markdown_out or folder / "gate.md"
    meta["moved"] = where(cfg, base, head, judgements, json_out.parent / "where")
    status = "regression" if any(j.verdict == "regression" for j in judgements) else "pass"
    result = {
        "schema": SCHEMA,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(),
        "mode": "real",
        "status": status,
        "meta": meta,
        "config": {
            **asdict(cfg),
            "presets": {p.name: p.meta({}) for p in cfg.presets},
        },
        "values": vals,
        "results": [
            {**asdict(j), "change_pct": j.change_pct, "share_of_forward": j.share_of_forward}
            for j in judgements
        ],
    }
    markdown = render_markdown(judgements, "wall", status, meta)
    markdown += "\n" + "\n".join(real_markdown(meta)) + "\n"
    write_json(json_out, result)
    write_atomic(markdown_out, markdown)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(markdown)
    print(render_terminal(judgements, "wall", status))
    for line in real_markdown(meta)[1:]:
        if "resolution" in line:
            print(line.removeprefix("- "))
    print(f"gate result: {json_out}\ngate markdown: {markdown_out}")
    return EXIT_FAILED if status == "regression" else EXIT_OK


def where(
    cfg: RealGate, base: Revision, head: Revision, judgements: list[Judgement], folder: Path
) -> dict[str, Any]:
    """Per preset profiled (`cfg.where`), the functions whose time moved."""
    if cfg.where == "never":
        return {}
    by_name = {j.benchmark: j for j in judgements}
    out = {}
    for preset in cfg.presets:
        j = by_name.get(bench_name(preset.name))
        if j is None:
            continue
        significant = j.ci_low > 1 or j.ci_high < 1
        if cfg.where == "always" or significant:
            progress(f"gate: where it moved in {preset.name}, both sides under py-spy")
            try:
                out[preset.name] = where_moved(
                    base, head, preset, folder / preset.name, seed=cfg.seed
                )
            except UsageError as exc:  # DataError included: the verdict stands without it
                progress(f"gate: {preset.name} not profiled ({exc})")
    return out


def _same(
    spec: str, interpreter: str | None, presets: tuple[RealPreset, ...]
) -> tuple[Revision, Revision]:
    """A revision gated against itself (the A/A self-test): one environment, both sides."""
    (rev,) = prepare([spec], interpreter, presets)
    return rev, rev


def presets_for(names: list[str]) -> tuple[RealPreset, ...]:
    try:
        return tuple(rp.get(n) for n in names)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
