"""The request models' nested objects have the real class's shape (bench/core/holders.py):
field counts, slots or dict, msgspec sampling params the GC does not track, one shared enum
member, default-factory children; and the model's counted tracked values are the built
instance's."""

from __future__ import annotations

import gc
from array import array

import pytest

from bench.core import holders, reqmodel
from bench.core.workload import make_request_class

MODELS = [m for m in reqmodel.available() if reqmodel.load(m) is not None]


def _build(model: str):  # type: ignore[no-untyped-def]
    return make_request_class(None, model=model)("r", array("q", range(64)), 8)


@pytest.mark.parametrize("model", MODELS)
def test_counted_tracked_values_are_the_instances(model: str) -> None:
    table = reqmodel.load(model)
    assert table is not None
    req = _build(model)
    assert sum(gc.is_tracked(v) for v in vars(req).values()) == table.tracked()


@pytest.mark.parametrize("model", ["fork-c96e68b62b", "sglang-0.5.23"])
def test_nested_holders_have_the_real_shape(model: str) -> None:
    req = _build(model)
    known = holders.holders_of(model)
    assert not gc.is_tracked(req.sampling_params)  # a msgspec.Struct of scalars
    assert req.sampling_params.max_new_tokens == 8
    stats = req.time_stats
    assert len(vars(stats)) == known["SchedulerReqTimeStats.new_from_obj"].fields + 1  # + trace
    assert type(req.logprob).__slots__  # a slots dataclass: no __dict__
    assert not hasattr(req.logprob, "__dict__")
    assert len(type(req.logprob).__slots__) == known["ReqLogprob"].fields
    other = _build(model)
    assert other.time_stats is not stats  # built per request


def test_the_release_shares_its_capture_mode_and_builds_kv_info() -> None:
    a, b = _build("sglang-0.5.23"), _build("sglang-0.5.23")
    assert a.return_hidden_states_mode is b.return_hidden_states_mode  # an enum member
    assert len(type(a.kv).__slots__) == 18 + 1  # 18 fields + its default_factory dict
    assert a.kv.c0 == {}
    assert not gc.is_tracked(a.kv.c0)
    assert set(vars(a.cache_request_handle)) == {"f0", "f1"}  # rid, attempt_id


def test_an_unknown_model_keeps_the_generic_small_object() -> None:
    assert holders.holders_of("a-user-revision") == {}
    assert holders.call_name("ReqLogprob(top_logprobs_num=x)") == "ReqLogprob"
