"""Nested prefix groups: `cached_` and `cached_tokens_` are both groups (either can be gated),
and `bench target groups` shows the nesting once, with prefix groups labelled lexical. On a
synthetic tree the test writes."""

from __future__ import annotations

from pathlib import Path

from bench.target.groups import describe, nested_in, read_groups
from bench.target.tree import SourceTree
from tests import group_repo, placement_repo

REQ = """class Req:
    def __init__(self, rid, origin_input_text, origin_input_ids, sampling_params):
        self.rid = rid
        self.origin_input_ids = origin_input_ids
        self.cached_tokens_device = 0
        self.cached_tokens_host = 0
        self.cached_tokens_storage = 0
        self.cached_len = 0
        self.other_a = 0
"""


def test_a_nested_prefix_group_is_shown_once_under_its_outer_group(tmp_path: Path) -> None:
    repo = tmp_path / "sglang"
    path = repo / placement_repo.SB
    path.parent.mkdir(parents=True)
    path.write_text(REQ)
    group_repo._git(repo, "init", "-q", "-b", "main")
    group_repo._git(repo, "add", "-A")
    group_repo._git(repo, "commit", "-q", "-m", "req")
    rev = read_groups(SourceTree.open(f"{repo}@HEAD"))
    outer, inner = rev.group("cached_"), rev.group("cached_tokens_")
    assert len(outer.fields) == 4
    assert len(inner.fields) == 3
    assert nested_in(inner, rev.groups) is outer
    assert nested_in(outer, rev.groups) is None
    text = describe(rev)
    (outer_line,) = [ln for ln in text.splitlines() if ln.startswith("cached_ ")]
    assert "lexical prefix cached_*" in outer_line
    (inner_line,) = [ln for ln in text.splitlines() if "cached_tokens_" in ln]
    assert inner_line.startswith("  cached_tokens_")
    assert "within cached_ (3 of its 4 fields)" in inner_line
    assert "lexical prefix cached_tokens_" not in text  # its fields are not listed twice
