"""The replay file's JSON Schema (contract 1): what one line of a `*.jsonl` replay file may
hold, generated from typed models, for other tools that write or read the format.

A replay file is JSON Lines, so the schema describes a line: line 1 is a `header`
(`ReplayHeader`, the model the reader checks the header with), every other line an event
(`chunk`, `meta`, `error`, `end`, told apart by `type`). What a schema of one line cannot
say stays with the reader (`uxlab inspect`, `read_replay`): the header comes first and only
once, times never go back, nothing follows the `end`, and every value is within the reading
rules (nesting, finite numbers). The docs ship it (docs/reference/replay-file.schema.json),
which a test keeps equal to this module's and checks every bundled replay against:

    uv run python -m uxlab.streams.replay_schema > docs/reference/replay-file.schema.json
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import msgspec

from uxlab.reading import MAX_TIME_MS, MAX_TOKENS
from uxlab.streams.replay_models import ReplayHeader

DRAFT = "https://json-schema.org/draft/2020-12/schema"

TimeMs = Annotated[
    float,
    msgspec.Meta(
        ge=0.0,
        le=MAX_TIME_MS,
        description="ms from the moment the request was sent (monotonic clock; at most a day)",
    ),
]
UnknownTime = Annotated[TimeMs | None, msgspec.Meta(description="null: the time is unknown")]


class ChunkLine(msgspec.Struct, tag_field="type", tag="chunk"):
    """A piece of output as it arrived (other keys are the chunk's own, kept as written)."""

    t_ms: UnknownTime
    text: Annotated[str, msgspec.Meta(description="the text of the piece (may be empty)")]
    channel: Annotated[
        Literal["content", "reasoning", "tool"],
        msgspec.Meta(description="the answer, the model's reasoning, or a tool call's input"),
    ] = "content"
    n_tokens: Annotated[
        Annotated[int, msgspec.Meta(ge=0, le=MAX_TOKENS)] | None,
        msgspec.Meta(description="tokens in the piece; null when not known"),
    ] = None


class MetaLine(msgspec.Struct, tag_field="type", tag="meta"):
    """Anything else the stream said (a role prelude, a ping, a tool call's start, ...):
    its other keys are its data."""

    t_ms: UnknownTime = None


class ErrorLine(msgspec.Struct, tag_field="type", tag="error"):
    """An error in the middle of the stream (the `end` that follows says `error`)."""

    t_ms: UnknownTime
    error: Annotated[dict[str, Any], msgspec.Meta(description="the error as the API gave it")]


class EndLine(msgspec.Struct, tag_field="type", tag="end"):
    """The last line: when the stream ended, why, and the usage the API reported."""

    t_ms: UnknownTime
    finish_reason: Annotated[
        str | None, msgspec.Meta(description="why the stream ended (stop, length, error, ...)")
    ] = None
    usage: Annotated[
        dict[str, Any] | None, msgspec.Meta(description="token counts as the API gave them")
    ] = None


ReplayLine = ReplayHeader | ChunkLine | MetaLine | ErrorLine | EndLine
"""One line of a replay file, by its `type`."""


HEADER_KEYS = {
    "format": "the format's version",
    "id": "the stream's id (a replay file's name is usually <id>.jsonl)",
    "source": "where the stream came from: kind (live, import, synthetic), and api, vendor, "
    "model, origin as known",
    "request": "the request that was sent (keys never stored)",
    "clock": 'what t_ms counts from (default {"t0": "request_sent", "unit": "ms"})',
    "text_source": "where the text came from: recorded, synthetic, or split from a whole",
    "retime": "a schedule's record: the stream it was shaped from, the seed and the profile",
}
"""The header's keys in words (the reader's model, `ReplayHeader`, says their types)."""


def replay_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one line of a replay file."""
    schema = msgspec.json.schema(ReplayLine)
    header = schema["$defs"]["ReplayHeader"]["properties"]
    for key, words in HEADER_KEYS.items():
        header[key] = {"description": words, **header[key]}
    return {
        "$schema": DRAFT,
        "title": "uxlab replay file line (uxlab.replay/1)",
        "description": "One line of a uxlab replay file (JSON Lines, UTF-8): line 1 is the "
        "header, then the events in arrival order, the end last. Times never decrease; "
        "`uxlab inspect` checks what one line cannot say.",
        **schema,
    }


def replay_schema_text() -> str:
    """The schema as the docs' JSON file holds it (2-space indent, a final newline)."""
    return json.dumps(replay_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(replay_schema_text(), end="")
