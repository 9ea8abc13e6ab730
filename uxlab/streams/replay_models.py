"""The replay file's header and canonical chunk as typed models.

The header (line 1) is checked against `ReplayHeader` in the words users of the format know
(`HEADER_WORDING`).

Most lines of a replay file are chunks with exactly the five keys the writer puts there
(contract 1). `decode_chunks` decodes such lines straight into `CanonicalChunk`s, checking
every rule of the format while it decodes (types, the channel, times and token counts in
their plausible ranges). Whatever it does not vouch for (an
extra key, a wrong type, a number out of range, JSON that is not strict) returns None: the
reader's other paths then decide, and name the line and field of a problem.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

import msgspec

from uxlab.reading import MAX_TIME_MS, MAX_TOKENS, MISSING, Wording, expected
from uxlab.streams.recording import FORMAT, SOURCE_KINDS, TEXT_SOURCES

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


def decode_chunks(lines: bytes) -> list[CanonicalChunk] | None:
    """The chunks of `lines` (UTF-8 JSON Lines, one canonical chunk a line, no blank line),
    or None when any line is not one (or two objects share a line: their count must match).

    The lines are decoded as one array, joined with `,\n`; the join's length gives the
    count of lines without another pass over them."""
    joined = b"".join((b"[", lines.replace(b"\n", b",\n"), b"]"))  # one copy, not two
    try:
        chunks = _CHUNKS.decode(joined)
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None
    if len(chunks) != len(joined) - len(lines) - 1:  # one more "," a line but the last
        return None
    return chunks


class ReplaySource(msgspec.Struct):
    """Where a stream came from: its `kind` is checked, its other keys kept as written."""

    kind: Literal["live", "import", "synthetic"]


class ReplayHeader(msgspec.Struct, tag_field="type", tag="header"):
    """Line 1 of a replay file (other keys are kept as the header's extras)."""

    format: Literal["uxlab.replay/1"]
    id: Annotated[str, msgspec.Meta(min_length=1)]
    source: ReplaySource
    request: dict[str, Any] | None = None
    clock: dict[str, Any] | None = None
    text_source: Literal["recorded", "synthetic", "split"] | None = None
    retime: dict[str, Any] | None = None


class _NotAHeader(msgspec.Struct, tag_field="type", tag="\x00"):
    """A placeholder (no header has this type): with it, the header is a tagged union, and
    msgspec checks `type` first (a lone tagged struct would take a line without one)."""


HeaderLine = ReplayHeader | _NotAHeader
"""What line 1 is read as (`type` checked before anything else, as it always was)."""


def _expected(what: str) -> Callable[[Any], str]:
    """The words for a value of the wrong type, the value whole: `expected a string id, got
    int 5`."""
    return expected(what, max_chars=None)


def _one_of(choices: tuple[str, ...], what: str | None = None) -> Callable[[Any], str]:
    """The words for a value that is not one of `choices` (`what`: the type a value of
    another type is told to be; None: any value is just not one of them)."""

    def words(v: Any) -> str:
        if v is MISSING:
            return f"missing (one of {', '.join(choices)})"
        if what is None or isinstance(v, str):
            return f"{v!r} is not one of {', '.join(choices)}"
        return _expected(what)(v)

    return words


HEADER_WORDING: Wording = {
    "type": lambda v: f"the first line must be the header, got type {v!r}",
    "format": lambda v: (
        f"missing (expected {FORMAT!r})"
        if v is MISSING
        else f"unknown format version {v!r} (this uxlab reads {FORMAT!r})"
    ),
    "id": lambda v: "must not be empty" if v == "" else _expected("a string id")(v),
    "source": _expected("an object"),
    "source.kind": _one_of(SOURCE_KINDS),
    "request": _expected("an object"),
    "clock": _expected("an object"),
    "text_source": _one_of(TEXT_SOURCES, "a string"),
    "retime": _expected("null or an object"),
}
"""The header's words for each field's problem (those the format's users have seen)."""
