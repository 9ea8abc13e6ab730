"""Fitting command output to an 80-column terminal by wrapping, never by cutting."""

from __future__ import annotations

import textwrap

WIDTH = 80
"""The terminal width command output is laid out for."""

_NO_BREAK = "\xa0"  # textwrap breaks only at ASCII whitespace


def wrap_parts(
    parts: list[str], width: int = WIDTH, indent: str = "", first_indent: str = ""
) -> list[str]:
    """`parts` joined with ", " in lines of at most `width`.

    Lines break between parts; a part too wide for a line on its own breaks at its spaces;
    a single word wider than a line (a long file name) stays whole on its own line.
    Nothing is cut.
    """
    glued = ", ".join(p.replace(" ", _NO_BREAK) for p in parts)
    out: list[str] = []
    for line in _wrap(glued, width, first_indent, indent):
        line = line.replace(_NO_BREAK, " ")
        if len(line) > width:  # one part alone is too wide: break it at its spaces
            out += _wrap(line.strip(), width, indent if out else first_indent, indent)
        else:
            out.append(line)
    return out


def wrap_labelled(label: str, parts: list[str], width: int = WIDTH) -> list[str]:
    """`label` then `parts` (see `wrap_parts`), continuation lines under the first part."""
    lines = wrap_parts(parts, width - len(label), indent="")
    pad = " " * len(label)
    return [(label if i == 0 else pad) + line for i, line in enumerate(lines)] or [label]


def _wrap(text: str, width: int, first_indent: str, indent: str) -> list[str]:
    return textwrap.wrap(
        text,
        width,
        initial_indent=first_indent,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def wrapped(label: str, prose: str, width: int | None = None) -> str:
    """`label` + `prose` folded to the terminal's width (80 by default) under the label, so a
    long note is not cut mid-word by the terminal; commands are never folded."""
    import shutil

    width = width or shutil.get_terminal_size((80, 24)).columns
    return textwrap.fill(
        prose,
        width=max(40, width - 1),
        initial_indent=label,
        subsequent_indent=" " * len(label),
        break_long_words=False,
        break_on_hyphens=False,
    )
