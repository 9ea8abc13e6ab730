"""Anthropic Messages SSE streams (named events) -> Recording.

Input: a captured SSE body of `event: <type>` / `data: {...}` pairs, timed or plain, in the
same capture format as `openai-sse` (see `uxlab.streams.sse`). One stream per file; SRC may
be a folder of `*.sse` / `*.txt` files.

Mapping (`anthropic_events_to_recording(events, header, strict=...)`, the one mapping of
this API: the importers call it strict, the live recorder tolerant; see `event_mapping`):

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
  `finish_reason: "error"` at its time (tolerant mode wraps an `error` that is not an
  object as `{"message": ...}`);
- any other event type -> `meta {"kind": <type>}`; a delta of another type (e.g.
  `citations_delta`) -> `meta {"kind": "delta", "delta_type", "index", "delta"}` (kept whole).

The event's kind is its `event:` name, else the `type` in its data.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from uxlab.streams.importers.base import (
    ImportOptions,
    ImportResult,
    StreamEventError,
)
from uxlab.streams.importers.event_mapping import (
    StreamBuilder,
    field_of,
    map_events,
    named_event,
)
from uxlab.streams.importers.sse_capture import import_capture_files
from uxlab.streams.recording import Header, Recording
from uxlab.streams.sse import SseEvent

_DELTA_CHANNELS = {
    "text_delta": ("text", "content"),
    "thinking_delta": ("thinking", "reasoning"),
    "input_json_delta": ("partial_json", "tool"),
}


def anthropic_events_to_recording(
    events: Sequence[SseEvent], header: Header, *, strict: bool = True
) -> Recording:
    """Map Anthropic Messages SSE events to a Recording (see the module docstring).

    Strict: raises StreamEventError(index, field, problem) for an event that cannot be
    read; tolerant: that event is kept as a `malformed_event` meta.
    """
    return map_events(events, header, _step, strict=strict).recording()


def _add_usage(b: StreamBuilder, usage: dict[str, Any] | None) -> None:
    if usage:
        b.usage = {**(b.usage or {}), **usage}


def _step(b: StreamBuilder, i: int, t_ms: float | None, name: str | None, data: str) -> None:
    kind, obj = named_event(i, name, data)
    if kind == "message_start":
        msg = field_of(i, obj, "message", dict, "an object", "message") or {}
        _add_usage(b, field_of(i, msg, "usage", dict, "an object", "message.usage"))
        b.fill_model(msg.get("model"))
        b.role_prelude(t_ms, msg.get("role", "assistant"), message_id=msg.get("id"))
    elif kind == "content_block_start":
        index = obj.get("index", 0)
        block = field_of(i, obj, "content_block", dict, "an object", "content_block") or {}
        btype = block.get("type", "text")
        if btype in ("tool_use", "server_tool_use"):
            b.tool_call(t_ms, index, block.get("id"), block.get("name"))
        else:
            b.meta(t_ms, kind="block_start", index=index, block_type=btype)
        text = block.get("text") or block.get("thinking")
        if isinstance(text, str):
            b.chunk(t_ms, text, "reasoning" if btype == "thinking" else "content")
    elif kind == "content_block_delta":
        _delta(b, i, t_ms, obj)
    elif kind == "content_block_stop":
        return
    elif kind == "ping":
        b.meta(t_ms, kind="ping")
    elif kind == "message_delta":
        delta = field_of(i, obj, "delta", dict, "an object", "delta") or {}
        if delta.get("stop_reason"):
            b.finish_reason = field_of(
                i, delta, "stop_reason", str, "a string", "delta.stop_reason"
            )
        _add_usage(b, field_of(i, obj, "usage", dict, "an object", "usage"))
    elif kind == "message_stop":
        b.close(t_ms)
    elif kind == "error":
        err = obj.get("error")
        if not isinstance(err, dict):
            if b.strict:
                raise StreamEventError(i, "error", f"expected an object, got {err!r:.60}")
            err = {"message": str(err) if err is not None else data[:500]}
        b.error(t_ms, err)
    else:
        b.meta(t_ms, kind=kind)


def _delta(b: StreamBuilder, i: int, t_ms: float | None, obj: dict[str, Any]) -> None:
    delta = obj.get("delta")
    if not isinstance(delta, dict):
        raise StreamEventError(i, "delta", f"missing or not an object: {delta!r:.60}")
    dtype = delta.get("type")
    if not isinstance(dtype, str):
        raise StreamEventError(i, "delta.type", f"expected a string, got {dtype!r:.60}")
    if dtype == "signature_delta":
        signature = delta.get("signature", "")
        length = len(signature) if isinstance(signature, str) else None
        b.meta(t_ms, kind="signature", length=length)
        return
    if dtype not in _DELTA_CHANNELS:  # e.g. citations_delta: kept whole
        rest = {k: v for k, v in delta.items() if k != "type"}
        b.meta(t_ms, kind="delta", delta_type=dtype, index=obj.get("index", 0), delta=rest)
        return
    key, channel = _DELTA_CHANNELS[dtype]
    text = delta.get(key)
    if not isinstance(text, str):
        raise StreamEventError(i, f"delta.{key}", f"missing in a {dtype} (expected a string)")
    if channel == "tool":
        b.chunk(t_ms, text, channel, tool_index=obj.get("index", 0))
    else:
        b.chunk(t_ms, text, channel)


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
