"""The run sequence every command that measures shares, in order:

    start(config, run_dir, command, targets)   refuse unknown strategies or an unusable device,
                                               write the manifest
    resume(run_dir)                            the manifest and configuration of a run to finish
    execute(run_dir, manifest, config)         the suites, with the adaptive round policy; an
                                               interruption kept resumable
    finish(run_dir, ...)                       the run folder loaded once: the self-check, the
                                               terminal summary and the report from that one
                                               RunData

The commands (bench/commands/) parse arguments into a configuration and call these; the
revisions of a --target run are materialized by the command (bench/target/) before start().
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from bench import suites
from bench.base.errors import EXIT_FAILED, DataError, UsageError
from bench.base.storage import check_free_space, new_run_dir
from bench.base.timing import resolve_device
from bench.config.runconfig import RunConfig
from bench.orchestration.selfcheck import applies, selfcheck
from bench.report import write_report
from bench.runformat.schema import MANIFEST, Manifest
from strategies import resolve


def new_run_folder(output_dir: Path) -> Path:
    """A fresh, empty run folder under output_dir (refused when the disk is nearly full)."""

    run_dir = new_run_dir(Path(output_dir))
    check_free_space(run_dir)
    return run_dir


def check_strategies_and_device(config: RunConfig) -> None:
    """Refuse unknown strategies, a missing baseline or an unusable device before any work
    (torch is imported once the strategies pass: a misspelt one is refused without it)."""
    chosen = resolve(config.strategies, external=config.external)
    names = {s.name for s in chosen}
    if config.baseline not in names:
        raise UsageError(
            f"baseline strategy {config.baseline!r} is not among the measured ones "
            f"({', '.join(sorted(names))}); add it with --strategy or pick --baseline"
        )
    try:
        device = resolve_device(config.device)
        from bench.core.rowpool import check_fits, default_shape  # torch: only when measuring

        for scenario, _extra in config.all_cases():
            shape = default_shape(
                device,
                chunked_prefill_size=scenario.chunk_tokens,
                pool_rows=scenario.pool_rows,
            )
            check_fits(shape, device)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def start(
    config: RunConfig,
    run_dir: Path,
    command: str,
    *,
    targets: dict[str, dict[str, Any]] | None = None,
) -> Manifest:
    """The run's manifest, written, for a configuration validated and checked here."""
    from bench.orchestration import runner

    check_strategies_and_device(config)
    manifest = runner.start_run(config, run_dir, command, targets=targets or {})
    print(f"run folder: {run_dir}", file=sys.stderr)
    return manifest


def resume(run_dir: Path) -> tuple[Manifest, RunConfig]:
    """The manifest and configuration of a run folder to finish (its strategies and device
    checked again: the machine may differ)."""
    manifest = Manifest.read(run_dir)
    try:
        config = suites.config_from_json(json.dumps(manifest.config))
    except (TypeError, ValueError) as exc:
        raise DataError(f"{run_dir / MANIFEST}: unusable configuration ({exc})") from None
    check_strategies_and_device(config)
    check_free_space(run_dir)
    return manifest, config


def policy_for(run_dir: Path, manifest: Manifest, config: RunConfig) -> Any:
    """The adaptive runner's round policy (with or without a budget: it records each
    family's rounds, precision and why it stopped)."""
    from bench.orchestration.adaptive import AdaptivePolicy

    todo = suites.run_order(s for s in config.suites if not manifest.suites[s].finished)
    spent = sum(r.wall_s or 0.0 for r in manifest.suites.values() if r.finished)
    pattern = manifest.pattern_of(config.baseline)
    policy = AdaptivePolicy(config, todo, spent_s=spent).with_baseline_pattern(pattern)
    return policy.with_targets(list(manifest.targets))


def execute(run_dir: Path, manifest: Manifest, config: RunConfig) -> Manifest | int:
    """Run the suites; the final manifest, or the exit status of an interruption (finished
    suites kept, and how to finish)."""
    from bench.orchestration import runner

    try:
        policy = policy_for(run_dir, manifest, config)
        return runner.execute(run_dir, manifest, config, policy)
    except runner.Interrupted as exc:
        print(
            f"interrupted ({exc}); finished suites kept in {run_dir}; "
            f"finish with: python -m bench run --resume {run_dir}",
            file=sys.stderr,
        )
        return 128 + exc.signum


def finish(
    run_dir: Path,
    *,
    selfcheck: bool = True,
    report: bool = True,
    verbose: bool = False,
    quiet: bool = False,
) -> int:
    """After the suites: the run folder loaded once; the self-check (where the run measured
    what it cross-checks), the terminal summary (not when quiet) and the report, all from that
    one RunData. 0 for a complete run, EXIT_FAILED otherwise (or when the report fails: the
    measurements are on disk, and the line says how to retry)."""
    from bench.report.console import terminal
    from bench.report.load import load_run

    run = load_run(run_dir)
    if selfcheck:
        run = _with_selfcheck(run, verbose=verbose)
    if not quiet:
        print(terminal(run, verbose=verbose))
    if report:
        try:
            paths = write_report(run)
        except Exception as exc:  # the measurements are safe on disk: say so, do not bury them
            print(
                f"error: the report could not be written ({type(exc).__name__}: {exc}); results "
                f"are kept in {run_dir}; retry with: python -m bench report {run_dir}",
                file=sys.stderr,
            )
            return EXIT_FAILED
        for path in paths:
            print(f"report: {path}")
    return 0 if run.status == "complete" else EXIT_FAILED


def _with_selfcheck(run: Any, *, verbose: bool) -> Any:
    """The run with its self-check (bench.orchestration.selfcheck) written and attached, where
    the run measured warm get_hit with the request model; a failure here never costs the run."""

    if not applies(run):
        return run
    print(
        "selfcheck: timing get_hit and the decode scan with plain timeit (~12 s here)",
        file=sys.stderr,
    )
    try:
        result = selfcheck(run)
    except Exception as exc:
        print(f"selfcheck skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
        return run
    print("\n".join(result.lines()) if verbose else result.brief())
    return dataclasses.replace(run, selfcheck=result)
