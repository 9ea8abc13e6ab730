"""The chat view's text, before it is styled: wrapping a line to a width, the blocks an
answer is made of (content, reasoning, tool calls, status) and their header lines."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rich.cells import get_character_cell_size


def wrap_overflow(tail: str, width: int) -> tuple[list[str], str]:
    """Split finished lines off `tail` until what is left fits in `width` cells.

    Greedy word wrap: break at the last space that fits, else hard-break a long word.
    Returns (finished lines, the unfinished rest). Cost is O(len(tail)): one pass with an
    index (no re-slicing or re-measuring of the rest per line), so a 1 MB chunk is linear.
    """
    width = max(1, width)
    n = len(tail)
    one_cell = tail.isascii() and tail.isprintable()  # every character is one cell wide
    done: list[str] = []
    start = 0
    while True:
        if one_cell:
            cut = start + width
        else:
            cells = 0
            cut = start
            while cut < n:
                size = get_character_cell_size(tail[cut])
                if cells + size > width:
                    break
                cells += size
                cut += 1
        if cut >= n:
            break  # the rest fits
        if tail[cut] == " ":
            line, start = tail[start:cut], cut + 1
        else:
            space = tail.rfind(" ", start, cut)
            if space > start:
                line, start = tail[start:space], space + 1
            else:
                cut = max(cut, start + 1)
                line, start = tail[start:cut], cut
        done.append(line.rstrip(" "))
    return done, tail[start:] if start else tail


@dataclass
class Block:
    """One run of same-channel output (or the prompt, or a status line)."""

    kind: str  # prompt | content | reasoning | tool | error | status
    parts: list[str] = field(default_factory=list)
    closed: bool = False
    name: str | None = None
    """A tool call's name, when a meta event gave it."""

    @property
    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""


def details_header(block: Block, open_: bool) -> str:
    """The collapsed (or open) header line of a reasoning or tool-call block."""
    arrow, verb = ("▾", "collapse") if open_ else ("▸", "expand")
    if block.kind == "reasoning":
        if not block.closed:
            return f"{arrow} Thinking…"
        return f"{arrow} Thought ({len(block.text.split())} words) · t to {verb}"
    name = block.name or (tool_name(block.text) if block.closed else None)
    label = f"Tool call: {name}" if name else "Tool call"
    if not block.closed:
        return f"{arrow} {label}…"
    return f"{arrow} {label} ({len(block.text)} chars) · t to {verb}"


def tool_name(text: str) -> str | None:
    """The tool's name in a call's JSON text, if it has one."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # a model's text: anything may come
        return None
    if isinstance(data, dict):
        name = data.get("name") or (data.get("function") or {}).get("name")
        return str(name) if name else None
    return None


def pretty_json(text: str) -> str:
    """`text` indented when it is JSON, else as it is."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


def error_message(error: dict[str, Any]) -> str:
    """The line shown when the response failed."""
    nested = error.get("error")
    inner: dict[str, Any] = nested if isinstance(nested, dict) else error
    kind = inner.get("type") or inner.get("code") or "error"
    message = inner.get("message")
    return f"⚠ The response failed: {kind}" + (f" ({message})" if message else "")
