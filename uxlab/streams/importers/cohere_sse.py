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
from typing import Any, Generic, TypeVar

import msgspec

from uxlab.reading import Wording, got
from uxlab.streams.importers.base import ImportOptions, ImportResult, StreamEventError
from uxlab.streams.importers.event_mapping import (
    StreamBuilder,
    error_event,
    map_events,
    named_event,
    read_event,
)
from uxlab.streams.importers.sse_capture import import_capture_files
from uxlab.streams.recording import Header, Recording
from uxlab.streams.sse import SseEvent

M = TypeVar("M")


class Content(msgspec.Struct):
    type: str | None = None
    text: str | None = None
    thinking: str | None = None


class Function(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class ToolCall(msgspec.Struct):
    id: str | None = None
    function: Function | None = None


class RoleMessage(msgspec.Struct):
    """`message-start`'s message (its empty content and tool lists are not read)."""

    role: str | None = None


class ContentMessage(msgspec.Struct):
    content: Content | None = None


class PlanMessage(msgspec.Struct):
    tool_plan: str | None = None


class CallMessage(msgspec.Struct):
    tool_calls: ToolCall | None = None


class CitationMessage(msgspec.Struct):
    citations: Any = None


class Delta(msgspec.Struct, Generic[M]):
    message: M | None = None


class Event(msgspec.Struct, Generic[M]):
    """A Cohere v2 stream event whose `delta.message` is `M`."""

    id: str | None = None
    index: int | None = None
    delta: Delta[M] | None = None


class EndDelta(msgspec.Struct):
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


class Indexed(msgspec.Struct):
    """An event read for its index only (every event's index is checked)."""

    index: int | None = None


class MessageEnd(Indexed):
    delta: EndDelta | None = None


_WORDING: Wording = {
    "index": got("a whole number"),
    "delta": got("an object"),
    "delta.message": got("an object"),
    "delta.message.content": got("an object"),
    "delta.message.content.text": got("a string"),
    "delta.message.content.thinking": got("a string"),
    "delta.message.tool_plan": got("a string"),
    "delta.message.tool_calls": got("an object"),
    "delta.message.tool_calls.function": got("an object"),
    "delta.message.tool_calls.function.arguments": got("a string"),
    "delta.finish_reason": got("a string"),
    "delta.usage": got("an object"),
}
"""The words the hand-written checks said, where the model's would say less."""


def _event(i: int, obj: dict[str, Any], message: type[M]) -> tuple[Event[M], M | None]:
    """The event read with `message` as its `delta.message`, and that message."""
    event: Event[M] = read_event(i, obj, Event[message], _WORDING)  # type: ignore[valid-type]
    return event, event.delta.message if event.delta else None


def cohere_events_to_recording(
    events: Sequence[SseEvent], header: Header, *, strict: bool = True
) -> Recording:
    """Map Cohere v2 chat stream events to a Recording (see the module docstring)."""
    return map_events(events, header, _step, strict=strict).recording()


def _step(b: StreamBuilder, i: int, t_ms: float | None, name: str | None, data: str) -> None:
    if data.strip() == "[DONE]":
        b.close(t_ms)
        return
    kind, obj = named_event(i, name, data)
    if error_event(b, t_ms, kind, obj):
        return
    if kind == "message-start":
        start, role = _event(i, obj, RoleMessage)
        b.role_prelude(t_ms, (role and role.role) or "assistant", message_id=start.id)
    elif kind in ("content-start", "content-delta"):
        block, message = _event(i, obj, ContentMessage)
        content = (message and message.content) or Content()
        if kind == "content-start":
            b.meta(t_ms, kind="block_start", index=block.index or 0, block_type=content.type)
        b.chunk(t_ms, content.thinking or "", "reasoning")
        b.chunk(t_ms, content.text or "", "content")
    elif kind == "tool-plan-delta":
        _, plan = _event(i, obj, PlanMessage)
        b.chunk(t_ms, (plan and plan.tool_plan) or "", "reasoning", tool_plan=True)
    elif kind in ("tool-call-start", "tool-call-delta"):
        piece, call_message = _event(i, obj, CallMessage)
        call = (call_message and call_message.tool_calls) or ToolCall()
        _tool_call(b, t_ms, kind, piece.index or 0, call)
    elif kind == "tool-call-end":
        index = read_event(i, obj, Indexed, _WORDING).index or 0
        if index in b.state.get("calls", {}):
            b.tool_done(b.state["calls"][index])
    elif kind == "citation-start":
        citation, cited = _event(i, obj, CitationMessage)
        b.meta(t_ms, kind=kind, index=citation.index or 0, citation=cited and cited.citations)
    elif kind == "citation-end":
        b.meta(t_ms, kind=kind, index=read_event(i, obj, Indexed, _WORDING).index or 0)
    elif kind == "message-end":
        end = read_event(i, obj, MessageEnd, _WORDING).delta or EndDelta()
        b.finish_reason = end.finish_reason
        b.usage = end.usage
        if end.finish_reason != "ERROR":
            b.finish_tool_calls()
        b.close(t_ms)
    elif kind in ("content-end", "debug"):
        read_event(i, obj, Indexed, _WORDING)
    else:
        raise StreamEventError(
            i, "event", f"unknown Cohere event {kind!r} (not mapped; --tolerant keeps it)"
        )


def _tool_call(b: StreamBuilder, t_ms: float | None, kind: str, index: int, call: ToolCall) -> None:
    fn = call.function or Function()
    calls: dict[int, int] = b.state.setdefault("calls", {})
    if kind == "tool-call-start" or index not in calls:
        calls[index] = b.tool_call(t_ms, index, call.id, fn.name)
    b.tool_args(t_ms, calls[index], fn.arguments or "")


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
