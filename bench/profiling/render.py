"""Collapsed stacks -> a speedscope file and a static SVG flamegraph (both written by us).

speedscope: one "sampled" profile over shared frames, as the file format schema at
https://www.speedscope.app/file-format-schema.json describes; every distinct stack is one sample
(root first) weighted by its sample count (unit "none": py-spy's counts, not seconds).

Flamegraph: root at the bottom, a box per frame per distinct call path, width proportional to
samples, children in alphabetical order (as flamegraph.pl draws them), a <title> tooltip on
every box. Colours mark strategy code, call sites and GC the same way the shares count them.
"""

from __future__ import annotations

import html
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.profiling.stacks import Frame, Sample, is_callsite_frame, is_gc_frame, is_strategy_frame

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"

# -- speedscope ---------------------------------------------------------------------------------


def merge_stacks(samples: list[Sample]) -> dict[tuple[Frame, ...], int]:
    """Identical stacks summed, in first-seen order."""
    merged: dict[tuple[Frame, ...], int] = {}
    for s in samples:
        merged[s.frames] = merged.get(s.frames, 0) + s.count
    return merged


def to_speedscope(samples: list[Sample], *, name: str) -> dict[str, Any]:
    frame_index: dict[Frame, int] = {}
    frames: list[dict[str, Any]] = []
    stacks: list[list[int]] = []
    weights: list[int] = []
    for stack, count in merge_stacks(samples).items():
        indices = []
        for f in stack:
            if f not in frame_index:
                frame_index[f] = len(frames)
                entry: dict[str, Any] = {"name": f.name}
                if f.file:
                    entry["file"] = f.file
                if f.line is not None:
                    entry["line"] = f.line
                frames.append(entry)
            indices.append(frame_index[f])
        stacks.append(indices)
        weights.append(count)
    total = sum(weights)
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "shared": {"frames": frames},
        "profiles": [
            {
                "type": "sampled",
                "name": name,
                "unit": "none",
                "startValue": 0,
                "endValue": total,
                "samples": stacks,
                "weights": weights,
            }
        ],
        "name": name,
        "activeProfileIndex": 0,
        "exporter": "reqstate-bench",
    }


# -- SVG flamegraph -----------------------------------------------------------------------------

FRAME_H_PX = 16
FONT_PX = 12
CHAR_W_PX = FONT_PX * 0.6  # monospace advance, close enough to size labels
HEADER_PX = 64
MARGIN_PX = 10
MIN_BOX_W_PX = 0.1

LEGEND: tuple[tuple[str, str], ...] = (
    ("strategy code", "rgb(70,130,220)"),
    ("call site", "rgb(60,170,110)"),
    ("GC", "rgb(160,90,200)"),
    ("other", "rgb(230,140,60)"),
)


@dataclass
class _Node:
    frame: Frame | None
    count: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


def _tree(samples: list[Sample]) -> _Node:
    top = _Node(frame=None)
    for s in samples:
        top.count += s.count
        node = top
        for f in s.frames:
            key = f.label()
            child = node.children.get(key)
            if child is None:
                child = node.children[key] = _Node(frame=f)
            child.count += s.count
            node = child
    return top


def _depth(node: _Node) -> int:
    best, todo = 0, [(node, 0)]
    while todo:
        n, d = todo.pop()
        best = max(best, d)
        todo.extend((c, d + 1) for c in n.children.values())
    return best


def _colour(frame: Frame) -> str:
    h = zlib.crc32(frame.name.encode())
    jitter = h % 40
    if is_strategy_frame(frame):
        return f"rgb({50 + jitter},{110 + jitter},220)"
    if is_callsite_frame(frame):
        return f"rgb({40 + jitter},{150 + jitter},100)"
    if is_gc_frame(frame):
        return f"rgb({140 + jitter},80,{190 + jitter // 2})"
    if frame.native:
        return f"rgb({150 + jitter},{150 + jitter},{150 + jitter})"
    return f"rgb(230,{100 + (h >> 8) % 120},{40 + (h >> 16) % 40})"


def _fit(text: str, width_px: float) -> str:
    chars = int((width_px - 4) / CHAR_W_PX)
    if chars < 3:
        return ""
    return text if len(text) <= chars else text[: chars - 2] + ".."


def flamegraph_svg(
    samples: list[Sample],
    *,
    title: str,
    subtitle: str = "",
    width_px: int = 1200,
    colour: Callable[[Frame], str] | None = None,
    legend: tuple[tuple[str, str], ...] = LEGEND,
    tip: Callable[[Frame], str] | None = None,
) -> str:
    """An SVG flame graph of `samples`; `colour` and `legend` say what a frame's colour means
    (the strategy, call-site and GC colours by default), `tip` adds to a frame's tooltip."""
    paint = colour or _colour
    top = _tree(samples)
    depth = max(_depth(top), 1)
    height_px = HEADER_PX + depth * FRAME_H_PX + MARGIN_PX
    plot_w = width_px - 2 * MARGIN_PX
    esc = html.escape
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width_px}" height="{height_px}" '
        f'viewBox="0 0 {width_px} {height_px}" font-family="monospace" font-size="{FONT_PX}">',
        f'<rect x="0" y="0" width="{width_px}" height="{height_px}" fill="rgb(250,250,245)"/>',
        f'<text x="{width_px / 2:.1f}" y="20" text-anchor="middle" font-size="16">'
        f"{esc(title)}</text>",
        f'<text x="{width_px / 2:.1f}" y="38" text-anchor="middle">{esc(subtitle)}</text>',
    ]
    x_legend = MARGIN_PX
    for label, swatch in legend:
        out.append(
            f'<rect x="{x_legend}" y="46" width="10" height="10" fill="{swatch}"/>'
            f'<text x="{x_legend + 14}" y="55">{esc(label)}</text>'
        )
        x_legend += 30 + int(len(label) * CHAR_W_PX)
    if top.count == 0:
        out.append(f'<text x="{MARGIN_PX}" y="{HEADER_PX + FONT_PX}">no samples</text>')
    # (node, x, depth); depth 0 is the bottom row
    todo: list[tuple[_Node, float, int]] = []
    x = 0.0
    for key in sorted(top.children):
        child = top.children[key]
        todo.append((child, x, 0))
        x += child.count
    scale = plot_w / top.count if top.count else 0.0
    while todo:
        node, x0, d = todo.pop()
        w = node.count * scale
        if w < MIN_BOX_W_PX or node.frame is None:
            continue
        bx = MARGIN_PX + x0 * scale
        by = HEADER_PX + (depth - 1 - d) * FRAME_H_PX
        label = node.frame.label()
        pct = 100.0 * node.count / top.count
        more = tip(node.frame) if tip is not None else ""
        hover = f"{label}: {node.count} samples ({pct:.2f}%){more}"
        out.append(
            f"<g><title>{esc(hover)}</title>"
            f'<rect x="{bx:.2f}" y="{by}" width="{w:.2f}" height="{FRAME_H_PX - 1}" '
            f'fill="{paint(node.frame)}" rx="2"/>'
        )
        text = _fit(label, w)
        if text:
            out.append(f'<text x="{bx + 3:.2f}" y="{by + FONT_PX}">{esc(text)}</text>')
        out.append("</g>")
        cx = x0
        for key in sorted(node.children):
            child = node.children[key]
            todo.append((child, cx, d + 1))
            cx += child.count
    out.append("</svg>")
    return "\n".join(out) + "\n"
