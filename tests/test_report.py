"""The PR-ready report: one tiny real run (with a strategy whose description is hostile markup)
feeds every check of report.html, summary.md, the plots, the comparison and bad input."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from bench import suites
from bench.base.errors import DataError
from bench.report import viewspec, write_compare, write_report
from bench.report.load import load_run
from bench.report.text import clean, esc_md, md_code_block
from bench.report.verdict import compute
from conftest import STRATEGY_NAMES
from tests.helpers import run_cli

SUITE_IDS = suites.public_names()
SECTION_IDS = (
    "summary",
    "scenarios",
    "verdict",
    *SUITE_IDS,
    "strategies",
    "profile",
    "reproduce",
    "env",
)
# Every figure the suites declare, but the sweep's (the tiny run has data for all the others).
PLOTS = (
    "overview",  # the first screen's figure (bench.report.overview)
    *(f.name for view in viewspec.views() for f in view.figures if f.name != "sweep_cost"),
)
HOSTILE_RAW = "<script>alert(1)</script>"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}

slow = pytest.mark.slow


class Page(HTMLParser):
    """Collects what the checks need and verifies that every element is closed in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.styles: list[str] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.problems: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            self.attrs.append((tag, name, value or ""))
            if name == "id":
                self.ids.append(value or "")
        if tag not in VOID:
            self.stack.append(tag)
        self._in_style = tag == "style"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        self._in_style = False

    def handle_data(self, data: str) -> None:
        (self.styles if self._in_style else self.text).append(data)


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    assert not page.problems, page.problems[:5]
    assert not page.stack, f"unclosed elements: {page.stack}"
    return page


def section_of(html_text: str, section_id: str) -> str:
    m = re.search(rf'<section id="{section_id}">(.*?)</section>', html_text, re.S)
    assert m, f"no section {section_id}"
    return m.group(1)


def assert_self_contained(page: Page, raw: str) -> None:
    """No script, no external load of any kind, every image inline."""
    assert "script" not in page.tags
    for forbidden in ("link", "iframe", "object", "embed", "frame", "base", "form", "video"):
        assert forbidden not in page.tags, forbidden
    for tag, name, value in page.attrs:
        assert not name.startswith("on"), f"event handler {name} on <{tag}>"
        v = value.strip().lower()
        assert "javascript:" not in v
        if name == "src":
            assert v.startswith("data:image/"), f"<{tag} src={value[:60]}>"
        if name in ("href", "src", "action", "poster", "srcset", "background"):
            assert not re.match(r"^(https?:|//|ftp:|file:)", v), f"<{tag} {name}={value[:80]}>"
        if name == "href":
            assert v.startswith("#") or v.startswith("profile/"), f"<{tag} href={value[:80]}>"
        if name == "style":
            assert "url(" not in v
    for css in page.styles:
        assert "url(" not in css
        assert "@import" not in css
    assert not re.search(r"https?://", raw.split("<body>", 1)[0]), "network URL in <head>"
    assert "Content-Security-Policy" in raw


def md_tables(text: str) -> list[list[list[str]]]:
    """Every table in a markdown text as rows of cells (split on unescaped pipes)."""
    tables, current = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    out = []
    for rows in tables:
        parsed = []
        for row in rows:
            assert row.endswith("|"), row
            cells = re.split(r"(?<!\\)\|", row)[1:-1]
            parsed.append([c.strip() for c in cells])
        out.append(parsed)
    return out


def assert_valid_md_tables(text: str) -> list[list[list[str]]]:
    tables = md_tables(text)
    assert tables
    for t in tables:
        assert len(t) >= 3, t  # header, separator, at least one row
        assert all(re.fullmatch(r":?-{3,}:?", c) for c in t[1]), t[1]
        assert len({len(r) for r in t}) == 1, [len(r) for r in t]
        assert all(t[0]), "empty header cell"
    return tables


@pytest.fixture(scope="module")
def run_dir(tiny_run: Path) -> Path:
    return tiny_run


