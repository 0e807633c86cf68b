"""A small SGLang-like git repository for the target-mode tests, written by the tests.

One commit per layout of the per-request PD hidden state (bench/target/home.py):

    fields     the ten fields on Req (pd_hidden_*), a batch-level capture-layer field set once
               per prefill batch, ForwardBatch.init_new reading it (the code before the PR)
    side       a side-table module (WeakKeyDictionary) with a slimmer Req, prefill call sites
               through the getter, and a get-or-create scan in ForwardBatch.init_new (the PR)
    lazy       the getter attaches the state with getattr(req, "pd_hidden_state", None)
    declared   the same with `pd_hidden_state = None` declared on Req
    forbidden  the side table's module imports torch outside TYPE_CHECKING
    none       no PD hidden state anywhere
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from strategies._contract import FIELD_DEFAULTS, FIELDS

SB = "python/sglang/srt/managers/schedule_batch.py"
PREFILL = "python/sglang/srt/disaggregation/prefill.py"
STATE = "python/sglang/srt/disaggregation/hidden_state.py"
FORWARD = "python/sglang/srt/model_executor/forward_batch_info.py"
MIXIN = "python/sglang/srt/dllm/mixin/req.py"

_REQ_HEAD = """from typing import List, Optional

from sglang.srt.dllm.mixin.req import ReqDllmMixin


class TimeStats:
    def __init__(self):
        self.created = 0


class Req(ReqDllmMixin):
{declared}    def __init__(self, rid, origin_input_text, origin_input_ids, sampling_params,
                 return_logprob=False, stream=False, bootstrap_port=None):
        self.rid = rid
        self.origin_input_text = origin_input_text
        self.origin_input_ids = origin_input_ids
        self.sampling_params = sampling_params
        self.output_ids = []
        self.return_logprob = return_logprob
        self.stream = stream
        self.bootstrap_port = bootstrap_port
        self.finished_reason = None
        self.prefix_indices = []
        self.extend_input_len = 0
        self.time_stats = TimeStats()
{fields}        self.init_diffusion_llm()


class ScheduleBatch:
    reqs: List[Req] = None
{batch_field}"""

_MIXIN = """class ReqDllmMixin:
    def init_diffusion_llm(self):
        self.dllm_ids = None
        self.dllm_block_offset = 0
        self.dllm_phase = None
"""

_STATE = """from __future__ import annotations

import weakref
{extra_import}from typing import TYPE_CHECKING, List, Optional

if TYPE_CHECKING:
    from sglang.srt.managers.schedule_batch import Req


class PDHiddenReqState:
    def __init__(self):
{fields}

{table}def get_pd_hidden_req_state(req: "Req") -> PDHiddenReqState:
{getter}


def get_pd_hidden_capture_layer_ids(reqs: List["Req"]) -> Optional[List[int]]:
    for req in reqs:
        layer_ids = get_pd_hidden_req_state(req).capture_layer_ids
        if layer_ids:
            return [int(x) for x in layer_ids]
    return None
"""

_SIDE_GETTER = """    state = _pd_hidden_req_states.get(req)
    if state is None:
        state = PDHiddenReqState()
        _pd_hidden_req_states[req] = state
    return state"""

_LAZY_GETTER = """    state = getattr(req, "pd_hidden_state", None)
    if state is None:
        state = PDHiddenReqState()
        req.pd_hidden_state = state
    return state"""

_DECLARED_GETTER = """    state = req.pd_hidden_state
    if state is None:
        state = PDHiddenReqState()
        req.pd_hidden_state = state
    return state"""


def _prefill(state: str) -> str:
    """prefill.py: `state` is how a field is reached, with {f} for the field's name."""
    clear = "\n".join(f"    {state.format(f=f)} = {FIELD_DEFAULTS[f]!r}" for f in FIELDS)
    head = ""
    if "pd_hidden_state(" in state:
        head = (
            "from sglang.srt.disaggregation.hidden_state import (\n"
            "    get_pd_hidden_capture_layer_ids,\n"
            "    get_pd_hidden_req_state as pd_hidden_state,\n"
            ")\n\n\n"
        )
    scan = (
        """    def _prepare_pd_hidden_capture_for_batch(self, batch):
        layers = None
        for req in batch.reqs:
            layers = getattr(req, "pd_hidden_capture_layer_ids", None)
            if layers:
                break
        if layers:
            batch.pd_hidden_capture_layer_ids = [int(x) for x in layers]
"""
        if not head
        else ""
    )
    return f"""{head}def clear_pd_hidden_request_state(req):
{clear}


def maybe_release_metadata_buffer(req):
    indices = {state.format(f="src_indices")}
    clear_pd_hidden_request_state(req)
    return indices


def maybe_release_pd_hidden_rows_on_hidden_done(req, pool):
    indices = {state.format(f="src_indices")}
    if not indices or pool is None:
        return False
    clear_pd_hidden_request_state(req)
    return True


class SchedulerDisaggregationPrefillMixin:
{scan}    def process_batch_result(self, batch):
        for req in batch.reqs:
            if {state.format(f="owner_direct_sent")}:
                continue
            {state.format(f="current_row_len")} = 0
"""


