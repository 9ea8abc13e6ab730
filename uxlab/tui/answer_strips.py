"""Screen lines of the chat view (`uxlab.tui.stream_view`): a line of text and its style
made a `Strip` at the wrap width, and a finished answer rendered as Markdown."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console
from rich.markdown import Markdown
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

TextLine = tuple[str, Style | None]
"""A finished line of wrapped text and its style, before it is drawn."""


def build_strip(text: str, style: Style | None, base: Style, width: int) -> Strip:
    """`text` in `style` over the view's `base` style, padded to `width` cells."""
    cells = cell_len(text)
    segments = [Segment(text, base + style if style else base)]
    if cells < width:
        segments.append(Segment(" " * (width - cells), base))
    return Strip(segments, max(cells, width))


def markdown_strips(console: Console, text: str, width: int, base: Style) -> list[Strip]:
    """`text` rendered as Markdown at `width`, trailing blank lines dropped."""
    options = console.options.update(width=width, height=None, highlight=False)
    rendered = console.render_lines(
        Markdown(text, code_theme="ansi_dark", inline_code_theme="ansi_dark"),
        options,
        pad=False,
    )
    strips = [Strip(line).crop_extend(0, width, None).apply_style(base) for line in rendered]
    while strips and not strips[-1].text.strip():
        strips.pop()
    return strips


def line_text(line: Strip | TextLine) -> str:
    """The text of a finished line, drawn or not."""
    return line[0] if isinstance(line, tuple) else line.text
