"""Cohere v2 chat streams (`POST /v2/chat` with `"stream": true`) -> Recording.

Input: a captured SSE body of `event: <type>` / `data: {...}` pairs (timed or plain, in the
capture format of `openai-sse`), or the same events as JSON lines (`--from json-chunks`).
One stream per file; SRC may be a folder of captures.

Mapping (`cohere_events_to_recording(events, header, strict=...)`; the event's kind is its
`event:` name, else the data's `type`):

- `message-start` -> `meta {"kind": "role", "role", "message_id"}`;
- `content-start` -> `meta {"kind": "block_start", "index", "block_type"}` (`text` or
  `thinking`); `content-delta`: `delta.message.content.text` -> `content`,
  `delta.message.content.thinking` -> `reasoning`; `content-end` ends the block;
- `tool-plan-delta` (the plan Cohere writes before calling tools) -> `reasoning` with
  `"tool_plan": true`;
- `tool-call-start` -> `meta {"kind": "tool_call", "index", "id", "name"}` and its first
  `arguments` piece; `tool-call-delta` -> `tool` chunks; `tool-call-end` -> the call is whole
  (one that never ended is kept `incomplete`);
- `citation-start` / `citation-end` -> `meta {"kind": "citation-start" | "citation-end",
  "index"}` (the citation kept whole on the start);
- `message-end` -> the end: `delta.finish_reason` and `delta.usage` (`billed_units`,
  `tokens`, `cached_tokens`, kept as they are); a `data: [DONE]` after it is ignored;
- an `error` event or `{"error": ...}` -> `error` event, then `end` with `finish_reason:
  "error"`; any other event type is refused in strict mode with its name (kept by
  `--tolerant`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from uxlab.streams.importers.base import ImportOptions, ImportResult, StreamEventError
from uxlab.streams.importers.event_mapping import (
    StreamBuilder,
    error_event,
    field_of,
    index_of,
    map_events,
    named_event,
)
from uxlab.streams.importers.sse_capture import import_capture_files
from uxlab.streams.recording import Header, Recording
from uxlab.streams.sse import SseEvent

COHERE_EVENTS = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "message-end",
        "debug",
    }
)
"""The event types of a Cohere v2 chat stream (how `json-chunks` tells one)."""


def cohere_events_to_recording(
    events: Sequence[SseEvent], header: Header, *, strict: bool = True
) -> Recording:
    """Map Cohere v2 chat stream events to a Recording (see the module docstring)."""
    return map_events(events, header, _step, strict=strict).recording()


def _message(i: int, obj: dict[str, Any]) -> dict[str, Any]:
    """`delta.message` of an event ({} when absent), else a StreamEventError."""
    delta = field_of(i, obj, "delta", dict, "an object", "delta") or {}
    return field_of(i, delta, "message", dict, "an object", "delta.message") or {}


def _step(b: StreamBuilder, i: int, t_ms: float | None, name: str | None, data: str) -> None:
    if data.strip() == "[DONE]":
        b.close(t_ms)
        return
    kind, obj = named_event(i, name, data)
    if error_event(b, t_ms, kind, obj):
        return
    index = index_of(i, obj)
    if kind == "message-start":
        message = _message(i, obj)
        b.role_prelude(t_ms, str(message.get("role") or "assistant"), message_id=obj.get("id"))
    elif kind == "content-start":
        content = field_of(i, _message(i, obj), "content", dict, "an object", "content") or {}
        b.meta(t_ms, kind="block_start", index=index, block_type=content.get("type"))
        _content(b, i, t_ms, content)
    elif kind == "content-delta":
        content = field_of(i, _message(i, obj), "content", dict, "an object", "content") or {}
        _content(b, i, t_ms, content)
    elif kind == "tool-plan-delta":
        plan = field_of(i, _message(i, obj), "tool_plan", str, "a string", "tool_plan")
        b.chunk(t_ms, plan or "", "reasoning", tool_plan=True)
    elif kind in ("tool-call-start", "tool-call-delta"):
        _tool_call(b, i, t_ms, kind, index, _message(i, obj))
    elif kind == "tool-call-end":
        call = b.state.get("calls", {}).get(index)
        if call is not None:
            b.tool_done(call)
    elif kind == "citation-start":
        b.meta(t_ms, kind=kind, index=index, citation=_message(i, obj).get("citations"))
    elif kind == "citation-end":
        b.meta(t_ms, kind=kind, index=index)
    elif kind == "message-end":
        delta = field_of(i, obj, "delta", dict, "an object", "delta") or {}
        reason = field_of(i, delta, "finish_reason", str, "a string", "delta.finish_reason")
        b.finish_reason = reason
        b.usage = field_of(i, delta, "usage", dict, "an object", "delta.usage")
        if reason != "ERROR":
            b.finish_tool_calls()
        b.close(t_ms)
    elif kind in ("content-end", "debug"):
        return
    else:
        raise StreamEventError(
            i, "event", f"unknown Cohere event {kind!r} (not mapped; --tolerant keeps it)"
        )


def _content(b: StreamBuilder, i: int, t_ms: float | None, content: dict[str, Any]) -> None:
    for key, channel in (("thinking", "reasoning"), ("text", "content")):
        text = field_of(i, content, key, str, "a string", f"delta.message.content.{key}")
        b.chunk(t_ms, text or "", channel)


def _tool_call(
    b: StreamBuilder, i: int, t_ms: float | None, kind: str, index: Any, message: dict[str, Any]
) -> None:
    call = field_of(i, message, "tool_calls", dict, "an object", "delta.message.tool_calls") or {}
    fn = field_of(i, call, "function", dict, "an object", "delta.message.tool_calls.function")
    fn = fn or {}
    calls: dict[Any, int] = b.state.setdefault("calls", {})
    if kind == "tool-call-start" or index not in calls:
        start = index if isinstance(index, int) else b.n_tools
        calls[index] = b.tool_call(t_ms, start, call.get("id"), fn.get("name"))
    args = field_of(i, fn, "arguments", str, "a string", "tool_calls.function.arguments")
    b.tool_args(t_ms, calls[index], args or "")


def import_cohere_sse(path: Path, options: ImportOptions) -> ImportResult:
    """Import Cohere v2 chat SSE captures (a file or a folder of files)."""
    return import_capture_files(
        Path(path),
        options,
        cohere_events_to_recording,
        importer="cohere-sse",
        api="cohere.chat",
        vendor="cohere",
    )