_FORWARD_FIELD = """class ForwardBatch:
    def __init__(self, pd_hidden_capture_layer_ids=None):
        self.pd_hidden_capture_layer_ids = pd_hidden_capture_layer_ids

    @classmethod
    def init_new(cls, batch, model_runner):
        return cls(pd_hidden_capture_layer_ids=batch.pd_hidden_capture_layer_ids)
"""

_FORWARD_SCAN = """from sglang.srt.disaggregation.hidden_state import get_pd_hidden_capture_layer_ids


class ForwardBatch:
    def __init__(self, pd_hidden_capture_layer_ids=None):
        self.pd_hidden_capture_layer_ids = pd_hidden_capture_layer_ids

    @classmethod
    def init_new(cls, batch, model_runner):
        layer_ids = get_pd_hidden_capture_layer_ids(batch.reqs)
        return cls(pd_hidden_capture_layer_ids=layer_ids)
"""


def _req(*, fields: bool, declared: bool = False) -> str:
    lines = "".join(
        f"        self.pd_hidden_{f}: Optional[object] = {FIELD_DEFAULTS[f]!r}\n" for f in FIELDS
    )
    return _REQ_HEAD.format(
        declared="    pd_hidden_state = None\n\n" if declared else "",
        fields=lines if fields else "",
        batch_field="    pd_hidden_capture_layer_ids: Optional[List[int]] = None\n"
        if fields
        else "",
    )


def _state(getter: str, *, table: bool, extra_import: str = "") -> str:
    fields = "\n".join(f"        self.{f} = {FIELD_DEFAULTS[f]!r}" for f in FIELDS)
    return _STATE.format(
        extra_import=extra_import,
        fields=fields,
        table="_pd_hidden_req_states = weakref.WeakKeyDictionary()\n\n\n" if table else "",
        getter=getter,
    )


def layouts() -> dict[str, dict[str, str | None]]:
    """Per commit, every file's text (None: the file is absent at that commit)."""
    side = {
        SB: _req(fields=False),
        PREFILL: _prefill("pd_hidden_state(req).{f}"),
        STATE: _state(_SIDE_GETTER, table=True),
        FORWARD: _FORWARD_SCAN,
        MIXIN: _MIXIN,
    }
    return {
        "fields": {
            SB: _req(fields=True),
            PREFILL: _prefill("req.pd_hidden_{f}"),
            STATE: None,
            FORWARD: _FORWARD_FIELD,
            MIXIN: _MIXIN,
        },
        "side": side,
        "lazy": {**side, STATE: _state(_LAZY_GETTER, table=False)},
        "declared": {
            **side,
            SB: _req(fields=False, declared=True),
            STATE: _state(_DECLARED_GETTER, table=False),
        },
        "forbidden": {
            **side,
            STATE: _state(_SIDE_GETTER, table=True, extra_import="import torch\n"),
        },
        "none": {
            SB: _req(fields=False),
            PREFILL: "def nothing():\n    return None\n",
            STATE: None,
            FORWARD: _FORWARD_FIELD.replace("pd_hidden_capture_layer_ids", "x"),
            MIXIN: _MIXIN,
        },
    }


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


def write_layout(repo: Path, label: str) -> None:
    for rel, text in layouts()[label].items():
        path = repo / rel
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def make_repo(root: Path, labels: tuple[str, ...] = tuple(layouts())) -> dict[str, str]:
    """A git repository at `root` with one commit per layout, in the order given; returns
    {label: full commit hash}. The working tree is left at the last commit."""
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "tests@example.invalid")
    _git(root, "config", "user.name", "tests")
    commits = {}
    for label in labels:
        write_layout(root, label)
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", label, "--allow-empty")
        commits[label] = _git(root, "rev-parse", "HEAD")
    return commits
