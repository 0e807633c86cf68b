"""What a real profile shows: the top functions' table (markdown), the flame graphs and the
differential flame graph (SVG, in report.html), the speedscope file, and the JSON figures."""

from __future__ import annotations

import html as htmllib
import math
import zlib
from collections import Counter
from typing import Any

from bench.base.errors import UsageError
from bench.profiling.render import flamegraph_svg, to_speedscope
from bench.profiling.stacks import Frame, Sample
from bench.real import capabilities
from bench.real.profile import samples as smp
from bench.real.profile.diff import FAMILY_LEVEL, MIN_SHARE_PCT, Diff
from bench.real.profile.table import Interval, Row

COLOURS = {
    "revision": "rgb(230,140,60)",
    "library": "rgb(200,170,90)",
    "stand-in": "rgb(150,150,150)",
    "stub": "rgb(120,120,200)",
    "driver": "rgb(90,170,120)",
}
LEGEND = (
    ("the revision", COLOURS["revision"]),
    ("libraries, stdlib", COLOURS["library"]),
    ("stand-in model (not in the figure)", COLOURS["stand-in"]),
    ("driver: between iterations (not in the figure)", COLOURS["driver"]),
    ("stub", COLOURS["stub"]),
)


def safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in label)


def _iv(x: Interval) -> list[float | None]:
    return [None if math.isnan(v) else round(v, 4) for v in (x.mean, x.lo, x.hi)]


def row_json(r: Row) -> dict[str, Any]:
    return {
        "name": r.name,
        "file": r.file,
        "line": r.line,
        "kind": r.kind,
        "self_pct": _iv(r.self_pct),
        "incl_pct": _iv(r.incl_pct),
        "self_us": _iv(r.self_us),
        "incl_us": _iv(r.incl_us),
    }


def diff_json(d: Diff) -> dict[str, Any]:
    small, med = d.resolution_us()
    return {
        "critical": round(d.critical, 3),
        "tested": d.tested,
        "relabellings": d.relabellings,
        "processes": list(d.processes),
        "family_level": FAMILY_LEVEL,
        "resolution_us": [round(small, 2), round(med, 2)],
        "where": [m.name for m in d.where()],
        "rows": [
            {
                "name": m.name,
                "file": m.file or m.base_file,
                "line": m.line,
                "moved_from": m.moved_from,
                "base_us": round(m.base_us, 2),
                "head_us": round(m.head_us, 2),
                "delta_us": round(m.delta_us, 2),
                "ci_us": [round(m.lo_us, 2), round(m.hi_us, 2)],
                "resolved": m.resolved,
            }
            for m in d.rows
        ],
    }


def check_function(name: str, revs: list[Any]) -> None:
    """`--function NAME` must name a function the revision's sglang defines (its last part
    found as `def NAME` in some file); else one line, exit 2."""
    last = name.rsplit(".", 1)[-1]
    needle = f"def {last}("
    for rev in revs:
        files = capabilities.files_of(rev.source, rev.package_root())
        if files is None:
            continue
        for folder in (
            "srt/managers",
            "srt/mem_cache",
            "srt/disaggregation",
            "srt/sampling",
            "srt/constrained",
            "srt/model_executor",
            "srt/layers",
            "srt/utils",
            "srt",
        ):
            for rel in files.under(folder):
                text = files.text(rel) or ""
                if needle in text:
                    return
    raise UsageError(
        f"--function {name}: no function of that name in {revs[0].source.label}'s sglang"
    )


def _ci(x: list[float | None], spec: str, unit: str = "") -> str:
    """A mean with its interval, `spec` formatting each number ("-" when there is none)."""
    m, lo, hi = x
    if m is None:
        return "-"
    if lo is None or hi is None:
        return f"{m:{spec}}{unit}"
    return f"{m:{spec}}{unit} [{lo:{spec}}, {hi:{spec}}]"


def _pct(x: list[float | None]) -> str:
    return _ci(x, ".2f", "%")


def _us(x: list[float | None]) -> str:
    return _ci(x, ",.1f")


