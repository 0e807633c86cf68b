"""`python -m bench gate --real PATH --base REV --head REV`: two revisions' own schedulers,
gated on their cost per iteration.

The revisions cannot share an interpreter, so each round starts four driver processes per
preset, together: the baseline, a copy of it, the candidate and a copy of it (SIDES), and lets
them measure their iterations in turns (bench.real.process, lockstep: iteration i of every
process within a second or so of the others', in a balanced order, never at the same time):
value i of every process comes from the same round, moments apart, and covers the same
iteration of the same request stream. The statistic is bench.stats.paired's, the one run and
history use: per round the ratio of the candidate processes' mean iteration to the baseline
ones', over rounds the mean log ratio with a t interval. The A/A contrast is the copies against
the first two (one of each code on each side). A preset fails when its slowdown is significant
and beyond its bound, the larger of the threshold and what the A/A contrast moved. The threshold
is a share of the iteration (percent), and optionally µs per iteration or a share of the forward
(the preset's forward time).

gate.md and gate.json say what was stubbed and replaced in the revisions; the gate's measured
resolution (the A/A contrast's interval) and the smallest change it would flag 80% of the time;
how many iterations of each pair did the same thing (the matched share) and how the turns fell.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import stats
from bench.base.cpuload import LOADED_CORES, LoadMeter
from bench.base.errors import EXIT_FAILED, EXIT_OK, DataError, UsageError
from bench.base.names import BenchName
from bench.base.storage import ROOT, write_atomic, write_json
from bench.gate.judge import Judgement, UnitThreshold
from bench.gate.render import render_markdown, render_terminal
from bench.real import presets as rp
from bench.real.measure import MIN_MATCHED_SHARE, matched_share, values
from bench.real.presets import RealPreset
from bench.real.process import LOCKSTEP_GROUP, predecessors, run_lockstep
from bench.real.profile.render import where_section
from bench.real.profile.run import where_moved
from bench.real.run import Revision, job, prepare, progress
from bench.real.venv import installed_diff
from bench.stats.classify import gate_verdict
from bench.stats.paired import PairedChange, paired_change

SCHEMA = "reqstate-bench-gate/1"
# The judgement is a t interval over rounds (bench.stats.paired); at fewer than 6 the smallest
# change flagged 80% of the time (gate.md prints it) is wider than the 5% a gate usually bounds.
MIN_ROUNDS = 6
# Four processes a round: the baseline twice and the candidate twice, so that the A/A contrast
# (the copies against the first two, one of each code on each side) has the change's variance
# and the turn order favours no code (bench.real.process.turn_orders).
SIDES = ("base", "base_copy", "candidate", "candidate_copy")
assert len(SIDES) == LOCKSTEP_GROUP
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


def _code(side: str) -> str:
    return "candidate" if side.startswith("candidate") else "base"


def _pairing(records: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
    """One round's matched shares: the candidate's iterations against the baseline's, and the
    baseline's copy against the baseline (what identical code matches)."""
    return {
        "base~candidate": matched_share(records["base"], records["candidate"]),
        "base~base_copy": matched_share(records["base"], records["base_copy"]),
    }


def followed_other(turns: list[int]) -> dict[str, float]:
    """Per side, the share of its measured turns that came right after the other code's
    process (the baseline's after the candidate's and the other way round). With a copy of the
    candidate alone and shuffled turns the baseline's was 8/9 and the candidate's 4/9."""
    out = {}
    for i, row in predecessors(turns).items():
        total = sum(row.values())
        other = sum(n for j, n in row.items() if _code(SIDES[j]) != _code(SIDES[i]))
        out[SIDES[i]] = other / total if total else 0.0
    return out


def measure(
    cfg: RealGate, sides: dict[str, Revision]
) -> tuple[dict[str, dict[str, list[list[float]]]], dict[str, Any]]:
    """Values per side and benchmark, a list per round; and what the processes reported (what
    was stubbed and replaced, each round's matched shares and turn order)."""
    rng = random.Random(cfg.seed)
    out: dict[str, dict[str, list[list[float]]]] = {s: {} for s in SIDES}
    seen: dict[str, Any] = {
        "stubbed": {},
        "replaced": {},
        "processes": 0,
        "matched": {},
        "followed_other": {},
        "load": {},
        "accept": {},  # preset -> side -> [verifies, their tokens] (speculative decoding)
    }
    index = 0
    for r in range(cfg.rounds):
        for preset in cfg.presets:
            progress(
                f"gate round {r + 1}/{cfg.rounds}, {preset.name}: base, its copy, candidate and "
                "its copy in lockstep"
            )
            units = []
            for k, side in enumerate(SIDES):
                rev = sides[_code(side)]
                units.append((rev.env, rev.tree, job(rev, preset, seed=cfg.seed, worker=index + k)))
            index += len(SIDES)
            turns: list[int] = []
            meter = LoadMeter(children=True)
            meter.start()
            results = run_lockstep(units, rng, turns=turns)
            seen["load"].setdefault(preset.name, []).append(asdict(meter.stop()))
            records = {}
            for side, res in zip(SIDES, results, strict=True):
                rev = sides[_code(side)]
                if not res.get("ok"):
                    raise DataError(
                        f"{side} ({rev.source.label}) {preset.name}: {res.get('message')}"
                    )
                records[side] = res["records"]
                if preset.spec is not None:
                    tally = seen["accept"].setdefault(preset.name, {}).setdefault(side, [0, 0])
                    tally[0] += sum(r.get("verified", 0) for r in res["records"])
                    tally[1] += sum(r.get("verified_tokens", 0) for r in res["records"])
                vals = values(res["records"], preset.iterations)
                for metric in (GATED_METRIC, *INFO_METRICS):
                    out[side].setdefault(bench_name(preset.name, metric), []).append(
                        vals.get(metric, [])
                    )
                seen["processes"] += 1
                for m, imp in res.get("stubbed", {}).items():
                    seen["stubbed"].setdefault(m.partition(".")[0], imp)
                for line in res.get("replaced", []):
                    seen["replaced"][line] = None
            seen["matched"].setdefault(preset.name, []).append(_pairing(records))
            seen["followed_other"].setdefault(preset.name, []).append(followed_other(turns))
    return out, seen


