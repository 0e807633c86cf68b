"""HTML building blocks for the report and the comparison: escape by default.

A plain `str` (or any object) given to these helpers is escaped; only an `Html` value, markup
built here, passes through. The page carries a Content-Security-Policy that forbids scripts and
every network load, so even a bug in escaping could not make the page fetch anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bench.report.text import esc_html, esc_html_block

# Only inline styles and data: images; no scripts, fonts, frames, connections or forms.
CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'none'"
)

CSS = """
:root { --fg:#1a1a1a; --muted:#5a5a5a; --line:#d8d8d8; --bg:#ffffff; --alt:#f5f6f8;
  --faster:#0072B2; --slower:#D55E00; --warn:#fff4e0; --bad:#fde8e4; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",
  Arial,sans-serif; color:var(--fg); background:var(--bg); }
main { max-width:1240px; margin:0 auto; padding:16px 24px 48px; }
header h1 { margin:8px 0 4px; font-size:22px; }
nav { position:sticky; top:0; background:var(--bg); border-bottom:1px solid var(--line);
  padding:6px 0; z-index:1; }
nav a { margin-right:14px; color:var(--faster); text-decoration:none; white-space:nowrap; }
section { margin-top:28px; }
h2 { font-size:19px; border-bottom:2px solid var(--fg); padding-bottom:3px; }
h3 { font-size:15px; margin:18px 0 6px; }
p.note, .muted { color:var(--muted); }
.scroll { overflow-x:auto; max-width:100%; }
table { border-collapse:collapse; margin:6px 0 12px; font-size:13px; }
th, td { border:1px solid var(--line); padding:3px 8px; text-align:left; vertical-align:top; }
th { background:var(--alt); position:sticky; top:0; }
tr:nth-child(even) td { background:#fafbfc; }
.small { font-size:11.5px; color:var(--muted); }
td.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
.faster { color:var(--faster); font-weight:600; }
.slower { color:var(--slower); font-weight:600; }
td.twin { font-style:italic; background:#eef1f6 !important; color:var(--muted); }
td[title] { cursor:help; }
.badge { display:inline-block; padding:1px 8px; border-radius:10px; background:var(--alt);
  border:1px solid var(--line); font-size:12px; }
.badge.bad { background:var(--bad); } .badge.warn { background:var(--warn); }
.banner { padding:8px 12px; border:1px solid var(--line); background:var(--warn); margin:10px 0; }
figure { margin:10px 0 18px; }
figure img { max-width:100%; height:auto; border:1px solid var(--line); }
figcaption { color:var(--muted); font-size:12px; }
pre { background:var(--alt); padding:10px; overflow-x:auto; white-space:pre-wrap;
  word-break:break-word; border:1px solid var(--line); }
code { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12.5px; }
ul.verdict li { margin:2px 0; }
details { margin:6px 0; } summary { cursor:pointer; color:var(--faster); }
.cols { display:flex; flex-wrap:wrap; gap:8px 32px; align-items:flex-start; }
td.rowhead { background:var(--alt); font-weight:600; white-space:nowrap; }
"""


class Html(str):
    """Markup already escaped; helpers pass it through unchanged."""


class Td(Html):
    """A finished table cell."""


def h(value: object) -> Html:
    """Escape anything that is not already markup."""
    return value if isinstance(value, Html) else Html(esc_html(value))


def join(parts: Iterable[object], sep: str = "") -> Html:
    return Html(sep.join(h(p) for p in parts))


def _attrs(attrs: dict[str, object]) -> str:
    """class_="x" -> class="x"; data_id -> data-id; None values are left out."""
    return "".join(
        f' {k.rstrip("_").replace("_", "-")}="{esc_html(v)}"'
        for k, v in attrs.items()
        if v is not None
    )


def tag(name: str, *children: object, **attrs: object) -> Html:
    return Html(f"<{name}{_attrs(attrs)}>{join(children)}</{name}>")


def void(name: str, **attrs: object) -> Html:
    """An element without content or end tag (img, br)."""
    return Html(f"<{name}{_attrs(attrs)}>")


def td(*children: object, class_: str | None = None, title: str | None = None) -> Td:
    return Td(tag("td", *children, class_=class_, title=title))


def num(value: object) -> Td:
    return td(value, class_="num")


def pre(text: object) -> Html:
    """A preformatted block: newlines kept, control characters dropped, escaped."""
    return Html(f"<pre><code>{esc_html_block(text)}</code></pre>")


def table(head: Sequence[object] | None, rows: Iterable[Sequence[object]]) -> Html:
    """A scrollable table; a cell that is not already a Td becomes one (escaped)."""
    body = []
    for row in rows:
        cells = [c if isinstance(c, Td) else td(c) for c in row]
        body.append(tag("tr", *cells))
    thead = tag("thead", tag("tr", *(tag("th", x) for x in head))) if head else Html("")
    return tag("div", tag("table", thead, tag("tbody", *body)), class_="scroll")


def section(id_: str, title: str, *children: object) -> Html:
    return tag("section", tag("h2", title), *children, id=id_)


def page(title: str, body: Html) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        f"<title>{esc_html(title)}</title>\n<style>{CSS}</style>\n</head>\n"
        f"<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )
