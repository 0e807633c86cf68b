"""target advise: every home but the current one in two ports (as ported, and looked up once
per function), ranked by the better of the two, each against the current home paired per round
("same" where the interval includes zero); on synthetic trees the tests write (tests/group_repo.py
and a group on Req read many times per request, below) and on constructed rounds."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from bench.base.names import BenchName
from bench.core import scenarios
from bench.core.counting import count_ops
from bench.core.groupsites import Access, GroupProgram, Reach, SiteProgram, render
from bench.stats.cases import build_cases
from bench.stats.rounds import Rounds
from bench.target.advise import (
    CACHED,
    PORTED,
    WRITTEN,
    Candidate,
    once_per_function,
    rank,
    ranked_lines,
    write_candidates,
)
from bench.target.groups import read_groups
from bench.target.homes import CANDIDATES
from bench.target.tree import SourceTree
from strategies import load_external
from tests import group_repo
from tests.helpers import run_cli

WIDE = tuple(f"wd_f{i}" for i in range(12))


def _wide_repo(repo: Path) -> str:
    """A group on Req (the prefix `wd_`, 12 fields) all read once per batch request by
    prepare_for_decode: the side table as ported looks the state up 12 times a request."""
    repo.mkdir(parents=True, exist_ok=True)
    group_repo._git(repo, "init", "-q", "-b", "main")
    init = "".join(f"        self.{f} = 0\n" for f in WIDE)
    reads = " + ".join(f"req.{f}" for f in WIDE)
    group_repo._write(
        repo,
        group_repo.SB,
        f"""from typing import List


class Req:
    def __init__(self, rid, origin_input_text, origin_input_ids, sampling_params,
                 return_logprob=False, stream=False):
        self.rid = rid
        self.origin_input_text = origin_input_text
        self.origin_input_ids = origin_input_ids
        self.sampling_params = sampling_params
        self.output_ids = []
        self.return_logprob = return_logprob
        self.stream = stream
        self.kv_committed_len = 0
        self.finished_reason = None
{init}

class ScheduleBatch:
    reqs: List[Req] = None

    def prepare_for_decode(self):
        for req in self.reqs:
            req.kv_committed_len += 1
            self.total = {reads}
""",
    )
    group_repo._git(repo, "add", "-A")
    group_repo._git(repo, "commit", "-q", "-m", "wide")
    return group_repo._git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def prefixed(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The group_repo tree whose group `lp_` is on Req (fields under a prefix)."""
    path = tmp_path_factory.mktemp("advise") / "sglang"
    commits = group_repo.build(path, homes=("prefixed",))
    return f"{path}@{commits['prefixed']}"


def test_once_per_function_binds_once_per_block() -> None:
    accesses = (
        Access("a", "load", loop=True),
        Access("b", "store", loop=True),
        Access("", "bind", loop=True),  # `lp = req.G` after two reaches: collapses
        Access("c", "aug", via="local", loop=True),
        Access("d", "load", loop=True, guard="req.x"),  # its own block: one more lookup
        Access("e", "load", loop=True, guard="req.x"),
    )
    site = SiteProgram("ScheduleBatch.prepare_for_decode", "sb.py:1", "per_iteration",
                       ("decode",), accesses)  # fmt: skip
    program = GroupProgram("g", (site,))
    cached = once_per_function(program)
    assert [a.via for a in cached.sites[0].accesses] == ["local"] * 5
    assert "bind" not in [a.op for a in cached.sites[0].accesses]
    layout = (("per_iteration", True),)
    reach = Reach("get(req)", {})
    ported = render(program, reach, "colocated", layout).count("get(req)")
    once = render(cached, reach, "colocated", layout).count("get(req)")
    assert (ported, once) == (5, 2)  # a, b, the bind, d, e; then one per block
    assert once_per_function(cached) == cached


def test_every_other_home_is_ported_twice(prefixed: str, tmp_path: Path) -> None:
    """A group on Req: each other home as ported (a lookup per field access) and looked up
    once per function; fields on Req (the current home) once, as written."""
    rev = read_groups(SourceTree.open(prefixed))
    cands = write_candidates(rev, rev.group("lp_"), tmp_path)
    names = {(c.home, c.port): c.name for c in cands}
    assert cands[0].current
    assert cands[0].port == WRITTEN
    assert cands[0].home == "inline"
    others = [h for h in CANDIDATES if h != "inline"]
    assert set(names) == {("inline", WRITTEN), *((h, p) for h in others for p in (PORTED, CACHED))}
    assert names[("weak_table", CACHED)] == "lp_weak_table_cached"
    prefill = scenarios.get("prefill-dspark").with_changes({"chunked_prefill_size": 2048})
    lookups = {}
    for port in (PORTED, CACHED):
        s = load_external(str(next(c.path for c in cands if c.name == names[("weak_table", port)])))
        assert s.program is not None
        lookups[port] = count_ops(s, prefill, pattern="as_written", seed=1, steps=10).lookups
    # prepare_for_extend reads two fields per request: two lookups as ported, one once per
    # function (release_kv_cache's one read is one lookup either way)
    assert lookups[CACHED] < lookups[PORTED]


def test_an_unknown_home_is_refused(prefixed: str, tmp_path: Path) -> None:
    r = run_cli("target", "advise", prefixed, "--group", "lp_", "--home", "nowhere",
                "--output-dir", str(tmp_path))  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0
    assert "--home 'nowhere'" in r.stderr
    assert "weak_table" in r.stderr
    assert not list(tmp_path.iterdir())


