"""What a history and a bisect say when things go wrong or the data cannot decide: failed
commits (exit 1, their rounds kept, tried again on the next call, the step placed in a range),
the A/A offset applied only where it is systematic, the minimum detectable step checked by
simulation, and bisect's undecided gates, skipped commits, chain written as it goes, exit
status."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from bench.base.errors import EXIT_FAILED, EXIT_OK, DataError, UsageError
from bench.gate.judge import Judgement
from bench.history import bisect as hb
from bench.history import commits as hc
from bench.history import series
from bench.history.run import execute
from bench.real import presets as rp
from bench.stats import steps as sd
from tests.test_history import StandIn, _job, make_repo


class Failing(StandIn):
    """A stand-in whose driver fails for some commits on some calls (1-based)."""

    def __init__(self, factors: dict[str, float], fail: dict[str, set[int]], **kw: Any) -> None:
        super().__init__(factors, **kw)
        self.fail = fail

    def __call__(self, members: Any, *args: Any) -> list[dict[str, Any]]:
        outs = super().__call__(members, *args)
        call = len(self.calls)
        for k, m in enumerate(members):
            if call in self.fail.get(m.commit.sha, set()) and not m.copy:
                outs[k] = {"ok": False, "message": "the driver died: killed"}
        return outs


def _record(folder: Path, sha: str) -> dict[str, Any]:
    return json.loads((folder / "prefill-chunked" / "commits" / f"{sha}.json").read_text())


def test_a_failed_commit_exits_1_keeps_its_rounds_and_is_tried_again(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", 4)
    bad = shas[2]
    first = Failing({}, {bad: {2, 3}})  # its driver dies in the second and third rounds
    folder, status = execute(_job(tmp_path / "repo", tmp_path, first, rounds=3, batch=4))
    assert status == EXIT_FAILED
    rec = _record(folder, bad)
    assert len(rec["rounds"]) == 1  # the round measured before it failed is kept
    assert "driver failed" in rec["failed"]
    second = StandIn({}, seed=2)
    _f, status = execute(_job(tmp_path / "repo", tmp_path, second, rounds=3, batch=4))
    assert status == EXIT_OK
    # two rounds short, each with its twin (a one-commit batch runs it twice)
    assert sum(bad in call for call in second.calls) == 2
    rec = _record(folder, bad)
    assert len(rec["rounds"]) == 3
    assert "failed" not in rec
    assert "driver failed" in rec["last_failure"]


def test_a_step_beside_an_unmeasured_commit_is_placed_in_a_range(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", 10)
    runner = StandIn({s: 1.06 for s in shas[6:]}, noise=0.002)
    line_job = _job(tmp_path / "repo", tmp_path, runner, rounds=4)

    def preparer(_repo: Path, c: hc.Commit) -> hc.Commit:
        if c.sha == shas[6]:
            raise UsageError("its environment did not build")
        return c

    line_job.lines[0] = dataclasses.replace(line_job.lines[0], preparer=preparer)
    folder, status = execute(line_job)
    assert status == EXIT_FAILED  # a selected commit was not measured
    summary = (folder / "summary.md").read_text()
    assert f"after {shas[5][:10]}, at or before {shas[7][:10]} (1 commit(s) not measured)" in (
        summary
    )


def _commits(n: int) -> list[hc.Commit]:
    return [hc.Commit(f"{i:040x}", "2026-01-01", f"c{i}") for i in range(n)]


def _records(
    order: list[hc.Commit], logs: dict[int, list[float]], aa: list[float]
) -> dict[str, dict[str, Any]]:
    out = {}
    for i, c in enumerate(order):
        xs = aa if i == 0 else logs[i]
        out[c.sha] = {"rounds": [{"ratio": math.exp(x), "anchor_us": 1000.0} for x in xs]}
    return out


def test_the_offset_floors_only_a_step_from_the_anchor_and_only_when_systematic() -> None:
    """The A/A copy's mean (+1.0%, a systematic one) used to be a floor every step had to
    clear: a clear +0.8% step between later commits was dropped. It cancels there (both
    segments are measured against the same anchor processes); it floors a step from the
    anchor's own point, whose figure is the copy's."""
    rng = random.Random(2)
    order = _commits(21)
    aa = [0.01 + rng.gauss(0, 0.001) for _ in range(5)]  # +1%, its interval excludes zero

    def logs(at: int) -> dict[int, list[float]]:
        return {
            i: [(0.018 if i >= at else 0.01) + rng.gauss(0, 0.001) for _ in range(5)]
            for i in range(1, 21)
        }

    later = series.build(order, _records(order, logs(11), aa))
    assert later.offset_applies
    assert [s.commit.sha for s in later.steps] == [order[11].sha]
    # a step of 0.8% from the anchor's point: no larger than the copy's own offset
    first = {i: [0.008 + rng.gauss(0, 0.001) for _ in range(5)] for i in range(1, 21)}
    assert not series.build(order, _records(order, first, aa)).steps
    # an offset whose interval holds zero is noise, and no floor anywhere
    noisy = [0.01 + d for d in (-0.012, 0.011, -0.01, 0.012, 0.0)]
    assert not series.build(order, _records(order, first, noisy)).offset_applies


def _series(rng: random.Random, n: int, rounds: int, step: float, sd_round: float) -> list:
    pts = []
    for i in range(n):
        xs = [rng.gauss(step if i >= n // 2 else 0.0, sd_round) for _ in range(rounds)]
        pts.append(sd.Point(sum(xs) / rounds, sd_round**2 / rounds))
    return pts


def test_the_printed_smallest_step_is_found_80_percent_of_the_time() -> None:
    """The resolution printed before (1.96 sd of the halves' difference) was found about a
    quarter of the time; the minimum detectable step about 80%, whatever the series' length,
    and the step's location range then holds its commit."""
    rng = random.Random(11)
    for n, rounds in ((8, 5), (22, 5), (40, 3)):
        base = _series(rng, n, rounds, 0.0, 0.01)
        mds = sd.min_detectable(base, sd.penalty_for(n))
        old = sd.resolution(base)
        trials = 300
        found = placed = old_found = 0
        for _ in range(trials):
            pts = _series(rng, n, rounds, mds, 0.01)
            fit = sd.detect(pts)
            found += bool(fit.steps)
            placed += any(
                lo <= n // 2 <= hi for s in fit.steps for lo, hi in [sd.location(pts, fit, s)]
            )
            old_found += bool(sd.detect(_series(rng, n, rounds, old, 0.01)).steps)
        assert 0.75 <= found / trials <= 0.92, (n, rounds, found)
        assert placed >= 0.85 * found, (n, rounds, placed, found)
        assert old_found / trials < 0.4, (n, rounds, old_found)


def test_a_step_location_holds_the_commits_the_data_cannot_tell_apart() -> None:
    rng = random.Random(4)
    pts = _series(rng, 20, 5, 0.05, 0.005)
    fit = sd.detect(pts)
    (step,) = fit.steps
    assert sd.location(pts, fit, step) == (10, 10)
    weak = [sd.Point(p.y, p.var) for p in _series(random.Random(9), 20, 5, 0.012, 0.01)]
    fit = sd.detect(weak)
    for s in fit.steps:
        lo, hi = sd.location(weak, fit, s)
        assert lo <= s.index <= hi


# -- bisect -------------------------------------------------------------------------------------


def _j(change: float, half: float, verdict: str = "pass") -> Judgement:
    r = 1 + change / 100
    h = half / 100
    return Judgement("real/scheduler", 1.0, r, r, r - h, r + h, 0.01, 1.0, 0.5, 1.5, verdict)


def test_a_gate_fraction_carries_the_first_gates_interval() -> None:
    # a change of -1.1% [-1.3, -0.9] against a step of -2.3% [-3.0, -1.6]
    mid, low, high = hb.fraction_of((-1.1, -1.3, -0.9), (-2.3, -3.0, -1.6))
    assert mid == pytest.approx(0.478, abs=1e-3)
    assert low == pytest.approx(0.3, abs=1e-3)
    assert high == pytest.approx(0.8125, abs=1e-3)  # holds one half: undecided


def _bisect_job(tmp_path: Path, shas: list[str], gate: Any, out: str = "out") -> hb.BisectJob:
    return hb.BisectJob(
        tmp_path / "repo",
        shas[0],
        shas[-1],
        [rp.get("prefill-chunked")],
        gate=gate,
        output_dir=tmp_path / out,
    )


def test_an_undecided_gate_is_flagged_and_bisect_exits_1(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", 8)

    def gate(good: hc.Commit, commit: hc.Commit, rounds: int) -> list[Judgement]:
        if commit.sha == shas[-1]:
            return [_j(-4.0, 0.3, "improvement")]
        return [_j(-2.0, 1.0)]  # half the step, whatever the rounds

    result = hb.search(tmp_path / "repo", shas[0], shas[-1], ["p"], gate)
    assert any(s.undecided for s in result.chain)
    assert not result.certain
    assert "UNDECIDED" in hb.markdown(result, "t")


def test_bisect_skips_an_unrunnable_commit_and_writes_its_chain_after_every_gate(
    tmp_path: Path,
) -> None:
    shas = make_repo(tmp_path / "repo", 16)
    step, dead = 9, 9  # the first commit after the step cannot be gated
    seen: list[int] = []
    out = {"dir": "out"}

    def gate(good: hc.Commit, commit: hc.Commit, rounds: int) -> list[Judgement]:
        k = shas.index(commit.sha)
        if k == dead:
            raise DataError("candidate prefill-chunked: the driver died")
        if seen:
            (folder,) = (tmp_path / out["dir"]).iterdir()
            chain = json.loads((folder / "bisect.json").read_text())["chain"]
            assert len(chain) == len(seen)  # written after every gate
        seen.append(k)
        return [_j(-4.0, 0.3, "improvement") if k >= step else _j(0.1, 0.3)]

    job = _bisect_job(tmp_path, shas, gate)
    folder, status = hb.execute_bisect(job)
    assert status == EXIT_FAILED
    data = json.loads((folder / "bisect.json").read_text())
    assert data["first"] == shas[10]
    assert data["after"] == shas[8]
    assert data["span"] == 2
    assert [s["commit"] for s in data["skipped"]] == [shas[9]]
    text = (folder / "bisect.md").read_text()
    assert f"after {shas[8][:10]}, at or before {shas[10][:10]}" in text
    # and a clean search exits 0
    dead = -1
    seen.clear()
    out["dir"] = "again"
    _f, status = hb.execute_bisect(_bisect_job(tmp_path, shas, gate, "again"))
    assert status == EXIT_OK


def test_rounds_of_another_host_or_batch_are_refused(tmp_path: Path, monkeypatch: Any) -> None:
    from bench.history import run as hrun

    make_repo(tmp_path / "repo", 3)
    execute(_job(tmp_path / "repo", tmp_path, StandIn({}), rounds=2, batch=3))
    with pytest.raises(DataError, match="batch"):
        execute(_job(tmp_path / "repo", tmp_path, StandIn({}), rounds=2, batch=2))
    other = {**hrun.machine(), "cpu": "another CPU"}
    monkeypatch.setattr(hrun, "machine", lambda: other)
    with pytest.raises(DataError, match="host"):
        execute(_job(tmp_path / "repo", tmp_path, StandIn({}), rounds=2, batch=3))


def test_a_measured_map_is_kept_per_preset_and_the_plain_one_not_replaced(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Whichever preset counted last used to replace the revision's map."""
    from types import SimpleNamespace

    from bench.core import hotpath
    from bench.real import freqmap

    monkeypatch.setenv("REQSTATE_CACHE", str(tmp_path / "cache"))
    out = {"ok": True, "records": [], "calls": [], "functions": {}, "defined": {}}
    src = SimpleNamespace(commit="a" * 40, label="sglang@aaaaaaaaaa")
    first = freqmap.build(out, revision=src.label, preset="prefill-chunked")
    freqmap.store(first, src)
    plain = hotpath.measured_path(src.commit)
    assert json.loads(plain.read_text())["preset"] == "prefill-chunked"  # the first counted
    freqmap.store(freqmap.build(out, revision=src.label, preset="shared-prefix"), src)
    assert json.loads(plain.read_text())["preset"] == "prefill-chunked"  # not replaced
    freqmap.store(freqmap.build(out, revision=src.label, preset=hotpath.MAP_PRESET), src)
    assert json.loads(plain.read_text())["preset"] == hotpath.MAP_PRESET
    changed = freqmap.store(
        freqmap.build(out, revision=src.label, preset="prefill-chunked"), src, {"logprob": 1}
    )
    assert changed != hotpath.measured_path(src.commit, "prefill-chunked")
    assert json.loads(plain.read_text())["preset"] == hotpath.MAP_PRESET
    assert hotpath.measured_path(src.commit, "shared-prefix").is_file()


def test_bisect_under_noisy_gates_lands_on_the_step_or_says_it_is_unsure(tmp_path: Path) -> None:
    """Gates whose figures scatter as real ones do (a -2.3% step, each gate ±0.6% with a spread
    of 0.3% between gates): the search ends on the step's commit, or flags itself uncertain;
    it is never silently wrong more than rarely."""
    shas = make_repo(tmp_path / "repo", 21)
    rng = random.Random(6)
    wrong_silent = right = 0
    for _ in range(60):
        k = rng.randrange(1, 22)

        def gate(good: hc.Commit, commit: hc.Commit, rounds: int, k: int = k) -> list[Judgement]:
            true = -2.3 if shas.index(commit.sha) >= k else 0.0
            half = 0.6 * math.sqrt(6 / rounds)
            got = true + rng.gauss(0, half / 2)
            verdict = "improvement" if got + half < -1.0 else "pass"
            return [_j(got, half, verdict)]

        result = hb.search(tmp_path / "repo", shas[0], shas[-1], ["p"], gate)
        if result.first is not None and result.first.sha == shas[k]:
            right += 1
        elif result.certain:
            wrong_silent += 1
    assert right >= 54
    assert wrong_silent <= 2
