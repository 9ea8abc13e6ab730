"""Splitting chunk text into token-like pieces for re-chunking, keeping the text identical.

When a chunk's token count is known, its text is cut into exactly that many pieces where
the text allows (word pieces are merged or long pieces halved); when it is unknown, the
pieces are words with their leading whitespace, single punctuation marks and trailing
whitespace. `"".join(split_pieces(text, n)) == text` always holds.
"""

from __future__ import annotations

import re

_PIECE = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")


def word_pieces(text: str) -> list[str]:
    """Words (with leading whitespace), punctuation marks and trailing whitespace."""
    pieces = _PIECE.findall(text)
    if "".join(pieces) != text:  # pragma: no cover - the pattern covers every character
        return list(text)
    return pieces or [text]


def split_pieces(text: str, n_tokens: int | None = None) -> list[str]:
    """Token-like pieces of `text`; exactly `n_tokens` of them when the text allows."""
    if n_tokens == 1:
        return [text]
    pieces = word_pieces(text)
    if n_tokens is None or n_tokens <= 0 or len(pieces) == n_tokens:
        return pieces
    if len(pieces) > n_tokens:
        # Merge neighbours into n_tokens groups of near-equal size (larger groups first).
        size, larger = divmod(len(pieces), n_tokens)
        out, start = [], 0
        for g in range(n_tokens):
            stop = start + size + (1 if g < larger else 0)
            out.append("".join(pieces[start:stop]))
            start = stop
        return out
    # Fewer word pieces than tokens: halve the longest piece until the count is reached.
    while len(pieces) < n_tokens:
        longest = max(range(len(pieces)), key=lambda i: len(pieces[i]))
        piece = pieces[longest]
        if len(piece) < 2:
            break
        half = len(piece) // 2
        pieces[longest : longest + 1] = [piece[:half], piece[half:]]
    return pieces
