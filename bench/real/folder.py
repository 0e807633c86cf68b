"""A real-mode run folder, as written by bench.real.run and read by bench.real.report:

manifest.json                  what ran: revisions and their environments, presets with their
                               sources, every process (ok, wall time, its raw file), failures
raw/<revision>/<preset>/pNNN.json   one driver process's output (bench.real.protocol)
raw/<revision>/<preset>/count.json  the untimed counting pass; freqmap.json its map
real.json                      pyperf: real/<revision>/preset=<p>/metric=<m>, one run per process
summary.md, report.html        the PR section and the report
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.base.errors import DataError
from bench.base.storage import read_json

SCHEMA = "reqstate-bench-real/1"
MANIFEST = "manifest.json"
RAW = "raw"


def raw_path(run_dir: Path, rev: str, preset: str, index: int, mode: str = "measure") -> Path:
    stem = f"p{index:03d}" if mode == "measure" else "count"
    return run_dir / RAW / rev / preset / f"{stem}.json"


def load_manifest(run_dir: Path) -> dict[str, Any]:
    data = read_json(run_dir / MANIFEST)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise DataError(f"{run_dir}: not a real-mode run folder")
    return data


def is_real_run(run_dir: Path) -> bool:
    try:
        data = json.loads((run_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("schema") == SCHEMA
