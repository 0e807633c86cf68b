"""Wall-clock mode: the gate's worker suite in each tree, round by round.

Each round starts one worker process per side (base, candidate, and an A/A copy of the
candidate that calibrates the noise) in a seeded shuffled order, so value i of every side comes
from the same round.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

from bench.base.errors import DataError
from bench.base.storage import read_json
from bench.config.runconfig import RunConfig
from bench.gate.config import GateConfig
from bench.gate.protocol import Base
from bench.suites import default_config
from bench.suites.gate import STEP

SIDES = ("base", "candidate", "aa")


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def worker_config(cfg: GateConfig) -> RunConfig:
    """What the gate's worker suite is run with, on every side."""

    return default_config(
        suites=("gate",),
        strategies=cfg.strategies,
        workers=1,
        warmup_values=1,
        values=cfg.values,
        scenarios=cfg.scenarios,
        patterns=cfg.patterns,
        seed=cfg.seed,
        device="cpu",
        aa_twins=0,  # the gate has its own A/A side
        extra={"gate": {"lookup_ops": list(cfg.lookup_ops), "lookup_live": cfg.lookup_live}},
    ).with_suite(STEP, steps_per_value=cfg.steps_per_value)


def measure(
    cfg: GateConfig, trees: dict[str, Path], bases: dict[str, Base]
) -> dict[str, dict[str, list[float]]]:
    """Values per side and benchmark, keyed by the candidate's names; value i of every side
    comes from the same round. `bases` says how to speak to each tree (bench.gate.protocol)."""
    from bench.orchestration.runner import run_worker

    sides = [s for s in SIDES if s in trees or s == "aa"]
    values: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
    rng = random.Random(cfg.seed)
    config = worker_config(cfg)
    wanted = cfg.benchmarks("wall")
    with tempfile.TemporaryDirectory(prefix="reqstate-gate-") as tmp:
        paths: dict[str, Path] = {}
        names: dict[str, dict[str, str]] = {}  # side -> its name -> the candidate's name
        for side in sides:
            base = bases["candidate" if side == "aa" else side]
            paths[side] = Path(tmp) / f"config-{side}.json"
            paths[side].write_text(base.config_json(config), encoding="utf-8")
            names[side] = {base.name(n): n for n in wanted}
        for r in range(cfg.rounds):
            order = list(sides)
            rng.shuffle(order)
            for side in order:
                tree = trees["candidate" if side == "aa" else side]
                out = Path(tmp) / f"{side}{r}.json"
                rc, tail = run_worker("gate", paths[side], out, r, lambda _f, _l: None, cwd=tree)
                if rc != 0 or not out.exists():
                    last = tail.strip().splitlines()[-1] if tail.strip() else f"exit status {rc}"
                    raise DataError(f"{side} tree could not run the gate worker: {last}")
                data = read_json(out)
                if data.get("failures"):
                    raise DataError(f"{side}: {'; '.join(data['failures'].values())}")
                for name, b in data["benchmarks"].items():
                    mine = names[side].get(name)
                    if mine is not None:
                        values[side].setdefault(mine, []).extend(b["values"])
                progress(f"[gate] round {r + 1}/{cfg.rounds}: {side} measured")
    return values
