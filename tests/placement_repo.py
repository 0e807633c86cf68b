"""A small SGLang-like git repository for the placement tests, written by the tests.

One inline group of three fields on Req (`pl_a`, `pl_b`, `pl_c`: the prefix group `pl_`),
touched by functions named as SGLang names them, one commit per layout:

    class      result processing on SchedulerBatchResultProcessor (the typed table's layout)
    mixin      the same method on SchedulerOutputProcessorMixin (upstream before #25637)
    renamed    the class renamed to BatchResultHandler
    new        `class` plus Scheduler.scan_every_request, a function no table has heard of,
               touching the group more than the placed functions do
    branches   `class` with ScheduleBatch.prepare_for_decode written as if/else
    empty      only prepare_abort (known cold) and a function no table has heard of

Every commit also has prepare_abort (known cold) touching `pl_c`.
"""

from __future__ import annotations

from pathlib import Path

from tests.group_repo import _git

SB = "python/sglang/srt/managers/schedule_batch.py"
BRP = "python/sglang/srt/managers/scheduler_components/batch_result_processor.py"
S = "python/sglang/srt/managers/scheduler.py"
UTILS = "python/sglang/srt/disaggregation/utils.py"
LAYOUTS = ("class", "mixin", "renamed", "new", "branches", "empty")

_REQ = """from typing import List


class Req:
    def __init__(self, rid, origin_input_text, origin_input_ids, sampling_params):
        self.rid = rid
        self.origin_input_text = origin_input_text
        self.origin_input_ids = origin_input_ids
        self.sampling_params = sampling_params
        self.output_ids = []
        self.finished_reason = None
        self.pl_a = 0
        self.pl_b = 0
        self.pl_c = None


class ScheduleBatch:
    reqs: List[Req] = None

{decode}
"""

_DECODE = """    def prepare_for_decode(self):
        for req in self.reqs:
            req.pl_a += 1
"""

_DECODE_BRANCHES = """    def prepare_for_decode(self):
        for req in self.reqs:
            if req.finished_reason is None:
                req.pl_a += 1
            else:
                req.pl_a = 0
"""

_RESULT = """class {cls}:
    def process_batch_result_decode(self, batch, result):
        for req in batch.reqs:
            req.pl_b = 1
"""

_SCAN = """class Scheduler:
    def scan_every_request(self):
        for req in self.running_batch.reqs:
            req.pl_a
            req.pl_b
            req.pl_c
            req.pl_a = 0
            req.pl_b = 0
            req.pl_c = None
"""

_ABORT = """def prepare_abort(req, message):
    req.pl_c = None
"""


def _files(layout: str) -> dict[str, str]:
    decode = "    pass\n" if layout == "empty" else _DECODE
    if layout == "branches":
        decode = _DECODE_BRANCHES
    files = {SB: _REQ.format(decode=decode), UTILS: _ABORT}
    cls = {"mixin": "SchedulerOutputProcessorMixin", "renamed": "BatchResultHandler"}
    if layout != "empty":
        files[BRP] = _RESULT.format(cls=cls.get(layout, "SchedulerBatchResultProcessor"))
    if layout in ("new", "empty"):
        files[S] = _SCAN
    return files


def build(repo: Path) -> dict[str, str]:
    """A repository with one commit per layout, in order; {layout: commit}."""
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q", "-b", "main")
    commits: dict[str, str] = {}
    for layout in LAYOUTS:
        for rel in (SB, BRP, S, UTILS):
            (repo / rel).unlink(missing_ok=True)
        for rel, text in _files(layout).items():
            path = repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", layout)
        commits[layout] = _git(repo, "rev-parse", "HEAD")
    return commits
