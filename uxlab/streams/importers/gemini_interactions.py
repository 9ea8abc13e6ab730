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

import msgspec

from uxlab.reading import MISSING, Wording, got
from uxlab.streams.importers.base import (
    ImportOptions,
    ImportResult,
    StreamEventError,
    event_json_object,
)
from uxlab.streams.importers.detect_api import INTERACTIONS_COMPLETED as _COMPLETED
from uxlab.streams.importers.detect_api import INTERACTIONS_CREATED as _CREATED
from uxlab.streams.importers.detect_api import INTERACTIONS_DELTAS as _DELTAS
from uxlab.streams.importers.detect_api import INTERACTIONS_STARTS as _STARTS
from uxlab.streams.importers.detect_api import INTERACTIONS_STOPS as _STOPS
from uxlab.streams.importers.event_mapping import StreamBuilder, map_events, read_event
from uxlab.streams.importers.sse_capture import import_capture_files
from uxlab.streams.recording import Header, Recording
from uxlab.streams.sse import SseEvent


class Part(msgspec.Struct):
    """A piece of a step's `summary` or `content` as its start gives it."""

    type: str | None = None
    text: str | None = None


class Step(msgspec.Struct):
    """A step as `step.start` gives it (or the older `content.start`'s content, or a
    `function_call` delta of the older events)."""

    type: str | None = None
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    server_name: str | None = None
    arguments: dict[str, Any] | None = None
    summary: list[Part] | None = None
    content: list[Part] | None = None


class Interaction(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    status: str | None = None
    usage: dict[str, Any] | None = None


class Indexed(msgspec.Struct):
    """An event's step index (absent or null: 0)."""

    index: int | None = None


class InteractionEvent(Indexed):
    interaction: Interaction | None = None


class ProgressEvent(Indexed):
    status: Any = None


class StartEvent(Indexed):
    step: Step | None = None
    content: Step | None = None


class DeltaEvent(Indexed, kw_only=True):
    delta: dict[str, Any]


class TextDelta(msgspec.Struct):
    text: str | None = None


class SummaryContent(msgspec.Struct):
    text: str | None = None


class SummaryDelta(msgspec.Struct):
    content: SummaryContent | None = None


class ArgumentsDelta(msgspec.Struct):
    arguments: str | None = None


class CallDelta(msgspec.Struct):
    """A built-in tool's call delta: its arguments object, whole."""

    arguments: dict[str, Any] | None = None


_WORDING: Wording = {
    "index": got("a whole number"),
    "interaction": got("an object"),
    "interaction.usage": got("an object"),
    "delta": lambda v: "missing (expected an object)" if v is MISSING else got("an object")(v),
    "delta.text": got("a string"),
    "delta.content": got("an object"),
    "delta.content.text": got("a string"),
    "delta.arguments": got("a string"),
}
"""The words the hand-written checks said, where the model's would say less."""


_MEDIA = ("image", "audio", "video", "document")


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
    if kind in _CREATED:
        interaction = read_event(i, obj, InteractionEvent, _WORDING).interaction or Interaction()
        b.fill_model(interaction.model)
        b.role_prelude(t_ms, "model", interaction_id=interaction.id)
    elif kind.startswith("interaction.") and kind not in _COMPLETED:
        b.meta(t_ms, kind=kind, status=read_event(i, obj, ProgressEvent, _WORDING).status)
    elif kind in _STARTS:
        start = read_event(i, obj, StartEvent, _WORDING)
        step = start.step if "step" in obj else start.content
        _start(b, t_ms, start.index or 0, step or Step())
    elif kind in _DELTAS:
        event = read_event(i, obj, DeltaEvent, _WORDING)
        _delta(b, i, t_ms, event.index or 0, event.delta)
    elif kind in _STOPS:
        call = b.state.get("calls", {}).get(read_event(i, obj, Indexed, _WORDING).index or 0)
        if call is not None:
            b.tool_done(call)
    elif kind in _COMPLETED:
        interaction = read_event(i, obj, InteractionEvent, _WORDING).interaction or Interaction()
        b.usage = interaction.usage
        b.finish_reason = interaction.status or "completed"
        if interaction.status != "failed":
            b.finish_tool_calls()
        b.state["completed"] = True
        b.close(t_ms)
    elif kind == "error":
        read_event(i, obj, Indexed, _WORDING)
        err = obj.get("error", obj)
        b.error(t_ms, err if isinstance(err, dict) else {"message": str(err)})
    else:
        read_event(i, obj, Indexed, _WORDING)
        raise StreamEventError(
            i,
            "event_type",
            f"unknown Interactions event {kind!r} (not mapped; --tolerant keeps it)",
        )


def _start(b: StreamBuilder, t_ms: float | None, index: int, step: Step) -> None:
    stype = step.type
    steps: dict[int, str | None] = b.state.setdefault("steps", {})
    steps[index] = stype
    if stype is not None and stype.endswith("_call"):
        _start_call(b, t_ms, index, step)
        return
    b.meta(t_ms, kind="block_start", index=index, block_type=stype, call_id=step.call_id)
    for part in step.summary or step.content or []:
        if part.type == "text":
            b.chunk(t_ms, part.text or "", "reasoning" if stype == "thought" else "content")


def _start_call(b: StreamBuilder, t_ms: float | None, index: int, step: Step) -> None:
    stype = str(step.type)
    name = step.name if stype in ("function_call", "mcp_server_tool_call") else None
    call = b.tool_call(
        t_ms,
        index,
        step.id,
        name or stype.removesuffix("_call"),
        tool_type=stype if stype != "function_call" else None,
        server=step.server_name,
    )
    b.state.setdefault("calls", {})[index] = call
    if step.arguments:
        b.tool_args(t_ms, call, json.dumps(step.arguments, ensure_ascii=False), from_start=True)
        b.state.setdefault("whole", set()).add(call)


def _delta(b: StreamBuilder, i: int, t_ms: float | None, index: int, delta: dict[str, Any]) -> None:
    """One delta, read by its `type` and its step's (a built-in tool's call and result
    deltas carry the step's own type, so no closed union of types describes them)."""
    dtype = delta.get("type")
    stype = b.state.get("steps", {}).get(index)
    call = b.state.get("calls", {}).get(index)
    if dtype == "text":
        text = read_event(i, delta, TextDelta, _WORDING, "delta.").text
        b.chunk(t_ms, text or "", "reasoning" if stype == "thought" else "content")
    elif dtype == "thought_summary":
        content = read_event(i, delta, SummaryDelta, _WORDING, "delta.").content or SummaryContent()
        b.chunk(t_ms, content.text or "", "reasoning")
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
        text = read_event(i, delta, ArgumentsDelta, _WORDING, "delta.").arguments
        b.tool_args(t_ms, call, text or "")
    elif dtype == "function_call" and call is None:  # the older events name the call here
        step = read_event(i, delta, Step, _WORDING, "delta.")
        b.state.setdefault("steps", {})[index] = "function_call"
        _start_call(b, t_ms, index, msgspec.structs.replace(step, type="function_call"))
    elif call is not None and dtype in ("function_call", stype):
        arguments = read_event(i, delta, CallDelta, _WORDING, "delta.").arguments
        if arguments is not None and call not in b.state.get("whole", set()):
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
