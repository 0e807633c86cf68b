"""One driver process: `python -m bench.real.driver.main JOB.json OUT.json`, run by a
revision's own interpreter (bench/real/venv.py) with the revision on sys.path.

The job says what to build and measure (bench.real.protocol); the output says what happened:
the records of every measured iteration, or, where the revision could not be imported, built or
driven, an error of one line with its kind (`missing` with the module and its importer,
`import` with the name, `stub` where a stubbed GPU-only package was reached, `error`).
Whatever the driver replaced or patched is listed in the output, for the manifest and the
report.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import json
import os
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

from bench.base.timing import now_ns
from bench.real.driver import (
    calls,
    dspark,
    inject,
    ipc,
    kernels,
    logits,
    server,
    spec,
    standin,
    stubs,
    transfer,
    triton_kernels,
    triton_launch,
)
from bench.real.driver import tokenizer as stand_in_tokenizer
from bench.real.driver.calls import CallCounter
from bench.real.driver.client import Client
from bench.real.driver.coverage import LineTracer
from bench.real.driver.loop import Finished, Plan, Steering
from bench.real.driver.phases import Phases
from bench.real.driver.requests import RequestFactory, Workload

# Imported before anything is built: their import-time failures are the revision's, not the run's.
MODULES = (
    "sglang.srt.server_args",
    "sglang.srt.managers.io_struct",
    "sglang.srt.managers.schedule_batch",
    "sglang.srt.managers.scheduler",
    "sglang.srt.model_executor.model_runner",
    "sglang.srt.layers.logits_processor",
    "sglang.srt.sampling.sampling_params",
)


class Failed(BaseException):
    """An exception in the revision's Scheduler, carried past its own `except Exception`
    (which would signal the parent process, the harness, with SIGQUIT)."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.exc = exc