def _joined(*sides: list[list[float]]) -> list[list[float]]:
    """Round k of several sides' processes, as one list of values."""
    return [[x for side in parts for x in side] for parts in zip(*sides, strict=True)]


def contrasts(
    vals: dict[str, dict[str, list[list[float]]]], name: str
) -> tuple[PairedChange, PairedChange]:
    """The change (both candidate processes against both baseline ones, per round) and the
    A/A contrast of the same shape: the two copies against the two first processes, one of
    each code on each side, so identical code in identical numbers, with the change's own
    variance."""
    got = {s: vals.get(s, {}).get(name) for s in SIDES}
    missing = [s for s, v in got.items() if not v or not all(v)]
    if missing:
        raise DataError(f"{name}: no values from {', '.join(missing)}; the gate cannot judge it")
    b, bc, c, cc = (got[s] or [] for s in SIDES)
    change = paired_change(_joined(c, cc), _joined(b, bc))
    same = paired_change(_joined(bc, cc), _joined(b, c))
    return change, same


def _side_s(rounds: list[list[float]]) -> float:
    return stats.median([sum(r) / len(r) for r in rounds])


def judge(cfg: RealGate, vals: dict[str, dict[str, list[list[float]]]]) -> list[Judgement]:
    """Per preset: the change of the mean iteration (bench.stats.paired), its bound the larger of
    the threshold and what identical code moved in this job, significant when its 95% interval
    over rounds excludes zero; in µs the same (the mean of the rounds' differences)."""
    units = UnitThreshold(
        seconds=None if cfg.threshold_us is None else cfg.threshold_us / 1e6,
        share=None if cfg.threshold_share_pct is None else cfg.threshold_share_pct / 100,
    )
    out = []
    for preset in cfg.presets:
        name = bench_name(preset.name)
        change, same = contrasts(vals, name)
        noise = abs(same.pct)
        bound = max(cfg.threshold_pct, noise)
        verdict = gate_verdict(change.pct, bound, significant=change.significant)
        forward = preset.forward_ms / 1e3
        bound_s = units.bound_s(forward)
        if bound_s is not None:
            bound_s = max(bound_s, abs(same.difference))
            significant = not change.difference_low <= 0.0 <= change.difference_high
            verdict = gate_verdict(change.difference, bound_s, significant=significant)
        out.append(
            Judgement(
                name,
                _side_s(_joined(vals["base"][name], vals["base_copy"][name])),
                _side_s(_joined(vals["candidate"][name], vals["candidate_copy"][name])),
                change.ratio,
                change.ratio_low,
                change.ratio_high,
                change.p_value,
                cfg.threshold_pct,
                noise,
                bound,
                verdict,
                change_s=change.difference,
                change_s_low=change.difference_low,
                change_s_high=change.difference_high,
                forward_s=forward,
                bound_s=bound_s,
                min_detectable_pct=change.min_detectable_pct,
            )
        )
    return out


def resolution(
    cfg: RealGate, vals: dict[str, dict[str, list[list[float]]]]
) -> dict[str, dict[str, float]]:
    """Per preset, what identical code moved in this job (the A/A contrast's change and the
    half-width of its interval, percent of the iteration and µs) and the smallest change the
    job would flag 80% of the time."""
    out = {}
    for preset in cfg.presets:
        try:
            change, same = contrasts(vals, bench_name(preset.name))
        except DataError:
            continue
        out[preset.name] = {
            "aa_change_pct": same.pct,
            "aa_half_width_pct": (same.ratio_high - same.ratio_low) / 2 * 100,
            "aa_half_width_us": (same.difference_high - same.difference_low) / 2 * 1e6,
            "min_detectable_pct": change.min_detectable_pct,
        }
    return out


