"""`python -m bench gate`: the trees, the measurement, the judgement and the outputs, in order.

Wall-clock mode (default): the baseline tree (a git ref checked out into a temporary worktree)
and the candidate (a copy of the working tree) are measured in the same job, round by round,
plus an A/A copy of the candidate that calibrates the noise (bench.gate.wall). Instruction mode:
callgrind instruction counts, deterministic, with a threshold in percent
(bench.gate.instructions). Judging: bench.gate.judge. The gate fails closed: missing, corrupt or
incompatible data never pass.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.base.errors import EXIT_FAILED, EXIT_OK, DataError, UsageError, one_line
from bench.base.names import BenchName
from bench.base.storage import ROOT, write_atomic, write_json
from bench.gate import protocol, wall
from bench.gate import revisions as tgt
from bench.gate.config import GateConfig
from bench.gate.git import default_base, snapshot, worktree
from bench.gate.instructions import check_valgrind, measure_gate
from bench.gate.judge import SCHEMA, Judgement, judge, load_baseline
from bench.gate.render import error_markdown, render_markdown, render_terminal
from bench.target.placement import MIN_REPLAYED

MODES = ("wall", "instructions")


def _errors_in_markdown(gate: Callable[..., int]) -> Callable[..., int]:
    """On a usage or data error (exit 2), gate.md and the CI step summary still say so in their
    first line, so a PR reader never sees a stale or empty verdict."""

    @functools.wraps(gate)
    def wrapper(cfg: GateConfig, *, mode: str, markdown_out: Path | None, **kw: Any) -> int:
        try:
            return gate(cfg, mode=mode, markdown_out=markdown_out, **kw)
        except (UsageError, DataError) as exc:
            text = error_markdown(one_line(str(exc)), mode)
            if markdown_out is not None:
                with contextlib.suppress(OSError):
                    write_atomic(markdown_out, text)
            _append_step_summary(text)
            raise

    return wrapper


def _append_step_summary(markdown: str) -> None:
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(markdown)


@dataclass(frozen=True)
class TargetSpec:
    """--target PATH --base REV [--head REV]: a user's tree at two revisions."""

    path: str
    base: str
    head: str | None = None  # None: the working tree
    group: str | None = None  # the state group (bench.target.select); None: what moved
    min_replayed: float = MIN_REPLAYED  # bench.target.placement: below it, exit 2
    trust: bool = False  # --trust-target-code: a side table's own module is executed


def _measure_target(
    cfg: GateConfig, mode: str, target: TargetSpec
) -> tuple[GateConfig, dict[str, dict[str, list[float]]], dict[str, Any], list[Judgement]]:
    """The revisions measured and judged: (gated config, values, meta, judgements)."""

    cfg = tgt.target_config(cfg)
    with tempfile.TemporaryDirectory(prefix="reqstate-gate-target-") as tmp:
        revs = tgt.prepare(
            target.path,
            target.base,
            target.head,
            Path(tmp),
            group=target.group,
            min_replayed=target.min_replayed,
            trust=target.trust,
        )
        cfg, left_out = tgt.without_void_lookups(cfg, revs)
        gated = {BenchName.parse(b).get("scenario") or "" for b in cfg.benchmarks(mode)}
        meta = revs.meta(sorted(gated - {""}))
        if left_out:
            meta["not_gated"] = [left_out]
            wall.progress(f"[gate] {left_out}")
        wall.progress(
            f"[gate] {mode} mode: {meta['base']} vs {meta['candidate']}, "
            f"{len(cfg.benchmarks(mode))} benchmarks"
        )
        if mode == "wall":
            values = tgt.measure_wall(cfg, revs)
        else:
            values = tgt.measure_instructions(cfg, revs)
        judgements = judge(cfg, mode, values, paired=True)
        if mode == "instructions":
            meta["where"] = tgt.where(cfg, revs, judgements)
    return cfg, values, meta, judgements


@_errors_in_markdown
def run_gate(
    cfg: GateConfig,
    *,
    mode: str,
    base_ref: str | None,
    baseline_file: Path | None,
    json_out: Path | None,
    markdown_out: Path | None,
    root: Path = ROOT,
    target: TargetSpec | None = None,
) -> int:
    if mode not in MODES:
        raise UsageError(f"unknown gate mode {mode!r}; choose wall or instructions")
    if mode == "instructions":
        check_valgrind()
    for out in (json_out, markdown_out):  # before minutes of measuring, not after
        if out is not None:
            try:
                out.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UsageError(f"{out}: cannot create its folder ({exc.strerror})") from None
            if not os.access(out.parent, os.W_OK):
                raise UsageError(f"{out}: folder is not writable")
    if target is not None:
        return _finish(*_measure_target(cfg, mode, target), json_out, markdown_out, root, mode)
    meta: dict[str, Any] = {"candidate": "working tree"}
    with contextlib.ExitStack() as stack:
        parent = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="reqstate-gate-")))
        # Both sides run from sibling folders with 4-letter names (see git.snapshot).
        trees: dict[str, Path] = {"candidate": snapshot(root, parent, "cand")}
        if mode == "instructions":
            trees["aa"] = snapshot(root, parent, "aacc")
        baseline_values = None
        if baseline_file is not None:
            baseline_values = load_baseline(baseline_file, cfg, mode)
            meta["base"] = str(baseline_file)
        bases = {"candidate": protocol.myself()}
        if baseline_file is None:
            ref = base_ref or default_base(root)
            path, commit = stack.enter_context(worktree(ref, parent, root))
            trees["base"] = path
            meta["base"] = f"{ref} ({commit[:12]})"
            bases["base"] = protocol.query(path, meta["base"])
        wall.progress(
            f"[gate] {mode} mode: {meta['base']} vs working tree, "
            f"{len(cfg.benchmarks(mode))} benchmarks"
        )
        if mode == "wall":
            values = wall.measure(cfg, trees, bases)
        else:
            values = measure_gate(cfg, trees, {k: v for k, v in bases.items() if k == "base"})
        if "base" in bases and bases["base"].notes:
            meta["base_notes"] = bases["base"].notes
            for note in bases["base"].notes:
                wall.progress(f"[gate] base: {note}")
        if baseline_values is not None:
            values["base"] = baseline_values
    judgements = judge(cfg, mode, values, paired=baseline_file is None)
    return _finish(cfg, values, meta, judgements, json_out, markdown_out, root, mode)


def _finish(
    cfg: GateConfig,
    values: dict[str, dict[str, list[float]]],
    meta: dict[str, Any],
    judgements: list[Judgement],
    json_out: Path | None,
    markdown_out: Path | None,
    root: Path,
    mode: str,
) -> int:
    """gate.json, gate.md, the step summary and the terminal table; the exit status."""
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
        "results": [
            {**asdict(j), "change_pct": j.change_pct, "share_of_forward": j.share_of_forward}
            for j in judgements
        ],
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
    _append_step_summary(markdown)
    print(render_terminal(judgements, mode, status))
    print(f"gate result: {json_out}\ngate markdown: {markdown_out}")
    return EXIT_FAILED if status == "regression" else EXIT_OK
