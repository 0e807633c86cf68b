"""A real-mode run folder read back: the figures, real.json (pyperf), summary.md, report.html
and the terminal's screenful. Everything is computed from the raw driver outputs on read
(raw/<revision>/<preset>/p*.json), so an interrupted run reports what it measured and a report
can be rendered again with the current analysis.

Figures per (revision, preset):
- µs per iteration: each process's mean over all its measured iterations, then their mean with
  a 95% Student t interval over processes (the process is the unit that replicates: its values
  are windows of one request stream that every process repeats, so their spread is the
  workload's, while processes differ by memory layout, hash seed and the machine's drift);
- decode and extend iterations apart; the phases (bench/real/driver/phases.py);
- tails of single iterations (p50, p99, p99.9 where at least 10 iterations lie beyond, max);
- GC: collections per 1,000 iterations by generation, pauses, the heap frozen after warm-up;
  tracked objects per live request;
- with two revisions, the paired difference per preset: process k of each in round k, value i
  of each over the same iterations of the same request stream.
"""

from __future__ import annotations

import base64
import io
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import stats
from bench.base.names import BenchName
from bench.base.storage import read_json, write_atomic
from bench.real import freqmap, measure
from bench.real.driver.phases import PHASES
from bench.real.folder import RAW, load_manifest
from bench.real.measure import ProcessSummary
from bench.report.markup import Html, page, pre, section, table, tag, void
from bench.stats import paired

SUMMARY = "summary.md"
REPORT = "report.html"
PYPERF = "real.json"
SHOWN_PHASES = tuple(p for p in PHASES if p != "stand_in")


@dataclass
class Cell:
    """One revision's processes on one preset."""

    revision: str
    preset: str
    outputs: list[dict[str, Any]] = field(default_factory=list)  # ok driver outputs, in order
    failed: list[str] = field(default_factory=list)

    def values(self, metric: str) -> list[list[float]]:
        return [o["_values"].get(metric, []) for o in self.outputs if o["_values"].get(metric)]

    def figures(self, metric: str) -> list[float]:
        """Each process's figure (its mean over its measured iterations)."""
        return [o["_figures"][metric] for o in self.outputs if metric in o["_figures"]]

    def center(self, metric: str = "iteration") -> tuple[float, float, float] | None:
        """(mean over processes, CI low, CI high) in seconds, or None without values."""
        figs = self.figures(metric)
        if not figs:
            return None
        return stats.mean_t_ci(figs)

    def precision_pct(self, metric: str = "iteration") -> float | None:
        c = self.center(metric)
        if c is None or math.isnan(c[1]) or not c[0]:
            return None
        return (c[2] - c[1]) / 2 / c[0] * 100

    def iterations_ns(self) -> list[int]:
        return [r["ns"] for o in self.outputs for r in o.get("records", [])]

    def summaries(self) -> list[ProcessSummary]:
        return [ProcessSummary.of(o) for o in self.outputs]

    def drift(self) -> list[float]:
        """Each process's rank correlation of its values with their order."""
        out = []
        for g in self.values("iteration"):
            d = measure.drift(g)
            if d is not None:
                out.append(d)
        return out


@dataclass
class RealData:
    run_dir: Path
    manifest: dict[str, Any]
    cells: dict[tuple[str, str], Cell]
    freqmaps: dict[str, dict[str, Any]]  # revision -> freqmap.json (Measured)

    @property
    def revisions(self) -> list[str]:
        """In the order given (the first is the baseline of every difference)."""
        return list(self.manifest.get("order") or self.manifest["revisions"])

    @property
    def presets(self) -> list[str]:
        return list(self.manifest["presets"])

    def cell(self, rev: str, preset: str) -> Cell:
        return self.cells.get((rev, preset)) or Cell(rev, preset)

    def forward_s(self, preset: str) -> float:
        return float(self.manifest["presets"][preset]["forward_ms"]) / 1e3


