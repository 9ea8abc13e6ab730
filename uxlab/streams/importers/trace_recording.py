"""What the trace importers (`otel`, `langfuse`) share: reading, output messages, the recording.

Traces keep, per model call, when it started and ended, when the first chunk of a streamed
answer came (if the instrumentation records it), the answer's text and the token usage,
not when each later chunk came. They give production TTFT and e2e distributions.

Recording: time zero is the span's start. With a first-chunk time, the text is cut into
pieces (as many as the output tokens when known) laid from the first chunk to the end, the
gaps between them made up (`source.timing` starts with `synthetic`: `inspect` shows TTFT and
e2e, and leaves ITL and stalls out). Without one (a call that did not stream, or an
instrumentation that does not record it) the text has no times (`timing: none`) and only the
end is known. Tool calls are kept (a `tool_call` meta and its arguments) at the end.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from uxlab.reading import InputProblem, loads_json
from uxlab.streams.importers.base import import_header, loads_checked, read_text_checked
from uxlab.streams.recording import Chunk, End, Event, Meta, Recording
from uxlab.streams.split_text import split_text, text_pieces

TIMING = "synthetic: recorded first chunk and end; even gaps between"
# -- reading -------------------------------------------------------------------------------


def documents(path: Path) -> Iterator[tuple[str, Any]]:
    """The JSON document of a file, or one per line (JSON Lines)."""
    text = read_text_checked(path)
    lines = [(n, raw) for n, raw in enumerate(text.splitlines(), start=1) if raw.strip()]
    if len(lines) > 1 and all(raw.lstrip().startswith("{") for _, raw in lines):
        try:  # JSON Lines (one document per line) unless the whole file is one document
            loads_json(lines[0][1])
        except InputProblem:
            yield "1", loads_checked(text, path, None)
            return
        for lineno, raw in lines:
            yield str(lineno), loads_checked(raw, path, str(lineno))
        return
    yield "1", loads_checked(text, path, None)


def str_or_none(value: Any) -> str | None:
    """`value` when it is a string, else None."""
    return value if isinstance(value, str) else None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_us(value: Any) -> int | None:
    """An ISO 8601 time (Langfuse) as whole microseconds since the epoch (exact, no float
    rounding); None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return (t - _EPOCH) // timedelta(microseconds=1)


# -- the recording ---------------------------------------------------------------------


def trace_recording(
    rid: str,
    *,
    importer: str,
    origin: str,
    ttft_ms: float | None,
    end_ms: float,
    parts: list[tuple[str, str]],
    tool_calls: list[dict[str, Any]],
    output_tokens: int | None,
    finish_reason: str | None,
    usage: dict[str, Any] | None,
    **source: Any,
) -> Recording:
    """A recording from a trace's moments: text laid from the first chunk to the end."""
    finish_reason = str_or_none(finish_reason)
    source = {k: (v if isinstance(v, str | int | float) else None) for k, v in source.items()}
    events: list[Event] = []
    runs = [(channel, text) for channel, text in parts if text]
    if ttft_ms is not None and runs:
        # As many chunks as output tokens when known, else token-like pieces; each run gets
        # its share (at least one, at most one per character).
        n_pieces = [len(text_pieces(text)) for _, text in runs]
        n_chunks = output_tokens or sum(n_pieces)
        shares = [
            min(len(text), max(1, round(n_chunks * k / sum(n_pieces))))
            for (_, text), k in zip(runs, n_pieces, strict=True)
        ]
        times = np.linspace(ttft_ms, max(end_ms, ttft_ms), sum(shares)).tolist()
        per_token = 1 if output_tokens == sum(shares) else None
        for (channel, text), n in zip(runs, shares, strict=True):
            for piece in split_text(text, n):
                t_ms = times.pop(0)
                events.append(Chunk(t_ms=t_ms, text=piece, channel=channel, n_tokens=per_token))
    else:
        events.extend(Chunk(t_ms=None, text=text, channel=channel) for channel, text in runs)
    for k, call in enumerate(tool_calls):
        meta = {"kind": "tool_call", "index": k, "id": call.get("id"), "name": call.get("name")}
        events.append(Meta(t_ms=end_ms, data=meta))
        if call.get("arguments"):
            events.append(
                Chunk(t_ms=end_ms, text=call["arguments"], channel="tool", extra={"tool_index": k})
            )
    header = import_header(
        rid,
        importer=importer,
        origin=origin,
        text_source="split" if ttft_ms is not None else "recorded",
        timing=TIMING if ttft_ms is not None else "none: the trace keeps no first-chunk time",
        **source,
    )
    return Recording(header=header, events=events, end=End(end_ms, finish_reason, usage))


def arguments(value: Any) -> str:
    """A tool call's arguments as text (JSON when they came as an object)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def output_messages(raw: Any) -> tuple[list[tuple[str, str]], list[dict[str, Any]], str | None]:
    """Text runs, tool calls and finish reason of `gen_ai.output.messages`."""
    if isinstance(raw, str):
        try:
            raw = loads_json(raw)
        except InputProblem:
            return [("content", raw)], [], None
    parts: list[tuple[str, str]] = []
    calls: list[dict[str, Any]] = []
    finish = None
    for message in raw if isinstance(raw, list) else [raw]:
        if not isinstance(message, dict):
            continue
        finish = finish or message.get("finish_reason")
        for part in message.get("parts") or []:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("content"), str):
                parts.append(("content", part["content"]))
            elif kind == "reasoning" and isinstance(part.get("content"), str):
                parts.append(("reasoning", part["content"]))
            elif kind == "tool_call":
                calls.append(
                    {
                        "id": part.get("id"),
                        "name": part.get("name"),
                        "arguments": arguments(part.get("arguments")),
                    }
                )
        if isinstance(message.get("content"), str):  # a plain {role, content} message
            parts.append(("content", message["content"]))
    return parts, calls, finish
