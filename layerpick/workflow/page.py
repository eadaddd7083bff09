"""A page as a list of blocks (heading, text, table, image, code) and its two renderings, markdown and one
self-contained HTML file (images embedded), so that the two cannot disagree. Knows nothing of what a page says."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Image:
    path: Path
    alt: str


@dataclass(frozen=True)
class Code:
    text: str


Block = Heading | Text | Table | Image | Code


def to_markdown(blocks: list[Block], base: Path) -> str:
    parts = []
    for block in blocks:
        if isinstance(block, Heading):
            parts.append("#" * block.level + " " + block.text)
        elif isinstance(block, Text):
            parts.append(block.text)
        elif isinstance(block, Table):
            lines = ["| " + " | ".join(block.header) + " |", "|" + "---|" * len(block.header)]
            parts.append("\n".join(lines + ["| " + " | ".join(row) + " |" for row in block.rows]))
        elif isinstance(block, Image):
            if block.path.is_file():
                parts.append(f"![{block.alt}]({block.path.relative_to(base).as_posix()})")
        elif isinstance(block, Code):
            parts.append(f"```bash\n{block.text}\n```")
    return "\n\n".join(parts) + "\n"


STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.45}"
    "table{border-collapse:collapse;margin:1em 0;font-size:0.9em}td,th{border:1px solid #ccc;padding:3px 8px;"
    "text-align:right}td:first-child,th:first-child{text-align:left}pre{background:#f4f4f4;padding:1em;"
    "overflow-x:auto}img{max-width:100%}code{background:#f4f4f4}"
)


def to_html(blocks: list[Block], title: str) -> str:
    body = [_html_block(block) for block in blocks]
    return (
        f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{STYLE}</style></head>\n<body>\n" + "\n".join(b for b in body if b) + "\n</body></html>\n"
    )


def _html_block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}>{html.escape(block.text)}</h{block.level}>"
    if isinstance(block, Text):
        return f"<p>{_inline(block.text)}</p>"
    if isinstance(block, Table):
        head = "".join(f"<th>{_inline(cell)}</th>" for cell in block.header)
        rows = "".join("<tr>" + "".join(f"<td>{_inline(cell)}</td>" for cell in row) + "</tr>" for row in block.rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    if isinstance(block, Image):
        if not block.path.is_file():
            return ""
        data = base64.b64encode(block.path.read_bytes()).decode("ascii")
        return f'<img alt="{html.escape(block.alt)}" src="data:image/png;base64,{data}">'
    return f"<pre><code>{html.escape(block.text)}</code></pre>"


def _inline(text: str) -> str:
    """The two markdown marks the page uses: **bold** and `code`."""
    out, bold, code = [], False, False
    for index, piece in enumerate(text.replace("**", "\0").split("\0")):
        if index:
            out.append("</b>" if bold else "<b>")
            bold = not bold
        for part_index, part in enumerate(piece.split("`")):
            if part_index:
                out.append("</code>" if code else "<code>")
                code = not code
            out.append(html.escape(part))
    return "".join(out)
