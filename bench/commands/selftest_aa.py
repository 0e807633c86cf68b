"""selftest-aa: how many A/A rows each verdict rule flags, measured.

    python -m bench selftest-aa [--quick] [--copy path/to/copy_of_baseline.py] [--output-dir DIR]

Runs the default suites (or the quick set) with two A/A twins of the baseline (<baseline>.aa
and <baseline>.aa2: the baseline's own source, each its own module object and request class),
plus, with --copy, an external strategy file that is a verbatim copy of the baseline under
another NAME. Every row of a twin or a copy compares identical code, so every row flagged
"faster"/"slower" is a false finding. It counts them under the old rule (values treated as
independent: p < 0.05 and CI excluding 1) and the current one (bench.stats.classify:
hierarchical CI excluding 1 and an effect beyond the family's noise floor, which for one twin is
set by the other twin), prints the table and writes selftest_aa.json into the run folder.
This is a benchmark, not a test.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.base.names import twin_of
from bench.config.runconfig import RunConfig

TWINS = 2
SELFTEST_FILE = "selftest_aa.json"


def count_flags(run_dir: Path, copies: list[str]) -> dict[str, Any]:
    """Per A/A strategy (twins and copies): rows, and rows flagged by the old and new rule."""
    from bench.report.load import load_run

    run = load_run(run_dir)
    out: dict[str, Any] = {"baseline": run.baseline, "strategies": {}}
    for name, data in run.suites.items():
        for s in data.summaries:
            if s.ratio is None:
                continue
            is_aa = twin_of(s.strategy) == run.baseline or s.strategy in copies
            if not is_aa:
                continue
            row = out["strategies"].setdefault(s.strategy, {"rows": 0, "old": [], "new": []})
            row["rows"] += 1
            if s.legacy_verdict in ("faster", "slower"):
                row["old"].append(f"{s.name} {s.ratio:.3f} [{s.ratio_low:.3f}, {s.ratio_high:.3f}]")
            if s.verdict in ("faster", "slower"):
                row["new"].append(f"{s.name} {s.ratio:.3f} [{s.ratio_low:.3f}, {s.ratio_high:.3f}]")
            out.setdefault("suites", {}).setdefault(name, 0)
            out["suites"][name] += 1
    return out


def lines(result: dict[str, Any]) -> list[str]:
    head = f"{'A/A strategy':<24} {'rows':>5} {'old rule flags':>15} {'new rule flags':>15}"
    text = [f"A/A self-test against {result['baseline']}", head, "-" * len(head)]
    for name, row in sorted(result["strategies"].items()):
        text.append(f"{name:<24} {row['rows']:>5} {len(row['old']):>15} {len(row['new']):>15}")
    for _name, row in sorted(result["strategies"].items()):
        for rule in ("old", "new"):
            for flagged in row[rule]:
                text.append(f"   {rule} rule flags {flagged}")
    return text


def config_for(base: RunConfig, copies: tuple[str, ...]) -> RunConfig:
    return replace(base, aa_twins=TWINS, external=(*base.external, *copies))
