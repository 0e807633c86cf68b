"""The terminal table at the end of a run: medians, IQR, ratio vs baseline with 95% CI, verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.analysis import Summary, fmt_ratio, fmt_value
from bench.results import read_json

# Lookup has ~150 benchmarks: the terminal shows one live size (the report shows them all).
_LOOKUP_TERMINAL_SIZE = "live=10000"


def _summaries(extra: dict[str, Any]) -> list[Summary]:
    return [Summary(**s) for s in extra.get("summaries", [])]


def _rows_for(suite: str, summaries: list[Summary]) -> list[Summary]:
    if suite == "lookup":
        sizes = sorted({s.params.rsplit("/", 1)[-1] for s in summaries})
        pick = (
            _LOOKUP_TERMINAL_SIZE
            if _LOOKUP_TERMINAL_SIZE in sizes
            else (sizes[-1] if sizes else "")
        )
        return [s for s in summaries if s.params.endswith(pick)]
    if suite == "scaling":
        counts = sorted({int(s.params[5:]) for s in summaries if s.params.startswith("live=")})
        return [s for s in summaries if counts and s.params == f"live={counts[-1]}"]
    return summaries


def render_table(run_dir: Path) -> str:
    manifest = read_json(run_dir / "manifest.json")
    baseline = manifest["config"]["baseline"]
    lines: list[str] = []
    order = [s for s in manifest["config"]["suites"] if s in manifest["suites"]]
    for suite in order:
        st = manifest["suites"][suite]
        extra_file = st.get("files", {}).get("extra")
        if not extra_file or not (run_dir / extra_file).exists():
            lines.append(f"\n== {suite}: {st.get('status', 'missing')}")
            continue
        extra = read_json(run_dir / extra_file)
        rows = _rows_for(suite, _summaries(extra))
        lines.append(f"\n== {suite} (ratios vs {baseline}; * = significant, ~ = noisy)")
        header = f"{'benchmark':<52} {'median':>12} {'IQR':>10}  {'ratio [95% CI]':<24} verdict"
        lines.append(header)
        lines.append("-" * len(header))
        for s in rows:
            mark = "*" if s.verdict in ("faster", "slower") else " "
            noisy = "~" if s.noisy else " "
            lines.append(
                f"{s.name:<52} {fmt_value(s.median, s.unit):>12} {fmt_value(s.q3 - s.q1, s.unit):>10}"
                f"{noisy} {fmt_ratio(s):<24} {mark}{s.verdict or ('baseline' if s.strategy == baseline else '')}"
            )
        if suite == "step" and extra.get("percentiles"):
            lines.append(
                "\n   per-step latency        p50        p99      p99.9        max   steps/s  spikes(gc)"
            )
            for name, p in sorted(extra["percentiles"].items()):
                lines.append(
                    f"   {name:<30} {p['p50_ns'] / 1e6:7.3f}ms {p['p99_ns'] / 1e6:7.3f}ms"
                    f" {p['p999_ns'] / 1e6:7.3f}ms {p['max_ns'] / 1e6:7.3f}ms {p['steps_per_s']:9.0f}"
                    f"  {p['spikes']}({p['spikes_with_gc']})"
                )
        if suite == "step" and extra.get("pattern_ratios"):
            lines.append("\n   per_field / cached step latency")
            for strategy, c in sorted(extra["pattern_ratios"].items()):
                sig = "*" if c["significant"] else " "
                lines.append(
                    f"   {strategy:<12} {c['ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}] {sig}"
                )
        if suite == "scaling" and extra.get("fits"):
            lines.append(
                "\n   marginal step cost per live request (log-log slope vs live requests)"
            )
            for strategy, f in extra["fits"].items():
                if "marginal_ns_per_request" in f:
                    slope = f.get("marginal_loglog_slope")
                    shape = f"slope {slope:+.3f} ({f['growth']})" if slope is not None else ""
                    lines.append(
                        f"   {strategy:<12} {f['marginal_ns_per_request']:8.1f} ns/req/step  {shape}"
                    )
        if suite == "gc" and extra.get("gc_rates"):
            lines.append(
                "\n   GC per 1,000 steps        collections(g0/g1/g2)     pause ms   longest ms"
            )
            for _mode, rates in extra["gc_rates"].items():
                for name, r in sorted(rates.items()):
                    c = "/".join(f"{x:.0f}" for x in r["collections_per_kstep"])
                    lines.append(
                        f"   {name:<32} {c:>16} {r['pause_ms_per_kstep']:12.2f} {r['max_pause_ms']:11.2f}"
                    )
        for strategy, err in st.get("failures", {}).items():
            lines.append(f"   FAILED {strategy}: {err}")
        for err in st.get("worker_errors", []):
            lines.append(f"   WORKER ERROR: {err}")
    lines.append(f"\nrun folder: {run_dir}")
    lines.append(
        f"status: {manifest['status']}"
        + (f" (missing: {', '.join(manifest['missing'])})" if manifest.get("missing") else "")
    )
    return "\n".join(lines)