def load(run_dir: Path) -> RealData:
    manifest = load_manifest(run_dir)
    cells: dict[tuple[str, str], Cell] = {}
    freqmaps: dict[str, dict[str, Any]] = {}
    for entry in manifest.get("processes", []):
        key = (entry["revision"], entry["preset"])
        cell = cells.setdefault(key, Cell(*key))
        if entry.get("mode") != "measure":
            continue
        out = read_json(run_dir / entry["file"])
        if not out.get("ok"):
            cell.failed.append(str(out.get("message")))
            continue
        iterations = int(manifest["presets"][entry["preset"]]["values"]["iterations"])
        out["_values"] = measure.values(out.get("records", []), iterations)
        out["_figures"] = measure.figures(out.get("records", []))
        cell.outputs.append(out)
    for rev in manifest.get("revisions", {}):
        for preset in manifest.get("presets", {}):
            path = run_dir / RAW / rev / preset / "freqmap.json"
            if path.is_file():
                freqmaps[rev] = read_json(path)
    return RealData(run_dir, manifest, cells, freqmaps)


def precision(run_dir: Path, preset: str) -> float | None:
    """The least precise revision's 95% CI half-width of µs per iteration, in percent."""
    data = load(run_dir)
    reached = [data.cell(r, preset).precision_pct() for r in data.revisions]
    if any(p is None for p in reached):
        return None
    return max(p for p in reached if p is not None) if reached else None


def rounds_needed(run_dir: Path, preset: str, target_pct: float) -> int | None:
    """How many rounds a preset needs for a 95% half-width of `target_pct`, from the spread its
    first rounds showed (Stein's two-stage rule, t with their degrees of freedom): fixed once,
    so that the run does not stop at the first look that happens to meet it. One revision: its
    processes' figures; several: each one's paired change against the first, the largest."""
    data = load(run_dir)
    revs = data.revisions
    series: list[list[float]] = []
    if len(revs) == 1:
        figs = data.cell(revs[0], preset).figures("iteration")
        mean = sum(figs) / len(figs) if figs else 0.0
        series.append([f / mean * 100 for f in figs] if mean else [])
    else:
        a = data.cell(revs[0], preset)
        for rev in revs[1:]:
            pairs = _rounds(a, data.cell(rev, preset), "iteration")
            series.append([(y / x - 1) * 100 for x, y in pairs if x > 0])
    needs = []
    for xs in series:
        if len(xs) < 2:
            return None
        sd = statistics.stdev(xs)
        needs.append(math.ceil((paired.t975(len(xs) - 1) * sd / target_pct) ** 2))
    return max(needs) if needs else None


# -- numbers as text ------------------------------------------------------------------------


def us(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value * 1e6:,.1f}"


def with_ci(c: tuple[float, float, float] | None) -> str:
    if c is None:
        return "n/a"
    if math.isnan(c[1]):
        return f"{us(c[0])} µs (one process)"
    return f"{us(c[0])} µs [{us(c[1])}, {us(c[2])}]"


def tails(ns: list[int]) -> str:
    if not ns:
        return "n/a"
    parts = []
    for q, label in ((0.5, "p50"), (0.99, "p99"), (0.999, "p99.9")):
        if stats.supports_quantile(len(ns), q):
            parts.append(f"{label} {stats.quantile(ns, q) / 1e3:,.0f}")
    parts.append(f"max {max(ns) / 1e3:,.0f}")
    return " / ".join(parts) + " µs"


def gc_text(cell: Cell) -> str:
    sums = cell.summaries()
    its = sum(s.iterations for s in sums)
    if not its:
        return "n/a"
    gens = [sum(s.gc_collections[g] for s in sums) * 1000 / its for g in range(3)]
    pauses = [p for s in sums for p in s.gc_pause_ns]
    worst = f", longest {max(pauses) / 1e6:,.2f} ms" if pauses else ""
    share = sum(pauses) / max(1, sum(cell.iterations_ns())) * 100
    return (
        f"{gens[0]:,.0f} / {gens[1]:,.1f} / {gens[2]:,.2f} per 1,000 iterations (gen 0/1/2){worst}, "
        f"{share:.1f}% of the time"
    )


def cache_text(cell: Cell) -> str:
    """The KV cache regime the measured iterations were in, and how the warm-up ended."""
    sums = cell.summaries()
    occ = [s.occupancy for s in sums if s.occupancy is not None]
    ev = [s.evicting for s in sums if s.evicting is not None]
    if not occ:
        return "n/a"
    text = f"{stats.median(occ) * 100:.1f}% full, evicting in {stats.median(ev) * 100:.0f}% of iterations"
    retracted = stats.median([s.retracted_per_1000 for s in sums])
    if retracted:
        text += f", {retracted:,.0f} retracted per 1,000"
    unsteady = [s for s in sums if s.steady is False]
    warm = stats.median([float(s.warmup_iterations) for s in sums])
    text += f"; warm-up {warm:,.0f} iterations"
    if unsteady:
        text += f" (**{len(unsteady)} of {len(sums)} processes not steady**)"
    return text


