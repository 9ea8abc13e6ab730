"""Gemini Interactions API streams (`POST /v1beta/interactions` with `"stream": true`) -> Recording.

Input: a captured SSE body (events named by their `event_type`, timed or plain, in the
capture format of `openai-sse`), or the same events as JSON lines (`--from json-chunks`).
One stream per file; SRC may be a folder of captures.

The stream is a list of *steps* (each `step.start`, `step.delta`..., `step.stop`, with an
`index`) between `interaction.created` and `interaction.completed`. Mapping
(`gemini_interactions_events_to_recording(events, header, strict=...)`):

- `interaction.created` -> the role prelude `meta {"kind": "role", "role": "model",
  "interaction_id"}` (its `model` fills `source.model`); `interaction.status_update` and
  the other `interaction.*` progress events -> `meta {"kind": <event>, "status"}`;
- a `thought` step: `thought_summary` deltas (`delta.content.text`) -> `reasoning`, a
  `thought_signature` -> `meta {"kind": "signature", "length"}`; a `model_output` step:
  `text` deltas -> `content`, annotations -> `meta {"kind": "annotation"}`, images, audio
  and video -> `meta {"kind": "inline_data", "mime_type", "data_chars"}`;
- a `function_call` step -> `meta {"kind": "tool_call", "index", "id", "name"}`, its
  `arguments_delta` pieces (`delta.arguments`, JSON text) -> `tool` chunks; a built-in
  tool's call step (`google_search_call`, `code_execution_call`, `url_context_call`,
  `file_search_call`, `google_maps_call`, `mcp_server_tool_call`; any `*_call`) -> a tool
  call named after it (the MCP tool's own `name`, with `server`), its `arguments` object
  (in the start or its delta) one `tool` chunk of JSON; a call is whole at its
  `step.stop` (one cut off before is kept `incomplete`); a result step (`*_result`,
  `function_result`) -> `meta {"kind": "block_start", "block_type", "call_id"}`;
- `interaction.completed` -> the end: `finish_reason` is the interaction's `status`
  (`completed`, `requires_action` when it waits for a function's result, `failed`, ...),
  `usage` its `usage`; an `error` event -> `error` event and `end` with `finish_reason:
  "error"`; the closing `event: done` / `[DONE]` is ignored;
- the older content events (`interaction.start`, `content.start`, `content.delta`,
  `content.stop`, `interaction.complete`) map the same way;
- any other event type, and a delta of a type its step does not have, is refused in strict
  mode with its name (kept by `--tolerant`).
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
    event_json_object,
)
from uxlab.streams.importers.event_mapping import StreamBuilder, field_of, index_of, map_events
from uxlab.streams.importers.sse_capture import import_capture_files
from uxlab.streams.recording import Header, Recording
from uxlab.streams.sse import SseEvent

_STARTS = ("step.start", "content.start")
_DELTAS = ("step.delta", "content.delta")
_STOPS = ("step.stop", "content.stop")
_COMPLETED = ("interaction.completed", "interaction.complete")
_CREATED = ("interaction.created", "interaction.start")
_MEDIA = ("image", "audio", "video", "document")

INTERACTIONS_EVENTS = frozenset(
    {*_STARTS, *_DELTAS, *_STOPS, *_COMPLETED, *_CREATED, "interaction.status_update"}
)
"""Event types only an Interactions stream has (how `json-chunks` tells one)."""


def gemini_interactions_events_to_recording(
    events: Sequence[SseEvent], header: Header, *, strict: bool = True
) -> Recording:
    """Map Gemini Interactions API stream events to a Recording (see the module docstring)."""
    return map_events(events, header, _step, strict=strict).recording()


def _step(b: StreamBuilder, i: int, t_ms: float | None, name: str | None, data: str) -> None:
    if data.strip() in ("[DONE]", "") or name == "done":
        if b.state.get("completed"):
            b.close(t_ms)
        return
    obj = event_json_object(i, data)
    kind = obj.get("event_type") or name
    if not isinstance(kind, str):
        raise StreamEventError(i, "event_type", "missing (expected an Interactions event type)")
    index = index_of(i, obj)
    if kind in _CREATED:
        interaction = field_of(i, obj, "interaction", dict, "an object", "interaction") or {}
        b.fill_model(interaction.get("model"))
        b.role_prelude(t_ms, "model", interaction_id=interaction.get("id"))
    elif kind.startswith("interaction.") and kind not in _COMPLETED:
        b.meta(t_ms, kind=kind, status=obj.get("status"))
    elif kind in _STARTS:
        step = obj.get("step") if "step" in obj else obj.get("content")
        _start(b, i, t_ms, index, step if isinstance(step, dict) else {})
    elif kind in _DELTAS:
        delta = field_of(i, obj, "delta", dict, "an object", "delta")
        if delta is None:
            raise StreamEventError(i, "delta", "missing (expected an object)")
        _delta(b, i, t_ms, index, delta)
    elif kind in _STOPS:
        call = b.state.get("calls", {}).get(index)
        if call is not None:
            b.tool_done(call)
    elif kind in _COMPLETED:
        interaction = field_of(i, obj, "interaction", dict, "an object", "interaction") or {}
        b.usage = field_of(i, interaction, "usage", dict, "an object", "interaction.usage")
        status = interaction.get("status")
        b.finish_reason = status if isinstance(status, str) else "completed"
        if status != "failed":
            b.finish_tool_calls()
        b.state["completed"] = True
        b.close(t_ms)
    elif kind == "error":
        err = obj.get("error", obj)
        b.error(t_ms, err if isinstance(err, dict) else {"message": str(err)})
    else:
        raise StreamEventError(
            i,
            "event_type",
            f"unknown Interactions event {kind!r} (not mapped; --tolerant keeps it)",
        )


def _start(b: StreamBuilder, i: int, t_ms: float | None, index: Any, step: dict[str, Any]) -> None:
    stype = step.get("type")
    steps: dict[Any, Any] = b.state.setdefault("steps", {})
    steps[index] = stype
    if stype == "function_call" or (isinstance(stype, str) and stype.endswith("_call")):
        _start_call(b, t_ms, index, step)
        return
    call_id = step.get("call_id")
    b.meta(t_ms, kind="block_start", index=index, block_type=stype, call_id=call_id)
    for item in step.get("summary") or step.get("content") or []:
        if isinstance(item, dict) and item.get("type") == "text":
            channel = "reasoning" if stype == "thought" else "content"
            b.chunk(t_ms, str(item.get("text") or ""), channel)


def _start_call(b: StreamBuilder, t_ms: float | None, index: Any, step: dict[str, Any]) -> None:
    stype = str(step.get("type"))
    name = step.get("name") if stype in ("function_call", "mcp_server_tool_call") else None
    call = b.tool_call(
        t_ms,
        index if isinstance(index, int) else b.n_tools,
        step.get("id"),
        name or stype.removesuffix("_call"),
        tool_type=stype if stype != "function_call" else None,
        server=step.get("server_name"),
    )
    b.state.setdefault("calls", {})[index] = call
    arguments = step.get("arguments")
    if isinstance(arguments, dict) and arguments:
        b.tool_args(t_ms, call, json.dumps(arguments, ensure_ascii=False), from_start=True)
        b.state.setdefault("whole", set()).add(call)


def _delta(b: StreamBuilder, i: int, t_ms: float | None, index: Any, delta: dict[str, Any]) -> None:
    dtype = delta.get("type")
    stype = b.state.get("steps", {}).get(index)
    call = b.state.get("calls", {}).get(index)
    if dtype == "text":
        text = field_of(i, delta, "text", str, "a string", "delta.text")
        b.chunk(t_ms, text or "", "reasoning" if stype == "thought" else "content")
    elif dtype == "thought_summary":
        content = field_of(i, delta, "content", dict, "an object", "delta.content") or {}
        text = field_of(i, content, "text", str, "a string", "delta.content.text")
        b.chunk(t_ms, text or "", "reasoning")
    elif dtype == "thought_signature" or (dtype is None and "signature" in delta):
        signature = delta.get("signature")
        b.meta(
            t_ms, kind="signature", length=len(signature) if isinstance(signature, str) else None
        )
    elif dtype in ("text_annotation", "text_annotation_delta"):
        b.meta(t_ms, kind="annotation", index=index, annotations=delta.get("annotations"))
    elif dtype in _MEDIA:
        blob = delta.get("data")
        size = len(blob) if isinstance(blob, str) else None
        b.meta(t_ms, kind="inline_data", mime_type=delta.get("mime_type"), data_chars=size)
    elif dtype == "arguments_delta" and call is not None:
        text = field_of(i, delta, "arguments", str, "a string", "delta.arguments")
        b.tool_args(t_ms, call, text or "")
    elif dtype == "function_call" or (call is not None and dtype == stype):
        if call is None:  # the older content events name the call in its delta
            b.state.setdefault("steps", {})[index] = "function_call"
            _start_call(b, t_ms, index, {**delta, "type": "function_call"})
            return
        arguments = delta.get("arguments")
        if isinstance(arguments, dict) and call not in b.state.get("whole", set()):
            b.tool_args(t_ms, call, json.dumps(arguments, ensure_ascii=False))
            b.state.setdefault("whole", set()).add(call)
    elif isinstance(dtype, str) and (dtype == stype or dtype.endswith("_result")):
        b.meta(t_ms, kind="tool_result", index=index, result_type=dtype)
    else:
        raise StreamEventError(
            i,
            "delta.type",
            f"a {dtype!r} delta in a {stype!r} step (not mapped; --tolerant keeps it)",
        )


def import_gemini_interactions(path: Path, options: ImportOptions) -> ImportResult:
    """Import Gemini Interactions API SSE captures (a file or a folder of files)."""
    return import_capture_files(
        Path(path),
        options,
        gemini_interactions_events_to_recording,
        importer="gemini-interactions-sse",
        api="gemini.interactions",
        vendor="google",
    )
