"""The report's profile section, from profile/shares.json when a profiling run wrote one.

Flamegraph SVGs are embedded as base64 <img> (an image cannot run the SVG's own scripts); one
larger than MAX_EMBED_BYTES is linked by its relative path instead, so the report stays small
enough to open.
"""

from __future__ import annotations

import base64
from pathlib import Path

from bench.report.load import PROFILE_SHARES, ProfileShare, RunData
from bench.report.markup import Html, num, section, table, tag, td, void

MAX_EMBED_BYTES = 2 * 2**20


def _inside(run_dir: Path, rel: str) -> Path | None:
    path = (run_dir / rel).resolve()
    return path if path.is_relative_to(run_dir.resolve()) else None


def flamegraph_block(run: RunData, share: ProfileShare) -> Html:
    rel = share.flamegraph
    if not rel:
        return tag("p", f"{share.strategy}: no flamegraph recorded.", class_="note")
    path = _inside(run.path, rel)
    if path is None or not path.is_file():
        return tag("p", f"{share.strategy}: flamegraph file missing ({rel}).", class_="note")
    size = path.stat().st_size
    caption = tag("figcaption", tag("code", share.strategy), " flamegraph (", tag("code", rel), ")")
    if size > MAX_EMBED_BYTES:
        return tag(
            "p",
            tag("code", share.strategy),
            f": flamegraph is {size / 2**20:.1f} MiB, too large to embed; open ",
            tag("a", rel, href=rel),
            " next to this report.",
        )
    uri = "data:image/svg+xml;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
    return tag("figure", void("img", src=uri, alt=f"{share.strategy} flamegraph"), caption)


def profile_section(run: RunData) -> Html:
    if run.profile is None:
        return section(
            "profile",
            "Profile",
            tag(
                "p",
                f"No profile in this run folder ({PROFILE_SHARES} is absent). Produce one with ",
                tag("code", "make profile"),
                " (py-spy flamegraphs for every strategy), then render the report again.",
            ),
        )
    rows = []
    for s in run.profile:
        speedscope = tag("a", s.speedscope, href=s.speedscope) if s.speedscope else ""
        rows.append(
            (
                td(tag("code", s.strategy)),
                num(f"{s.samples:,}"),
                num(f"{s.strategy_share:.1%}"),
                num(f"{s.gc_share:.1%}"),
                td(speedscope),
            )
        )
    head = ("strategy", "samples", "in strategy code", "in GC", "speedscope profile")
    return section(
        "profile",
        "Profile",
        tag(
            "p",
            "Share of py-spy samples spent in the strategy's own code and in the garbage "
            "collector while the scheduler loop ran.",
            class_="note",
        ),
        table(head, rows),
        *(flamegraph_block(run, s) for s in run.profile),
    )
