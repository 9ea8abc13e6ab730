"""The replay file's canonical chunk as a typed model, decoded and validated in one pass.

Most lines of a replay file are chunks with exactly the five keys the writer puts there
(contract 1). `chunk_columns` decodes such lines straight into `CanonicalChunk`s, checking
every rule of the format while it decodes (types, the channel, times and token counts in
their plausible ranges), and hands back their columns. Whatever it does not vouch for (an
extra key, a wrong type, a number out of range, JSON that is not strict) returns None: the
reader's other paths then decide, and name the line and field of a problem.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from uxlab.reading import MAX_TIME_MS, MAX_TOKENS

TimeMs = Annotated[float, msgspec.Meta(ge=0.0, le=MAX_TIME_MS)]
Tokens = Annotated[int, msgspec.Meta(ge=0, le=MAX_TOKENS)]


class CanonicalChunk(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """`{"type": "chunk", "t_ms": ..., "channel": ..., "text": ..., "n_tokens": ...}`, every
    key present (null where unknown), no other. `type` is a field, not msgspec's tag: a tag
    may be left out, and a line without its type is not a chunk. Untracked by the garbage
    collector (`gc=False`): it holds only strings and numbers, never a cycle."""

    type: Literal["chunk"]
    t_ms: TimeMs | None
    channel: Literal["content", "reasoning", "tool"]
    text: str
    n_tokens: Tokens | None


_CHUNKS = msgspec.json.Decoder(list[CanonicalChunk])

ChunkColumns = tuple[list[float | None], list[str], list[str], list[int | None]]
"""Times (None: unknown), channels, texts and token counts (None: unknown), one per chunk."""


def chunk_columns(lines: str) -> ChunkColumns | None:
    """The columns of `lines` (JSON Lines, one canonical chunk a line, no blank line), or
    None when any line is not one (or two objects share a line: their count must match)."""
    try:
        chunks = _CHUNKS.decode("[" + lines.replace("\n", ",\n") + "]")
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None
    if len(chunks) != lines.count("\n") + 1:
        return None
    return (
        [c.t_ms for c in chunks],
        [c.channel for c in chunks],
        [c.text for c in chunks],
        [c.n_tokens for c in chunks],
    )