def pairing(seen: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per preset, the lowest matched share over rounds of each pair, and the turns' balance:
    the share of each side's turns that followed the other code (mean over rounds)."""
    out: dict[str, dict[str, float]] = {}
    for preset, rounds in seen.get("matched", {}).items():
        row = {k: min(r[k] for r in rounds) for k in rounds[0]} if rounds else {}
        followed = seen.get("followed_other", {}).get(preset, [])
        for f in followed:
            for side, share in f.items():
                key = f"followed_other:{side}"
                row[key] = row.get(key, 0.0) + share / len(followed)
        out[preset] = row
    return out


def real_markdown(meta: dict[str, Any]) -> list[str]:
    """gate.md's real-mode lines: resolution, what was stubbed and replaced."""
    lines = [
        "**Real scheduler**: each side is the revision's own Scheduler, on the CPU with a stand-in model."
    ]
    for preset, r in meta.get("resolution", {}).items():
        lines.append(
            f"- {preset}: resolution (identical code, A/A): {r['aa_change_pct']:+.2f}%, its 95% "
            f"interval ±{r['aa_half_width_pct']:.2f}% (±{r['aa_half_width_us']:,.1f} µs per "
            f"iteration); smallest change flagged 80% of the time: ±{r['min_detectable_pct']:.2f}% "
            "(computed from the rounds' spread, not timed)"
        )
    for preset, p in meta.get("pairing", {}).items():
        lines.append(pairing_line(preset, p))
    for preset, sides in meta.get("accept", {}).items():
        lines.append(accept_line(preset, sides))
    for preset, rounds in meta.get("load", {}).items():
        lines.append(load_line(preset, rounds))
    for preset, w in meta.get("moved", {}).items():
        lines += ["", f"**Where it moved** ({preset}, py-spy at {w['rate_hz']} Hz):", ""]
        lines += [*where_section(w, WHERE_ROWS), ""]
    diff = meta.get("environment_diff") or []
    if diff:
        shown = "; ".join(diff[:12]) + (f"; and {len(diff) - 12} more" if len(diff) > 12 else "")
        lines.append(
            f"- **environments differ** in {len(diff)} package(s), measured with the code: {shown}"
        )
    for line in meta.get("replaced", []):
        lines.append(f"- replaced: {line}")
    stubbed = meta.get("stubbed", {})
    if stubbed:
        lines.append(
            "- stubbed (GPU-only packages imported at module level; a call raises): "
            + "; ".join(f"{m} (imported by {i})" for m, i in sorted(stubbed.items()))
        )
    return lines


def accept_line(preset: str, sides: dict[str, list[int]]) -> str:
    """Speculative decoding: each code's accept length as it produced it (tokens per verify,
    the bonus token included), over its processes' measured iterations: the stand-in's draws
    are the same for both, so a difference is the revision's (its trees, its verify)."""

    def length(*names: str) -> str:
        v = sum(sides.get(n, [0, 0])[0] for n in names)
        t = sum(sides.get(n, [0, 0])[1] for n in names)
        return f"{t / v:.3f}" if v else "n/a"

    return (
        f"- {preset}: accept length (tokens per verify): baseline {length('base', 'base_copy')}, "
        f"candidate {length('candidate', 'candidate_copy')}"
    )


def load_line(preset: str, rounds: list[dict[str, Any]]) -> str:
    """What the rest of the machine took while the rounds ran (bench.base.cpuload; the drivers'
    own CPU left out)."""
    metered = [r for r in rounds if r.get("metered")]
    if not metered:
        return f"- {preset}: the machine's other load: not metered"
    cores = sorted(r["others_cores"] + r["steal_cores"] for r in metered)
    loaded = sum(c >= LOADED_CORES for c in cores)
    return (
        f"- {preset}: the machine's other load: median {cores[len(cores) // 2]:.2f} cores, "
        f"most {cores[-1]:.2f}; {loaded} of {len(cores)} round(s) loaded (≥ {LOADED_CORES} cores)"
    )


def pairing_line(preset: str, p: dict[str, float]) -> str:
    """The pairing check's line: matched shares (lowest round) and the turns' balance."""
    weak = ""
    if p.get("base~candidate", 1.0) < MIN_MATCHED_SHARE:
        weak = (
            f" (below {MIN_MATCHED_SHARE:.0%}: the sides served the stream differently; each "
            "round is judged on each side's own mean, which the statistic is in any case)"
        )
    turns = ", ".join(
        f"{k.split(':', 1)[1]} {v:.0%}" for k, v in p.items() if k.startswith("followed_other:")
    )
    return (
        f"- {preset}: iterations matched (mode, batch, received, finished), lowest round: "
        f"candidate {p.get('base~candidate', float('nan')):.1%}, baseline copy "
        f"{p.get('base~base_copy', float('nan')):.1%} of the baseline's{weak}; turns right after "
        f"the other code's: {turns}"
    )


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
        "pairing": pairing(seen),
        "load": seen["load"],
        "accept": seen["accept"],
        "statistic": "per round the ratio of mean iterations; over rounds the mean log ratio, t",
        "stubbed": seen["stubbed"],
        "replaced": list(seen["replaced"]),
        "revisions": {"base": base.meta(), "candidate": head.meta()},
        "environment_diff": installed_diff(base.env, head.env),
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
        if "resolution" in line or "matched" in line:
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
