"""Escaping and number formatting shared by the HTML and markdown renderers.

Every string that comes from a result file, a strategy module or the manifest passes through
`esc_html` or `esc_md` before it reaches a report: both drop control characters first (an
ANSI colour sequence in a description must not reach a browser or a terminal).
"""

from __future__ import annotations

import html as _html
import math
import re
from collections.abc import Sequence

# C0 and C1 control characters except tab; newlines become spaces (cells are one line).
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NEWLINE_RE = re.compile(r"[\r\n]+")


def clean(text: object) -> str:
    """str(text) without control characters, on one line."""
    s = _NEWLINE_RE.sub(" ", str(text))
    return _CONTROL_RE.sub("", s).replace("\t", " ")


def clean_block(text: object) -> str:
    """Like clean, but keeps newlines (error tracebacks in <pre>)."""
    lines = str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(_CONTROL_RE.sub("", line).replace("\t", "    ") for line in lines)


def esc_html(text: object) -> str:
    return _html.escape(clean(text), quote=True)


def esc_html_block(text: object) -> str:
    return _html.escape(clean_block(text), quote=True)


_MD_SPECIAL = {
    "\\": "\\\\",
    "|": "\\|",
    "`": "\\`",
    "*": "\\*",
    "_": "\\_",
    "[": "\\[",
    "]": "\\]",
    "<": "&lt;",
    ">": "&gt;",
    "&": "&amp;",
    "$": "\\$",  # GitHub renders $...$ as math
    "~": "\\~",  # ~~strike~~
}


def esc_md(text: object) -> str:
    """Inline GitHub markdown text: no table breaks, no HTML, no code spans, no emphasis."""
    return "".join(_MD_SPECIAL.get(ch, ch) for ch in clean(text))


def md_code_block(text: object, lang: str = "sh") -> str:
    """A fenced block whose fence is longer than any backtick run inside it."""
    body = clean_block(text)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{body}\n{fence}"


def fmt_value(value: float, unit: str) -> str:
    """A value in its unit: seconds scaled to ns/us/ms/s, bytes with separators."""
    if unit == "byte":
        return f"{value:,.0f} B"
    if unit == "integer":
        return f"{value:,.1f}"
    if value == 0 or math.isnan(value):
        return "0"
    for scale, suffix in ((1e-9, "ns"), (1e-6, "us"), (1e-3, "ms"), (1.0, "s")):
        if abs(value) < scale * 1000 or suffix == "s":
            return f"{value / scale:,.1f} {suffix}"
    return f"{value}"


def fmt(value: float | None, unit: str = "second") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return fmt_value(value, unit)


def fmt_ci(low: float | None, high: float | None, unit: str = "second") -> str:
    if low is None or high is None:
        return ""
    return f"[{fmt(low, unit)}, {fmt(high, unit)}]"


TIMES = "\u00d7"  # the multiplication sign after a ratio


def fmt_ratio(ratio: float | None, low: float | None = None, high: float | None = None) -> str:
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    if low is None or high is None:
        return f"{ratio:.3f}{TIMES}"
    return f"{ratio:.3f}{TIMES} [{low:.3f}, {high:.3f}]"


def fmt_p(p: float | None) -> str:
    if p is None:
        return ""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


_CODE_SAFE_RE = re.compile(r"[A-Za-z0-9_.=/:+-]+")


def md_code(text: object) -> str:
    """Inline code for names; anything unusual falls back to escaped plain text."""
    s = clean(text)
    return f"`{s}`" if _CODE_SAFE_RE.fullmatch(s) else esc_md(s)


def md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Cells must already be escaped (esc_md) and on one line."""
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
    ]
    for row in rows:
        cells = [clean(c) or " " for c in row]
        cells += [" "] * (len(head) - len(cells))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