def _table(rows: list[dict[str, Any]], top: int, function: str | None) -> list[str]:
    chosen = [r for r in rows if function is None or function in r["name"]][:top]
    out = [
        "| function | file:line | self share [95% CI] | inclusive share | self µs/iteration | "
        "inclusive µs/iteration |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in chosen:
        mark = "" if r["kind"] == "revision" else f" ({r['kind']})"
        out.append(
            f"| `{r['name']}`{mark} | {r['file']}:{r['line']} | {_pct(r['self_pct'])} | "
            f"{_pct(r['incl_pct'])} | {_us(r['self_us'])} | {_us(r['incl_us'])} |"
        )
    return out


def _overhead(side: dict[str, Any]) -> str:
    o = side.get("overhead_us")
    plain = side.get("plain_us") or float("nan")
    if not o:
        return "not measured (no plain process finished)"
    m, lo, hi = o
    pct = 100 * m / plain if plain else float("nan")
    ci = f" [{lo:+,.1f}, {hi:+,.1f}]" if lo is not None else " (one sampled process: no interval)"
    return f"{m:+,.1f} µs per iteration{ci}, {pct:+.2f}% of the unprofiled {plain:,.1f} µs"


def markdown(result: dict[str, Any], top: int, function: str | None) -> str:
    out = []
    rate = result["rate_hz"]
    for side in result["sides"]:
        n = side["samples"]
        total = sum(n)
        per = total / len(n) if n else 0
        se1 = 100 * math.sqrt(0.01 * 0.99 / per) if per else float("nan")
        out += [
            f"### {side['label']}, preset `{result['preset']}`",
            "",
            f"py-spy at {rate} Hz in the measured iterations of {side['processes']} processes "
            f"({total:,} samples, {per:,.0f} a process: a function at 1% of the iteration is "
            f"read to ±{se1:.2f} points by one process's samples); idle samples dropped; the "
            f"stand-in model's {sum(side['stand_in_samples']):,} and the driver's "
            f"{sum(side['boundary_samples']):,} between iterations are outside the figures. "
            "µs per iteration: the share times the same process's measured mean iteration; "
            "intervals over processes.",
            "",
            f"Profiler overhead (each sampled process less its round's unsampled ones, which spin "
            "in the same marks; 95% t interval over sampled processes): "
            f"{_overhead(side)}.",
            "",
            f"Top {top} functions by self share, all measured iterations:",
            "",
        ]
        out += _table(side["rows"]["all"], top, function)
        for which in ("decode", "extend"):
            rows = side["rows"].get(which) or []
            if rows:
                out += ["", f"{which.capitalize()} iterations, top 10 by self share:", ""]
                out += _table(rows, 10, function)
        out.append("")
    d = result.get("diff")
    if d:
        a, b = (s["label"] for s in result["sides"])
        out += [f"### Where it moved: {a} → {b}", "", *where_section(d, top), ""]
    return "\n".join(out)


def where_section(d: dict[str, Any], top: int) -> list[str]:
    """The functions whose inclusive µs per iteration moved, with the diff's resolution."""
    small, med = d["resolution_us"]
    moved = [r for r in d["rows"] if r["resolved"]]
    out = [
        f"Inclusive µs per iteration, {d['processes'][0]} and {d['processes'][1]} processes; "
        f"simultaneous {100 * (1 - d['family_level']):.0f}% intervals over the "
        f"{d['tested']} functions of the revision with at least {MIN_SHARE_PCT:g}% of the "
        f"iteration (max-T over {d['relabellings']:,} relabellings, c = {d['critical']:.2f}). "
        f"Resolution: a function's change is resolved above {small:,.1f} µs per iteration "
        f"at best, {med:,.1f} µs for the median function.",
        "",
    ]
    if not moved:
        return [*out, "No function's time moved beyond its interval."]
    out += [
        "| function | file:line | base µs | head µs | Δ µs [simultaneous CI] | |",
        "|---|---|---:|---:|---:|---|",
    ]
    where = set(d.get("where", ()))
    # where the change is first (not a caller of a function that moved as much), then the rest
    ordered = [r for r in moved if r["name"] in where] + [
        r for r in moved if r["name"] not in where
    ]
    for r in ordered[:top]:
        notes = ["where" if r["name"] in where else "calls what moved"]
        if r["moved_from"]:
            notes.append(f"moved from {r['moved_from']}")
        note = "; ".join(notes)
        lo, hi = r["ci_us"]
        out.append(
            f"| `{r['name']}` | {r['file']}:{r['line']} | {r['base_us']:,.1f} | "
            f"{r['head_us']:,.1f} | {r['delta_us']:+,.1f} [{lo:+,.1f}, {hi:+,.1f}] | {note} |"
        )
    return out


def _samples(side: Any) -> list[Sample]:
    merged: Counter[tuple[Frame, ...]] = Counter()
    for p in side.profiles:
        merged.update(p.merged())
        merged.update(p.stand_in)
        merged.update(p.boundary)
    return [Sample(frames=k, count=n) for k, n in merged.items() if k]


def speedscope(side: Any) -> dict[str, Any]:
    return to_speedscope(_samples(side), name=f"{side.label} (measured iterations)")


def _kind_colour(f: Frame) -> str:
    return COLOURS[smp.kind(f)]


def _diff_colour(delta: dict[str, float], scale: float) -> Any:
    def paint(f: Frame) -> str:
        d = delta.get(f.name)
        if d is None or not scale:
            h = zlib.crc32(f.name.encode()) % 30
            return f"rgb({215 + h // 3},{215 + h // 3},{215 + h // 3})"
        x = max(-1.0, min(1.0, d / scale))
        if x >= 0:
            return f"rgb(255,{int(235 - 175 * x)},{int(235 - 175 * x)})"
        return f"rgb({int(235 + 175 * x)},{int(235 + 175 * x)},255)"

    return paint


def page(result: dict[str, Any], sides: list[Any], moved: Diff | None, text: str) -> str:
    parts = []
    for side in sides:
        svg = flamegraph_svg(
            _samples(side),
            title=f"{side.label}: the scheduler's measured iterations",
            subtitle=f"py-spy at {result['rate_hz']} Hz, {len(side.profiles)} processes",
            colour=_kind_colour,
            legend=LEGEND,
        )
        parts.append(f"<h2>{htmllib.escape(side.label)}</h2>\n{svg}")
    if moved is not None:
        delta = {m.name: m.delta_us for m in moved.rows if m.resolved}
        scale = max((abs(v) for v in delta.values()), default=0.0)
        svg = flamegraph_svg(
            _samples(sides[1]),
            title=f"where it moved: {sides[0].label} → {sides[1].label}",
            subtitle="the head's samples; red: slower, blue: faster (functions resolved)",
            colour=_diff_colour(delta, scale),
            legend=(("slower", "rgb(255,60,60)"), ("faster", "rgb(60,60,255)")),
            tip=lambda f: f"; Δ {delta[f.name]:+,.1f} µs per iteration" if f.name in delta else "",
        )
        parts.append(f"<h2>Differential</h2>\n{svg}")
    body = "\n".join(parts)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>real profile</title>"
        "<style>body{font-family:sans-serif;margin:2em} pre{white-space:pre-wrap}</style>"
        f"</head><body><h1>Real scheduler profile</h1>{body}"
        f"<h2>Tables</h2><pre>{htmllib.escape(text)}</pre></body></html>\n"
    )
