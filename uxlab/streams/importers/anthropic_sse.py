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

import msgspec

from uxlab.reading import MISSING, Wording, shown
from uxlab.streams.importers.base import (
    ImportOptions,
    ImportResult,
    StreamEventError,
)
from uxlab.streams.importers.event_mapping import StreamBuilder, map_events, named_event, read_event
from uxlab.streams.importers.sse_capture import import_capture_files
from uxlab.streams.recording import Chunk, Header, Recording
from uxlab.streams.sse import SseEvent

Index = int | None
"""A content block's index (absent or null: 0)."""


class Block(msgspec.Struct):
    """A content block as `content_block_start` (or `message_start`'s content) gives it."""

    type: str = "text"
    id: str | None = None
    name: str | None = None
    input: Any = None
    server_name: str | None = None
    caller: dict[str, Any] | None = None
    tool_use_id: str | None = None
    text: str | None = None
    thinking: str | None = None


class Message(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    role: str = "assistant"
    usage: dict[str, Any] | None = None
    content: list[Block] | None = None


class MessageStart(msgspec.Struct):
    message: Message = msgspec.field(default_factory=Message)


class BlockStart(msgspec.Struct):
    index: Index = None
    content_block: Block = msgspec.field(default_factory=Block)


class BlockDelta(msgspec.Struct):
    delta: dict[str, Any]
    index: Index = None


class BlockStop(msgspec.Struct):
    index: Index = None


class StopReason(msgspec.Struct):
    stop_reason: str | None = None


class MessageDelta(msgspec.Struct):
    delta: StopReason = msgspec.field(default_factory=StopReason)
    usage: dict[str, Any] | None = None


class TextDelta(msgspec.Struct, tag="text_delta", tag_field="type"):
    text: str


class ThinkingDelta(msgspec.Struct, tag="thinking_delta", tag_field="type"):
    thinking: str


class InputJsonDelta(msgspec.Struct, tag="input_json_delta", tag_field="type"):
    partial_json: str


class SignatureDelta(msgspec.Struct, tag="signature_delta", tag_field="type"):
    signature: Any = ""


KnownDelta = TextDelta | ThinkingDelta | InputJsonDelta | SignatureDelta
"""The deltas uxlab maps, by their `type`; a delta of another type is kept whole."""
_KNOWN_DELTAS = {"text_delta", "thinking_delta", "input_json_delta", "signature_delta"}


def _missing_text(key: str, dtype: str) -> Any:
    return lambda v: (
        f"missing in this {dtype} (expected a string)"
        if v is MISSING
        else f"expected a string, got {shown(v)}"
    )


_WORDING: Wording = {
    "delta": lambda v: f"missing or not an object: {shown(None if v is MISSING else v)}",
    "delta.type": lambda v: f"expected a string, got {shown(None if v is MISSING else v)}",
    "delta.text": _missing_text("text", "text_delta"),
    "delta.thinking": _missing_text("thinking", "thinking_delta"),
    "delta.partial_json": _missing_text("partial_json", "input_json_delta"),
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
        msg = read_event(i, obj, MessageStart, _WORDING).message
        _add_usage(b, msg.usage)
        b.fill_model(msg.model)
        b.role_prelude(t_ms, msg.role, message_id=msg.id)
        for k, block in enumerate(msg.content or []):
            if _is_call(block.type):
                _start_call(b, t_ms, -1 - k, block, whole=True)
    elif kind == "content_block_start":
        start = read_event(i, obj, BlockStart, _WORDING)
        index, block = start.index or 0, start.content_block
        btype = block.type
        if _is_call(btype):
            _start_call(b, t_ms, index, block)
        elif btype.endswith("_tool_result"):
            use_id = block.tool_use_id
            b.meta(t_ms, kind="block_start", index=index, block_type=btype, tool_use_id=use_id)
        else:
            b.meta(t_ms, kind="block_start", index=index, block_type=btype)
        text = block.text or block.thinking
        if text is not None:
            b.chunk(t_ms, text, "reasoning" if btype == "thinking" else "content")
    elif kind == "content_block_delta":
        _delta(b, i, t_ms, read_event(i, obj, BlockDelta, _WORDING))
    elif kind == "content_block_stop":
        call = b.state.get("calls", {}).get(read_event(i, obj, BlockStop, _WORDING).index or 0)
        if call is not None:
            b.tool_done(call)
    elif kind == "ping":
        b.meta(t_ms, kind="ping")
    elif kind == "message_delta":
        event = read_event(i, obj, MessageDelta, _WORDING)
        if event.delta.stop_reason:
            b.finish_reason = event.delta.stop_reason
        _add_usage(b, event.usage)
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


def _is_call(block_type: str) -> bool:
    """Whether a content block is a tool call (`tool_use`, `server_tool_use`,
    `mcp_tool_use`, and any later `*_tool_use`)."""
    return block_type.endswith("tool_use")


def _start_call(
    b: StreamBuilder, t_ms: float | None, index: int, block: Block, whole: bool = False
) -> None:
    """A tool-call block starts; its `input` goes out now when the start carries it."""
    caller = block.caller
    call = b.tool_call(
        t_ms,
        max(index, 0),
        block.id,
        block.name,
        complete=whole,
        tool_type=block.type if block.type != "tool_use" else None,
        server=block.server_name,
        caller=caller if caller is not None and caller.get("type") != "direct" else None,
    )
    b.state.setdefault("calls", {})[index] = call
    value = block.input
    if value not in (None, {}):
        b.tool_args(t_ms, call, json.dumps(value, ensure_ascii=False), from_start=True)
        b.state.setdefault("start_input", set()).add(call)


def _delta(b: StreamBuilder, i: int, t_ms: float | None, event: BlockDelta) -> None:
    delta, index = event.delta, event.index or 0
    dtype = delta.get("type")
    if not isinstance(dtype, str):
        raise StreamEventError(i, "delta.type", f"expected a string, got {dtype!r:.60}")
    if dtype not in _KNOWN_DELTAS:  # e.g. citations_delta: kept whole
        rest = {k: v for k, v in delta.items() if k != "type"}
        b.meta(t_ms, kind="delta", delta_type=dtype, index=index, delta=rest)
        return
    known = read_event(i, delta, KnownDelta, _WORDING, "delta.")
    if isinstance(known, SignatureDelta):
        signature = known.signature
        b.meta(
            t_ms, kind="signature", length=len(signature) if isinstance(signature, str) else None
        )
    elif isinstance(known, InputJsonDelta):
        call = b.state.get("calls", {}).get(index, index)
        if known.partial_json and call in b.state.get("start_input", ()):
            _replace_start_input(b, call)
        b.tool_args(t_ms, call, known.partial_json)
    elif isinstance(known, ThinkingDelta):
        b.chunk(t_ms, known.thinking, "reasoning")
    else:
        b.chunk(t_ms, known.text, "content")


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