@pytest.fixture(scope="module")
def report(run_dir: Path, tiny_report: list[Path]) -> tuple[str, str]:
    paths = tiny_report
    assert paths == [run_dir / "report.html", run_dir / "summary.md"]
    return paths[0].read_text(encoding="utf-8"), paths[1].read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def long_md(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """summary.md in its long form, from `bench report --long` on a copy of the run (written
    once: two tests read it, and a report is ~10 s of plots and statistics here)."""
    run = copy_run(run_dir, tmp_path_factory.mktemp("long"))
    proc = run_cli("report", str(run), "--long")
    assert proc.returncode == 0, proc.stderr
    return (run / "summary.md").read_text()


def copy_run(run_dir: Path, tmp_path: Path, name: str = "run") -> Path:
    dest = tmp_path / name
    shutil.copytree(run_dir, dest)
    return dest


def edit_manifest(run: Path, change: Any) -> None:
    path = run / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


# --- report.html ---------------------------------------------------------------------------


@slow
def test_html_parses_with_every_section(report: tuple[str, str]) -> None:
    page = parse(report[0])
    for section_id in SECTION_IDS:
        assert section_id in page.ids, section_id
    assert len(page.ids) == len(set(page.ids)), "duplicate ids"
    assert "failures" not in page.ids  # a complete run has none
    assert report[0].startswith("<!DOCTYPE html>")
    # in the order a reviewer reads: the summary first, the environment last
    order = [i for i in page.ids if i in SECTION_IDS]
    assert order == list(SECTION_IDS), order


@slow
def test_html_is_self_contained(report: tuple[str, str]) -> None:
    page = parse(report[0])
    assert_self_contained(page, report[0])
    imgs = [v for tag, name, v in page.attrs if tag == "img" and name == "src"]
    assert len(imgs) == len(PLOTS)
    assert all(v.startswith("data:image/png;base64,") for v in imgs)


@slow
def test_env_header_and_reproduce_command(run_dir: Path, report: tuple[str, str]) -> None:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    env = section_of(report[0], "env")
    for key in ("python", "torch", "device", "cpu", "git_commit"):
        assert str(manifest["environment"][key]) in env, key
    assert "GC mode" in env
    assert "enabled" in env
    assert "scenarios" in env
    assert "prefill-dspark" in env
    assert "chunked_prefill_size" in env  # the tiny run's scenario override
    reproduce = section_of(report[0], "reproduce")
    assert manifest["command"].startswith("python -m bench run")
    assert manifest["command"] in reproduce  # nothing in it needs escaping


@slow
def test_suite_sections_have_tables_and_plots(report: tuple[str, str]) -> None:
    for suite in SUITE_IDS:
        body = section_of(report[0], suite)
        assert "<table>" in body, suite
        assert "ratio vs pr652 [95% CI]" in body
        assert "baseline" in body
    assert "data:image/png;base64," in section_of(report[0], "lookup")
    assert "p99.9" in section_of(report[0], "step")  # per-step percentiles
    # 9 iterations per benchmark: no tail quantile is supported, and the table says why
    assert "too few iterations" in section_of(report[0], "step")
    assert "per_field / cached" in section_of(report[0], "step")
    assert "collections g0 / g1 / g2" in section_of(report[0], "gc")
    assert "bytes / request" in section_of(report[0], "gc")
    assert "marginal ns / request / step" in section_of(report[0], "scaling")


@slow
def test_profile_section_says_how_to_make_one(report: tuple[str, str]) -> None:
    assert "make profile" in section_of(report[0], "profile")


@slow
def test_plots_written_as_png_and_svg_and_closed(run_dir: Path, report: tuple[str, str]) -> None:
    import matplotlib.pyplot as plt

    for name in PLOTS:
        png = run_dir / "plots" / f"{name}.png"
        svg = run_dir / "plots" / f"{name}.svg"
        assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), name
        assert b"<svg" in svg.read_bytes()[:2000], name
    assert not list((run_dir / "plots").glob(".*.tmp"))  # atomic writes left no temp file
    assert plt.get_fignums() == []


@slow
def test_hostile_description_is_inert_in_html(report: tuple[str, str]) -> None:
    text = report[0]
    assert "<script" not in text.lower()
    assert "\x1b" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot; | pipe" in text
    page = parse(text)
    assert "script" not in page.tags
    assert any(HOSTILE_RAW in t for t in page.text)  # shown to the reader, as text


@slow
def test_verdict_is_computed_from_data(run_dir: Path, report: tuple[str, str]) -> None:
    verdict = compute(load_run(run_dir))
    keys = {f.key for f in verdict.families}
    want = {"lookup_get_hit", "step_prefill-dspark", "step_decode-dspark", "scaling", "gc_pause"}
    assert {*want, "memory_request_bytes", "gc_full_decode-dspark"} <= keys
    step = verdict.family("step_prefill-dspark")
    assert step is not None
    assert [r.condition for r in step.rankings] == ["per_field", "cached"]
    for ranking in step.rankings:
        values = [e.value for e in ranking.entries]
        assert values == sorted(values)
        assert len(ranking.entries) == len(STRATEGY_NAMES) + 1  # the built-ins and hostile_x
    for family in verdict.families:  # the A/A twin is the noise floor, never ranked
        for ranking in family.rankings:
            assert not any(e.strategy.endswith(".aa") for e in ranking.entries)
    body = section_of(report[0], "verdict")
    sentences = re.findall(r'<ul class="verdict">(.*?)</ul>', body, re.S)
    assert sentences
    assert not any("pr652.aa" in ul for ul in sentences)  # never in a "best" sentence
    assert "A/A twin" in body  # but shown, in its own row of the headline table
    assert "Best at per_field" in body or "Tied best at per_field" in body
    assert "per_field → cached" in body
    assert "Only one lookup size measured" in body  # the tiny run has one size


