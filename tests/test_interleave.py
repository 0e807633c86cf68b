"""`real interleave` (bench/real/interleave.py) on stand-in processes: one row per protocol,
each the paired statistic of the right processes, written after every configuration."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench.base.errors import DataError
from bench.real import interleave
from bench.real import presets as rp


def _out(ns: float) -> dict[str, Any]:
    recs = [{"ns": ns, "mode": "EXTEND", "phases": {}} for _ in range(20)]
    return {"ok": True, "records": recs}


def _rev(name: str) -> Any:
    return SimpleNamespace(env=None, tree=None, source=SimpleNamespace(label=name), home=None)


def test_each_protocol_is_measured_on_its_own_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in whose iteration costs more the more others run between two of its own, and
    whose head saves a fixed 100 µs: the rows say so, the re-warm rows cost what alone does."""
    base, head = _rev("base"), _rev("head")
    monkeypatch.setattr(interleave, "prepare", lambda specs, _py, _p: [base, head])
    monkeypatch.setattr(interleave, "job", lambda rev, preset, **_k: {"rev": rev, "p": preset})

    def cost(rev: Any, others: int, rewarm: int) -> float:
        warm = 2000e3 * (1 + (0.0 if rewarm else 0.1 * others))
        return warm - (100e3 if rev is head else 0.0)

    def lockstep(units: list, _rng: Any) -> list[dict[str, Any]]:
        others = len(units) - 1
        return [_out(cost(j["rev"], others, j["p"].rewarm)) for _e, _t, j in units]

    monkeypatch.setattr(interleave, "run_lockstep", lockstep)
    monkeypatch.setattr(interleave, "run_one", lambda _e, _t, j: _out(cost(j["rev"], 0, 1)))
    preset = rp.get("prefill-chunked").in_lockstep({})
    cfg = interleave.Study("a", "b", preset, others=(1, 3), rewarms=(0, 1), processes=8,
                           output_dir=tmp_path)  # fmt: skip
    assert interleave.execute(cfg) == 0
    (folder,) = tmp_path.iterdir()
    rows = json.loads((folder / "interleave.json").read_text())["rows"]
    assert [(r["others"], r["rewarm"]) for r in rows] == [(None, 0), (1, 0), (3, 0), (1, 1), (3, 1)]
    assert [round(r["change_us"], 3) for r in rows] == [-100.0] * 5
    assert rows[2]["base_us"] == pytest.approx(2600.0)
    assert rows[4]["base_us"] == pytest.approx(rows[0]["base_us"])
    assert "| alone (no turns) |" in (folder / "interleave.md").read_text()
    with pytest.raises(DataError, match="cannot hold both sides"):
        interleave.grouped(cfg, base, head, 2, 0, 0)
