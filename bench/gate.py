"""Regression gate: does the working tree slow the scheduler's hot path against a baseline?

Wall-clock mode (default): the baseline tree (a git ref checked out into a temporary worktree)
and the candidate (the working tree) are measured in the same job, round by round, each round
starting one worker process per side in a shuffled order, plus a second candidate process (A/A:
identical code against itself) that calibrates the noise. A benchmark fails only when its
slowdown is significant (paired bootstrap CI and Wilcoxon test) AND larger than
max(threshold, A/A noise bound). Instruction mode: callgrind instruction counts, deterministic,
with a threshold in percent. The gate fails closed: missing, corrupt or incompatible data never
pass.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import stats
from bench.config import RunConfig
from bench.errors import EXIT_FAILED, EXIT_OK, DataError, UsageError
from bench.gate_config import GateConfig
from bench.results import ROOT, read_json, write_atomic, write_json

SCHEMA = "reqstate-bench-gate/1"
SIDES_WALL = ("base", "candidate", "aa")


@dataclass(frozen=True)
class Judgement:
    benchmark: str
    base: float
    candidate: float
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float | None
    threshold_pct: float
    noise_pct: float
    bound_pct: float
    verdict: str  # pass | regression | improvement

    @property
    def change_pct(self) -> float:
        return (self.ratio - 1) * 100


# -- git -------------------------------------------------------------------------------------


def _git(*args: str, cwd: Path = ROOT) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
    )
    if proc.returncode != 0:
        raise UsageError(
            f"git {' '.join(args)}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'failed'}"
        )
    return proc.stdout.strip()


def default_base(root: Path = ROOT) -> str:
    """The merge base with main, or HEAD~1 when HEAD is main itself (or there is no main)."""
    head = _git("rev-parse", "HEAD", cwd=root)
    with contextlib.suppress(UsageError):
        base = _git("merge-base", "HEAD", "main", cwd=root)
        if base != head:
            return base
    try:
        return _git("rev-parse", "HEAD~1", cwd=root)
    except UsageError:
        raise UsageError(
            "no baseline: HEAD has no parent; pass --base REF or --baseline FILE"
        ) from None


@contextlib.contextmanager
def worktree(ref: str, parent: Path, root: Path = ROOT) -> Iterator[tuple[Path, str]]:
    """A detached worktree of `ref` at parent/base; removed afterwards whatever happens."""
    commit = _git("rev-parse", "--verify", f"{ref}^{{commit}}", cwd=root)
    path = parent / "base"
    _git("worktree", "add", "--detach", "--quiet", str(path), commit, cwd=root)
    try:
        if not (path / "bench" / "worker.py").is_file():
            raise DataError(
                f"--base {ref}: that tree has no bench/worker.py (too old for the gate)"
            )
        yield path, commit
    finally:
        for args in (["worktree", "remove", "--force", str(path)], ["worktree", "prune"]):
            subprocess.run(["git", *args], cwd=root, capture_output=True, check=False)


def snapshot(root: Path, parent: Path, name: str = "cand") -> Path:
    """A copy of the working tree (tracked and unignored files) at parent/cand.

    Instruction mode runs both sides from sibling folders of equal path length and without
    bytecode caches: object addresses, and so identity hashes and dict probe sequences, then
    depend on the code alone, and identical code gives identical counts."""
    listing = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=root)
    dest = parent / name
    for rel in filter(None, listing.split("\0")):
        src = root / rel
        if src.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    return dest


# -- measuring -------------------------------------------------------------------------------


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def measure_wall(cfg: GateConfig, trees: dict[str, Path]) -> dict[str, dict[str, list[float]]]:
    """Values per side and benchmark; value i of every side comes from the same round."""
    from bench.runner import run_worker

    run_cfg = RunConfig(
        suites=("gate",),
        strategies=cfg.strategies,
        workers=1,
        warmup_values=1,
        values=cfg.values,
        live_requests=cfg.live_requests,
        steps_per_value=cfg.steps_per_value,
        patterns=cfg.patterns,
        seed=cfg.seed,
        device="cpu",
        extra={"gate": {"lookup_ops": list(cfg.lookup_ops), "lookup_live": cfg.lookup_live}},
    )
    sides = [s for s in SIDES_WALL if s in trees or s == "aa"]
    values: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
    rng = random.Random(cfg.seed)
    with tempfile.TemporaryDirectory(prefix="reqstate-gate-") as tmp:
        cfg_path = Path(tmp) / "config.json"
        cfg_path.write_text(run_cfg.to_json(), encoding="utf-8")
        for r in range(cfg.rounds):
            order = list(sides)
            rng.shuffle(order)
            for side in order:
                tree = trees["candidate" if side == "aa" else side]
                out = Path(tmp) / f"{side}{r}.json"
                rc, tail = run_worker("gate", cfg_path, out, r, lambda _f, _l: None, cwd=tree)
                if rc != 0 or not out.exists():
                    last = tail.strip().splitlines()[-1] if tail.strip() else f"exit status {rc}"
                    raise DataError(f"{side} tree could not run the gate worker: {last}")
                data = read_json(out)
                if data.get("failures"):
                    raise DataError(f"{side}: {'; '.join(data['failures'].values())}")
                for name, b in data["benchmarks"].items():
                    values[side].setdefault(name, []).extend(b["values"])
                _progress(f"[gate] round {r + 1}/{cfg.rounds}: {side} measured")
    return values


def measure_instructions(
    cfg: GateConfig, trees: dict[str, Path]
) -> dict[str, dict[str, list[float]]]:
    from bench import callgrind

    benchmarks: dict[str, tuple[int, int]] = {}
    for name in cfg.benchmarks("instructions"):
        if name.startswith("step/"):
            benchmarks[name] = (cfg.instr_steps, cfg.instr_live_requests)
        else:
            benchmarks[name] = (cfg.instr_lookup_passes, cfg.instr_lookup_live)

    def progress(done: int, total: int, label: str) -> None:
        _progress(f"[gate] callgrind {done}/{total}: {label}")

    counts = callgrind.measure(
        trees, benchmarks, seed=cfg.seed, heap_shifts=cfg.instr_heap_shifts, progress=progress
    )
    return {side: {n: [float(c)] for n, c in per.items()} for side, per in counts.items()}


# -- judging ---------------------------------------------------------------------------------


def per_round(values: list[float], per_process: int) -> list[float]:
    """Median of each worker process's values (consecutive runs of `per_process`)."""
    if len(values) % per_process:
        raise DataError(f"{len(values)} values do not split into processes of {per_process}")
    return [stats.median(values[i : i + per_process]) for i in range(0, len(values), per_process)]