def spec_lines(data: RealData) -> list[str]:
    """Per preset that runs speculative decoding: the accept length the revision produced
    (tokens per verify, SGLang's figure), with a 95% t interval over processes, beside the
    preset's and the stand-in's draws'; and any revision that did not run the preset's loop."""
    out: list[str] = []
    for preset in data.presets:
        values = (data.manifest.get("presets", {}).get(preset) or {}).get("values", {})
        configured = values.get("accept_len")
        want_loop = values.get("loop")
        for rev in data.revisions:
            sums = data.cell(rev, preset).summaries()
            loops = sorted({s.loop for s in sums if s.loop})
            if want_loop and loops and loops != [want_loop]:
                out.append(
                    f"- **{preset} {rev}: the revision ran the {'/'.join(loops)} loop, not the "
                    f"preset's {want_loop}**"
                )
            lengths = [a for s in sums if (a := s.accept_length) is not None]
            if configured is None or not lengths:
                continue
            drawn = [d for s in sums if (d := s.drawn_length) is not None]
            verifies = sum(s.verified for s in sums)
            out.append(
                f"- {preset} {rev}: {values.get('speculative', '')} accept length "
                f"{_accept_text(sums, lengths)} measured over {verifies:,} verifies (configured "
                f"{configured}; the stand-in's draws {statistics.mean(drawn):.3f})"
            )
    return (
        ["", "Speculative decoding (tokens per verify, the bonus token included):", "", *out]
        if out
        else []
    )


def _accept_text(sums: list[ProcessSummary], lengths: list[float]) -> str:
    """The accept length with its 95% interval: where the processes verified one stream (the
    seeded draws make them agree exactly) the interval over that stream's iterations, said so;
    otherwise a t interval over processes."""
    if max(lengths) - min(lengths) < 1e-9:
        ci = next((s.accept_ci for s in sums if s.accept_ci is not None), None)
        if ci is None:
            return f"{lengths[0]:.3f}"
        n = len(lengths)
        alike = "" if n == 1 else f"; its {n} processes verified the same draws"
        return f"{lengths[0]:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] (over one process's iterations{alike})"
    c = stats.mean_t_ci(lengths)
    return f"{c[0]:.3f} [{c[1]:.3f}, {c[2]:.3f}] (t interval over {len(lengths)} processes)"


def unsteady_lines(data: RealData) -> list[str]:
    """A warning for each cell with processes whose cache never settled."""
    out = []
    for preset in data.presets:
        for rev in data.revisions:
            bad = [s for s in data.cell(rev, preset).summaries() if s.steady is False]
            if bad:
                out.append(
                    f"- **{preset} {rev}: {len(bad)} process(es) began measuring with the KV cache "
                    f"not steady** ({bad[0].settle_note})"
                )
    return out


def tracked_text(cell: Cell) -> str:
    vals = [s.tracked_per_live for s in cell.summaries() if s.tracked_per_live is not None]
    return f"{stats.median(vals):,.1f}" if vals else "n/a"


def _rounds(a: Cell, b: Cell, metric: str) -> list[tuple[float, float]]:
    """Round k pairs process k of each (both over the same iterations of the same request
    stream, moments apart): each process's mean over its measured iterations."""
    return list(zip(a.figures(metric), b.figures(metric), strict=False))


def paired_difference(
    a: Cell, b: Cell, metric: str = "iteration"
) -> tuple[float, float, float] | None:
    """b - a, in seconds: the mean of the rounds' differences of means with a 95% t interval
    over rounds (bench.stats.paired, the gate's and the history's statistic)."""
    rounds = [y - x for x, y in _rounds(a, b, metric)]
    if not rounds:
        return None
    r = paired.over_rounds(rounds)
    return r.mean, r.low, r.high


def paired_change_pct(
    a: Cell, b: Cell, metric: str = "iteration"
) -> tuple[float, float, float] | None:
    """b against a, in percent: exp of the mean over rounds of log(mean b / mean a), its t
    interval (the gate's statistic)."""
    logs = [math.log(y / x) for x, y in _rounds(a, b, metric) if x > 0 and y > 0]
    if not logs:
        return None
    r = paired.over_rounds(logs)
    return tuple(math.expm1(v) * 100 for v in (r.mean, r.low, r.high))  # type: ignore[return-value]


