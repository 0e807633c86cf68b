"""A history's folder, one commit at a time, so an interrupted history resumes and a later
call adds commits without measuring the stored ones again:

    history.json            what it measures (repository, anchor, preset and its --set
                            changes, rounds wanted), the order of the commits last selected,
                            and per round the A/A copy's ratio (the anchor against itself)
    commits/<sha>.json      one commit: its date and subject, how it was measured (real), and
                            per round its paired ratio to the anchor, µs per iteration and phase
                            figures, with the anchor's of the same round; or why it could not be
    report.html, summary.md the curve, the steps, and the PR section (bench.history.report)

The folder is keyed by what makes two measurements comparable: the repository's name, the
anchor commit, the preset and its changes, and the measuring protocol. Every write is atomic.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.base.errors import DataError
from bench.base.storage import read_json, write_json

SCHEMA = "reqstate-bench-history/1"
MANIFEST = "history.json"
COMMITS = "commits"
# Bumped when what a stored round means changes (then a stored folder is not reused). 2: the
# driver's protocol 2 (bench.real.presets.DRIVER_PROTOCOL: steady cache, stand-in tokenizer).
# 3: a round's ratio is of the mean iterations (bench.stats.paired), turns re-warmed.
PROTOCOL = 3


def folder_name(repo_name: str, anchor: str, preset: str, changed: dict[str, Any]) -> str:
    ident = json.dumps({"changed": changed, "protocol": PROTOCOL}, sort_keys=True)
    digest = hashlib.sha256(ident.encode()).hexdigest()[:8]
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", repo_name.removesuffix(".git")) or "repo"
    return f"{safe}-{anchor[:10]}-{preset}-{digest}"


@dataclass
class Store:
    folder: Path

    @property
    def manifest_path(self) -> Path:
        return self.folder / MANIFEST

    def commit_path(self, sha: str) -> Path:
        return self.folder / COMMITS / f"{sha}.json"

    def manifest(self) -> dict[str, Any]:
        if not self.manifest_path.is_file():
            return {}
        data = read_json(self.manifest_path)
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise DataError(f"{self.manifest_path}: not a reqstate-bench history")
        return data

    def open(self, identity: dict[str, Any]) -> dict[str, Any]:
        """The manifest, created with `identity` the first time; a folder measured with other
        settings is refused (its rounds would not compare)."""
        data = self.manifest()
        if data:
            differs = sorted(k for k, v in identity.items() if data.get(k) != v)
            if differs:
                raise DataError(
                    f"{self.folder}: a history measured with other settings "
                    f"({', '.join(differs)}); its rounds would not compare: give another "
                    "--output-dir, or remove that folder"
                )
            return data
        data = {"schema": SCHEMA, **identity, "aa": [], "order": [], "calls": {}}
        self.folder.mkdir(parents=True, exist_ok=True)
        write_json(self.manifest_path, data)
        return data

    def save_manifest(self, data: dict[str, Any]) -> None:
        write_json(self.manifest_path, data)

    def load(self, sha: str) -> dict[str, Any] | None:
        path = self.commit_path(sha)
        if not path.is_file():
            return None
        data = read_json(path)
        if not isinstance(data, dict) or data.get("commit") != sha:
            raise DataError(f"{path}: not a stored commit of this history")
        return data

    def save(self, record: dict[str, Any]) -> None:
        path = self.commit_path(record["commit"])
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, record)

    def rounds(self, sha: str) -> int:
        rec = self.load(sha)
        return len(rec.get("rounds", [])) if rec else 0

    def failed(self, sha: str) -> str | None:
        rec = self.load(sha)
        return rec.get("failed") if rec else None