def judge(
    cfg: GateConfig, mode: str, values: dict[str, dict[str, list[float]]], *, paired: bool
) -> list[Judgement]:
    """Fail closed: a gated benchmark without data on a side is a DataError."""
    out = []
    for name in cfg.benchmarks(mode):
        base = values.get("base", {}).get(name)
        cand = values.get("candidate", {}).get(name)
        if not base or not cand:
            side = "baseline" if not base else "candidate"
            raise DataError(f"{name}: no {side} values; the gate cannot judge it")
        threshold = cfg.threshold_for(name, mode)
        if mode == "instructions":
            ratio = cand[0] / base[0]
            noise = 0.0
            aa = values.get("aa", {}).get(name)
            if aa and aa[0] != cand[0]:
                noise = abs(aa[0] / cand[0] - 1) * 100
            bound = max(threshold, noise)
            change = (ratio - 1) * 100
            verdict = (
                "regression" if change > bound else ("improvement" if change < -bound else "pass")
            )
            out.append(
                Judgement(
                    name,
                    base[0],
                    cand[0],
                    ratio,
                    ratio,
                    ratio,
                    None,
                    threshold,
                    noise,
                    bound,
                    verdict,
                )
            )
            continue
        # Values from one worker process are not independent (they share its memory layout and
        # hash seed): the unit of replication is the round, so each process contributes the
        # median of its values, and CIs and tests are over rounds, not over values.
        base, cand = per_round(base, cfg.values), per_round(cand, cfg.values)
        cmp = stats.compare(cand, base, paired=paired)
        aa_vals = values.get("aa", {}).get(name)
        noise = 0.0
        if aa_vals and len(aa_vals) > 1:
            aa_cmp = stats.compare(per_round(aa_vals, cfg.values), cand, paired=True)
            # The systematic offset identical code shows in this job; random noise is the
            # significance test's business (adding the A/A CI here counted it twice and put
            # the bound at ~15% on this machine, hiding a real +10%).
            noise = abs(aa_cmp.ratio - 1) * 100
        bound = max(threshold, noise)
        change = (cmp.ratio - 1) * 100
        if cmp.significant and change > bound:
            verdict = "regression"
        elif cmp.significant and -change > bound:
            verdict = "improvement"
        else:
            verdict = "pass"
        out.append(
            Judgement(
                name,
                stats.median(base),
                stats.median(cand),
                cmp.ratio,
                cmp.ci_low,
                cmp.ci_high,
                cmp.p_value,
                threshold,
                noise,
                bound,
                verdict,
            )
        )
    return out


