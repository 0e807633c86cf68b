"""What of the scheduler's own code the presets run: per file of its packages (managers/,
mem_cache/, disaggregation/, speculative/, sampling/, constrained/), the function-body lines and
functions each preset's counting pass executed in its measured iterations, and their union
(bench/real/driver/coverage.py collects them); beside that, the functions of hotpath.py's rows
defined at the revision, and of its measured frequency map, that no preset reached.

`python -m bench real coverage SRC [--real-preset P,...]` prints it; docs/REAL.md keeps the
table for the gate's presets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.core import hotpath
from bench.real.driver.coverage import FILES, PACKAGES


def traced(defined: str) -> bool:
    """Whether a function defined at `defined` (a measured map's `sglang/srt/...py:line`) lies
    in the packages and files the coverage pass traces: the others are neither reached nor
    missed."""
    path = defined.rpartition(":")[0] or defined
    rel = path.split("sglang/srt/", 1)[-1]
    return rel in FILES or rel.split("/", 1)[0] in PACKAGES


NO_MEASURED_MAP = (
    "No measured map is kept for this revision, so only hotpath.py's rows are checked: "
    "`python -m bench real hotpath SRC` counts one."
)
DEFAULT_ITERATIONS = 200  # measured iterations per preset's pass (tracing slows each ~10x)


@dataclass
class FileCoverage:
    executable: set[int]
    functions: set[str]  # "qualname:line"
    covered: dict[str, set[int]] = field(default_factory=dict)  # preset -> lines
    reached: dict[str, set[str]] = field(default_factory=dict)  # preset -> functions

    def union_lines(self) -> set[int]:
        return set().union(*self.covered.values()) if self.covered else set()

    def union_functions(self) -> set[str]:
        return set().union(*self.reached.values()) if self.reached else set()


@dataclass
class Coverage:
    revision: str
    presets: list[str]
    files: dict[str, FileCoverage]  # "sglang/srt/managers/scheduler.py" -> ...
    defined: dict[str, bool] = field(default_factory=dict)  # hotpath.py names at this revision
    measured_functions: list[str] = field(default_factory=list)  # of the measured map

    @classmethod
    def build(cls, revision: str, outs: Mapping[str, dict[str, Any]]) -> Coverage:
        """From each preset's counting output (its `coverage` and `defined`)."""
        files: dict[str, FileCoverage] = {}
        defined: dict[str, bool] = {}
        for preset, out in outs.items():
            defined.update(out.get("defined") or {})
            for path, f in (out.get("coverage") or {}).items():
                cov = files.setdefault(
                    path, FileCoverage(set(f["executable"]), set(f["functions"]))
                )
                cov.covered[preset] = set(f["covered"])
                cov.reached[preset] = set(f["reached"])
        return cls(revision, list(outs), files, defined)

    # -- summaries ----------------------------------------------------------------------------

    def package_of(self, path: str) -> str:
        parts = path.split("/")
        if len(parts) > 3 and parts[:2] == ["sglang", "srt"]:
            return parts[2]
        return "/".join(parts[2:]) if parts[:2] == ["sglang", "srt"] else path

    def totals(self, preset: str | None = None) -> dict[str, tuple[int, int, int, int]]:
        """Per package: (lines covered, executable lines, functions reached, functions);
        `preset` None: the union of all presets."""
        out: dict[str, list[int]] = {}
        for path, f in self.files.items():
            row = out.setdefault(self.package_of(path), [0, 0, 0, 0])
            lines = f.union_lines() if preset is None else f.covered.get(preset, set())
            funcs = f.union_functions() if preset is None else f.reached.get(preset, set())
            row[0] += len(lines & f.executable)
            row[1] += len(f.executable)
            row[2] += len(funcs & f.functions)
            row[3] += len(f.functions)
        return {k: (v[0], v[1], v[2], v[3]) for k, v in sorted(out.items())}

    def reached_names(self) -> set[str]:
        """Qualified names of every function some preset reached."""
        return {fn.rpartition(":")[0] for f in self.files.values() for fn in f.union_functions()}

    def unreached_hotpath(self) -> list[tuple[str, str]]:
        """hotpath.py rows defined at this revision that no preset reached, with the row's
        condition (why a preset may not reach it)."""
        names = self.reached_names()
        out = []
        for row in hotpath.HOT_PATH:
            if self.defined.get(row.name) is False or row.name in names:
                continue
            if row.name not in self.defined:
                continue
            out.append((row.name, row.condition or "called on every such event"))
        return out

    def spec_functions(self) -> list[tuple[str, str, list[str]]]:
        """hotpath.py's speculative functions (SPEC_OFF_PATH): (name, where and when it runs,
        the presets that reached it)."""
        out = []
        for name, where, when in hotpath.SPEC_OFF_PATH:
            presets = [
                p
                for p in self.presets
                if any(
                    fn.rpartition(":")[0] == name for f in self.files.values()
                    for fn in f.reached.get(p, set())
                )
            ]  # fmt: skip
            out.append((name, f"{when} ({where} at {hotpath.COMMIT})", presets))
        return out

    def unreached_measured(self) -> list[str]:
        names = self.reached_names()
        return sorted(n for n in self.measured_functions if n not in names)

    def per_file(self, top: int = 0) -> list[tuple[str, list[tuple[int, int]], tuple[int, int]]]:
        """(file, per preset (covered, executable), union) for the files any preset reached,
        the most executed first (all of them with top 0)."""
        rows = []
        for path, f in self.files.items():
            union = len(f.union_lines() & f.executable)
            if not union:
                continue
            per = [
                (len(f.covered.get(p, set()) & f.executable), len(f.executable))
                for p in self.presets
            ]
            rows.append((path, per, (union, len(f.executable))))
        rows.sort(key=lambda r: -r[2][0])
        return rows[:top] if top else rows


SPECULATIVE = "speculative"  # the package whose every reached file gets a row


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}%" if b else "-"


