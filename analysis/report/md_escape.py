"""Plain text into Markdown: what came from the data shows as text, never as markup or HTML.

Study titles, model names, participant ids, question labels and free text reach `report.md`;
`md_text` makes each one literal: raw HTML (`<script>`, `<img onerror=...>`), entities, link
and image brackets (`]`), emphasis, `#` and table pipes are backslash-escaped
(CommonMark lets any ASCII punctuation be escaped), and a line break becomes a space (as in
the HTML report). `md_block` also keeps a paragraph or list item from starting a block of
its own (a heading, a quote, a list `-`/`+`/`1.`, an indented code block). Intraword
underscores (`q_quality`) are left alone, since they never make emphasis.
"""

from __future__ import annotations

import re

_ALWAYS = re.compile(r"([\\`*\]<>|~&#])")  # `]` unescaped is what every link needs
_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_BLOCK_START = re.compile(r"^(?:[#>]|[-+](?=\s|$)|\d+(?=[.)](?:\s|$)))")


def md_text(text: object) -> str:
    """`text` as literal Markdown inline content, one line (a table cell, a heading).

    A `quoted` span is a code span, as the HTML report shows it (`render.inline`): uxlab's
    own messages quote commands so (`uxlab run --nice 10`). Only a span of plain characters
    is kept (no `<`, `>`, `&`, `|` or backslash, which a code span would show otherwise or a
    table would split on); anything else is escaped like the rest.
    """
    out = " ".join(str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")).strip()
    parts = out.split("`")
    if len(parts) % 2 == 0:  # a backtick without its pair: all literal
        return _escape(out)
    return "".join(
        f"`{part}`" if i % 2 and _PLAIN.fullmatch(part) else _escape(f"`{part}`" if i % 2 else part)
        for i, part in enumerate(parts)
    )


_PLAIN = re.compile(r"[^<>&|\\]+")
"""What a kept code span may hold."""


def _escape(text: str) -> str:
    out = _ALWAYS.sub(r"\\\1", text)
    return _UNDERSCORE.sub(r"\\_", out)


def md_block(text: object) -> str:
    """`text` as a literal paragraph or list item: also never starts a block of its own."""
    out = md_text(text)
    match = _BLOCK_START.match(out)
    if match is None:
        return out
    head = match.group(0)
    if head[0].isdigit():
        return head + "\\" + out[len(head) :]  # `1\. x`: not an ordered list
    return "\\" + out
