"""A history's line in target mode: each commit's state group replayed through the harness's
model of the scheduler loop (docs/TARGET.md), for commits real mode cannot run (a revision too
old or too new for the driver, an environment that cannot be built) or where the user asks.

A round is one `python -m bench run --suite step --target <anchor>,<commits...> --group G` with
one worker process: every revision's group becomes a strategy, and the step suite interleaves
their schedulers iteration by iteration in that process, the anchor's A/A twin among them (the
run's own, `<anchor>.aa`). Each member's values (µs per iteration of the scenario's loop, the
revision's group accesses replayed) are handed back as a driver's records would be, so the
history pairs them with the anchor's exactly as it pairs real-mode windows. Nothing of the tree
is executed (target mode's rule); the run folder is a temporary one, its figures kept in the
history's store.
"""

from __future__ import annotations

import atexit
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.base.errors import UsageError
from bench.base.names import BenchName
from bench.history.measure import Member
from bench.real.presets import RealPreset
from bench.target.select import materialize_targets
from strategies import twin_name

DEFAULT_SCENARIO = "decode-dspark"
TIMEOUT_S = 1800


def _failure(members: Sequence[Member], message: str) -> list[dict[str, Any]]:
    return [{"ok": False, "message": message} for _ in members]


class ReplayRunner:
    """The replay line's runner. A batch's revisions are read and turned into strategy modules
    once (reading a large tree's groups takes a minute or more), into a folder that lives as
    long as the runner; each round then runs the step suite over those files."""

    def __init__(self, repo: Path, group: str, scenario: str, *, quick: bool = True) -> None:
        self.repo, self.group, self.scenario, self.quick = repo, group, scenario, quick
        self.folder = Path(tempfile.mkdtemp(prefix="reqstate-history-replay-"))
        atexit.register(shutil.rmtree, self.folder, True)
        self.made: dict[tuple[str, ...], list[tuple[str, Path]] | str] = {}

    def strategies(self, shas: tuple[str, ...]) -> list[tuple[str, Path]] | str:
        """(name, file) per revision, or why they cannot be replayed."""

        if shas not in self.made:
            where = self.folder / f"batch{len(self.made)}"
            where.mkdir()
            try:
                made = materialize_targets(
                    [f"{self.repo}@{s}" for s in shas], where, group=self.group
                )
                self.made[shas] = [(t.name, t.path) for t in made]
            except UsageError as exc:
                self.made[shas] = str(exc)
        return self.made[shas]

    def __call__(
        self,
        members: Sequence[Member],
        preset: RealPreset,
        seed: int,
        first: int,
        rng: random.Random,
    ) -> list[dict[str, Any]]:
        from bench.report.load import load_run

        made = self.strategies(tuple(m.commit.sha for m in members if not m.copy))
        if isinstance(made, str):
            return _failure(members, f"the group cannot be replayed: {made}")
        names = [n for n, _p in made]
        out_dir = Path(tempfile.mkdtemp(prefix="run-", dir=self.folder))
        cmd = [
            sys.executable, "-m", "bench", "run", "--suite", "step", "--scenario", self.scenario,
            "--strategy", ",".join([*(str(p) for _n, p in made), "control"]),
            "--baseline", names[0], "--workers", "1", "--seed", str(seed), "--budget", "off",
            "--output-dir", str(out_dir),
        ]  # fmt: skip
        if self.quick:
            cmd.insert(4, "--quick")  # after "run"
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
            if proc.returncode != 0:
                lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
                return _failure(members, f"the replay run failed: {lines[-1] if lines else ''}")
            (run_dir,) = [p for p in out_dir.iterdir() if p.is_dir()]
            step = load_run(run_dir).suites.get("step")
            if step is None or not step.has_data:
                return _failure(members, "the replay run measured nothing")
            by_strategy = _warm_values(step.values, self.scenario)
        except subprocess.TimeoutExpired:
            return _failure(members, f"the replay run took over {TIMEOUT_S} s")
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)
        outs: list[dict[str, Any]] = []
        k = 0
        for m in members:
            name = twin_name(names[0]) if m.copy else names[k]
            k += 0 if m.copy else 1
            vals = by_strategy.get(name)
            if not vals:
                outs.append({"ok": False, "message": f"no replay values for {name}"})
                continue
            recs = [{"ns": v * 1e9, "mode": "DECODE", "phases": {}} for v in vals]
            outs.append({"ok": True, "records": recs})
        return outs


def _warm_values(values: dict[str, list[float]], scenario: str) -> dict[str, list[float]]:
    """Per strategy, its step values in the scenario's warm regime: a revision is measured with
    the access pattern `as_written` (docs/TARGET.md), control with its own."""
    out: dict[str, list[float]] = {}
    for text in sorted(values):
        bench = BenchName.parse(text)
        params = dict(bench.params)
        if bench.kind != "step" or params.pop("scenario", None) != scenario:
            continue
        pattern = params.pop("pattern", None)
        if not params and (pattern in (None, "as_written") or bench.strategy not in out):
            out[bench.strategy] = values[text]
    return out


def replay_preparer(repo: Path, commit: Any) -> Path:
    """Nothing to build: the replay reads the tree at run time."""
    return repo
