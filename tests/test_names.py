"""Benchmark names: one type, one string form, one parser; every name the suites emit parses."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.base.errors import DataError
from bench.base.names import BenchName, BenchNameError
from bench.gate.config import GateConfig
from bench.runformat.pyperf_io import load_pyperf, values_of
from bench.suites import public_names

TODAY = [
    "lookup/weakkey/op=get_hit/live=10000",
    "step/declared/pattern=cached",
    "gc/slots/gc=frozen",
    "gc_full/control/gc=enabled",
    "memory/fat_req/metric=tracked_objects_per_request",
    "scaling/rid_dict/live=65536",
]


@pytest.mark.parametrize("text", TODAY)
def test_todays_strings_round_trip(text: str) -> None:
    name = BenchName.parse(text)
    assert str(name) == text
    assert BenchName.parse(str(name)) == name


def test_reading_by_key_not_by_position() -> None:
    name = BenchName.parse("lookup/weakkey/op=get_hit/live=10000")
    assert (name.kind, name.strategy) == ("lookup", "weakkey")
    assert name["op"] == "get_hit"
    assert name.int("live") == 10_000
    assert name.get("regime") is None
    assert "live" in name
    assert name.condition == "op=get_hit/live=10000"
    assert name.with_strategy("declared").family == name.family
    # a new dimension changes nothing for readers that select by key
    wider = name.with_params(regime="warm")
    assert str(wider) == "lookup/weakkey/op=get_hit/live=10000/regime=warm"
    assert wider["op"] == "get_hit"
    assert wider.int("live") == 10_000
    assert wider.without("regime") == name
    assert BenchName.of("step", "x", scenario="prefill-dspark", pattern="cached")["scenario"] == (
        "prefill-dspark"
    )


@pytest.mark.parametrize(
    "foreign",
    [
        "",
        "lookup",
        "a=b/weakkey",
        "lookup/weakkey/live",
        "Lookup/x",
        "step/x/pattern=a/pattern=b",
        "step/x/Pattern=a",
        "step/x/pattern=a b",
        "step//pattern=a",
    ],
)
def test_foreign_names_are_one_line_errors(foreign: str) -> None:
    with pytest.raises(BenchNameError) as info:
        BenchName.parse(foreign)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, DataError)  # the CLI shows it as one line, exit 2


_ident = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
_value = st.from_regex(r"[A-Za-z0-9_.+-]{1,10}", fullmatch=True)


@settings(max_examples=200, derandomize=True)
@given(
    kind=_ident,
    strategy=st.from_regex(r"[a-z][a-z0-9_.-]{0,10}", fullmatch=True),
    params=st.dictionaries(_ident, _value, max_size=4),
)
def test_round_trip_property(kind: str, strategy: str, params: dict[str, str]) -> None:
    name = BenchName.of(kind, strategy, **params)
    assert BenchName.parse(str(name)) == name
    assert [k for k, _ in name.params] == list(params)  # order kept


@pytest.mark.slow
def test_every_name_every_suite_emits_parses(tiny_run: Path) -> None:
    seen = 0
    for suite in public_names():
        for text in values_of(load_pyperf(tiny_run / f"{suite}.json")):
            assert str(BenchName.parse(text)) == text
            seen += 1
    assert seen > 100
    for mode in ("wall", "instructions"):
        for text in GateConfig().benchmarks(mode):
            assert str(BenchName.parse(text)) == text
