"""How often SGLang's scheduler runs each hot-path function, read from its code.

Per function: its frequency class (bench.core.groupsites.FREQUENCIES), the forwards it runs in
(decode, extend, the disaggregated prefill and decode nodes' own code), where it is defined and
called, and the condition it runs under when it does not run unconditionally. Written from
sgl-project/sglang main at d55f1c28e2 (2026-08-18; bytedance-iaas/sglang mirrors it), file:line
at that commit; docs/TARGET.md has the table with its evidence.

A state group's static accesses per function (bench.target.accesses) times these frequencies
are the group's accesses per iteration of a scenario; a function that touches the group and is
not here is "not on the modelled hot path" (listed, not replayed).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.base.storage import cache_dir

COMMIT = "sgl-project/sglang d55f1c28e2"


# Paths at COMMIT, under python/sglang/srt/.
S = "managers/scheduler.py"
SB = "managers/schedule_batch.py"
BRP = "managers/scheduler_components/batch_result_processor.py"
LRP = "managers/scheduler_components/logprob_result_processor.py"
OS = "managers/scheduler_components/output_streamer.py"
FBI = "model_executor/forward_batch_info.py"
AL = "mem_cache/allocation.py"
MC = "mem_cache/common.py"
RC = "mem_cache/radix_cache.py"
SP = "managers/schedule_policy.py"
SBI = "sampling/sampling_batch_info.py"
PF = "disaggregation/prefill.py"
DC = "disaggregation/decode.py"
DSB = "disaggregation/decode_schedule_batch_mixin.py"
DU = "disaggregation/utils.py"

ALL = ("decode", "extend", "pd_prefill", "pd_decode")
DECODE = ("decode", "pd_decode")
EXTEND = ("extend", "pd_prefill")


@dataclass(frozen=True)
class HotFunction:
    name: str  # Class.method (or a module function), as the code names it
    frequency: str  # bench.core.groupsites.FREQUENCIES
    phases: tuple[str, ...]  # bench.core.groupsites.PHASES
    defined: str  # file:line at COMMIT
    called: str  # the call site(s) that set its frequency, file:line at COMMIT
    condition: str = ""  # when it does not run on every such event, as the code says
    # phase -> frequency where a phase runs it differently (ScheduleBatch.init_new: once per
    # prefill batch on an extend, once per admission batch of new requests on a PD decode node)
    per_phase: tuple[tuple[str, str], ...] = ()

    @property
    def source(self) -> str:
        return f"{COMMIT}: {self.defined}; called {self.called}" + (
            f"; only {self.condition}" if self.condition else ""
        )

    def frequency_in(self, phase: str) -> str:
        return dict(self.per_phase).get(phase, self.frequency)


def _h(
    name: str,
    frequency: str,
    phases: tuple[str, ...],
    defined: str,
    called: str,
    condition: str = "",
    **per_phase: str,
) -> HotFunction:
    return HotFunction(
        name, frequency, phases, defined, called, condition, tuple(sorted(per_phase.items()))
    )


# Read from the scheduler's event loops (S:1719 event_loop_normal, S:1754 event_loop_overlap;
# PF:569/607 the PD prefill node's; DC:2139/2173 the PD decode node's) and followed call by
# call. A per_iteration function's accesses inside its loop over the batch's requests run once
# per batch request. Speculative workers' own preparation (SPEC_OFF_PATH below: real mode's
# spec presets reach them), retraction, aborts, hierarchical sparse attention, streaming sessions
# and debug checks are not in the table: their functions are listed as off the modelled hot
# path.
HOT_PATH: tuple[HotFunction, ...] = (
    # -- arrival --------------------------------------------------------------------------
    _h("Scheduler.handle_generate_request", "per_new_request", ALL, f"{S}:2368", f"{S}:1894"),
    _h("Scheduler._add_request_to_queue", "per_new_request", ALL, f"{S}:2718", f"{S}:2680"),
    _h("Scheduler.init_req_max_new_tokens", "per_new_request", ALL, f"{S}:2176", f"{S}:2600"),
    # -- forming a prefill (extend) batch --------------------------------------------------
    _h(
        "Req.init_next_round_input",
        "per_prefill_chunk",
        (*EXTEND, "pd_decode"),
        f"{SB}:1292",
        f"{S}:3277, {S}:3327; PD decode {DC}:2310",
        pd_decode="per_new_request",
    ),
    _h(
        "PrefillAdder.__init__",
        "per_iteration",
        EXTEND,
        f"{SP}:505",
        f"{S}:3257",
        "when a prefill is attempted (a waiting queue or a chunked request)",
    ),
    _h("PrefillAdder.add_one_req", "per_new_request", EXTEND, f"{SP}:1201", f"{S}:3328"),
    _h("PrefillAdder.add_chunked_req", "per_prefill_chunk", EXTEND, f"{SP}:997", f"{S}:3278"),
    _h(
        "Scheduler.stash_chunked_request",
        "per_prefill_chunk",
        ("extend",),
        f"{S}:2925",
        f"{S}:3052",
    ),
    _h(
        "ScheduleBatch.init_new",
        "per_iteration",
        (*EXTEND, "pd_decode"),
        f"{SB}:2190",
        f"{S}:3390; PD decode {DC}:2326",
        pd_decode="per_new_request",
    ),
    _h("ScheduleBatch.prepare_for_extend", "per_iteration", EXTEND, f"{SB}:2369", f"{S}:3411"),
    _h("alloc_for_extend", "per_iteration", EXTEND, f"{AL}:281", f"{SB}:2414"),
    _h(
        "SamplingBatchInfo.from_schedule_batch",
        "per_iteration",
        (*EXTEND, "pd_decode"),
        f"{SBI}:87",
        f"{SB}:2629; PD decode {DSB}:108",
        pd_decode="per_new_request",
    ),
    _h(
        "ScheduleBatch.mix_with_running",
        "per_iteration",
        ("extend",),
        f"{SB}:2749",
        f"{S}:3443",
        "with --enable-mixed-chunk and no logprobs (S:3432-3438)",
    ),
    # -- the running (decode) batch ----------------------------------------------------------
    _h("ScheduleBatch.filter_batch", "per_iteration", ALL, f"{SB}:3125", f"{S}:3485, {S}:3082"),
    _h(
        "ScheduleBatch.merge_batch",
        "per_iteration",
        DECODE,
        f"{SB}:3211",
        f"{S}:3092; PD decode {DC}:2259",
        "on iterations after an extend or prebuilt batch",
    ),
    _h("ScheduleBatch.check_decode_mem", "per_iteration", DECODE, f"{SB}:2809", f"{S}:3491"),
    _h(
        "ScheduleBatch.new_tokens_required_next_decode",
        "per_iteration",
        DECODE,
        f"{SB}:2782",
        f"{SB}:2809",
    ),
    _h("ScheduleBatch.prepare_for_decode", "per_iteration", DECODE, f"{SB}:3038", f"{S}:3563"),
    _h("alloc_for_decode", "per_iteration", DECODE, f"{AL}:512", f"{SB}:3069"),
    _h(
        "ScheduleBatch.maybe_evict_swa",
        "per_iteration",
        ("decode", "extend", "pd_decode"),
        f"{SB}:3324",
        f"{AL}:292, {AL}:520",
        "on sliding-window models (tree_cache.supports_swa())",
    ),
    # -- the forward ---------------------------------------------------------------------
    _h("Scheduler.run_batch", "per_iteration", ALL, f"{S}:3626", f"{S}:1741, {PF}:596, {DC}:2163"),
    _h("ForwardBatch.init_new", "per_iteration", ALL, f"{FBI}:704", "tp_worker.py:589"),
    _h(
        "ScheduleBatch.copy",
        "per_iteration",
        ALL,
        f"{SB}:3277",
        f"{S}:1804",
        "in the overlap loops",
    ),
    # -- results -----------------------------------------------------------------------
    _h("Scheduler.process_batch_result", "per_iteration", ALL, f"{S}:3922", f"{S}:1742"),
    _h("Scheduler._maybe_clear_mm_inputs", "per_iteration", ALL, f"{S}:2357", f"{S}:3954"),
    _h(
        "SchedulerBatchResultProcessor.process_batch_result_decode",
        "per_iteration",
        DECODE,
        f"{BRP}:805",
        f"{S}:3933",
    ),
    _h(
        "SchedulerBatchResultProcessor._normalize_decode_outputs",
        "per_iteration",
        DECODE,
        f"{BRP}:918",
        f"{BRP}:825",
    ),
    _h(
        "Req.update_finish_state",
        "per_batch_request",
        ("decode", "extend", "pd_decode"),
        f"{SB}:1626",
        f"{BRP}:867, {BRP}:273",
    ),
    # its name before sgl-project/sglang#25725
    _h(
        "Req.check_finished",
        "per_batch_request",
        ("decode", "extend", "pd_decode"),
        f"{SB}:1626 (as update_finish_state)",
        f"{BRP}:867, {BRP}:273",
    ),
    _h(
        "SchedulerBatchResultProcessor._maybe_update_reasoning_tokens",
        "per_batch_request",
        ("decode", "extend", "pd_decode"),
        f"{BRP}:1103",
        f"{BRP}:865",
    ),
    _h(
        "SchedulerBatchResultProcessor._handle_finish_state_updated_req",
        "per_batch_request",
        DECODE,
        f"{BRP}:1011",
        f"{BRP}:869",
    ),
    _h(
        "SchedulerBatchResultProcessor._apply_decode_logprobs",
        "per_batch_request",
        DECODE,
        f"{BRP}:956",
        f"{BRP}:872",
        "for requests with req.return_logprob (BRP:871)",
    ),
    _h(
        "SchedulerBatchResultProcessor.add_sampling_mask_return_values",
        "per_batch_request",
        ("decode", "extend", "pd_decode"),
        f"{BRP}:997",
        f"{BRP}:884",
        "for requests with req.return_sampling_mask",
    ),
    _h(
        "SchedulerBatchResultProcessor._append_decode_hidden_states",
        "per_batch_request",
        DECODE,
        f"{BRP}:534",
        f"{BRP}:892",
        "for requests with req.return_hidden_states",
    ),
    _h(
        "SchedulerBatchResultProcessor._accept_grammar_tokens",
        "per_batch_request",
        DECODE,
        f"{BRP}:704",
        f"{BRP}:903",
        "for requests with a grammar",
    ),
    _h(
        "SchedulerBatchResultProcessor.process_batch_result_prefill",
        "per_iteration",
        ("extend",),
        f"{BRP}:193",
        f"{S}:3940",
    ),
    _h(
        "SchedulerBatchResultProcessor.move_logprobs_to_cpu",
        "per_iteration",
        EXTEND,
        f"{BRP}:397",
        f"{BRP}:225, {PF}:695",
        "when the batch returns logprobs",
    ),
    _h(
        "SchedulerBatchResultProcessor._apply_prefill_logprobs",
        "per_new_request",
        ("extend",),
        f"{BRP}:424",
        f"{BRP}:287",
        "when the batch returns logprobs (BRP:286)",
    ),
    _h(
        "SchedulerBatchResultProcessor._apply_chunked_prefill_logprobs",
        "per_prefill_chunk",
        ("extend",),
        f"{BRP}:594",
        f"{BRP}:317",
        "when the batch returns logprobs (BRP:316)",
    ),
    _h(
        "SchedulerLogprobResultProcessor.add_logprob_return_values",
        "per_new_request",
        EXTEND,
        f"{LRP}:301",
        f"{BRP}:447, {PF}:744",
        "for requests with req.return_logprob",
    ),
    _h(
        "SchedulerLogprobResultProcessor.add_input_logprob_return_values",
        "per_prefill_chunk",
        EXTEND,
        f"{LRP}:202",
        f"{LRP}:319, {BRP}:616, {PF}:803",
        "for requests with req.return_logprob",
    ),
    _h(
        "SchedulerLogprobResultProcessor._process_input_token_logprobs",
        "per_new_request",
        EXTEND,
        f"{LRP}:26",
        f"{LRP}:271",
        "for requests with req.return_logprob",
    ),
    _h(
        "SchedulerLogprobResultProcessor._process_input_top_logprobs",
        "per_new_request",
        EXTEND,
        f"{LRP}:58",
        f"{LRP}:272",
        "for requests with req.return_logprob",
    ),
    _h(
        "SchedulerLogprobResultProcessor._process_input_token_ids_logprobs",
        "per_new_request",
        EXTEND,
        f"{LRP}:116",
        f"{LRP}:274",
        "for requests with req.return_logprob",
    ),
    _h(
        "SchedulerLogprobResultProcessor._flatten_input_top_logprobs",
        "per_new_request",
        EXTEND,
        f"{LRP}:87",
        f"{LRP}:299",
        "for requests with req.return_flat_raw_top_logprobs",
    ),
    _h(
        "SchedulerLogprobResultProcessor._initialize_empty_logprob_containers",
        "per_new_request",
        EXTEND,
        f"{LRP}:359",
        f"{LRP}:328",
        "for requests with req.return_logprob and no input logprobs",
    ),
    # -- output streaming (every iteration; a request emits on its stream interval) --------
    _h(
        "SchedulerOutputStreamer._stream_output_generation",
        "per_iteration",
        ALL,
        f"{OS}:129",
        f"{OS}:111 (stream_output, {BRP}:906, {BRP}:366, {PF}:921)",
        pd_prefill="per_finished_request",
    ),
    _h(
        "_GenerationStreamAccumulator.accept",
        "per_batch_request",
        ALL,
        f"{OS}:362",
        f"{OS}:170",
        pd_prefill="per_finished_request",
    ),
    # -- leaving ------------------------------------------------------------------------
    _h(
        "release_kv_cache",
        "per_finished_request",
        ALL,
        f"{MC}:195",
        f"{BRP}:1097, {BRP}:277, {PF}:886",
    ),
    _h(
        "_release_overallocated_kv_indices",
        "per_finished_request",
        ALL,
        f"{MC}:241",
        f"{MC}:195 (release_kv_cache)",
    ),
    # its form before: a Req method release_kv_cache called (d8d76c4d12 schedule_batch.py:1094)
    _h(
        "Req.pop_overallocated_kv_cache",
        "per_finished_request",
        ALL,
        f"{MC}:241 (as _release_overallocated_kv_indices)",
        f"{MC}:195 (release_kv_cache)",
    ),
    _h("RadixCache.cache_finished_req", "per_finished_request", ALL, f"{RC}:458", f"{MC}:212"),
    _h(
        "RadixCache.cache_unfinished_req",
        "per_prefill_chunk",
        (*EXTEND, "pd_decode"),
        f"{RC}:515",
        f"{MC}:107 (maybe_cache_unfinished_req: {BRP}:280, {S}:2926, {PF}:722, "
        f"{PF}:1065; PD decode {DSB}:121)",
        pd_decode="per_new_request",
    ),
    _h(
        "maybe_cache_unfinished_req",
        "per_prefill_chunk",
        (*EXTEND, "pd_decode"),
        f"{MC}:107",
        f"{BRP}:280, {S}:2926, {PF}:722, {PF}:1065; PD decode {DSB}:121",
        pd_decode="per_new_request",
    ),
    # -- the disaggregated prefill node ------------------------------------------------------
    _h(
        "PrefillBootstrapQueue.pop_bootstrapped",
        "per_new_request",
        ("pd_prefill",),
        f"{PF}:383",
        f"{PF}:578 (polls each bootstrapping request: once each at a wait of 0)",
    ),
    _h(
        "SchedulerDisaggregationPrefillMixin.resolve_waiting_queue_bootstrap",
        "per_new_request",
        ("pd_prefill",),
        f"{PF}:501",
        f"{PF}:554",
    ),
    _h(
        "SchedulerDisaggregationPrefillMixin.process_prefill_chunk",
        "per_iteration",
        ("pd_prefill",),
        f"{PF}:1057",
        f"{PF}:556",
    ),
    _h(
        "SchedulerDisaggregationPrefillMixin.process_batch_result_disagg_prefill",
        "per_iteration",
        ("pd_prefill",),
        f"{PF}:658",
        f"{S}:3938",
    ),
    _h(
        "SchedulerDisaggregationPrefillMixin.send_kv_chunk",
        "per_prefill_chunk",
        ("pd_prefill",),
        f"{PF}:1139",
        f"{PF}:758, {PF}:1084",
    ),
    _h(
        "MetadataBuffers.set_buf",
        "per_new_request",
        ("pd_prefill",),
        f"{DU}:466",
        f"{PF}:1181 (send_kv_chunk, last chunk)",
    ),
    _h(
        "SchedulerDisaggregationPrefillMixin.process_disagg_prefill_inflight_queue",
        "per_inflight_request",
        ("pd_prefill",),
        f"{PF}:830",
        f"{PF}:601 (polls every inflight request, PF:842)",
    ),
    # -- the disaggregated decode node -------------------------------------------------------
    _h(
        "DecodePreallocQueue.pop_preallocated",
        "per_iteration",
        ("pd_decode",),
        f"{DC}:921",
        f"{DC}:2363 (scans the running batch on every polling tick, DC:945-948)",
    ),
    _h(
        "DecodePreallocQueue._pre_alloc",
        "per_new_request",
        ("pd_decode",),
        f"{DC}:1528",
        f"{DC}:1118",
    ),
    _h(
        "DecodeTransferQueue.pop_transferred",
        "per_new_request",
        ("pd_decode",),
        f"{DC}:2010",
        f"{DC}:2366 (polls each transferring request)",
    ),
    _h(
        "DecodeTransferQueue._commit_transfer_to_req",
        "per_new_request",
        ("pd_decode",),
        f"{DC}:1822",
        f"{DC}:2081",
    ),
    _h(
        "SchedulerDisaggregationDecodeMixin.get_new_prebuilt_batch",
        "per_new_request",
        ("pd_decode",),
        f"{DC}:2273",
        f"{DC}:2246",
    ),
    _h(
        "ScheduleBatchDisaggregationDecodeMixin.prepare_for_prebuilt",
        "per_new_request",
        ("pd_decode",),
        f"{DSB}:23",
        f"{DC}:2337",
    ),
    _h(
        "ScheduleBatchDisaggregationDecodeMixin.process_prebuilt",
        "per_new_request",
        ("pd_decode",),
        f"{DSB}:113",
        f"{DC}:2338",
    ),
    _h(
        "SchedulerBatchResultProcessor.process_batch_result_prebuilt",
        "per_new_request",
        ("pd_decode",),
        f"{BRP}:97",
        f"{DC}:2249",
    ),
)

# The speculative workers' own per-iteration functions, off the modelled hot path above (their
# accesses are the draft's, not the request state's): real mode's spec presets reach them, and
# `real coverage` lists each as reached or not, with why (bench/real/coverage.py).
SPEC_OFF_PATH: tuple[tuple[str, str, str], ...] = (
    (
        "eagle_prepare_for_decode",
        "speculative/eagle_utils.py:880",
        "an EAGLE-family draft's decode (EAGLE, EAGLE3, MTP), from spec_utils.py:1047",
    ),
    (
        "DFlashDraftInputV2.prepare_for_decode",
        "speculative/dflash_info_v2.py:113",
        "a DFLASH or DSpark draft's decode, from spec_utils.py:1043",
    ),
    (
        "ScheduleBatch._new_tokens_required_next_decode_spec_v2",
        f"{SB}:2798",
        "admission under spec v2 (the tokens a decode will take), from schedule_batch.py:2796",
    ),
    (
        "NGRAMWorker._prepare_for_speculative_decoding",
        "speculative/ngram_worker.py:310",
        "NGRAM's decode (corpus lookup, draft tree), from ngram_worker.py:433",
    ),
)


@dataclass(frozen=True)
class ColdFunction:
    """A function read and judged off the hot path: it runs on an event the modelled loops do
    not have (an abort, a retraction when memory runs out, a flush), not on every iteration."""

    name: str  # Class.method (or a module function), as the code names it
    why: str
    defined: str  # file:line at COMMIT
    called: str  # where it is reached from, file:line at COMMIT

    @property
    def source(self) -> str:
        return f"{COMMIT}: {self.defined}; called {self.called}"


# Read at COMMIT like the rows above. A function that touches a group and is here is listed as
# known cold (not replayed, and not held against the replay's coverage); one that is in
# neither table is "not in the table", which the gate counts against it.
COLD: tuple[ColdFunction, ...] = (
    ColdFunction(
        "prepare_abort",
        "aborts a request (a bad input, a failed transfer)",
        f"{DU}:1288",
        f"{DC}:674, {DC}:1860, {PF}:372, {PF}:1019",
    ),
    ColdFunction(
        "Req.set_finish_with_abort",
        "aborts a request",
        f"{SB}:1809",
        "constrained/grammar_manager.py:115, constrained/grammar_manager.py:142",
    ),
    ColdFunction(
        "Scheduler.abort_request",
        "an AbortReq from the tokenizer",
        f"{S}:4442",
        f"{S}:1543 (the request dispatcher)",
    ),
    ColdFunction(
        "ScheduleBatch.retract_decode",
        "retracts decoding requests when there is not enough memory",
        f"{SB}:2816",
        f"{S}:3504",
    ),
    ColdFunction(
        "ScheduleBatch.release_req",
        "frees a retracted or preempted request",
        f"{SB}:2907",
        f"{SB}:2836, {SP}:1493",
    ),
    ColdFunction("release_req", "frees a retracted request", f"{SB}:1907", f"{SB}:1953, {SB}:2914"),
    ColdFunction(
        "Req.reset_for_retract",
        "resets a retracted request",
        f"{SB}:1668",
        f"{SB}:1939 (release_req), {PF}:1333",
    ),
    ColdFunction(
        "retract_all",
        "retracts every running request (pause_generation)",
        f"{SB}:1942",
        f"{S}:4631",
    ),
    ColdFunction(
        "Scheduler.flush_cache", "a cache flush request (idle only)", f"{S}:4251", f"{S}:1151"
    ),
)

_COLD = {c.name: c for c in COLD}


def cold(function: str) -> ColdFunction | None:
    """The cold table's entry for a function, by its full name."""
    return _COLD.get(function)