# Constructed rounds: three worker processes of eight rounds; every strategy's value of a round
# is control's plus its own cost (a round's drift is shared, as interleaving makes it).
_CASE = "decode-dspark"
_COST_US = {
    "g_inline": 100.0,  # the current home
    "g_weak_table": 700.0,  # as ported: a lookup per field access
    "g_weak_table_cached": 40.0,  # once per function: clearly cheaper than the current home
    "g_slots": 100.0,  # the current home's cost, give or take a microsecond: "same"
    "g_slots_cached": 100.0,
    "g_rid_dict": 300.0,
    "g_rid_dict_cached": 250.0,  # clearly dearer
}


def _rounds() -> Rounds:
    rng = random.Random(7)
    runs: dict[str, list[list[float]]] = {}
    for w in range(3):
        drift = [1000.0 + rng.uniform(-50, 50) for _ in range(8)]
        for name, us in (("control", 0.0), *_COST_US.items()):
            jitter = 0.0 if name in ("control", "g_inline") else 1.0
            values = [
                (d + us + (jitter if (i + w) % 2 else -jitter)) * 1e-6 for i, d in enumerate(drift)
            ]
            bench = str(BenchName.of("step", name, scenario=_CASE, pattern="as_written"))
            runs.setdefault(bench, []).append(values)
    return Rounds(runs)


def _candidates() -> list[Candidate]:
    out = []
    for name in _COST_US:
        home = name.removeprefix("g_").removesuffix("_cached")
        port = WRITTEN if home == "inline" else CACHED if name.endswith("_cached") else PORTED
        out.append(Candidate(name, home, Path(f"{name}.py"), home == "inline", {}, port))
    return out


def test_homes_rank_by_the_better_port_against_the_current_home() -> None:
    rounds = _rounds()
    (case,) = build_cases(rounds, {}, {}, {}, {}, [_CASE], kind="step")
    ranked = rank(case, rounds, _candidates())
    first = ranked[0]
    assert first.home == "weak_table"  # by its cached port's 40 µs, not its 700 µs as ported
    assert first.port == CACHED
    assert set(first.costs) == {PORTED, CACHED}
    assert first.verdict == "better"
    assert first.versus is not None
    assert first.versus.ci_high < 0
    assert first.versus.median == pytest.approx(-60e-6, abs=2e-6)
    by = {r.home: r for r in ranked}
    assert by["inline"].verdict == "current"
    assert by["inline"].port == WRITTEN
    assert by["slots"].verdict == "same"
    assert by["slots"].versus is not None
    assert by["slots"].versus.ci_low <= 0 <= by["slots"].versus.ci_high
    assert ranked[-1].home == "rid_dict"
    assert ranked[-1].port == CACHED
    assert ranked[-1].verdict == "worse"
    # the table: one row per home in that order, both ports' figures, the current one marked
    lines = ranked_lines([case], rounds, _candidates(), {})
    rows = [ln for ln in lines if " µs [" in ln]
    assert [re.split(r"\s+", ln[5:].strip())[0] for ln in rows] == [r.home for r in ranked]
    assert sum(ln.startswith(" *") for ln in rows) == 1
    weak = rows[0]
    assert weak.count(" µs [") == 3  # as ported, once per function, vs current
    assert "700.0 µs" in weak
    assert "40.0 µs" in weak
    assert " cached " in weak
    assert "better" in weak
    assert " same " in next(ln for ln in rows if " slots " in ln)


@pytest.mark.slow
def test_advise_ranks_a_side_table_by_its_cached_port(tmp_path: Path) -> None:
    """A group on Req read 12 times a request: the side table as ported pays 12 lookups a
    request, once per function one; it is ranked by the cheaper, measured, port."""
    sha = _wide_repo(tmp_path / "sglang")
    out = tmp_path / "runs"
    r = run_cli(
        "target", "advise", f"{tmp_path / 'sglang'}@{sha}", "--group", "wd_", "--home",
        "weak_table", "--quick", "--scenario", "decode-dspark", "--output-dir", str(out),
        "--budget", "off",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    (run_dir,) = out.iterdir()
    targets = json.loads((run_dir / "manifest.json").read_text())["targets"]
    assert {(t["candidate"], t["port"]) for t in targets.values()} == {
        ("inline", WRITTEN),
        ("weak_table", PORTED),
        ("weak_table", CACHED),
    }
    blocks = [b for b in r.stdout.split("\n\n") if " µs [" in b]
    assert len(blocks) == 1  # the quick set measures in cache only
    number = r"(-?[\d,]+\.\d) µs \["
    for block in blocks:
        rows = [ln for ln in block.splitlines() if " µs [" in ln]
        assert len(rows) == 2
        weak = next(ln for ln in rows if " weak_table " in ln)
        ported, cached = (float(x.replace(",", "")) for x in re.findall(number, weak)[:2])
        assert cached < ported
        assert " cached " in weak  # the port it is ranked by
        lookups = re.search(r"([\d,]+) / ([\d,]+)", weak)
        assert lookups is not None
        assert int(lookups[1].replace(",", "")) == 12 * int(lookups[2].replace(",", ""))
        assert re.search(r"\b(better|worse|same)\b", weak)
