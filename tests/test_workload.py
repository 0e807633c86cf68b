"""The synthetic request and the request stream."""

from __future__ import annotations

import itertools

import pytest

from bench.core.workload import (
    DEFAULT_REQUEST_ATTRS,
    StreamParams,
    make_request_class,
    request_stream,
)
from strategies import Strategy, resolve


def test_request_has_realistic_attribute_count(strategy: Strategy) -> None:
    cls = make_request_class(strategy)
    req = cls("r", [1, 2], 3)
    assert len(vars(req)) == DEFAULT_REQUEST_ATTRS + len(strategy.request_init_fields)
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


def test_attribute_count_is_configurable() -> None:
    assert len(vars(make_request_class(None, n_attrs=10)("r", [1], 1))) == 10
    assert len(vars(make_request_class(None, n_attrs=200)("r", [1], 1))) == 200
    with pytest.raises(ValueError, match="at least 1"):
        make_request_class(None, n_attrs=0)


def test_stream_is_seeded_and_follows_parameters() -> None:
    cls = make_request_class(None)
    p = StreamParams(seed=7, pd_fraction=0.25)
    first = [(a.prompt_len, a.uses_pd) for a in itertools.islice(request_stream(cls, p), 2000)]
    again = [(a.prompt_len, a.uses_pd) for a in itertools.islice(request_stream(cls, p), 2000)]
    assert first == again
    other = StreamParams(seed=8, pd_fraction=0.25)
    assert first != [
        (a.prompt_len, a.uses_pd) for a in itertools.islice(request_stream(cls, other), 2000)
    ]
    share = sum(u for _, u in first) / len(first)
    assert 0.20 < share < 0.30
    assert all(p.min_prompt_tokens <= n <= p.max_prompt_tokens for n, _ in first)


def test_pd_requests_carry_decode_metadata() -> None:
    cls = make_request_class(None)
    for a in itertools.islice(request_stream(cls, StreamParams(pd_fraction=1.0)), 200):
        assert a.meta is not None
        assert 0 <= a.meta["hidden_start"] < a.prompt_len
        assert a.meta["hidden_start"] + a.meta["hidden_len"] == a.prompt_len


@pytest.mark.parametrize("bad", [{"pd_fraction": 1.5}, {"min_prompt_tokens": 0}])
def test_stream_params_refuse_nonsense(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - message checked by the CLI tests
        StreamParams(**bad)  # type: ignore[arg-type]
