"""Turn a live capture (SSE events with arrival times) into a Recording, per API.

Conventions shared with the importers (`uxlab.streams.importers`): a role-only prelude
becomes a `meta {"kind": "role"}` event (never an empty chunk); reasoning goes to channel
`reasoning`; a tool call's start (id, name) is a `meta {"kind": "tool_call", "index"}` and
its argument pieces are `tool` chunks with `tool_index`;
usage and finish reason go to `end`; a mid-stream error becomes an `error` event followed by
an `end` with `finish_reason: "error"`. A stream that stops without its terminator (no
`[DONE]`, no `message_stop`, no `response.completed`, no finish reason) has no `end`: it is
a truncated stream. Events whose data is not JSON are kept as `meta` events of kind
`malformed_event` and counted, so the recording still holds everything that arrived.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from uxlab.live.wire_events import WireEvent
from uxlab.streams.recording import Chunk, End, ErrorEvent, Event, Header, Meta, Recording


@dataclass
class _Builder:
    """Accumulates events; `finish` makes the Recording."""

    header: Header
    events: list[Event] = field(default_factory=list)
    end: End | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    malformed: int = 0
    last_t_ms: float = 0.0

    n_tools: int = 0

    def chunk(self, t_ms: float, text: str, channel: str = "content", **extra: Any) -> None:
        if text:
            self.events.append(Chunk(t_ms=t_ms, text=text, channel=channel, extra=extra))

    def tool_call(self, t_ms: float, index: int, call_id: str | None, name: str | None) -> None:
        """A tool call starts; its argument pieces follow as `tool` chunks."""
        self.n_tools += 1
        self.meta(t_ms, kind="tool_call", index=index, id=call_id, name=name)

    def meta(self, t_ms: float, **data: Any) -> None:
        self.events.append(Meta(t_ms=t_ms, data=data))

    def error(self, t_ms: float, error: dict[str, Any]) -> None:
        self.events.append(ErrorEvent(t_ms=t_ms, error=error))
        self.end = End(t_ms=t_ms, finish_reason="error", usage=self.usage)

    def bad(self, ev: WireEvent, problem: str) -> None:
        self.malformed += 1
        self.meta(
            ev.t_ms, kind="malformed_event", event=ev.event, data=ev.data[:500], problem=problem
        )

    def close(self, t_ms: float) -> None:
        if self.end is None:
            self.end = End(t_ms=t_ms, finish_reason=self.finish_reason, usage=self.usage)

    def recording(self) -> Recording:
        return Recording(header=self.header, events=self.events, end=self.end)


def _json(b: _Builder, ev: WireEvent) -> dict[str, Any] | None:
    try:
        obj = json.loads(ev.data)
    except json.JSONDecodeError as exc:
        b.bad(ev, f"data is not JSON ({exc.msg} at column {exc.colno})")
        return None
    if not isinstance(obj, dict):
        b.bad(ev, f"data is a JSON {type(obj).__name__}, expected an object")
        return None
    return obj


def _objects(b: _Builder, events: list[WireEvent]) -> Iterator[tuple[WireEvent, dict[str, Any]]]:
    """Each event with its JSON object; events whose data is not one are kept as malformed."""
    for ev in events:
        obj = _json(b, ev)
        if obj is not None:
            yield ev, obj


def _error_object(err: Any) -> dict[str, Any]:
    """An `error` field as the error event's object (a bare message is wrapped)."""
    return err if isinstance(err, dict) else {"message": str(err)}


def openai_chat(events: list[WireEvent], header: Header) -> tuple[Recording, int]:
    """OpenAI Chat Completions (and compatible servers) -> (Recording, malformed count)."""
    b = _Builder(header)
    saw_finish = False
    for ev in events:
        if not ev.data and ev.event is None:
            continue
        if ev.data.strip() == "[DONE]":
            b.close(ev.t_ms)
            break
        obj = _json(b, ev)
        if obj is None:
            continue
        if ev.event == "error" or "error" in obj:
            b.error(ev.t_ms, _error_object(obj.get("error", obj)))
            break
        if obj.get("usage"):
            b.usage = obj["usage"]
        for choice in obj.get("choices") or []:
            delta = choice.get("delta") or {}
            content = delta.get("content") or ""
            reasoning = delta.get("reasoning_content") or delta.get("reasoning") or ""
            if delta.get("role") and not content and not reasoning and not delta.get("tool_calls"):
                b.meta(ev.t_ms, kind="role", role=delta["role"])
            b.chunk(ev.t_ms, reasoning, "reasoning")
            b.chunk(ev.t_ms, content, "content")
            for call in delta.get("tool_calls") or []:
                fn = call.get("function") or {}
                index = call.get("index", 0)
                if call.get("id") or fn.get("name"):
                    b.tool_call(ev.t_ms, index, call.get("id"), fn.get("name"))
                b.chunk(ev.t_ms, fn.get("arguments") or "", "tool", tool_index=index)
            if choice.get("finish_reason"):
                b.finish_reason = choice["finish_reason"]
                saw_finish = True
        b.last_t_ms = ev.t_ms
    if b.end is None and saw_finish:
        b.close(b.last_t_ms)
    return b.recording(), b.malformed