def typed_with_method(method: str) -> list[HotFunction]:
    """The typed rows of a method name (the last part of Class.method)."""
    return [h for h in HOT_PATH if h.name.rsplit(".", 1)[-1] == method]


@dataclass(frozen=True)
class MeasuredMap:
    """The table measured at one revision by real mode (bench/real/freqmap.py): the phases a
    real scheduler ran (a colocated server's decode and extend), each function's frequency
    there, file:line at that revision."""

    revision: str
    commit: str | None
    preset: str
    iterations: dict[str, int]
    rows: tuple[HotFunction, ...]
    # every function the measured loop called at least once (rows holds those whose calls a
    # frequency explains); empty in maps counted before it was kept
    seen: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "revision": self.revision,
            "commit": self.commit,
            "preset": self.preset,
            "iterations": self.iterations,
            "seen": list(self.seen),
            "rows": [
                {
                    "name": h.name,
                    "frequency": h.frequency,
                    "phases": list(h.phases),
                    "defined": h.defined,
                    "called": h.called,
                    "per_phase": [list(x) for x in h.per_phase],
                }
                for h in self.rows
            ],
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> MeasuredMap:
        rows = tuple(
            HotFunction(
                r["name"],
                r["frequency"],
                tuple(r["phases"]),
                r["defined"],
                r["called"],
                "",
                tuple((p, f) for p, f in r["per_phase"]),
            )
            for r in raw["rows"]
        )
        return cls(
            raw["revision"],
            raw.get("commit"),
            raw["preset"],
            raw["iterations"],
            rows,
            tuple(raw.get("seen", ())),
        )