def _interval(d: tuple[float, float, float] | None, scale: float, fmt: str, unit: str) -> str:
    """(point, low, high) scaled, ¹ where the interval includes zero."""
    if d is None:
        return "n/a"
    x, lo, hi = (v * scale for v in d)
    if math.isnan(lo):
        return f"{x:{fmt}}{unit}"
    zero = "¹" if lo <= 0 <= hi else ""
    return f"{x:{fmt}}{unit} [{lo:{fmt}}, {hi:{fmt}}]{zero}"


def _pct(d: tuple[float, float, float] | None) -> str:
    return _interval(d, 1.0, "+.2f", "%")


def _delta(d: tuple[float, float, float] | None) -> str:
    return _interval(d, 1e6, "+,.1f", "")


def wrapped_set(cell: Cell) -> set[str]:
    """The methods its processes timed as phases ('Class.method (phase)', wherever defined)."""
    return {w.partition(" [")[0] for o in cell.outputs for w in o.get("phases_wrapped", []) or []}


def largest_phase(a: Cell, b: Cell) -> tuple[str, tuple[float, float, float]] | str | None:
    """The phase of decode iterations (else of all) whose paired difference stands furthest
    from zero in units of its interval (a phase's difference is far less noisy than the whole
    iteration's: it holds only the code the phase runs); its interval widened for having been
    picked from all the phases compared (Bonferroni: 95% over them together), so that under no
    change it names one 5% of the time, not ~34%. A string says why none is named: nothing
    beyond that interval, or the two sides timed different methods (their phases do not hold
    the same code)."""
    wa, wb = wrapped_set(a), wrapped_set(b)
    if wa and wb and wa != wb:
        only = sorted((wa - wb) | (wb - wa))
        return "not compared: the sides timed different methods (" + "; ".join(only[:3]) + ")"

    def score(d: tuple[float, float, float]) -> float:
        half = (d[2] - d[1]) / 2
        return abs(d[0]) / half if half > 0 else 0.0

    for prefix in ("decode_", ""):
        found = []
        for phase in SHOWN_PHASES:
            d = paired_difference(a, b, prefix + phase)
            if d is not None and not math.isnan(d[1]):
                found.append((prefix + phase, d))
        if not found:
            continue
        name, d = max(found, key=lambda x: score(x[1]))
        rounds = len(_rounds(a, b, name))
        widen = paired.t_quantile(1 - 0.025 / len(found), rounds - 1) / paired.t975(rounds - 1)
        half = (d[2] - d[1]) / 2 * widen
        wide = (d[0], d[0] - half, d[0] + half)
        if wide[1] <= 0.0 <= wide[2]:
            return f"none beyond noise ({len(found)} phases, Bonferroni)"
        return name, wide
    return None


def difference_lines(data: RealData) -> list[str]:
    """Every revision against the first, paired per round: per iteration, per decode
    iteration, and the phase that moved most (in µs, 95% t interval over rounds)."""
    base = data.revisions[0]
    out = [
        f"Δ against {base}, paired per round (µs; ¹ the interval includes zero):",
        "",
        "| preset | revision | per iteration | per iteration, % | per decode iteration "
        "| phase that moved most |",
        "|---|---|---:|---:|---:|---|",
    ]
    for preset in data.presets:
        a = data.cell(base, preset)
        for rev in data.revisions[1:]:
            b = data.cell(rev, preset)
            moved = largest_phase(a, b)
            if isinstance(moved, tuple):
                phase = f"{moved[0].replace('decode_', 'decode ')} {_delta(moved[1])}"
            else:
                phase = moved or "n/a"
            out.append(
                f"| {preset} | {rev} | {_delta(paired_difference(a, b))} "
                f"| {_pct(paired_change_pct(a, b))} "
                f"| {_delta(paired_difference(a, b, 'decode'))} | {phase} |"
            )
    return out


def _share(value: float | None, forward_s: float) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value / forward_s * 100:.3f}%"


# -- what was stubbed and replaced ----------------------------------------------------------


def replaced_lines(data: RealData) -> list[str]:
    seen: dict[str, None] = {}
    stubbed: dict[str, str] = {}
    for cell in data.cells.values():
        for output in cell.outputs:
            for line in output.get("replaced", []):
                seen[line] = None
            for module, importer in output.get("stubbed", {}).items():
                root = module.partition(".")[0]
                stubbed.setdefault(root, importer)
    out = [f"- replaced: {line}" for line in seen]
    if stubbed:
        out.append(
            "- stubbed (GPU-only packages, imported by the revision at module level; a call "
            "raises): "
            + "; ".join(f"{m} (first imported by {i})" for m, i in sorted(stubbed.items()))
        )
    return out


