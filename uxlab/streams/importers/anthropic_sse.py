"""Anthropic Messages SSE streams (named events) -> Recording.

Input: a captured SSE body of `event: <type>` / `data: {...}` pairs, timed or plain, in the
same capture format as `openai-sse` (see `uxlab.streams.sse`). One stream per file; SRC may
be a folder of `*.sse` / `*.txt` files.

Mapping (`anthropic_events_to_recording(events, header, strict=...)`, the one mapping of
this API: the importers call it strict, the live recorder tolerant; see `event_mapping`):

- `message_start` -> `meta {"kind": "role", "role": "assistant", "message_id", "model"}`;
  its `usage` (input tokens) is kept for `end.usage`; a `tool_use` block already in its
  `content` (a programmatic call: code running in Anthropic's sandbox calls a tool, with
  `caller`) is a whole tool call there (its `input` one `tool` chunk of JSON);
- `content_block_start` of a `tool_use`, `server_tool_use` (web search, code execution,
  ...) or `mcp_tool_use` block -> `meta {"kind": "tool_call", "index", "id", "name"}` with
  `tool_type` (the block type, unless `tool_use`), `server` (an MCP call's `server_name`)
  and `caller` when given; an `input` that is not empty in the start (the whole input, as
  programmatic calls send it) -> one `tool` chunk of JSON (`from_start`; `input_json_delta`
  pieces that follow replace it, as Anthropic's SDK does); a `*_tool_result` block ->
  `meta {"kind": "block_start", "block_type", "tool_use_id"}`; of a `thinking` / `text`
  block -> `meta {"kind": "block_start"}`;
- `content_block_delta`: `text_delta` -> `content`, `thinking_delta` -> `reasoning`,
  `input_json_delta` -> `tool` (with `tool_index`), `signature_delta` -> `meta` (length only);
- `ping` -> `meta {"kind": "ping"}`; `content_block_stop` ends its block (a tool call is
  whole then, or at `message_stop`; one cut off before is kept `incomplete`);
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

import json
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
    index_of,
    map_events,
    named_event,
)
from uxlab.streams.importers.sse_capture import import_capture_files
from uxlab.streams.recording import Chunk, Header, Recording
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
        content = field_of(i, msg, "content", list, "a list", "message.content") or []
        for k, block in enumerate(content):
            if isinstance(block, dict) and _is_call(block.get("type")):
                _start_call(b, t_ms, -1 - k, block, whole=True)
    elif kind == "content_block_start":
        index = index_of(i, obj)
        block = field_of(i, obj, "content_block", dict, "an object", "content_block") or {}
        btype = block.get("type", "text")
        if _is_call(btype):
            _start_call(b, t_ms, index, block)
        elif isinstance(btype, str) and btype.endswith("_tool_result"):
            use_id = block.get("tool_use_id")
            b.meta(t_ms, kind="block_start", index=index, block_type=btype, tool_use_id=use_id)
        else:
            b.meta(t_ms, kind="block_start", index=index, block_type=btype)
        text = block.get("text") or block.get("thinking")
        if isinstance(text, str):
            b.chunk(t_ms, text, "reasoning" if btype == "thinking" else "content")
    elif kind == "content_block_delta":
        _delta(b, i, t_ms, obj)
    elif kind == "content_block_stop":
        call = b.state.get("calls", {}).get(index_of(i, obj))
        if call is not None:
            b.tool_done(call)
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
        b.finish_tool_calls()
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


def _is_call(block_type: Any) -> bool:
    """Whether a content block is a tool call (`tool_use`, `server_tool_use`,
    `mcp_tool_use`, and any later `*_tool_use`)."""
    return isinstance(block_type, str) and block_type.endswith("tool_use")


def _start_call(
    b: StreamBuilder, t_ms: float | None, index: int, block: dict[str, Any], whole: bool = False
) -> None:
    """A tool-call block starts; its `input` goes out now when the start carries it."""
    btype = block.get("type")
    caller = block.get("caller")
    call = b.tool_call(
        t_ms,
        max(index, 0) if isinstance(index, int) else 0,
        block.get("id"),
        block.get("name"),
        complete=whole,
        tool_type=btype if btype != "tool_use" else None,
        server=block.get("server_name"),
        caller=caller if isinstance(caller, dict) and caller.get("type") != "direct" else None,
    )
    b.state.setdefault("calls", {})[index] = call
    value = block.get("input")
    if value not in (None, {}):
        b.tool_args(t_ms, call, json.dumps(value, ensure_ascii=False), from_start=True)
        b.state.setdefault("start_input", set()).add(call)


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
        b.meta(t_ms, kind="delta", delta_type=dtype, index=index_of(i, obj), delta=rest)
        return
    key, channel = _DELTA_CHANNELS[dtype]
    text = delta.get(key)
    if not isinstance(text, str):
        raise StreamEventError(i, f"delta.{key}", f"missing in a {dtype} (expected a string)")
    if channel == "tool":
        index = index_of(i, obj)
        call = b.state.get("calls", {}).get(index, index)
        if text and call in b.state.get("start_input", ()):
            _replace_start_input(b, call)
        b.tool_args(t_ms, call, text)
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


def _replace_start_input(b: StreamBuilder, call: int) -> None:
    """Pieces of `input` arrived after a start that carried it whole: they replace it (the
    start's chunk is dropped and the call says so)."""
    b.state["start_input"].discard(call)
    for k, event in enumerate(b.events):
        if (
            isinstance(event, Chunk)
            and event.extra.get("tool_index") == call
            and (event.extra.get("from_start"))
        ):
            del b.events[k]
            break
    b.call_meta(call).data["start_input_replaced"] = True