def markdown(cov: Coverage, *, before: Coverage | None = None, top: int = 25) -> str:
    """The coverage tables: per package for each preset and the union (beside `before`'s union
    when given), the most executed files, and what no preset reaches."""
    heads = " | ".join(f"`{p}`" for p in cov.presets)
    out = [
        f"Coverage of {cov.revision}'s scheduler packages in the measured iterations of each "
        "preset's counting pass (function-body lines; functions called).",
        "",
        f"| package | {heads} | all presets | functions reached |"
        + (" before (union) |" if before is not None else ""),
        "|---|" + "---:|" * (len(cov.presets) + 2) + ("---:|" if before is not None else ""),
    ]
    per = {p: cov.totals(p) for p in cov.presets}
    union = cov.totals()
    prior = before.totals() if before is not None else {}
    for pkg, (lines, total, funcs, nfuncs) in union.items():
        cells = [_pct(per[p][pkg][0], total) for p in cov.presets]
        row = (
            f"| {pkg} | "
            + " | ".join(cells)
            + f" | {_pct(lines, total)} ({lines:,} of {total:,}) | {funcs:,} of {nfuncs:,} |"
        )
        if before is not None:
            b = prior.get(pkg)
            row += f" {_pct(b[0], b[1]) if b else '-'} |"
        out.append(row)
    out += [
        "",
        f"The {top} files most executed (lines covered of the file's function-body lines):",
        "",
    ]
    extra = " before (union) |" if before is not None else ""
    out += [
        f"| file | {heads} | all presets |{extra}",
        "|---|" + "---:|" * (len(cov.presets) + 1) + ("---:|" if before is not None else ""),
    ]
    for path, counts, (u, t) in cov.per_file(top):
        shown = " | ".join(_pct(a, b) for a, b in counts)
        row = f"| {path} | {shown} | {_pct(u, t)} |"
        if before is not None:
            f = before.files.get(path)
            row += (
                f" {_pct(len(f.union_lines() & f.executable), len(f.executable)) if f else '-'} |"
            )
        out.append(row)
    spec = [r for r in cov.per_file() if cov.package_of(r[0]) == SPECULATIVE]
    if spec:
        out += [
            "",
            f"Every file of {SPECULATIVE}/ a preset reached (lines covered of the file's "
            "function-body lines; the union's count):",
            "",
            f"| file | {heads} | all presets |",
            "|---|" + "---:|" * (len(cov.presets) + 1),
        ]
        for path, counts, (u, t) in spec:
            shown = " | ".join(_pct(a, b) for a, b in counts)
            out.append(f"| {path} | {shown} | {_pct(u, t)} ({u:,} of {t:,}) |")
    missing = cov.unreached_hotpath()
    out += [
        "",
        f"hotpath.py rows defined at this revision that no preset reaches ({len(missing)}):",
        "",
    ]
    out += [f"- `{name}`: {why}" for name, why in missing] or ["- none"]
    out += ["", "hotpath.py's speculative functions (off its modelled path):", ""]
    out += [
        f"- `{name}`: " + (f"reached by {', '.join(by)}" if by else f"no preset reaches it: {why}")
        for name, why, by in cov.spec_functions()
    ]
    unmeasured = cov.unreached_measured()
    if cov.measured_functions:
        out += ["", f"Functions of the measured map that no preset reaches: {len(unmeasured)}", ""]
        out += [f"- `{n}`" for n in unmeasured[:40]] or ["- none"]
    else:
        out += ["", NO_MEASURED_MAP]
    return "\n".join(out) + "\n"


def lines(cov: Coverage, presets: Sequence[str] | None = None) -> list[str]:
    """The per-package summary for the terminal."""
    union = cov.totals()
    out = [f"coverage of {cov.revision} ({', '.join(cov.presets)}):"]
    for pkg, (a, b, fa, fb) in union.items():
        out.append(
            f"  {pkg:<16} lines {_pct(a, b):>6} ({a:,} of {b:,})  functions {fa:,} of {fb:,}"
        )
    missing = cov.unreached_hotpath()
    out.append(f"  hotpath.py rows no preset reaches: {len(missing)}")
    out += [f"    {name}: {why}" for name, why in missing]
    return out
