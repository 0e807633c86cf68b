"""A tiny SGLang-shaped package for the real-mode tests, written by the tests: just the names
the driver (bench/real/driver/) reaches, with a scheduler loop of the real one's shape.

    sglang/srt/server_args.py        ServerArgs (a dataclass), PortArgs.init_new
    sglang/srt/managers/io_struct.py TokenizedGenerateReqInput, FreezeGCReq
    sglang/srt/managers/schedule_batch.py   Req (finished()), ScheduleBatch (prepare_for_*)
    sglang/srt/managers/scheduler.py Scheduler (its event_loop_normal: receive from its zmq
                                     socket, get the next batch, run it, process the result,
                                     stream the outputs to its zmq socket), run_scheduler_process
    sglang/srt/model_executor/model_runner.py  ModelRunner (forward, sample), ModelRunnerOutput
    sglang/srt/layers/logits_processor.py      LogitsProcessorOutput
    sglang/srt/sampling/sampling_params.py     SamplingParams

`variant` changes the tree the way a commit would: "slow_alloc" makes admission cost O(pool
size) (a list sliced from its head, as ReqToTokenPool.alloc did before sgl-project/sglang
#32208); "gpu_import" imports a GPU-only package at module level (the driver stubs it);
"gpu_call" also calls it in the loop (the stub raises); "missing" imports a package that is
not installed; "spec" has speculative algorithms to name (its ServerArgs refuses more than 8 draft
tokens, as a revision's checks refuse a draft configuration).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

FILES: dict[str, str] = {
    "sglang/__init__.py": '__version__ = "0.0.1.test"\n',
    "sglang/srt/__init__.py": "",
    "sglang/srt/layers/__init__.py": "",
    "sglang/srt/sampling/__init__.py": "",
    "sglang/srt/model_executor/__init__.py": "",
    "sglang/srt/managers/__init__.py": "",
    "sglang/srt/server_args.py": """
        import dataclasses, tempfile

        @dataclasses.dataclass
        class ServerArgs:
            model_path: str
            device: str = "cuda"
            attention_backend: str = None
            sampling_backend: str = None
            load_format: str = "auto"
            skip_tokenizer_init: bool = False
            disable_cuda_graph: bool = False
            disable_overlap_schedule: bool = False
            log_level: str = "info"
            mem_fraction_static: float = None
            max_running_requests: int = None
            max_total_tokens: int = None
            chunked_prefill_size: int = 8192
            random_seed: int = 0
            nccl_port: int = None
            speculative_algorithm: str = None
            speculative_num_steps: int = None
            speculative_eagle_topk: int = None
            speculative_num_draft_tokens: int = None
            speculative_ngram_max_bfs_breadth: int = 10

            def __post_init__(self):
                # the toy's own check of a draft configuration, as SGLang's speculative hook has
                if self.speculative_algorithm and (self.speculative_num_draft_tokens or 0) > 8:
                    raise ValueError("the toy verifies at most 8 draft tokens")

        @dataclasses.dataclass
        class PortArgs:
            scheduler_input_ipc_name: str
            detokenizer_ipc_name: str

            @staticmethod
            def init_new(server_args):
                a = tempfile.NamedTemporaryFile(delete=False).name
                b = tempfile.NamedTemporaryFile(delete=False).name
                return PortArgs(f"ipc://{a}", f"ipc://{b}")
    """,
    "sglang/srt/managers/io_struct.py": """
        import dataclasses
        from typing import List, Optional

        @dataclasses.dataclass
        class TokenizedGenerateReqInput:
            rid: str
            input_text: str
            input_ids: List[int]
            sampling_params: object
            return_logprob: bool
            logprob_start_len: int
            top_logprobs_num: int
            stream: bool
            mm_inputs: Optional[dict] = None

        @dataclasses.dataclass
        class FreezeGCReq:
            pass

        @dataclasses.dataclass
        class BatchTokenIDOutput:
            rids: List[str]
            tokens: List[int]
            finished: List[bool]
    """,
    "sglang/srt/sampling/sampling_params.py": """
        class SamplingParams:
            def __init__(self, max_new_tokens=128, temperature=1.0, ignore_eos=False):
                self.max_new_tokens = max_new_tokens
                self.temperature = temperature
                self.ignore_eos = ignore_eos

            def normalize(self, tokenizer):
                pass

            def verify(self, vocab_size):
                if self.max_new_tokens < 0:
                    raise ValueError("max_new_tokens")
    """,
    "sglang/srt/layers/logits_processor.py": """
        import dataclasses

        @dataclasses.dataclass
        class LogitsProcessorOutput:
            next_token_logits: object
    """,
    "sglang/srt/model_executor/model_runner.py": """
        import dataclasses
        import torch

        @dataclasses.dataclass
        class ModelRunnerOutput:
            logits_output: object
            can_run_graph: bool

        class ModelRunner:
            def forward(self, forward_batch):
                raise RuntimeError("the real model must never run in a test")

            def sample(self, logits_output, forward_batch):
                raise RuntimeError("the real sampler must never run in a test")
    """,
    "sglang/srt/managers/schedule_batch.py": """
        import enum
        import torch

        class ForwardMode(enum.IntEnum):
            EXTEND = 1
            DECODE = 2

        class Req:
            def __init__(self, rid, input_ids, max_new_tokens):
                self.rid = rid
                self.origin_input_ids = input_ids
                self.output_ids = []
                self.max_new_tokens = max_new_tokens
                self.req_pool_idx = None

            def finished(self):
                return len(self.output_ids) >= self.max_new_tokens

        class ScheduleBatch:
            def __init__(self, reqs, mode):
                self.reqs = reqs
                self.forward_mode = mode
                self.seq_lens = None

            def prepare_for_extend(self):
                self.seq_lens = torch.tensor([len(r.origin_input_ids) for r in self.reqs])

            def prepare_for_decode(self):
                self.seq_lens = torch.tensor(
                    [len(r.origin_input_ids) + len(r.output_ids) for r in self.reqs]
                )
    """,
    "sglang/srt/managers/scheduler.py": """
        import pickle
        import zmq
        from sglang.srt.managers.io_struct import (
            BatchTokenIDOutput, FreezeGCReq, TokenizedGenerateReqInput,
        )
        from sglang.srt.managers.schedule_batch import ForwardMode, Req, ScheduleBatch
        from sglang.srt.model_executor.model_runner import ModelRunner
        {extra_import}

        class Pool:
            def __init__(self, size):
                self.free_slots = list(range(size))

            def alloc(self, n):
                {alloc}

            def free(self, slot):
                self.free_slots.append(slot)

        class Scheduler:
            def __init__(self, server_args, port_args):
                ctx = zmq.Context()
                self.recv_from_tokenizer = ctx.socket(zmq.PULL)
                self.recv_from_tokenizer.bind(port_args.scheduler_input_ipc_name)
                self.send_to_detokenizer = ctx.socket(zmq.PUSH)
                self.send_to_detokenizer.connect(port_args.detokenizer_ipc_name)
                self.model_runner = ModelRunner()
                self.pool = Pool(server_args.max_running_requests or 64)
                self.waiting_queue = []
                self.running = []
                self.last_batch = None
                self.chunk = server_args.chunked_prefill_size

            def run_event_loop(self):
                self.event_loop_normal()

            def event_loop_normal(self):
                while True:
                    recv = []
                    while True:
                        try:
                            recv.append(self.recv_from_tokenizer.recv_pyobj(zmq.NOBLOCK))
                        except zmq.ZMQError:
                            break
                    self.process_input_requests(recv)
                    batch = self.get_next_batch_to_run()
                    if batch is not None:
                        result = self.run_batch(batch)
                        self.process_batch_result(batch, result)
                    self.last_batch = batch

            def process_input_requests(self, recv):
                for r in recv:
                    if isinstance(r, FreezeGCReq):
                        import gc
                        gc.freeze()
                    elif isinstance(r, TokenizedGenerateReqInput):
                        self.waiting_queue.append(
                            Req(r.rid, r.input_ids, r.sampling_params.max_new_tokens)
                        )

            def get_next_batch_to_run(self):
                if self.waiting_queue:
                    reqs, tokens = [], 0
                    while self.waiting_queue and tokens < self.chunk:
                        req = self.waiting_queue.pop(0)
                        tokens += len(req.origin_input_ids)
                        reqs.append(req)
                    for req, slot in zip(reqs, self.pool.alloc(len(reqs))):
                        req.req_pool_idx = slot
                    batch = ScheduleBatch(reqs, ForwardMode.EXTEND)
                    batch.prepare_for_extend()
                    return batch
                if self.running:
                    batch = ScheduleBatch(list(self.running), ForwardMode.DECODE)
                    batch.prepare_for_decode()
                    return batch
                return None

            def run_batch(self, batch):
                {gpu_call}
                out = self.model_runner.forward(batch)
                return self.model_runner.sample(out.logits_output, batch)

            def process_batch_result(self, batch, next_ids):
                finished = []
                for req, tok in zip(batch.reqs, next_ids.tolist()):
                    req.output_ids.append(tok)
                    if req.finished():
                        finished.append(req)
                    elif batch.forward_mode == ForwardMode.EXTEND:
                        self.running.append(req)
                for req in finished:
                    if req in self.running:
                        self.running.remove(req)
                    self.pool.free(req.req_pool_idx)
                self.stream_output(batch.reqs)

            def stream_output(self, reqs):
                out = BatchTokenIDOutput(
                    [r.rid for r in reqs], [r.output_ids[-1] for r in reqs],
                    [r.finished() for r in reqs],
                )
                self.send_to_detokenizer.send_pyobj(out)

        def run_scheduler_process(server_args, port_args, gpu_id, tp_rank, dp_rank, pipe_writer):
            scheduler = Scheduler(server_args, port_args)
            pipe_writer.send({"status": "ready", "max_total_num_tokens": 1})
            try:
                scheduler.run_event_loop()
            except Exception:
                raise SystemExit("the scheduler hit an exception (a real one signals its parent)")
    """,
}

# A side table of per-request state behind a getter, and the forward's scan over the batch (the
# shape of the state home real mode's --real-home replaces: bench/real/driver/inject.py).
SIDE_TABLE = """
import weakref


