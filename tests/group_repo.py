"""A small SGLang-like git repository for the state-group tests, written by the tests.

One commit per home of a four-field group (`top_num`, `ids_val`, `out_val`, `out_idx`), the
call sites rewritten for each home as an upstream refactor would:

    inline      fields in Req.__init__                    req.top_num
    prefixed    the same under a prefix                   req.lp_top_num
    slots       a slots dataclass built in __init__       req.lp.top_num
    dict        a dataclass without slots                 req.lp.top_num
    lazy_cont   Req.lp = None, created on first use       req.lp.top_num
    weak        a WeakKeyDictionary side table            get_lp_state(req).top_num
    rid         a dict keyed by req.rid                   get_lp_state(req).top_num
    lazy        a holder attached with getattr            get_lp_state(req).top_num
    declared    the same with `lp_state = None` on Req    get_lp_state(req).top_num
    twice       two containers holding `top_num`          (a field matched twice)

Call sites (named as SGLang names them, so the hot-path table finds them):
ScheduleBatch.prepare_for_decode (1 access per batch request), ScheduleBatch.prepare_for_extend
(2 per batch request under `if self.return_logprob:`), release_kv_cache (1 per finished
request), prepare_abort (off the hot path).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

SB = "python/sglang/srt/managers/schedule_batch.py"
STATE = "python/sglang/srt/managers/lp_state.py"
COMMON = "python/sglang/srt/mem_cache/common.py"
UTILS = "python/sglang/srt/disaggregation/utils.py"
FIELDS = ("top_num", "ids_val", "out_val", "out_idx")
HOMES = ("inline", "prefixed", "slots", "dict", "lazy_cont", "weak", "rid", "lazy", "declared")

_CONTAINER = """

@dataclasses.dataclass({args})
class ReqLp:
    top_num: int
    ids_val: Optional[List[int]] = None
    out_val: Optional[list] = None
    out_idx: Optional[list] = None
"""

_STATE = """import weakref

from typing import List, Optional


class LpState:
    def __init__(self):
        self.top_num = 0
        self.ids_val = None
        self.out_val = None
        self.out_idx = None


{table}def get_lp_state(req):
{getter}
"""

_GETTERS = {
    "weak": (
        "_lp_states = weakref.WeakKeyDictionary()\n\n\n",
        "    state = _lp_states.get(req)\n    if state is None:\n        state = LpState()\n"
        "        _lp_states[req] = state\n    return state",
    ),
    "rid": (
        "_lp_states = {}\n\n\n",
        "    state = _lp_states.get(req.rid)\n    if state is None:\n        state = LpState()\n"
        "        _lp_states[req.rid] = state\n    return state",
    ),
    "lazy": (
        "",
        '    state = getattr(req, "lp_state", None)\n    if state is None:\n'
        "        state = LpState()\n        req.lp_state = state\n    return state",
    ),
    "declared": (
        "",
        "    state = req.lp_state\n    if state is None:\n        state = LpState()\n"
        "        req.lp_state = state\n    return state",
    ),
}


def reach(home: str, recv: str, field: str) -> str:
    """How a call site reaches one field at this home."""
    if home == "inline":
        return f"{recv}.{field}"
    if home == "prefixed":
        return f"{recv}.lp_{field}"
    if home in ("slots", "dict", "lazy_cont", "twice"):
        return f"{recv}.lp.{field}"
    return f"get_lp_state({recv}).{field}"


def _req(home: str) -> str:
    head = "import dataclasses\nfrom typing import List, Optional\n"
    if home in ("weak", "rid", "lazy", "declared"):
        head += "\nfrom sglang.srt.managers.lp_state import get_lp_state\n"
    if home in ("slots", "lazy_cont", "twice"):
        head += _CONTAINER.format(args="slots=True, kw_only=True")
    elif home == "dict":
        head += _CONTAINER.format(args="kw_only=True")
    if home == "twice":
        head += _CONTAINER.format(args="slots=True").replace("class ReqLp:", "class ReqLp2:")
    init = ""
    if home == "inline":
        init = (
            "        self.top_num = top_num\n        self.ids_val = None\n"
            "        self.out_val = None\n        self.out_idx = None\n"
        )
    elif home == "prefixed":
        init = "".join(
            f"        self.lp_{f} = {'top_num' if f == 'top_num' else 'None'}\n" for f in FIELDS
        )
    elif home in ("slots", "dict", "twice"):
        init = "        self.lp = ReqLp(top_num=top_num)\n"
        if home == "twice":
            init += "        self.lp2 = ReqLp2(top_num=top_num)\n"
    elif home == "lazy_cont":
        init = "        self.lp: Optional[ReqLp] = None\n"
    declared = "    lp_state = None\n\n" if home == "declared" else ""
    decode = reach(home, "req", "top_num")
    ext_a = reach(home, "r", "top_num")
    ext_b = reach(home, "r", "ids_val")
    return f"""{head}

class Req:
{declared}    def __init__(self, rid, origin_input_text, origin_input_ids, sampling_params,
                 return_logprob=False, top_num=0, stream=False):
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
    return_logprob: bool = False

    def prepare_for_decode(self):
        for req in self.reqs:
            req.kv_committed_len += 1
            {decode} += 1

    def prepare_for_extend(self):
        reqs = self.reqs
        if self.return_logprob:
            self.nums = [{ext_a} for r in reqs]
            self.ids = [{ext_b} for r in reqs]
"""


def _common(home: str) -> str:
    imp = "from sglang.srt.managers.lp_state import get_lp_state\n\n\n" if home in _GETTERS else ""
    if home == "lazy_cont":
        imp = "from sglang.srt.managers.schedule_batch import ReqLp\n\n\n"
        create = "    if req.lp is None:\n        req.lp = ReqLp(top_num=0)\n"
    else:
        create = ""
    return f"""{imp}def release_kv_cache(req, tree_cache):
{create}    value = {reach(home, "req", "out_val")}
    return value
"""


def _utils(home: str) -> str:
    imp = "from sglang.srt.managers.lp_state import get_lp_state\n\n\n" if home in _GETTERS else ""
    writes = "\n".join(f"        {reach(home, 'req', f)} = None" for f in FIELDS[1:])
    return f"""{imp}def prepare_abort(req, message):
    if req.return_logprob:
{writes}
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _write(repo: Path, rel: str, text: str) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def build(repo: Path, homes: tuple[str, ...] = (*HOMES, "twice")) -> dict[str, str]:
    """A repository with one commit per home, in order; {home: commit}."""
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q", "-b", "main")
    commits: dict[str, str] = {}
    for home in homes:
        _write(repo, SB, _req(home))
        _write(repo, COMMON, _common(home))
        _write(repo, UTILS, _utils(home))
        state = repo / STATE
        if home in _GETTERS:
            table, getter = _GETTERS[home]
            _write(repo, STATE, _STATE.format(table=table, getter=getter))
        elif state.exists():
            state.unlink()
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", home)
        commits[home] = _git(repo, "rev-parse", "HEAD")
    return commits