# -- baseline files --------------------------------------------------------------------------


def load_baseline(path: Path, cfg: GateConfig, mode: str) -> dict[str, list[float]]:
    """A gate JSON written earlier (its candidate values become the baseline)."""
    data = read_json(path)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise DataError(f"{path}: not a reqstate-bench gate result (schema {SCHEMA!r} expected)")
    want = cfg.fingerprint(mode)
    got = data.get("fingerprint")
    if got != want:
        diff = sorted(k for k in set(want) | set(got or {}) if (got or {}).get(k) != want.get(k))
        raise DataError(f"{path}: incompatible baseline (differs in {', '.join(diff)})")
    cand = data.get("values", {}).get("candidate")
    if not isinstance(cand, dict) or not all(
        isinstance(v, list) and v and all(isinstance(x, (int, float)) and x > 0 for x in v)
        for v in cand.values()
    ):
        raise DataError(f"{path}: baseline values are missing or malformed")
    return {k: [float(x) for x in v] for k, v in cand.items()}


# -- output ----------------------------------------------------------------------------------


def _fmt(value: float, mode: str, name: str) -> str:
    if mode == "instructions":
        return f"{value:,.0f} instr"
    from bench.analysis import fmt_value

    return fmt_value(value, "second")


def render_terminal(judgements: list[Judgement], mode: str, status: str) -> str:
    head = f"{'benchmark':<40} {'baseline':>16} {'candidate':>16} {'change [95% CI]':>26} {'bound':>7}  verdict"
    lines = [head, "-" * len(head)]
    for j in judgements:
        ci = (
            ""
            if mode == "instructions"
            else f" [{(j.ci_low - 1) * 100:+.1f}, {(j.ci_high - 1) * 100:+.1f}]"
        )
        lines.append(
            f"{j.benchmark:<40} {_fmt(j.base, mode, j.benchmark):>16} {_fmt(j.candidate, mode, j.benchmark):>16}"
            f" {f'{j.change_pct:+.2f}%{ci}':>26} {j.bound_pct:6.1f}%  {j.verdict.upper() if j.verdict == 'regression' else j.verdict}"
        )
    lines.append(f"gate: {status.upper()} ({mode} mode)")
    return "\n".join(lines)


