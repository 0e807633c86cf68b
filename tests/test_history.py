"""History and bisect (bench/history/, docs/HISTORY.md): the step detector against identical-code
series and known steps, a history over a synthetic repository measured by a stand-in runner
(its steps, its report, its resume after an interruption, its commit selection), and bisect's
search. Real revisions are measured in the closing notes, not here: each takes minutes."""

from __future__ import annotations

import json
import math
import random
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from bench.base.errors import EXIT_FAILED, EXIT_OK, UsageError
from bench.gate.judge import Judgement
from bench.history import bisect as hb
from bench.history import commits as hc
from bench.history.measure import Member
from bench.history.run import HistoryJob, execute, real_line
from bench.real import presets as rp
from bench.stats import steps as sd
from tests.helpers import run_cli

SCHED = "python/sglang/srt/managers/scheduler.py"
DOCS = "docs/notes.md"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def make_repo(
    path: Path, n: int, touching: Sequence[int] = (), other: dict[int, str] | None = None
) -> list[str]:
    """A repository of n + 1 commits (the first is the anchor); commit i touches the scheduler's
    file when i is in `touching`, the file other[i] if given, a docs file otherwise. Their
    shas, oldest first."""
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    shas = []
    for i in range(n + 1):
        rel = SCHED if i in touching or i == 0 else (other or {}).get(i, DOCS)
        f = path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f"# revision {i}\n")
        _git(path, "add", "-A")
        _git(path, "commit", "-q", "-m", f"commit {i}")
        shas.append(_git(path, "rev-parse", "HEAD"))
    return shas


class StandIn:
    """A runner: each member's driver output, its iterations costing base x the commit's factor
    x the round's machine factor (shared by all members: lockstep) x per-value noise."""

    def __init__(self, factors: dict[str, float], *, noise: float = 0.01, seed: int = 0) -> None:
        self.factors = factors
        self.rng = random.Random(seed)
        self.noise = noise
        self.calls: list[list[str]] = []
        self.fail_on_call: int | None = None

    def __call__(
        self, members: Sequence[Member], preset: Any, seed: int, first: int, rng: random.Random
    ) -> list[dict[str, Any]]:
        self.calls.append([m.commit.sha for m in members])
        if self.fail_on_call is not None and len(self.calls) == self.fail_on_call:
            raise KeyboardInterrupt
        machine = self.rng.uniform(0.8, 1.2)
        outs = []
        for m in members:
            proc = self.rng.gauss(1.0, self.noise)  # a process's own layout
            factor = self.factors.get(m.commit.sha, 1.0) * machine * proc
            recs = []
            for _ in range(40):
                ns = 3e6 * factor * self.rng.gauss(1.0, self.noise)
                phases = {"schedule": int(ns * 0.4), "result": int(ns * 0.6)}
                recs.append({"ns": int(ns), "mode": "EXTEND", "phases": phases})
            outs.append({"ok": True, "records": recs})
        return outs


def _job(repo: Path, tmp: Path, runner: StandIn, counter: Any = None, **kw: Any) -> HistoryJob:
    line = real_line(rp.get("prefill-chunked"), {}, runner, lambda _repo, c: c, counter)
    return HistoryJob(
        repo, f"{_git(repo, 'rev-list', '--max-parents=0', 'HEAD')}..main", [line],
        output_dir=tmp / "reports", **kw,
    )  # fmt: skip


# -- the detector -----------------------------------------------------------------------------


def _aa_series(rng: random.Random, n: int, rounds: int, sd_round: float) -> list[sd.Point]:
    """n commits of identical code: per round a log ratio with heavy-ish tails, the commits
    then shuffled; each point as the history builds it (own spread floored by the pooled)."""
    rows = []
    for _ in range(n):
        xs = [rng.gauss(0, sd_round) * (3 if rng.random() < 0.05 else 1) for _ in range(rounds)]
        m = sum(xs) / rounds
        rows.append((m, sum((x - m) ** 2 for x in xs) / (rounds - 1)))
    rng.shuffle(rows)
    pooled = sum(v for _m, v in rows) / n
    return [sd.Point(m, max(v, pooled) / rounds) for m, v in rows]


def test_shuffled_aa_series_show_no_step_in_at_least_95_percent() -> None:
    rng = random.Random(7)
    for n, rounds in ((5, 3), (22, 5), (60, 5)):
        false = 0
        for _ in range(300):
            pts = _aa_series(rng, n, rounds, 0.02)
            false += bool(sd.detect(pts, df=n * (rounds - 1)).steps)
        assert false / 300 <= 0.05, (n, rounds, false)


