"""Anthropic Messages SSE streams (named events) -> Recording.

Input: a captured SSE body of `event: <type>` / `data: {...}` pairs, timed or plain, in the
same capture format as `openai-sse` (see `uxlab.streams.sse`). One stream per file; SRC may
be a folder of `*.sse` / `*.txt` files.

Mapping (`anthropic_events_to_recording`, reused by the live recorder):

- `message_start` -> `meta {"kind": "role", "role": "assistant", "message_id", "model"}`;
  its `usage` (input tokens) is kept for `end.usage`;
- `content_block_start` of a `tool_use` block -> `meta {"kind": "tool_call", "index", "id",
  "name"}`; of a `thinking` / `text` block -> `meta {"kind": "block_start"}`;
- `content_block_delta`: `text_delta` -> `content`, `thinking_delta` -> `reasoning`,
  `input_json_delta` -> `tool` (with `tool_index`), `signature_delta` -> `meta` (length only);
- `ping` -> `meta {"kind": "ping"}`; `content_block_stop` is implied and dropped;
- `message_delta` -> `end.finish_reason` (`stop_reason`) and the cumulative `usage`;
- `message_stop` -> the end time;
- `error` (e.g. `overloaded_error` after HTTP 200) -> `error` event, then `end` with
  `finish_reason: "error"`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from uxlab.streams.importers.base import (
    ImportOptions,
    ImportResult,
    StreamEventError,
    event_json_object,
)
from uxlab.streams.importers.openai_sse import TimedEvent, import_capture_files
from uxlab.streams.recording import Chunk, End, ErrorEvent, Event, Header, Meta, Recording

_DELTA_CHANNELS = {
    "text_delta": ("text", "content"),
    "thinking_delta": ("thinking", "reasoning"),
    "input_json_delta": ("partial_json", "tool"),
}


def _obj(index: int, data: str) -> dict[str, Any]:
    """The event's JSON object; a blank `data:` (a named event without a body) is `{}`."""
    return event_json_object(index, data) if data.strip() else {}


def anthropic_events_to_recording(events: list[TimedEvent], header: Header) -> Recording:
    """Map Anthropic Messages SSE events to a Recording (see the module docstring).

    Raises StreamEventError(index, field, problem) for an event that cannot be read.
    """
    out: list[Event] = []
    usage: dict[str, Any] = {}
    finish_reason: str | None = None
    end_t: float | None = None
    last_t: float | None = None
    ended = False
    for i, (t_ms, name, data) in enumerate(events):
        last_t = t_ms if t_ms is not None else last_t
        obj = _obj(i, data)
        kind = name or obj.get("type")
        if kind is None:
            raise StreamEventError(i, "event", "neither an `event:` name nor a `type` in the data")
        if kind == "message_start":
            msg = obj.get("message") or {}
            if not isinstance(msg, dict):
                raise StreamEventError(i, "message", "expected an object")
            if msg.get("usage"):
                usage.update(msg["usage"])
            if not header.source.get("model") and msg.get("model"):
                header.source["model"] = msg["model"]
            meta = {
                "kind": "role",
                "role": msg.get("role", "assistant"),
                "message_id": msg.get("id"),
            }
            out.append(Meta(t_ms=t_ms, data=meta))
        elif kind == "content_block_start":
            index = obj.get("index", 0)
            block = obj.get("content_block") or {}
            btype = block.get("type", "text")
            if btype in ("tool_use", "server_tool_use"):
                meta = {
                    "kind": "tool_call",
                    "index": index,
                    "id": block.get("id"),
                    "name": block.get("name"),
                }
            else:
                meta = {"kind": "block_start", "index": index, "block_type": btype}
            out.append(Meta(t_ms=t_ms, data=meta))
            text = block.get("text") or block.get("thinking")
            if isinstance(text, str) and text:
                channel = "reasoning" if btype == "thinking" else "content"
                out.append(Chunk(t_ms=t_ms, text=text, channel=channel))
        elif kind == "content_block_delta":
            out.extend(_delta(i, t_ms, obj))
        elif kind == "content_block_stop":
            continue
        elif kind == "ping":
            out.append(Meta(t_ms=t_ms, data={"kind": "ping"}))
        elif kind == "message_delta":
            delta = obj.get("delta") or {}
            if delta.get("stop_reason"):
                finish_reason = delta["stop_reason"]
            if isinstance(obj.get("usage"), dict):
                usage.update(obj["usage"])
        elif kind == "message_stop":
            ended = True
            end_t = t_ms
        elif kind == "error":
            err = obj.get("error")
            if not isinstance(err, dict):
                raise StreamEventError(i, "error", f"expected an object, got {err!r:.60}")
            out.append(ErrorEvent(t_ms=t_ms, error=err))
            finish_reason = "error"
            ended = True
            end_t = t_ms
        else:
            out.append(Meta(t_ms=t_ms, data={"kind": kind}))
    if not ended:
        return Recording(header=header, events=out, end=None)
    if finish_reason == "error":
        end_t = max((t for t in (end_t, last_t) if t is not None), default=None)
    return Recording(
        header=header,
        events=out,
        end=End(t_ms=end_t, finish_reason=finish_reason, usage=usage or None),
    )


def _delta(i: int, t_ms: float | None, obj: dict[str, Any]) -> list[Event]:
    delta = obj.get("delta")
    if not isinstance(delta, dict):
        raise StreamEventError(i, "delta", f"missing or not an object: {delta!r:.60}")
    dtype = delta.get("type")
    if dtype == "signature_delta":
        return [
            Meta(t_ms=t_ms, data={"kind": "signature", "length": len(delta.get("signature", ""))})
        ]
    if dtype not in _DELTA_CHANNELS:
        return [Meta(t_ms=t_ms, data={"kind": "delta", "delta_type": dtype})]
    key, channel = _DELTA_CHANNELS[dtype]
    text = delta.get(key)
    if not isinstance(text, str):
        raise StreamEventError(i, f"delta.{key}", f"missing in a {dtype} (expected a string)")
    if not text:
        return []
    extra = {"tool_index": obj.get("index", 0)} if channel == "tool" else {}
    return [Chunk(t_ms=t_ms, text=text, channel=channel, extra=extra)]


def import_anthropic_sse(path: Path, options: ImportOptions) -> ImportResult:
    """Import Anthropic Messages SSE captures (a file or a folder of files)."""
    return import_capture_files(
        Path(path),
        options,
        anthropic_events_to_recording,
        importer="anthropic-sse",
        api="anthropic.messages",
        vendor="anthropic",
    )