def _carry(cls: type, name: str) -> None:
    """Wrap cls.name so an Exception leaves it as Failed."""
    original = cls.__dict__[name]

    def carried(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        except Exception as exc:
            raise Failed(exc) from exc

    setattr(cls, name, carried)


def _where(exc: BaseException) -> str:
    """The innermost frame of the revision's code in a traceback: 'sglang/x.py:123'."""
    frames = traceback.extract_tb(exc.__traceback__)
    for fr in reversed(frames):
        if f"{os.sep}sglang{os.sep}" in fr.filename:
            return fr.filename[fr.filename.rfind(f"{os.sep}sglang{os.sep}") + 1 :] + f":{fr.lineno}"
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"


def _importer(exc: BaseException) -> str:
    """The revision's module whose import failed (the innermost sglang frame's module)."""
    where = _where(exc)
    path = where.rpartition(":")[0]
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def classify(exc: BaseException) -> dict[str, Any]:
    """One line per failure, and what kind it is."""
    if isinstance(exc, Failed):
        exc = exc.exc
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return {
            "kind": "missing",
            "module": exc.name,
            "importer": _importer(exc),
            "message": f"{_importer(exc)} imports {exc.name}, which is not installed",
        }
    if isinstance(exc, ImportError):
        return {
            "kind": "import",
            "module": exc.name or "",
            "importer": _importer(exc),
            "message": f"{_importer(exc)}: {str(exc).splitlines()[0] if str(exc) else exc!r}",
        }
    kind = "stub" if isinstance(exc, stubs.StubReached) else "error"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return {"kind": kind, "message": f"{type(exc).__name__} at {_where(exc)}: {text}"}


def _device_ops(
    job: dict[str, Any], phases: Phases
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Under speculative decoding, the sgl_kernel CPU ops the revision's spec path calls, served
    by their torch versions (bench.real.driver.kernels), each call timed as the stand-in's: on
    a GPU server they are device kernels, as the model's forward is. (sgl_kernel's names,
    torch.ops.sgl_kernel's.)"""
    if not job.get("spec"):
        return {}, {}

    def timed(ops: dict[str, Any]) -> dict[str, Any]:
        return {name: phases.timed("stand_in", op) for name, op in ops.items()}

    return {"sgl_kernel": timed(kernels.OPS)}, {"sgl_kernel": timed(kernels.TORCH_OPS)}


def _record_stream_on_cpu(torch: Any) -> list[str]:
    """Tensor.record_stream on a CPU tensor does nothing: it is a hint to CUDA's caching
    allocator (keep the memory until that stream's work is done), which the CPU does not have;
    torch refuses it for a CPU stream ("unknown parameter type"), and the spec v2 overlap loop
    calls it (python/sglang/srt/managers/overlap_utils.py:417 at sgl-project/sglang
    d55f1c28e2)."""
    original = torch.Tensor.record_stream

    def record_stream(self: Any, stream: Any) -> None:
        if self.device.type == "cpu":
            return None
        return original(self, stream)

    torch.Tensor.record_stream = record_stream
    return ["Tensor.record_stream: nothing for a CPU tensor (a CUDA caching-allocator hint)"]


def _cuda_synchronize_on_cpu(torch: Any) -> list[str]:
    """torch.cuda.synchronize where torch has no CUDA does nothing: it waits for the work queued
    on the CUDA devices, and there is none; torch refuses it instead ("Torch not compiled with
    CUDA enabled"). A revision from before SGLang's CPU speculative path calls it when its EAGLE
    draft shares the target's embedding (LlamaForCausalLM.set_embed_and_head:
    python/sglang/srt/models/llama.py:762-772 at sgl-project/sglang d7c93e183b; later
    revisions call their platform's synchronize, a no-op on the CPU)."""
    if torch.cuda.is_available():
        return []
    torch.cuda.synchronize = _no_device_work
    return ["torch.cuda.synchronize: nothing, torch having no CUDA (no device work to wait for)"]


def _no_device_work(device: Any = None) -> None:
    return None


def _import_revision(job: dict[str, Any], out: dict[str, Any], phases: Phases) -> stubs.StubFinder:
    """The revision imported under its stubs; what it is and how long its import took."""

    import torch

    os.environ.update(job.get("env", {}))
    warnings.filterwarnings("ignore")  # the revision's import-time warnings are not ours
    implemented, torch_ops = _device_ops(job, phases)
    finder = stubs.install(
        job.get("stubs", ()), stubs.paired_versions(torch.__version__), implemented, torch_ops
    )
    if job.get("spec"):
        out["replaced"] += triton_launch.install(phases, triton_kernels.KERNELS)
        out["replaced"] += _record_stream_on_cpu(torch)
        out["replaced"] += _cuda_synchronize_on_cpu(torch)
    t0 = time.time()
    for name in MODULES:
        importlib.import_module(name)
    import sglang

    out["import_s"] = round(time.time() - t0, 2)
    if job.get("spec"):
        out["replaced"] += server.cuda_branches()
    out["sglang_file"] = str(Path(sglang.__file__).parent)
    out["sglang_version"] = getattr(sglang, "__version__", None)
    torch.set_num_threads(int(job.get("torch_threads", 1)))
    return finder


def _tokenizer(job: dict[str, Any], workload: Workload) -> tuple[Path | None, Any]:
    """The stand-in tokenizer's folder (trained once into the cache) and, where requests need
    it to be normalised (stop strings), the tokenizer itself, as the tokenizer manager holds it."""
    cache = job.get("tokenizer_cache")
    if not cache or not stand_in_tokenizer.available():
        if workload.features.needs_tokenizer:
            raise RuntimeError(
                "the preset's stop strings or grammars need a tokenizer, and this environment "
                "has no `tokenizers` package to train the stand-in's"
            )
        return None, None
    folder = stand_in_tokenizer.ensure(cache, workload.vocab_size)
    if not workload.features.stop:
        return folder, None
    from transformers import AutoTokenizer

    return folder, AutoTokenizer.from_pretrained(str(folder))


def _speculative(job: dict[str, Any], workload: Workload) -> list[str]:
    """The stand-in's accept draws under speculative decoding (bench.real.driver.spec)."""
    conf = job.get("spec")
    if not conf:
        return []
    model = spec.AcceptModel(float(conf["accept_len"]), int(conf["drafts"]), str(conf["dist"]))
    spec.STATE.model = model
    spec.STATE.seed = int(workload.seed)
    spec.STATE.vocab = int(workload.vocab_size)
    return [
        "speculative decoding: the target's verify predicts, per request and step, the drafts "
        f"drawn for it ({model.dist} accept length, mean {model.mean:g}, sd "
        f"{model.spread():.2f}, at most {model.drafts} drafts) and then a bonus token, so the "
        "revision's own verify accepts them; the model's text follows a fixed successor of each "
        "token (the draft proposes it, the bonus token is it), so n-gram drafts find matches; "
        "logits carry their argmax (no reduction over the vocabulary is run); the "
        "sgl_kernel CPU ops of the spec path run as torch versions timed as the stand-in's "
        "(bench/real/driver/kernels.py)"
    ]


def _steering(job: dict[str, Any], out: dict[str, Any], phases: Phases) -> Steering:
    """The stand-in, the sockets, the request stream, an injected state home: in place before
    the Scheduler is built."""
    from sglang.srt.managers import io_struct, schedule_batch

    phases.install()
    workload = Workload.from_json(job["workload"])
    out["replaced"] += _speculative(job, workload)
    if _is_dspark(job):
        out["replaced"] += dspark.install(phases)
    out["replaced"] += standin.install(
        phases,
        workload.vocab_size,
        int(job.get("hidden_width", server.MODEL_CONFIG["hidden_size"])),
    )
    folder, tokenizer = _tokenizer(job, workload)
    out["tokenizer_dir"] = str(folder) if folder is not None else None
    channel = ipc.Channel()
    out["replaced"] += ipc.install(channel)
    if job.get("transfer"):
        out["replaced"] += transfer.install()
    encode = ipc.encoder()

    def send(obj: Any) -> None:
        channel.pending.append(encode(obj))

    steering = Steering(
        client=Client(RequestFactory(workload, tokenizer), workload.running, send),
        channel=channel,
        phases=phases,
        plan=Plan(**job["plan"]),
        encode=encode,
        freeze_request=getattr(io_struct, "FreezeGCReq", None),
    )
    if job.get("inject"):
        strategy, lines = inject.install(job["inject"])
        out["replaced"] += lines
        steering.release = strategy.release
        out["injected"] = strategy.NAME
    steering.track_requests(schedule_batch.Req)
    steering.track_retractions(schedule_batch.ScheduleBatch)
    if job.get("mode") == "count":
        steering.counter = CallCounter(out["sglang_file"])
        if job.get("coverage"):
            steering.tracer = LineTracer(out["sglang_file"])
    channel.on_boundary = steering.boundary

    def on_finish() -> None:
        out["live_at_end"] = len(steering._live) + len(steering.channel.pending)
        out["tracked_at_end"] = len(gc.get_objects()) + gc.get_freeze_count()
        out["frozen"] = gc.get_freeze_count()

    steering.on_finish = on_finish
    gc.callbacks.append(steering.gc_callback)
    return steering


def _is_dspark(job: dict[str, Any]) -> bool:
    return (job.get("spec") or {}).get("algorithm") == "DSPARK"


def _draft(job: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The stand-in's draft model, where the preset's speculation has one: its server argument."""
    conf = job.get("spec") or {}
    if not conf.get("draft_model"):
        return {}
    if _is_dspark(job):
        # gamma: the window less its anchor (speculative_num_draft_tokens = gamma + 1)
        gamma = int(conf["draft_tokens"]) - 1
        draft = server.write_dspark_draft(folder, int(job["context_len"]), gamma)
    else:
        draft = server.write_draft(folder, int(job["context_len"]), conf.get("draft_arch", ""))
    return {"speculative_draft_model_path": str(draft)}


def _spec_resolved(scheduler: Any) -> dict[str, Any]:
    """The speculative configuration the revision settled on (its checks may change what was
    asked: a topk-1 chain's draft tokens follow its steps), read from the built scheduler."""
    args = getattr(scheduler, "server_args", None)
    names = ("speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
             "speculative_num_draft_tokens")  # fmt: skip
    return {n: getattr(args, n, None) for n in names if args is not None}


def _drive(job: dict[str, Any], out: dict[str, Any], steering: Steering) -> server.InfoPipe:
    """Build the Scheduler as the server does and step its loop until the plan is measured."""
    from sglang.srt.managers import scheduler

    built: dict[str, float] = {"t": 0.0}
    original_loop = scheduler.Scheduler.run_event_loop

    claims = server.Claims()

    def run_event_loop(self: Any) -> Any:
        claims.release()
        out["build_s"] = round(time.time() - built["t"], 2)
        # the loop the revision chose (its dispatch_event_loop reads enable_overlap): a
        # revision may turn the preset's loop off, and the run must say so
        out["loop"] = "overlap" if getattr(self, "enable_overlap", False) else "normal"
        out["spec_resolved"] = _spec_resolved(self)
        if job.get("mode") == "check":  # built as the preset asks: no iteration is run
            raise Finished()
        steering.scheduler = self
        out["tracked_after_build"] = len(gc.get_objects())
        try:
            return original_loop(self)
        except Exception as exc:
            raise Failed(exc) from exc

    scheduler.Scheduler.run_event_loop = run_event_loop
    _carry(scheduler.Scheduler, "__init__")
    with tempfile.TemporaryDirectory(prefix="reqstate-real-model-") as model_dir:
        tok = out.get("tokenizer_dir")
        model = server.write_model(
            Path(model_dir), int(job["context_len"]), Path(tok) if tok else None
        )
        values = {**server.BASE_ARGS, **job.get("server", {}), "model_path": str(model)}
        values.update(_draft(job, Path(model_dir) / "draft"))
        # without the stand-in tokenizer (an environment without `tokenizers`: the tests' tiny
        # tree) the driver sends token ids, as --skip-tokenizer-init allows
        values["skip_tokenizer_init"] = tok is None
        # a revision without a CPU draft backend drafts under triton: no AMX claim is needed
        drafted = server.draft_backend(values) if (job.get("spec") or {}).get("draft_model") else []
        out["replaced"] += drafted
        out["replaced"] += claims.claim(
            bool(job.get("claim_amx")) and not drafted,
            bool(job.get("spec")) and not values.get("disable_overlap_schedule", True),
            dspark=_is_dspark(job),
        )
        args, passed, missing = server.server_args(values)
        out["server_args"] = {k: v for k, v in passed.items() if k != "model_path"}
        out["server_args_missing"] = missing
        ports = server.port_args(args)
        steering.channel.input_endpoint = ports.scheduler_input_ipc_name
        pipe = server.InfoPipe()
        built["t"] = time.time()
        try:
            server.call_run_scheduler_process(args, ports, pipe)
        except Finished:
            return pipe
        raise RuntimeError("the revision's event loop returned before the run was complete")


def run(job: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"ok": False, "replaced": []}
    phases = Phases()
    finder = _import_revision(job, out, phases)
    steering = _steering(job, out, phases)
    pipe = _drive(job, out, steering)
    out["init_info"] = {k: v for k, v in pipe.info.items() if isinstance(v, (int, float, str))}
    out["stubbed"] = dict(finder.served)
    out["phases_wrapped"] = phases.wrapped
    out["notes"] = steering.notes + [
        f"the stand-in's logits were made dense by {op} ({n} times): that reduction ran over "
        "the whole vocabulary, timed as the revision's"
        for op, n in sorted(logits.DENSIFIED.items())
    ]
    out["records"] = [dataclasses.asdict(r) for r in steering.records]
    if _is_dspark(job):
        out["dspark_injected"] = dict(dspark.INJECTED)
    out["warmup_ns"] = steering.warmup_ns
    out["rewarm_ns"] = steering.rewarm_ns
    out["warmup_trace"] = steering.warmup_trace
    out["settled"] = steering.settled
    out["measure_start"] = steering.measure_start
    out["pool_size"] = steering.pool_size
    out["requests_sent"] = steering.sent
    out["requests_finished"] = steering.finished
    out["aborts_sent"] = steering.client.aborts_sent
    if steering.counter is not None:
        out["calls"] = steering.counter.iterations
        out["functions"] = {k: list(v) for k, v in steering.counter.functions.items()}
        out["defined"] = calls.defined(list(job.get("check_defined", ())))
    if steering.tracer is not None:
        out["coverage"] = steering.tracer.report()
    out["ok"] = True
    return out


def main(argv: list[str]) -> int:
    job_path, out_path = argv
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    started = now_ns()
    try:
        result = run(job)
    except (Exception, Failed) as exc:
        result = {"ok": False, **classify(exc)}
    result["wall_s"] = round((now_ns() - started) / 1e9, 2)
    tmp = Path(out_path).with_suffix(".tmp")
    tmp.write_text(json.dumps(result), encoding="utf-8")
    os.replace(tmp, out_path)
    # The revision's threads (watchdog, metrics) are not joined: the process ends here.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