def anthropic_messages(events: list[WireEvent], header: Header) -> tuple[Recording, int]:
    """Anthropic Messages named events -> (Recording, malformed count)."""
    b = _Builder(header)
    usage: dict[str, Any] = {}
    for ev, obj in _objects(b, events):
        kind = obj.get("type") or ev.event
        if kind == "message_start":
            msg = obj.get("message") or {}
            usage.update(msg.get("usage") or {})
            role = msg.get("role", "assistant")
            b.meta(ev.t_ms, kind="role", role=role, message_id=msg.get("id"))
        elif kind == "content_block_start":
            block = obj.get("content_block") or {}
            if block.get("type") in ("tool_use", "server_tool_use"):
                b.tool_call(ev.t_ms, obj.get("index", 0), block.get("id"), block.get("name"))
        elif kind == "content_block_delta":
            delta = obj.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                b.chunk(ev.t_ms, delta.get("text", ""), "content")
            elif dtype == "thinking_delta":
                b.chunk(ev.t_ms, delta.get("thinking", ""), "reasoning")
            elif dtype == "input_json_delta":
                b.chunk(
                    ev.t_ms,
                    delta.get("partial_json", ""),
                    "tool",
                    tool_index=obj.get("index", 0),
                )
        elif kind == "ping":
            b.meta(ev.t_ms, kind="ping")
        elif kind == "message_delta":
            delta = obj.get("delta") or {}
            if delta.get("stop_reason"):
                b.finish_reason = delta["stop_reason"]
            usage.update(obj.get("usage") or {})
        elif kind == "message_stop":
            b.usage = usage or None
            b.close(ev.t_ms)
            break
        elif kind == "error":
            b.usage = usage or None
            err = obj.get("error")
            b.error(ev.t_ms, err if isinstance(err, dict) else {"message": str(obj)})
            break
    return b.recording(), b.malformed


def openai_responses(events: list[WireEvent], header: Header) -> tuple[Recording, int]:
    """OpenAI Responses API named events -> (Recording, malformed count)."""
    b = _Builder(header)
    for ev, obj in _objects(b, events):
        kind = obj.get("type") or ev.event
        if kind == "response.created":
            b.meta(ev.t_ms, kind="response.created")
        elif kind == "response.output_text.delta":
            b.chunk(ev.t_ms, obj.get("delta", ""), "content")
        elif kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            b.chunk(ev.t_ms, obj.get("delta", ""), "reasoning")
        elif kind == "response.output_item.added":
            item = obj.get("item") or {}
            if item.get("type") == "function_call":
                call_id = item.get("call_id") or item.get("id")
                b.tool_call(ev.t_ms, obj.get("output_index", 0), call_id, item.get("name"))
        elif kind == "response.function_call_arguments.delta":
            b.chunk(ev.t_ms, obj.get("delta", ""), "tool", tool_index=obj.get("output_index", 0))
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            resp = obj.get("response") or {}
            b.usage = resp.get("usage")
            if kind == "response.failed":
                err = resp.get("error") or {"type": "response.failed"}
                b.error(ev.t_ms, err)
            else:
                details = resp.get("incomplete_details") or {}
                b.finish_reason = details.get("reason") or resp.get("status") or "completed"
                b.close(ev.t_ms)
            break
        elif kind == "error":
            b.error(ev.t_ms, {k: v for k, v in obj.items() if k != "type"} or {"type": "error"})
            break
    return b.recording(), b.malformed


def gemini_sse(events: list[WireEvent], header: Header) -> tuple[Recording, int]:
    """Gemini `streamGenerateContent?alt=sse` -> (Recording, malformed count)."""
    b = _Builder(header)
    for ev, obj in _objects(b, events):
        if "error" in obj:
            b.error(ev.t_ms, _error_object(obj["error"]))
            break
        if obj.get("usageMetadata"):
            b.usage = obj["usageMetadata"]
        for cand in (obj.get("candidates") or [])[:1]:
            for part in (cand.get("content") or {}).get("parts") or []:
                if "functionCall" in part:
                    call = part["functionCall"]
                    index = b.n_tools
                    b.tool_call(ev.t_ms, index, call.get("id"), call.get("name"))
                    args = json.dumps(call.get("args", {}))
                    b.chunk(ev.t_ms, args, "tool", tool_index=index)
                elif part.get("thought"):
                    b.chunk(ev.t_ms, part.get("text", ""), "reasoning")
                else:
                    b.chunk(ev.t_ms, part.get("text", ""), "content")
            if cand.get("finishReason"):
                b.finish_reason = cand["finishReason"]
        b.last_t_ms = ev.t_ms
    if b.end is None and b.finish_reason is not None:
        b.close(b.last_t_ms)
    return b.recording(), b.malformed


Mapper = Callable[[list[WireEvent], Header], tuple[Recording, int]]

MAPPERS: dict[str, Mapper] = {
    "openai": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic_messages,
    "gemini": gemini_sse,
}