class State:
    def __init__(self):
        self.capture_layer_ids = None


_states = weakref.WeakKeyDictionary()


def get_pd_hidden_req_state(req):
    state = _states.get(req)
    if state is None:
        state = _states[req] = State()
    return state


def get_pd_hidden_capture_layer_ids(reqs):
    for req in reqs:
        ids = get_pd_hidden_req_state(req).capture_layer_ids
        if ids:
            return list(ids)
    return None
"""

SPEC_INFO = """
import enum


class SpeculativeAlgorithm(enum.Enum):
    EAGLE = 1
    NGRAM = 2
"""

ALLOC = {
    "fast": "out = self.free_slots[-n:] if n else []\n                del self.free_slots[len(self.free_slots) - n:]\n                return out",
    "slow_alloc": "out = self.free_slots[:n]\n                self.free_slots = self.free_slots[n:]\n                for _ in range(200):\n                    list(self.free_slots)\n                return out",
}


def write(root: Path, variant: str = "fast") -> Path:
    """The package under root/python (what the driver puts on sys.path); returns that folder."""
    extra_import = {
        "gpu_import": "import sgl_kernel.ops as gpu_ops",
        "gpu_call": "import sgl_kernel.ops as gpu_ops",
        "missing": "import reqstate_not_installed_pkg",
        "side_table": "from sglang.srt.disaggregation.hidden_state import get_pd_hidden_capture_layer_ids",
    }.get(variant, "")
    gpu_call = {
        "gpu_call": "gpu_ops.launch(batch)",
        "side_table": "get_pd_hidden_capture_layer_ids(batch.reqs)",
    }.get(variant, "pass")
    alloc = ALLOC["slow_alloc" if variant == "slow_alloc" else "fast"]
    base = root / "python"
    for rel, text in FILES.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        body = text.replace("{extra_import}", extra_import).replace("{gpu_call}", gpu_call)
        body = textwrap.dedent(body.replace("{alloc}", alloc))
        path.write_text(body.lstrip("\n"), encoding="utf-8")
    algorithms = base / "sglang" / "srt" / "speculative"
    if variant == "spec":  # names the capability check reads; the toy runs no draft
        algorithms.mkdir(parents=True, exist_ok=True)
        (algorithms / "__init__.py").write_text("", encoding="utf-8")
        (algorithms / "spec_info.py").write_text(SPEC_INFO.lstrip("\n"), encoding="utf-8")
    elif algorithms.exists():
        import shutil

        shutil.rmtree(algorithms)
    table = base / "sglang" / "srt" / "disaggregation"
    if variant == "side_table":
        table.mkdir(parents=True, exist_ok=True)
        (table / "__init__.py").write_text("", encoding="utf-8")
        (table / "hidden_state.py").write_text(SIDE_TABLE.lstrip("\n"), encoding="utf-8")
    elif table.exists():
        import shutil

        shutil.rmtree(table)
    return base


PYPROJECT = """[project]
name = "sglang"
dependencies = [
  "aiohttp",
  "transformers==5.12.1",
  "sglang-kernel==0.4.6.post1",
  "flashinfer_python[cu13]==0.6.17",
  "torch==2.13.0",
  "torchvision",
  "decord2 ; sys_platform == 'darwin'",
  "xgrammar==0.2.1",
]
"""
PYPROJECT_CPU = """[project]
name = "sglang-cpu"
dependencies = ["triton==3.7.0", "torch==2.12.0", "aiohttp"]
"""


def _git(root: Path, *args: str) -> str:
    import subprocess

    env = {
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(root), "PATH": "/usr/bin:/bin",
    }  # fmt: skip
    out = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, env=env, check=True
    )
    return out.stdout.strip()


def write_repo(root: Path, variants: tuple[str, ...] = ("fast", "slow_alloc")) -> Path:
    """A git repository with one commit per variant, each tagged with its name."""
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    for variant in variants:
        write(root, variant)
        (root / "python" / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
        (root / "python" / "pyproject_cpu.toml").write_text(PYPROJECT_CPU, encoding="utf-8")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "--allow-empty", "-m", variant)
        _git(root, "tag", variant)
    return root