# -- summary.md and the terminal ------------------------------------------------------------


def _setup(data: RealData) -> str:
    revs = ", ".join(data.manifest["revisions"][r]["spec"] for r in data.revisions)
    n = sum(len(c.outputs) for c in data.cells.values())
    env = data.manifest.get("machine", {})
    where = ", ".join(f"{k} {v}" for k, v in env.items()) if env else "this machine"
    how = (
        "the revisions' processes of a round measured in turns, one iteration each (lockstep)"
        if data.manifest.get("lockstep")
        else "each process's figure its mean over its measured iterations"
    )
    return (
        f"**Real scheduler**: {revs}, each revision's own Scheduler on the CPU with a stand-in "
        f"model ({where}); {n} worker processes, {how}."
    )


def summary_markdown(data: RealData) -> str:
    lines = [
        _setup(data),
        "",
        f"`{data.manifest.get('command', '')}`",
        "",
        "| preset | revision | µs per iteration [95% CI] | decode it. | extend it. | single "
        "iterations | share of forward | KV cache (measured) |",
        "|---|---|---:|---:|---:|---|---:|---|",
    ]
    for preset in data.presets:
        fwd = data.forward_s(preset)
        for rev in data.revisions:
            cell = data.cell(rev, preset)
            c = cell.center()
            lines.append(
                f"| {preset} | {rev} | {with_ci(c)} | {us((cell.center('decode') or (math.nan,))[0])} "
                f"| {us((cell.center('extend') or (math.nan,))[0])} | {tails(cell.iterations_ns())} "
                f"| {_share(c[0] if c else None, fwd)} of {fwd * 1e3:,.0f} ms | {cache_text(cell)} |"
            )
    warnings = unsteady_lines(data)
    if warnings:
        lines += ["", *warnings]
    lines += spec_lines(data)
    if len(data.revisions) > 1:
        lines += ["", *difference_lines(data)]
    lines += [
        "",
        "<details><summary>Phases, GC, what was stubbed and replaced, precision</summary>",
    ]
    lines += ["", "Phases, µs per iteration (" + ", ".join(SHOWN_PHASES) + "):", ""]
    for preset in data.presets:
        for rev in data.revisions:
            cell = data.cell(rev, preset)
            parts = [us((cell.center(p) or (math.nan,))[0]) for p in SHOWN_PHASES]
            lines.append(f"- {preset} {rev}: " + " / ".join(parts))
    lines += [
        "",
        "GC (heap frozen after warm-up, as SGLang's server asks) and tracked objects per live request:",
        "",
    ]
    for preset in data.presets:
        for rev in data.revisions:
            cell = data.cell(rev, preset)
            lines.append(
                f"- {preset} {rev}: {gc_text(cell)}; {tracked_text(cell)} per live request"
            )
    lines += ["", "What was stubbed and replaced:", ""]
    lines += replaced_lines(data)
    lines += ["", "Precision:", ""]
    for preset in data.presets:
        for rev in data.revisions:
            cell = data.cell(rev, preset)
            p = cell.precision_pct()
            drift = cell.drift()
            dtext = (
                f", drift (rank correlation with age) median {stats.median(drift):+.2f}"
                if drift
                else ""
            )
            lines.append(
                f"- {preset} {rev}: {len(cell.outputs)} processes, ±{p:.1f}%{dtext}"
                if p is not None
                else f"- {preset} {rev}: {len(cell.outputs)} processes"
            )
            for f in cell.failed:
                lines.append(f"  - failed: {f}")
    lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def terminal(run_dir: Path, *, verbose: bool = False) -> str:
    """The screenful: summary.md without its folded part (verbose: all of it)."""
    data = load(run_dir)
    text = summary_markdown(data)
    body = text if verbose else text.split("<details>")[0]
    return body.replace("**", "").replace("<details><summary>", "").rstrip()


# -- pyperf and html ------------------------------------------------------------------------