# --- summary.md ----------------------------------------------------------------------------


@slow
def test_summary_md_is_valid_github_markdown(run_dir: Path, report: tuple[str, str]) -> None:
    """The short form a PR pastes: at most 40 lines, one table with a row per scenario."""
    md = report[1]
    assert len(md.splitlines()) <= 40, len(md.splitlines())
    (table,) = assert_valid_md_tables(md)
    assert table[0][0] == "scenario"
    header = " ".join(table[0])
    for needle in ("pr652 (per\\_field) µs/iter, in cache", "evicted", "dynattr (cached)", "Δ"):
        assert needle in header, needle
    assert "cheapest design" in header  # a default-shaped run names the cheapest design
    assert [r[0].split(" ")[0] for r in table[2:]] == ["prefill-dspark", "decode-dspark"]
    assert "(noisy)" not in md
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert f"```sh\n{manifest['command']}\n```" in md
    assert "**Setup:**" in md
    assert manifest["environment"]["git_commit"] in md
    assert md.count("**Verdict:**") == 1
    assert "<details>" in md
    assert "</details>" in md
    assert "GC: tracked objects per live request pr652 +" in md
    assert "Memory per request, over a bare request's" in md
    assert "\n\n\n" not in md


@slow
def test_summary_md_long_form(long_md: str) -> None:
    """`bench report --long`: every headline metric of every strategy."""
    md = long_md
    tables = assert_valid_md_tables(md)
    headline = tables[0]
    assert headline[0][0] == "strategy"
    header = " ".join(headline[0])
    for needle in (
        "get\\_hit",
        "iteration prefill-dspark",
        "iteration decode-dspark",
        "bytes",
        "GC pause",
    ):
        assert needle in header, needle
    assert "p99" not in header  # 9 iterations per benchmark support no p99 (tail rule)
    assert len(headline) == 2 + len(STRATEGY_NAMES) + 2  # + hostile_x + the A/A twin
    assert "(baseline)" in " ".join(headline[2])  # baseline first, absolute values
    assert headline[3][0] == "`pr652.aa` *(A/A twin)*"  # then its twin, marked
    assert "(noisy)" not in md  # a noisy cell is marked ~, said once under the table
    assert "**Environment:**" in md
    assert "\n\n\n" not in md


@slow
def test_hostile_description_is_inert_in_markdown(report: tuple[str, str], long_md: str) -> None:
    assert "<script" not in report[1].lower()
    md = long_md  # the long form lists every strategy's description
    assert "<script" not in md.lower()
    assert "\x1b" not in md
    row = next(line for line in md.splitlines() if "`hostile_x`" in line and "alert" in line)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in row
    assert "\\| pipe" in row
    assert "\\`tick\\`" in row
    assert "\\$x\\$" in row


# --- failures and missing suites -----------------------------------------------------------


@slow
def test_failures_section_when_a_suite_fails(run_dir: Path, tmp_path: Path) -> None:
    run = copy_run(run_dir, tmp_path)

    def fail(m: dict[str, Any]) -> None:
        m["suites"]["step"]["failures"] = {"hostile_x": "RuntimeError: <b>boom</b> | bad\nline 2"}
        m["suites"]["step"]["worker_errors"] = ["worker 0 failed: killed"]
        m["suites"]["step"]["status"] = "partial"
        m["suites"]["scaling"] = {"status": "interrupted"}
        m["status"] = "incomplete"
        m["missing"] = ["scaling"]

    edit_manifest(run, fail)
    (run / "scaling.json").unlink()
    assert (run / "plots" / "scaling.png").exists()  # from the first report
    html_path, md_path = write_report(run)
    text = html_path.read_text()
    page = parse(text)
    assert "failures" in page.ids
    assert "scaling" in page.ids
    failures = section_of(text, "failures")
    assert "RuntimeError: &lt;b&gt;boom&lt;/b&gt; | bad\nline 2" in failures
    assert "worker 0 failed: killed" in failures
    assert "scaling: interrupted" in failures
    assert "No results: this suite is interrupted" in section_of(text, "scaling")
    assert not (run / "plots" / "scaling.png").exists()  # skipped, and the stale one removed
    assert (run / "plots" / "step_latency_cdf.png").exists()
    md = md_path.read_text()
    assert "**Failures:**" in md
    assert "scaling (interrupted" in md
    assert_valid_md_tables(md)