def render_markdown(
    judgements: list[Judgement], mode: str, status: str, meta: dict[str, Any]
) -> str:
    icon = {"pass": "pass", "regression": "**REGRESSION**", "improvement": "improvement"}
    lines = [
        f"### reqstate-bench gate: {'**FAIL**' if status == 'regression' else 'pass'} ({mode} mode)",
        "",
        f"baseline `{meta.get('base', '?')}` vs candidate `{meta.get('candidate', '?')}`; "
        "a benchmark fails when its slowdown is significant and above the bound "
        "(max of threshold and A/A noise).",
        "",
        "| benchmark | baseline | candidate | change [95% CI] | bound | verdict |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for j in judgements:
        ci = (
            ""
            if mode == "instructions"
            else f" [{(j.ci_low - 1) * 100:+.1f}, {(j.ci_high - 1) * 100:+.1f}]"
        )
        lines.append(
            f"| `{j.benchmark}` | {_fmt(j.base, mode, j.benchmark)} | {_fmt(j.candidate, mode, j.benchmark)} "
            f"| {j.change_pct:+.2f}%{ci} | {j.bound_pct:.1f}% | {icon[j.verdict]} |"
        )
    return "\n".join(lines) + "\n"


def run_gate(
    cfg: GateConfig,
    *,
    mode: str,
    base_ref: str | None,
    baseline_file: Path | None,
    json_out: Path | None,
    markdown_out: Path | None,
    root: Path = ROOT,
) -> int:
    if mode not in ("wall", "instructions"):
        raise UsageError(f"unknown gate mode {mode!r}; choose wall or instructions")
    if mode == "instructions":
        from bench.callgrind import check_valgrind

        check_valgrind()
    meta: dict[str, Any] = {"candidate": "working tree"}
    with contextlib.ExitStack() as stack:
        parent = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="reqstate-gate-")))
        # Both sides run from sibling folders with 4-letter names (equal path lengths, no
        # bytecode caches carried over): measured from the working tree itself, identical
        # code in the two trees differed by a steady ~2.5% in step latency.
        trees: dict[str, Path] = {"candidate": snapshot(root, parent, "cand")}
        if mode == "instructions":
            trees["aa"] = snapshot(root, parent, "aacc")
        baseline_values = None
        if baseline_file is not None:
            baseline_values = load_baseline(baseline_file, cfg, mode)
            meta["base"] = str(baseline_file)
        else:
            ref = base_ref or default_base(root)
            path, commit = stack.enter_context(worktree(ref, parent, root))
            trees["base"] = path
            meta["base"] = f"{ref} ({commit[:12]})"
        _progress(
            f"[gate] {mode} mode: {meta['base']} vs working tree, {len(cfg.benchmarks(mode))} benchmarks"
        )
        if mode == "wall":
            values = measure_wall(cfg, trees)
        else:
            values = measure_instructions(cfg, trees)
        if baseline_values is not None:
            values["base"] = baseline_values
    judgements = judge(cfg, mode, values, paired=baseline_file is None)
    status = "regression" if any(j.verdict == "regression" for j in judgements) else "pass"
    result = {
        "schema": SCHEMA,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(),
        "mode": mode,
        "status": status,
        "meta": meta,
        "fingerprint": cfg.fingerprint(mode),
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(cfg).items()},
        "values": values,
        "results": [{**asdict(j), "change_pct": j.change_pct} for j in judgements],
    }
    if json_out is None or markdown_out is None:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        out_dir = root / "reports" / f"gate-{stamp}-{os.getpid()}"
        out_dir.mkdir(parents=True, exist_ok=True)
        json_out = json_out or out_dir / "gate.json"
        markdown_out = markdown_out or out_dir / "gate.md"
    markdown = render_markdown(judgements, mode, status, meta)
    write_json(json_out, result)
    write_atomic(markdown_out, markdown)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(markdown)
    print(render_terminal(judgements, mode, status))
    print(f"gate result: {json_out}\ngate markdown: {markdown_out}")
    return EXIT_FAILED if status == "regression" else EXIT_OK
