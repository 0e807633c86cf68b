"""The synthetic request and the request stream."""

from __future__ import annotations

import itertools
import random
from array import array

import pytest

from bench.core.arrivals import mean_length, request_stream, sample_length
from bench.core.scenarios import get
from bench.core.workload import DEFAULT_REQUEST_ATTRS, SYNTHETIC, make_request_class
from strategies import Strategy, resolve


def test_request_has_realistic_attribute_count(strategy: Strategy) -> None:
    cls = make_request_class(strategy)  # the default model: the fork head the PR targets
    req = cls("r", array("q", (1, 2)), 3)
    assert len(vars(req)) == 140 + len(strategy.request_init_fields)  # Req at c96e68b62b
    for name, default in strategy.request_class_fields.items():
        assert getattr(cls, name) == default


def test_request_is_hashed_by_identity() -> None:
    cls = make_request_class(None)
    a, b = cls("same", [1], 1), cls("same", [1], 1)
    assert a != b
    assert hash(a) != hash(b)
    assert not hasattr(cls, "__slots__")


def test_fat_request_sets_the_ten_fields_per_instance() -> None:
    (fat,) = resolve(["fat_req"])
    req = make_request_class(fat)("r", [1], 1)
    assert req.meta is None
    assert req.current_row_len == 0
    assert "current_is_last" in vars(req)


def test_synthetic_attribute_count_is_configurable() -> None:
    def n_attrs(n: int) -> int:
        return len(vars(make_request_class(None, model=SYNTHETIC, n_attrs=n)("r", [1], 1)))

    assert n_attrs(DEFAULT_REQUEST_ATTRS) == DEFAULT_REQUEST_ATTRS
    assert n_attrs(10) == 10
    assert n_attrs(200) == 200
    with pytest.raises(ValueError, match="at least 1"):
        make_request_class(None, model=SYNTHETIC, n_attrs=0)


def test_stream_ids_are_arrays_of_the_prompt_length() -> None:
    cls = make_request_class(None)
    for a in itertools.islice(request_stream(cls, get("prefill-sharegpt"), 3), 300):
        assert isinstance(a.req.origin_input_ids, array)
        assert len(a.req.origin_input_ids) == a.prompt_len


def test_stream_is_seeded_and_follows_the_scenario() -> None:
    cls = make_request_class(None)
    scenario = get("prefill-dspark").with_changes({"pd_fraction": 0.25})

    def draw(seed: int) -> list[tuple[int, bool]]:
        stream = request_stream(cls, scenario, seed)
        return [(a.prompt_len, a.meta is not None) for a in itertools.islice(stream, 2000)]

    first = draw(7)
    assert first == draw(7)
    assert first != draw(8)
    share = sum(u for _, u in first) / len(first)
    assert 0.20 < share < 0.30
    assert all(1 <= n <= 4096 for n, _ in first)  # random-4k
    mean = sum(n for n, _ in first) / len(first)
    assert mean == pytest.approx(
        mean_length("random-4k", range_ratio=0.0, role="prompts"), rel=0.05
    )


def test_sharegpt_lengths_have_the_published_means() -> None:
    rng = random.Random(1)
    prompts = [sample_length("sharegpt", rng, range_ratio=0, role="prompts") for _ in range(20_000)]
    outputs = [sample_length("sharegpt", rng, range_ratio=0, role="outputs") for _ in range(20_000)]
    assert sum(prompts) / len(prompts) == pytest.approx(224, rel=0.08)  # #2805
    assert sum(outputs) / len(outputs) == pytest.approx(198, rel=0.08)


def test_range_ratio_one_fixes_the_length() -> None:
    rng = random.Random(1)
    assert {
        sample_length("random-4k", rng, range_ratio=1.0, role="prompts") for _ in range(50)
    } == {4096}


def test_pd_requests_carry_decode_metadata() -> None:
    cls = make_request_class(None)
    for a in itertools.islice(request_stream(cls, get("prefill-dspark"), 0), 200):
        assert a.meta is not None
        assert 0 <= a.meta["hidden_start"] < a.prompt_len
        assert a.meta["hidden_start"] + a.meta["hidden_len"] == a.prompt_len
        assert a.meta["streaming_hidden"] is True
        assert a.meta["window_rows"] == min(a.meta["hidden_len"], 16384)  # decode.py:1232


def test_request_ids_are_unique_per_prefix() -> None:
    cls = make_request_class(None)
    a = next(request_stream(cls, get("prefill-dspark"), 0, rid_prefix="s1"))
    b = next(request_stream(cls, get("prefill-dspark"), 0, rid_prefix="s2"))
    assert a.req.rid != b.req.rid