# --- profile -------------------------------------------------------------------------------


@slow
def test_profile_section_embeds_small_flamegraphs_and_links_large(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.report import profile

    run = copy_run(run_dir, tmp_path)
    (run / "profile").mkdir()
    small = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    (run / "profile" / "weakkey.svg").write_text(small)
    (run / "profile" / "slots.svg").write_text(small + " " * 4096)
    shares = {
        "weakkey": {
            "samples": 1200,
            "strategy_share": 0.125,
            "gc_share": 0.03,
            "flamegraph": "profile/weakkey.svg",
            "speedscope": "profile/weakkey.speedscope.json",
        },
        "slots": {
            "samples": 900,
            "strategy_share": 0.05,
            "gc_share": 0.0,
            "flamegraph": "profile/slots.svg",
            "speedscope": "profile/slots.speedscope.json",
        },
    }
    (run / "profile" / "shares.json").write_text(json.dumps(shares))
    monkeypatch.setattr(profile, "MAX_EMBED_BYTES", 1024)  # slots.svg counts as "large"
    text = write_report(run)[0].read_text()
    page = parse(text)
    assert_self_contained(page, text)
    body = section_of(text, "profile")
    assert "12.5%" in body
    assert "1,200" in body
    assert body.count("data:image/svg+xml;base64,") == 1
    assert 'href="profile/slots.svg"' in body
    assert 'href="profile/weakkey.speedscope.json"' in body
    assert "<script" not in text.lower()


@slow
def test_profile_path_outside_the_run_is_refused(run_dir: Path, tmp_path: Path) -> None:
    run = copy_run(run_dir, tmp_path)
    (run / "profile").mkdir()
    bad = {"weakkey": {"samples": 1, "strategy_share": 0.1, "gc_share": 0, "flamegraph": "../x"}}
    (run / "profile" / "shares.json").write_text(json.dumps(bad))
    with pytest.raises(DataError, match=r"shares\.json: weakkey\.flamegraph points outside"):
        write_report(run)


# --- compare -------------------------------------------------------------------------------


@slow
def test_compare_a_run_with_itself(run_dir: Path, tmp_path: Path) -> None:
    paths = write_compare(run_dir, run_dir, tmp_path / "cmp")
    assert paths == [tmp_path / "cmp" / "compare.html", tmp_path / "cmp" / "compare.md"]
    text, md = (p.read_text() for p in paths)
    page = parse(text)
    assert_self_contained(page, text)
    for section_id in ("env", "summary", *SUITE_IDS, "only", "reproduce"):
        assert section_id in page.ids, section_id
    assert "0 faster, 0 slower" in text
    rows = assert_valid_md_tables(md)[-1][2:]
    assert rows
    for row in rows:
        assert row[3].startswith("1.000"), row  # raw head / base
        assert row[4].startswith("1.000"), row  # through the anchor
        assert row[5] == "same", row
    assert "0 faster, 0 slower" in md
    assert "No change beyond noise." in md
    assert "head's unchanged strategies ran 0.0%" in md


@slow
def test_compare_lists_benchmarks_in_one_run_only(run_dir: Path, tmp_path: Path) -> None:
    head = copy_run(run_dir, tmp_path, "head")

    def drop_scaling(m: dict[str, Any]) -> None:
        del m["suites"]["scaling"]
        m["config"]["suites"] = ["lookup", "step", "gc"]

    edit_manifest(head, drop_scaling)
    _, md_path = write_compare(run_dir, head, tmp_path / "cmp")
    md = md_path.read_text()
    only = next(line for line in md.splitlines() if line.startswith("Only in base: "))
    assert "`scaling/weakkey/scenario=decode-dspark/pattern=per_field/decode_batch=16`" in only
    assert "`scaling/control/scenario=decode-dspark/pattern=per_field/decode_batch=32`" in only
    assert "Only in head" not in md
    text = (tmp_path / "cmp" / "compare.html").read_text()
    assert "scaling/weakkey/scenario=decode-dspark/pattern=per_field/decode_batch=32" in section_of(
        text, "only"
    )


# --- bad input -----------------------------------------------------------------------------


def test_missing_manifest_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"manifest\.json: no such file"):
        write_report(tmp_path)


def test_missing_run_folder_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such run folder"):
        write_report(tmp_path / "nope")


