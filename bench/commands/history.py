"""`python -m bench history PATH A..B` and `python -m bench bisect PATH GOOD BAD`: a branch's
scheduler cost per commit, its steps, and the commit that made one (docs/HISTORY.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench.base.errors import UsageError
from bench.commands.real import parse_set
from bench.config.cliargs import (
    Command,
    Option,
    SubParsers,
    csv_list,
    duration_s,
    positive_int,
    register_commands,
)
from bench.core.scenarios import get
from bench.history import measure as hm
from bench.history.bisect import BisectJob, execute_bisect, real_where
from bench.history.calls import real_counter
from bench.history.run import HistoryJob, execute, real_line, real_mapper, replay_line
from bench.real.profile.run import where_moved
from bench.real.run import selected

HISTORY_PRESETS = ("prefill-chunked",)

# Options both commands take: (flags, argparse keywords).
_SHARED: tuple[Option, ...] = (
    (("--real-preset",), {"action": "append", "type": csv_list, "metavar": "NAME[,NAME]",
      "help": "real-mode presets (default prefill-chunked; list: python -m bench real presets)"}),
    (("--set",), {"action": "append", "metavar": "KEY=VALUE",
      "help": "change one value of every preset (e.g. max_running_requests=16384)"}),
    (("--real-python",), {"metavar": "PYTHON",
      "help": "run every revision with this interpreter instead of building environments"}),
    (("--seed",), {"type": int, "default": 0, "help": "seed of the request streams and turns"}),
    (("--where",), {"choices": ("auto", "never"), "default": "auto",
      "help": "at each step (history) or the first commit (bisect), profile both sides with "
              "py-spy and name the functions whose time moved (docs/PROFILE.md), or never"}),
    (("--output-dir",), {"default": "reports", "help": "where the folder goes (default reports)"}),
)  # fmt: skip

_HISTORY: tuple[Option, ...] = (
    (("path",), {"metavar": "PATH", "help": "an SGLang git repository (a bare one works)"}),
    (("range",), {"metavar": "A..B", "help": "the first-parent commits after A up to B; A is the anchor"}),
    (("--every",), {"type": positive_int, "default": 1, "metavar": "N",
      "help": "every Nth commit of the range (the last always)"}),
    (("--hot-path",), {"action": "store_true",
      "help": "only commits that touch a file of the scheduler's hot path (the anchor's measured map)"}),
    (("--rounds",), {"type": positive_int, "default": 5,
      "help": "lockstep rounds per commit (default 5)"}),
    (("--batch",), {"type": positive_int, "default": hm.DEFAULT_BATCH,
      "help": f"commits per lockstep round beside the anchor and its copy (default "
              f"{hm.DEFAULT_BATCH}: the gate's four processes; more is faster, but a commit then "
              f"reads another size than its gate's)"}),
    (("--budget",), {"type": duration_s, "default": None, "metavar": "DURATION",
      "help": "stop measuring after about this long (e.g. 20m); a later call resumes"}),
    (("--group",), {"metavar": "NAME",
      "help": "also a line of target mode's replay of this state group (python -m bench target "
              "groups PATH@REV lists them): for commits real mode cannot run, or with --no-real"}),
    (("--replay-scenario",), {"default": "decode-dspark", "metavar": "SCENARIO",
      "help": "the synthetic loop the --group replay runs in (default decode-dspark)"}),
    (("--no-real",), {"action": "store_true", "help": "only the --group replay line"}),
)  # fmt: skip

_BISECT: tuple[Option, ...] = (
    (("path",), {"metavar": "PATH", "help": "an SGLang git repository (a bare one works)"}),
    (("good",), {"metavar": "GOOD", "help": "the revision before the change"}),
    (("bad",), {"metavar": "BAD", "help": "a first-parent descendant of GOOD that differs from it"}),
    (("--rounds",), {"type": positive_int, "default": 6, "help": "rounds per gate (at least 6)"}),
    (("--threshold",), {"type": float, "default": 5.0, "metavar": "PCT",
      "help": "a gate's bound, percent of the iteration (its A/A copy may raise it)"}),
)  # fmt: skip


def _presets(args: argparse.Namespace) -> tuple[list[Any], dict[str, Any]]:

    names = [x for group in (args.real_preset or [list(HISTORY_PRESETS)]) for x in group]
    changes = parse_set(args.set)
    return selected(names, changes), changes


def _cmd_history(args: argparse.Namespace) -> int:

    presets, changes = _presets(args)
    preparer = hm.real_preparer(args.real_python)
    counter = real_counter(preparer)
    lines = [
        real_line(p, changes, hm.lockstep_runner, preparer, counter)
        for p in ([] if args.no_real else presets)
    ]
    if args.group:
        try:
            get(args.replay_scenario)
        except ValueError as exc:
            raise UsageError(f"--replay-scenario: {exc}") from None
        lines.append(replay_line(Path(args.path), args.group, args.replay_scenario))
    elif args.no_real:
        raise UsageError("--no-real leaves nothing to measure without --group NAME")
    job = HistoryJob(
        Path(args.path), args.range, lines, args.rounds, args.batch, args.every, args.hot_path,
        args.budget, args.seed, Path(args.output_dir), changes,
        mapper=real_mapper(preparer, presets[0]) if not args.no_real else None,
        where=where_moved if args.where != "never" and not args.no_real else None,
    )  # fmt: skip
    _folder, status = execute(job)
    return status


def _cmd_bisect(args: argparse.Namespace) -> int:
    presets, changes = _presets(args)
    job = BisectJob(
        Path(args.path), args.good, args.bad, presets, changes, args.rounds, args.threshold,
        args.seed, args.real_python, Path(args.output_dir),
        where=real_where if args.where != "never" else None,
    )  # fmt: skip
    _folder, status = execute_bisect(job)
    return status


_COMMANDS = (
    Command("history", "a branch's scheduler cost per commit, with the steps found (real mode)",
            (*_HISTORY, *_SHARED), _cmd_history,
            "Measure every commit of A..B (its own scheduler, in lockstep with A), find the steps, "
            "write report.html and summary.md. Stored one commit at a time: running it again "
            "resumes, a wider range adds commits."),
    Command("bisect", "the first commit of GOOD..BAD whose scheduler cost differs, by paired gates",
            (*_BISECT, *_SHARED), _cmd_bisect,
            "About log2(N) real-mode gates against GOOD, at the gate's A/A-calibrated bound; ends "
            "on the first commit whose gate shows the change GOOD..BAD shows, or says there is no "
            "step above the threshold."),
)  # fmt: skip


def register(sub: SubParsers[argparse.ArgumentParser]) -> None:
    register_commands(sub, _COMMANDS)
