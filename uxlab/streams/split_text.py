"""Laying a text over timing-only sources: cutting it into exactly as many chunks as arrived.

Benchmarks such as AIPerf (`profile_export.jsonl`), `vllm bench serve` and llmperf keep when
each chunk arrived but not what it said. To play such a stream, a text is laid over it:

- `split_text(text, n)` cuts a whole text (e.g. vLLM's `generated_texts`) into exactly `n`
  pieces that join back to the text, on word boundaries where possible;
- `lay_text(text, n)` takes the first `n` token-like pieces of a text (repeating it if it
  is too short), for a stand-in text such as the bundled neutral one.

Pieces are token-like: a word with its leading space, a run of punctuation (so markdown
markers such as `**`, `##` or a list's `- ` stay whole), or a run of newlines. Words longer
than 8 characters are cut in parts, as sub-word tokenizers do, so a piece holds ~4 characters.
"""

from __future__ import annotations

import re
from importlib import resources

from uxlab.errors import UxlabError

_PIECE = re.compile(r"\n+|[ \t]*(?:\w+|[^\w\s]+)|[ \t]+")
_LONG_WORD = 8
_PART = 5


class TextTooShortError(UxlabError, ValueError):
    """A text with fewer characters than the chunks it must fill."""


def text_pieces(text: str) -> list[str]:
    """The token-like pieces of `text`; `"".join(text_pieces(text)) == text`."""
    pieces: list[str] = []
    for m in _PIECE.finditer(text):
        piece = m.group(0)
        core = piece.lstrip(" \t")
        if len(core) > _LONG_WORD and core.isalnum():
            lead = piece[: len(piece) - len(core)]
            n_parts = -(-len(core) // _PART)
            size = -(-len(core) // n_parts)
            parts = [core[i : i + size] for i in range(0, len(core), size)]
            parts[0] = lead + parts[0]
            pieces.extend(parts)
        else:
            pieces.append(piece)
    # The regex covers every character; keep anything unforeseen rather than drop it.
    if "".join(pieces) != text:  # pragma: no cover - defensive
        return list(text)
    return pieces


def split_text(text: str, n_chunks: int) -> list[str]:
    """Cut `text` into exactly `n_chunks` non-empty pieces that join back to `text`.

    With more token-like pieces than chunks, neighbours are grouped evenly; with fewer, the
    longest pieces are halved. Raises TextTooShortError when `text` has fewer characters
    than `n_chunks`.
    """
    if n_chunks < 1:
        raise ValueError(f"n_chunks must be at least 1, got {n_chunks}")
    if len(text) < n_chunks:
        raise TextTooShortError(f"a text of {len(text)} characters cannot fill {n_chunks} chunks")
    pieces = text_pieces(text)
    if len(pieces) >= n_chunks:
        bounds = [round(k * len(pieces) / n_chunks) for k in range(n_chunks + 1)]
        return ["".join(pieces[bounds[k] : bounds[k + 1]]) for k in range(n_chunks)]
    while len(pieces) < n_chunks:
        i = max(range(len(pieces)), key=lambda j: len(pieces[j]))
        p = pieces[i]
        half = len(p) // 2
        pieces[i : i + 1] = [p[:half], p[half:]]
    return pieces


def lay_text(text: str, n_chunks: int, separator: str = "\n\n") -> list[str]:
    """The first `n_chunks` token-like pieces of `text`, repeating it after `separator`."""
    if n_chunks < 0:
        raise ValueError(f"n_chunks must not be negative, got {n_chunks}")
    base = text_pieces(text.strip())
    if not base:
        raise TextTooShortError("the text to lay over the stream is empty")
    pieces: list[str] = []
    while len(pieces) < n_chunks:
        if pieces:
            pieces.append(separator)
        pieces.extend(base)
    return pieces[:n_chunks]


def neutral_text() -> str:
    """The bundled neutral text (plain informative prose with a little markdown)."""
    ref = resources.files("uxlab.streams").joinpath("data/neutral_text.md")
    return ref.read_text(encoding="utf-8")