def test_a_step_is_found_at_its_commit_with_an_interval_holding_its_size() -> None:
    rng = random.Random(3)
    found = covered = 0
    for _ in range(100):
        pts = []
        for i in range(22):
            xs = [rng.gauss(0.06 if i >= 13 else 0.0, 0.02) for _ in range(5)]
            m = sum(xs) / 5
            pts.append(sd.Point(m, 0.02**2 / 5))
        fit = sd.detect(pts)
        at = [s for s in fit.steps if s.index == 13]
        found += bool(at)
        covered += bool(at) and at[0].low <= 0.06 <= at[0].high
    assert found >= 95
    assert covered >= 88


# -- history over a synthetic repository ---------------------------------------------------------


def test_history_marks_the_step_and_writes_its_report(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", 12, touching=(7,))
    runner = StandIn({s: 1.05 for s in shas[7:]})
    counted: list[str] = []

    def counter(_repo: Path, c: hc.Commit, _preset: Any) -> dict[str, float]:
        counted.append(c.sha)
        return {"ReqToTokenPool.alloc (extend)": 2.0 if c.sha in shas[7:] else 1.0, "x (decode)": 1}

    profiled: list[tuple[str, str]] = []

    def where(base: Any, head: Any, _preset: Any, _folder: Path, *, seed: int) -> dict:
        profiled.append((base.sha, head.sha))
        row = {"name": "ReqToTokenPool.alloc", "resolved": True, "delta_us": 61.5,
               "ci_us": [40.0, 83.0]}  # fmt: skip
        return {"rows": [row], "where": ["ReqToTokenPool.alloc"], "resolution_us": [9.0, 20.0]}

    job = _job(tmp_path / "repo", tmp_path, runner, counter, rounds=4, batch=5, where=where)
    folder, status = execute(job)
    assert status == EXIT_OK
    summary = (folder / "summary.md").read_text()
    # where the step's time moved (py-spy at the step and the commit before it), before the calls
    assert (
        "time moved in ReqToTokenPool.alloc: +61.5 µs per iteration \\[+40.0, +83.0\\]" in summary
    )
    assert profiled == [(shas[6], shas[7])]
    html = (folder / "report.html").read_text()
    assert len(summary.strip().splitlines()) <= 15
    assert shas[7][:10] in summary
    assert "1 step(s)" in summary  # and no other: batches are reshuffled every round
    assert f"<title>prefill-chunked {shas[7][:10]}" in html  # the point's hover
    assert "stroke-dasharray" in html  # the step marked
    # every round holds the anchor and its copy; a batch never exceeds --batch commits
    assert all(c[0] == c[1] == shas[0] and len(c) <= 7 for c in runner.calls)
    # the calls per function at the step, counted once at the step and the commit before it
    assert "ReqToTokenPool.alloc (extend): 1.00 → 2.00 calls per iteration" in summary
    assert "x (decode)" not in summary
    assert sorted(counted) == sorted([shas[6], shas[7]])
    execute(job)
    assert len(counted) == 2
    assert len(profiled) == 1  # kept in the manifest, like the calls
    rec = json.loads((folder / "prefill-chunked" / "commits" / f"{shas[7]}.json").read_text())
    assert len(rec["rounds"]) == 4
    assert all(0 < r["ratio"] for r in rec["rounds"])


def test_a_range_without_a_change_reports_no_step(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo", 10)
    folder, status = execute(_job(tmp_path / "repo", tmp_path, StandIn({}, seed=4), rounds=4))
    assert status == EXIT_OK
    assert "no step beyond the noise" in (folder / "summary.md").read_text()


def test_an_interrupted_history_resumes_without_measuring_what_it_stored(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", 9, touching=(5,))
    first = StandIn({s: 1.05 for s in shas[5:]})
    first.fail_on_call = 4  # the fourth round is interrupted
    folder, status = execute(_job(tmp_path / "repo", tmp_path, first, rounds=3, batch=3))
    assert status == EXIT_FAILED
    stored = {
        s: len(json.loads(p.read_text())["rounds"])
        for s in shas[1:]
        if (p := folder / "prefill-chunked" / "commits" / f"{s}.json").is_file()
    }
    assert sum(stored.values()) == 9  # three rounds of three commits, then the interruption
    second = StandIn({s: 1.05 for s in shas[5:]}, seed=1)
    _folder, status = execute(_job(tmp_path / "repo", tmp_path, second, rounds=3, batch=3))
    assert status == EXIT_OK
    measured = [s for call in second.calls for s in call[2:]]
    for sha in shas[1:]:
        assert measured.count(sha) == 3 - stored.get(sha, 0)
    # and a third call measures nothing
    third = StandIn({})
    execute(_job(tmp_path / "repo", tmp_path, third, rounds=3, batch=3))
    assert third.calls == []


def test_budget_stops_between_rounds_and_the_rest_is_left(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo", 6)
    runner = StandIn({})
    _f, status = execute(_job(tmp_path / "repo", tmp_path, runner, rounds=3, budget_s=0.0))
    assert status == EXIT_FAILED
    assert len(runner.calls) == 1


def test_commit_selection_every_nth_and_hot_path(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("REQSTATE_CACHE", str(tmp_path / "cache"))
    pool = "python/sglang/srt/mem_cache/memory_pool.py"
    shas = make_repo(tmp_path / "repo", 8, touching=(2, 6), other={4: pool})
    sel = hc.select(tmp_path / "repo", f"{shas[0]}..{shas[-1]}", every=3)
    assert [c.sha for c in sel.commits] == [shas[3], shas[6], shas[8]]
    hot = hc.select(tmp_path / "repo", f"{shas[0]}..{shas[-1]}", hot_path=True)
    assert [c.sha for c in hot.commits] == [shas[2], shas[6]]
    assert "bench/core/hotpath.py" in hot.how
    # a measured map of the anchor decides instead of the typed table
    from bench.core.hotpath import measured_path

    path = measured_path(shas[0])
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"rows": [{"defined": "sglang/srt/mem_cache/memory_pool.py:9"}]}))
    moved = hc.select(tmp_path / "repo", f"{shas[0]}..{shas[-1]}", hot_path=True)
    assert [c.sha for c in moved.commits] == [shas[4]]
    assert "measured" in moved.how
    with pytest.raises(UsageError, match="expected a range"):
        hc.select(tmp_path / "repo", shas[0])


def test_history_and_bisect_refuse_bad_input_in_one_line(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", 3)
    for args in (
        ("history", str(tmp_path / "repo"), "nope..main"),
        ("history", str(tmp_path / "repo"), f"{shas[-1]}..{shas[0]}"),
        ("bisect", str(tmp_path / "repo"), shas[-1], shas[0]),
        ("history", str(tmp_path / "repo"), f"{shas[0]}..main", "--set", "bogus=1"),
        ("history", str(tmp_path / "repo"), f"{shas[0]}..main", "--no-real"),
    ):
        proc = run_cli(*args)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1
        assert "Traceback" not in proc.stderr


# -- bisect -------------------------------------------------------------------------------------


def _judgement(verdict: str, change: float) -> Judgement:
    r = 1 + change / 100
    return Judgement("real/scheduler", 1.0, r, r, r - 0.01, r + 0.01, 0.01, 5.0, 0.0, 5.0, verdict)


@pytest.mark.parametrize(("direction", "change"), [("regression", 8.0), ("improvement", -8.0)])
def test_bisect_lands_on_the_step_within_log2_gates(
    tmp_path: Path, direction: str, change: float
) -> None:
    shas = make_repo(tmp_path / "repo", 21)
    for k in (1, 9, 14, 21):
        step = set(shas[k:])

        def gate(
            good: hc.Commit, commit: hc.Commit, rounds: int, step: set[str] = step
        ) -> list[Judgement]:
            moved = commit.sha in step
            return [_judgement(direction if moved else "pass", change if moved else 0.1)]

        result = hb.search(tmp_path / "repo", shas[0], shas[-1], ["prefill-chunked"], gate)
        assert result.first is not None
        assert result.first.sha == shas[k]
        assert result.direction == direction
        assert len(result.chain) <= math.ceil(math.log2(21)) + 1


def test_bisect_places_a_commit_by_the_step_not_by_the_threshold(tmp_path: Path) -> None:
    """A commit past a step near the bound passes the gate's threshold as often as not; bisect
    places it by where its change lies against half the first gate's step, and measures a gate
    whose interval holds that half again with twice the rounds."""
    shas = make_repo(tmp_path / "repo", 21)
    after = set(shas[9:])
    asked: list[int] = []

    def gate(good: hc.Commit, commit: hc.Commit, rounds: int) -> list[Judgement]:
        asked.append(rounds)
        if commit.sha == shas[-1]:
            return [_judgement("improvement", -2.3)]
        if commit.sha not in after:
            return [_judgement("pass", 0.3)]
        r = 1 - 0.011 if rounds < 12 else 1 - 0.021  # straddles half the step, then does not
        half = 0.012 if rounds < 12 else 0.004
        return [
            Judgement("real/scheduler", 1.0, r, r, r - half, r + half, 0.01, 1.0, 0.5, 1.5, "pass")
        ]

    result = hb.search(tmp_path / "repo", shas[0], shas[-1], ["prefill-chunked"], gate, 6)
    assert result.first is not None
    assert result.first.sha == shas[9]
    assert len(result.chain) <= math.ceil(math.log2(21)) + 1
    assert 12 in asked
    assert max(asked) <= 6 * hb.MAX_ROUND_FACTOR
    longer = [s for s in result.chain if s.rounds == 12]
    assert longer
    assert all(s.after() for s in longer)
    assert "of the step" in hb.chain_line(longer[0])
    assert "12 rounds" in hb.chain_line(longer[0])


def test_bisect_without_a_step_says_so_after_one_gate(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", 6)
    job = hb.BisectJob(
        tmp_path / "repo", shas[0], shas[-1], [rp.get("prefill-chunked")],
        output_dir=tmp_path / "reports", gate=lambda g, c, r: [_judgement("pass", 0.3)],
    )  # fmt: skip
    folder, status = hb.execute_bisect(job)
    text = (folder / "bisect.md").read_text()
    assert status == EXIT_OK
    assert "no step above the threshold" in text
    assert json.loads((folder / "bisect.json").read_text())["first"] is None


# -- the replay line (target mode) ----------------------------------------------------------------


# serial: its rounds are wall-clock timings of one process each, judged against each other; in
# the parallel slow phase another test's load once put a WeakKeyDictionary round at 0.70 and
# once at 1.06 against the A/A's 1.09 (2026-12-04, 2026-12-06)
@pytest.mark.slow
@pytest.mark.serial
def test_a_replay_line_measures_each_commits_group_and_pairs_it_with_the_anchor(
    tmp_path: Path,
) -> None:
    from tests import group_repo

    commits = group_repo.build(tmp_path / "sglang", ("inline", "weak"))
    proc = run_cli(
        "history", str(tmp_path / "sglang"), f"{commits['inline']}..{commits['weak']}",
        "--group", "lp_states", "--no-real", "--rounds", "2", "--output-dir", str(tmp_path / "out"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (folder,) = (tmp_path / "out" / "history").iterdir()
    line = folder / "replay-lp_states-decode-dspark"
    recs = {
        home: json.loads((line / "commits" / f"{sha}.json").read_text())
        for home, sha in commits.items()
    }
    assert all(r["mode"] == "replay" and len(r["rounds"]) == 2 for r in recs.values())
    # the anchor's point is its A/A twin; a WeakKeyDictionary home costs more than fields on Req
    # over the rounds: the mean log ratio of each side
    weak = [math.log(r["ratio"]) for r in recs["weak"]["rounds"]]
    aa = [math.log(r["ratio"]) for r in recs["inline"]["rounds"]]
    assert sum(weak) / len(weak) > sum(aa) / len(aa)
    assert "replay-lp_states-decode-dspark" in (folder / "summary.md").read_text()


def test_bisect_says_where_the_first_commit_s_time_moved(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", 8)
    asked: list[tuple[str, str]] = []

    def where(_job: Any, parent: hc.Commit, first: hc.Commit, _folder: Path) -> dict:
        asked.append((parent.sha, first.sha))
        row = {"name": "ReqToTokenPool.alloc", "file": "sglang/srt/mem_cache/memory_pool.py",
               "line": 291, "moved_from": "", "base_us": 226.6, "head_us": 69.1,
               "delta_us": -157.5, "ci_us": [-277.0, -38.1], "resolved": True}  # fmt: skip
        return {
            "rows": [row], "where": ["ReqToTokenPool.alloc"], "resolution_us": [36.0, 114.9],
            "processes": [6, 6], "family_level": 0.01, "tested": 92, "relabellings": 924,
            "critical": 6.05,
        }  # fmt: skip

    def gate(good: hc.Commit, commit: hc.Commit, rounds: int) -> list[Judgement]:
        moved = commit.sha in shas[5:]
        return [_judgement("improvement" if moved else "pass", -6.0 if moved else 0.1)]

    job = hb.BisectJob(
        tmp_path / "repo", shas[0], shas[-1], [rp.get("prefill-chunked")],
        output_dir=tmp_path / "reports", gate=gate, where=where,
    )  # fmt: skip
    folder, status = hb.execute_bisect(job)
    assert status == EXIT_OK
    assert asked == [(shas[4], shas[5])]  # the first commit against its parent, once
    text = (folder / "bisect.md").read_text()
    assert "**Where it moved** at the first commit" in text
    assert "| `ReqToTokenPool.alloc` | sglang/srt/mem_cache/memory_pool.py:291 |" in text
    assert json.loads((folder / "bisect.json").read_text())["where"]["where"] == [
        "ReqToTokenPool.alloc"
    ]