def to_pyperf(data: RealData) -> None:
    from bench.runformat.pyperf_io import BenchValues, dump_pyperf, to_pyperf_suite

    runs: dict[str, list[BenchValues]] = {}
    for cell in data.cells.values():
        iterations = int(data.manifest["presets"][cell.preset]["values"]["iterations"])
        for k, out in enumerate(cell.outputs):
            for metric, vals in out["_values"].items():
                if not all(v > 0 for v in vals):
                    continue  # pyperf holds positive values only: a phase with empty windows
                name = str(BenchName.of("real", cell.revision, preset=cell.preset, metric=metric))
                runs.setdefault(name, []).append(
                    BenchValues(name, vals, [], iterations, "second", "frozen", worker=k)
                )
    if runs:
        env = {"platform": data.manifest.get("machine", {}).get("platform")}
        dump_pyperf(to_pyperf_suite(runs, env), data.run_dir / PYPERF)


def phase_figure(labels: list[str], rows: list[list[float]]) -> Any:
    """A stacked bar per label (µs per iteration by phase, SHOWN_PHASES), its legend to the
    right of the axes: inside them it covered the top of the tallest bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(rows)) + 2.2, 4))
    bottom = [0.0] * len(rows)
    for j, phase in enumerate(SHOWN_PHASES):
        heights = [r[j] for r in rows]
        ax.bar(range(len(rows)), heights, bottom=bottom, label=phase)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_xticks(range(len(rows)), labels, fontsize=8)
    ax.set_ylabel("µs per iteration")
    handles, names = ax.get_legend_handles_labels()  # top to bottom, as the bars stack
    ax.legend(
        handles[::-1],
        names[::-1],
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
    )
    fig.tight_layout()
    return fig


def _phase_plot(data: RealData) -> tuple[str, str] | None:
    """The phase figure as a data: URI, and its alt text."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    labels, rows = [], []
    for preset in data.presets:
        for rev in data.revisions:
            cell = data.cell(rev, preset)
            labels.append(f"{preset}\n{rev}")
            rows.append([(cell.center(p) or (0.0,))[0] * 1e6 for p in SHOWN_PHASES])
    if not rows:
        return None
    fig = phase_figure(labels, rows)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    bars = "; ".join(
        f"{label.replace(chr(10), ' ')} {sum(r):,.1f}"
        for label, r in zip(labels, rows, strict=True)
    )
    alt = (
        "Stacked bars of µs per scheduler iteration by phase ("
        + ", ".join(SHOWN_PHASES)
        + f"), one per preset and revision: {bars}"
    )
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode(), alt


def report_html(data: RealData) -> str:

    head = [
        "preset",
        "revision",
        "µs per iteration [95% CI]",
        "decode",
        "extend",
        "single iterations",
        "share of forward",
        "KV cache (measured)",
        "processes",
    ]
    rows = []
    for preset in data.presets:
        for rev in data.revisions:
            cell = data.cell(rev, preset)
            c = cell.center()
            rows.append(
                [preset, rev, with_ci(c), us((cell.center("decode") or (math.nan,))[0]),
                 us((cell.center("extend") or (math.nan,))[0]), tails(cell.iterations_ns()),
                 _share(c[0] if c else None, data.forward_s(preset)),
                 cache_text(cell).replace("**", ""), str(len(cell.outputs))]
            )  # fmt: skip
    parts = [
        tag("header", tag("h1", "Real scheduler"), tag("p", _setup(data).replace("**", ""))),
        section("summary", "Cost per iteration", table(head, rows)),
    ]
    plot = _phase_plot(data)
    if plot:
        src, alt = plot
        parts.append(section("phases", "Where an iteration goes", void("img", src=src, alt=alt)))
    parts.append(section("pr", "PR section (summary.md)", pre(summary_markdown(data))))
    for rev, fm in data.freqmaps.items():
        measured = freqmap.Measured.from_json(fm)
        parts.append(
            section(
                f"freq-{rev}",
                f"Hot-path frequency map, measured at {rev}",
                pre("\n".join(freqmap.lines(measured, freqmap.compare(measured)))),
            )
        )
    parts.append(
        section(
            "manifest",
            "Revisions and environments",
            pre(json.dumps(data.manifest["revisions"], indent=1)),
        )
    )
    return page("reqstate-bench: real scheduler", Html("".join(parts)))


def write(run_dir: Path) -> None:
    data = load(run_dir)
    to_pyperf(data)
    write_atomic(run_dir / SUMMARY, summary_markdown(data))
    write_atomic(run_dir / REPORT, report_html(data))
