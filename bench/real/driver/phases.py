"""Where an iteration's time goes: a few of the revision's methods wrapped with a timer, each
time attributed to the innermost phase running (exclusive time), so the phases of one iteration
add up to its wall time.

    receive   the loop's handling of arrived requests (process_input_requests)
    transfer  a disaggregated node's own queues: a decode node's preallocation and the KV
              transfers it polls (process_decode_queue); a prefill node's bootstrap queue and
              the inflight queue polled until each transfer succeeds
    schedule  choosing the next batch (get_next_batch_to_run and its PD twins), less prepare
    prepare   building the batch's tensors (prepare_for_extend / prepare_for_decode / prebuilt)
    forward   run_batch's own host work (ForwardBatch.init_new, the worker's wrapping), less the
              stand-in model
    result    processing the batch's result (process_batch_result), less output
    output    building and serialising what is streamed out (stream_output)
    stand_in  the stand-in model's forward and sampling (the driver's own cost, never counted
              in an iteration's figure)
    other     the rest of the loop body (its glue, idle handling, the receive poll)

Only methods called a few times per iteration are wrapped: a wrapper costs ~0.5 µs a call.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

from bench.base.timing import now_ns

PHASES = (
    "receive",
    "transfer",
    "schedule",
    "prepare",
    "forward",
    "result",
    "output",
    "stand_in",
    "other",
)

# phase -> (module, Class.method) candidates; whichever exist at the revision are wrapped.
_SCHED = "sglang.srt.managers.scheduler"
_SB = "sglang.srt.managers.schedule_batch"
_OUT = "sglang.srt.managers.scheduler_components.output_streamer"
_MIXIN = "sglang.srt.managers.scheduler_output_processor_mixin"
_DEC = "sglang.srt.disaggregation.decode"
_PRE = "sglang.srt.disaggregation.prefill"
_DSB = "sglang.srt.disaggregation.decode_schedule_batch_mixin"
TARGETS: dict[str, tuple[tuple[str, str], ...]] = {
    "receive": ((_SCHED, "Scheduler.process_input_requests"),),
    "transfer": (
        (_DEC, "SchedulerDisaggregationDecodeMixin.process_decode_queue"),
        (_PRE, "PrefillBootstrapQueue.pop_bootstrapped"),
        (_PRE, "SchedulerDisaggregationPrefillMixin.process_disagg_prefill_inflight_queue"),
    ),
    "schedule": (
        (_SCHED, "Scheduler.get_next_batch_to_run"),
        (_DEC, "SchedulerDisaggregationDecodeMixin.get_next_disagg_decode_batch_to_run"),
        (_PRE, "SchedulerDisaggregationPrefillMixin.get_next_disagg_prefill_batch_to_run"),
    ),
    "prepare": (
        (_SB, "ScheduleBatch.prepare_for_extend"),
        (_SB, "ScheduleBatch.prepare_for_decode"),
        (_DSB, "ScheduleBatchDisaggregationDecodeMixin.prepare_for_prebuilt"),
    ),
    "forward": ((_SCHED, "Scheduler.run_batch"),),
    "result": (
        (_SCHED, "Scheduler.process_batch_result"),
        (_PRE, "SchedulerDisaggregationPrefillMixin.process_batch_result_disagg_prefill"),
    ),
    "output": (
        (_SCHED, "Scheduler.stream_output"),
        (_OUT, "SchedulerOutputStreamer.stream_output"),
        (_MIXIN, "SchedulerOutputProcessorMixin.stream_output"),
    ),
}


class Phases:
    """Exclusive time per phase, accumulated until `take()`."""

    def __init__(self) -> None:
        self.ns = dict.fromkeys(PHASES, 0)
        self._stack: list[tuple[str, int]] = []  # (phase, when it last started counting)
        self.wrapped: list[str] = []

    def enter(self, phase: str) -> None:
        t = now_ns()
        if self._stack:
            outer, since = self._stack[-1]
            self.ns[outer] += t - since
        self._stack.append((phase, t))

    def leave(self) -> None:
        t = now_ns()
        phase, since = self._stack.pop()
        self.ns[phase] += t - since
        if self._stack:
            outer, _ = self._stack[-1]
            self._stack[-1] = (outer, t)

    def take(self, total_ns: int) -> dict[str, int]:
        """This iteration's phases ('other' = the rest of total_ns), and a fresh start."""
        out = dict(self.ns)
        out["other"] = max(0, total_ns - sum(v for k, v in out.items() if k != "other"))
        self.ns = dict.fromkeys(PHASES, 0)
        return out

    def timed(self, phase: str, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.enter(phase)
            try:
                return func(*args, **kwargs)
            finally:
                self.leave()

        return wrapper

    def install(self) -> None:
        """Wrap every TARGETS method the revision has (before the Scheduler is built, so that
        bound methods it stores at construction are the wrapped ones)."""
        for phase, targets in TARGETS.items():
            for module_name, qualname in targets:
                try:
                    module = importlib.import_module(module_name)
                except ImportError:
                    continue
                cls_name, _, method = qualname.partition(".")
                cls = getattr(module, cls_name, None)
                if not isinstance(cls, type):
                    continue
                # through the MRO: a method the class inherits (from a mixin, a base) is wrapped
                # where it is defined, once (only a class's own __dict__ was looked at before,
                # so an inherited one fell into 'other' in silence)
                owner = next((k for k in cls.__mro__ if method in k.__dict__), None)
                func = owner.__dict__.get(method) if owner is not None else None
                if owner is None or not callable(func) or getattr(func, "_reqstate_phase", None):
                    continue
                wrapped = self.timed(phase, func)
                wrapped._reqstate_phase = phase  # type: ignore[attr-defined]
                setattr(owner, method, wrapped)
                where = "" if owner is cls else f" [defined in {owner.__name__}]"
                self.wrapped.append(f"{qualname} ({phase}){where}")