BAD_FILES = [
    ("manifest.json", "truncate", r"manifest\.json: not valid JSON"),
    ("manifest.json", '{"hello": 1}', r"manifest\.json: not a reqstate-bench manifest"),
    ("manifest.json", "[1, 2]", r"manifest\.json: not a reqstate-bench manifest"),
    ("step.extra.json", "truncate", r"step\.extra\.json: not valid JSON"),
    ("step.extra.json", '{"hello": 1}', r"step\.extra\.json: not a reqstate-bench results"),
    (
        "step.extra.json",
        '{"schema": "reqstate-bench/3", "suite": "step", "extras": {"steps": {"x": 1}}}',
        r"step\.extra\.json: extra file\.extras\.steps\.x should be an object",
    ),
    (
        "step.extra.json",
        '{"schema": "reqstate-bench/3", "suite": "step", "extras": {"steps": '
        '{"step/x/pattern=cached": {"host_ns": [1], "device_ns": [], "gc": [0]}}}}',
        r"step\.extra\.json: .*differ in length",
    ),
    ("gc.extra.json", "truncate", r"gc\.extra\.json: not valid JSON"),
    ("lookup.json", "truncate", r"lookup\.json: not valid JSON"),
    ("lookup.json", '{"hello": 1}', r"lookup\.json: not a pyperf benchmark file"),
    ("scaling.json", None, r"scaling\.json: no such file"),
]


@slow
@pytest.mark.parametrize(
    ("name", "content", "message"), BAD_FILES, ids=[f"{n}-{c and c[:8]}" for n, c, _ in BAD_FILES]
)
def test_bad_result_file_is_a_one_line_data_error(
    run_dir: Path, tmp_path: Path, name: str, content: str | None, message: str
) -> None:
    run = copy_run(run_dir, tmp_path)
    path = run / name
    if content is None:
        path.unlink()
    elif content == "truncate":
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    else:
        path.write_text(content)
    with pytest.raises(DataError, match=message) as info:
        write_report(run)
    assert "\n" not in str(info.value)
    assert str(run / name) in str(info.value)
    with pytest.raises(DataError, match=message):
        write_compare(run_dir, run, tmp_path / "cmp")


@slow
def test_incompatible_schema_is_a_data_error(run_dir: Path, tmp_path: Path) -> None:
    run = copy_run(run_dir, tmp_path)
    edit_manifest(run, lambda m: m.update(schema="reqstate-bench/99"))
    with pytest.raises(DataError, match="incompatible schema 'reqstate-bench/99'"):
        write_report(run)


@slow
def test_result_file_outside_the_run_is_refused(run_dir: Path, tmp_path: Path) -> None:
    run = copy_run(run_dir, tmp_path)
    edit_manifest(run, lambda m: m["suites"]["step"]["files"].update(extra="../../etc/passwd"))
    with pytest.raises(DataError, match="points outside the run folder"):
        write_report(run)


# --- escaping helpers ----------------------------------------------------------------------


def test_markdown_escaping() -> None:
    raw = "<b>x</b> | `y` *z* _w_ [l](u) $m$ a\\b \x1b[31m\r\nnext"
    out = esc_md(raw)
    assert "\n" not in out
    assert "\x1b" not in out
    assert re.search(r"(?<!\\)\|", out) is None
    for bad in ("<b>", "`y`", "*z*", "_w_", "[l]", "$m$"):
        assert bad not in out, bad
    assert "&lt;b&gt;" in out


def test_code_block_fence_outgrows_backticks() -> None:
    block = md_code_block("echo ```x``` ````")
    assert block.startswith("`````sh\n")
    assert block.endswith("\n`````")


def test_clean_drops_control_characters() -> None:
    assert clean("a\x1b[31mb\x00c\x7f\td\ne") == "a[31mbc d e"


# --- terminal ------------------------------------------------------------------------------


@slow
def test_terminal_fits_a_screen(run_dir: Path) -> None:
    from bench.report.console import terminal
    from bench.report.load import load_run

    text = terminal(load_run(run_dir))
    assert len(text.splitlines()) <= 50, len(text.splitlines())
    assert "Verdict:" in text
    assert f"run folder: {run_dir}" in text
    assert "prefill-dspark" in text
    assert "decode-dspark" in text
    full = terminal(load_run(run_dir), verbose=True)
    assert len(full.splitlines()) > 50  # every suite's table: the long form is still there
    assert "== lookup" in full
    assert "== step" in full
    proc = run_cli("show", str(run_dir))
    assert proc.returncode == 0
    assert proc.stdout.strip() == text.strip()