MAP_PRESET = "decode-b256"  # the preset whose map a revision's plain map is, once counted


def measured_path(key: str, preset: str | None = None, changes: str = "") -> Path:
    """Where a revision's measured map is kept (key: a commit, or sglang==X for a release).
    Without `preset`: the revision's map target mode and hot-path selection read (MAP_PRESET's
    where it was counted, else the first counted); with it, that preset's own map (`changes`: a
    digest of the --set values it was counted with)."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in key)
    if preset is not None:
        safe += f"--{preset}" + (f"-{changes}" if changes else "")
    return cache_dir() / "real" / "freqmaps" / f"{safe}.json"


def measured(key: str | None) -> MeasuredMap | None:
    """The measured map of a revision, where real mode has counted one."""
    if not key:
        return None
    path = measured_path(key)
    try:
        return MeasuredMap.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _merged(typed: HotFunction | None, seen: HotFunction) -> HotFunction:
    """A measured row, with the typed row's phases the measurement did not run (the PD nodes'
    own loops) kept as typed."""
    if typed is None:
        return seen
    extra = [p for p in typed.phases if p not in seen.phases]
    if not extra:
        return seen
    per_phase = dict(seen.per_phase)
    for p in extra:
        per_phase[p] = typed.frequency_in(p)
    per_phase = {p: f for p, f in per_phase.items() if f != seen.frequency}
    return replace(
        seen,
        phases=(*seen.phases, *extra),
        per_phase=tuple(sorted(per_phase.items())),
        condition=typed.condition,
    )


def resolver(
    commit: str | None, table: MeasuredMap | None = None
) -> tuple[Callable[[str], HotFunction | None], str]:
    """How a revision's functions are looked up: its measured map where real mode counted one
    (functions it did not see fall back to the typed rows), else the typed table; and a line
    saying which. `table`: the revision's map, already read."""
    table = table if table is not None else measured(commit)
    if table is None:
        return lookup, f"typed ({COMMIT})"
    seen = {h.name: h for h in table.rows}

    def find(function: str) -> HotFunction | None:
        row = seen.get(function)
        typed = lookup(function)
        return _merged(typed, row) if row is not None else typed

    return find, f"measured at {table.revision} ({table.preset})"


def lookup(function: str) -> HotFunction | None:
    """The table's row for a function named Class.method (or a module function): by its full
    name only (a method of another class with the same name is another function)."""
    return _BY_NAME.get(function)


_BY_NAME = {h.name: h for h in HOT_PATH}


def markdown() -> str:
    """The table as docs/TARGET.md shows it (a test keeps the two equal)."""
    lines = [
        f"Read from {COMMIT} (python/sglang/srt/...; `python -m bench target hotpath` prints "
        "this table).",
        "",
        "| function | frequency | runs in | defined | called from | only |",
        "|---|---|---|---|---|---|",
    ]
    for h in HOT_PATH:
        freq = h.frequency + "".join(f"; {p}: {f}" for p, f in h.per_phase)
        lines.append(
            f"| `{h.name}` | {freq} | {', '.join(h.phases)} | {h.defined} | {h.called} | "
            f"{h.condition or '-'} |"
        )
    lines += [
        "",
        "Known cold (not replayed, and not held against a replay's coverage):",
        "",
        "| function | why | defined | called from |",
        "|---|---|---|---|",
    ]
    lines += [f"| `{c.name}` | {c.why} | {c.defined} | {c.called} |" for c in COLD]
    return "\n".join(lines) + "\n"
