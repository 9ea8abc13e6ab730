"""OpenAI Responses API SSE streams (named `response.*` events) -> Recording.

Input: a captured SSE body of `event: response.<type>` / `data: {...}` pairs, timed or
plain, in the capture format of `openai-sse` (the `.sse` sidecar `uxlab record --api
openai-responses` writes). One stream per file; SRC may be a folder of captures.

Mapping (`openai_responses_events_to_recording(events, header, strict=...)`, the one
mapping of this API: the importers call it strict, the live recorder tolerant):

- `response.created` -> `meta {"kind": "response.created"}` (its `response.model` fills
  `source.model` when empty);
- `response.output_text.delta` -> `content`; `response.refusal.delta` -> `content` with
  `"refusal": true`; `response.reasoning_text.delta` and
  `response.reasoning_summary_text.delta` -> `reasoning`;
- `response.output_item.added` of a `function_call`, `custom_tool_call` or `mcp_call`
  item -> `meta {"kind": "tool_call", "index": output_index, "id": call_id, "name"}`;
  `response.function_call_arguments.delta`, `response.custom_tool_call_input.delta`,
  `response.mcp_call_arguments.delta` and `response.code_interpreter_call_code.delta` ->
  `tool` chunks with `tool_index`; when a call's `output_item.done` arrives and no piece of
  its arguments (or custom tool input) did, the whole of it becomes one `tool` chunk then;
- an added item of another kind that is not the message or reasoning (web search, file
  search, code interpreter, image generation, computer use, ...) -> `meta {"kind":
  "output_item", "item_type", "index"}`; the progress events of built-in tools
  (`response.web_search_call.searching`, `...completed`, ...) and
  `response.output_text.annotation.added` -> `meta {"kind": <event name>}`, so the time a
  tool ran stays visible;
- `response.completed` / `response.incomplete` -> the end (`finish_reason`: the incomplete
  reason, else the status) with `response.usage`; `response.failed` -> `error` event
  (`response.error`) and `end` with `finish_reason: "error"`; an `error` event likewise;
- the lifecycle events whose content the deltas already carried (`response.in_progress`,
  `response.queued`, `...text.done`, `content_part.added`/`done`, ...) are skipped;
- any other event is refused in strict mode (`event: unknown Responses event 'x'`), and
  kept as a `malformed_event` meta by the tolerant mode: never dropped silently.
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
from uxlab.streams.recording import Chunk, Header, Recording
from uxlab.streams.sse import SseEvent

_TEXT_DELTAS = {
    "response.output_text.delta": "content",
    "response.refusal.delta": "content",
    "response.reasoning_text.delta": "reasoning",
    "response.reasoning_summary_text.delta": "reasoning",
}
_ENDS = ("response.completed", "response.incomplete", "response.failed")
_TOOL_ITEMS = {"function_call": "arguments", "custom_tool_call": "input", "mcp_call": "arguments"}
"""Output items that are a call of a named tool, and the field holding its whole input."""
_TOOL_DELTAS = (
    "response.function_call_arguments.delta",
    "response.custom_tool_call_input.delta",
    "response.mcp_call_arguments.delta",
    "response.code_interpreter_call_code.delta",
)
_SKIPPED = frozenset(
    {
        "response.in_progress",
        "response.queued",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.refusal.done",
        "response.reasoning_text.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.function_call_arguments.done",
        "response.custom_tool_call_input.done",
        "response.mcp_call_arguments.done",
        "response.code_interpreter_call_code.done",
    }
)
"""Events whose content the deltas before them already carried."""
_BUILTIN_TOOL_EVENTS = (
    "response.web_search_call.",
    "response.file_search_call.",
    "response.code_interpreter_call.",
    "response.image_generation_call.",
    "response.mcp_call.",
    "response.mcp_list_tools.",
)


def openai_responses_events_to_recording(
    events: Sequence[SseEvent], header: Header, *, strict: bool = True
) -> Recording:
    """Map OpenAI Responses API SSE events to a Recording (see the module docstring).

    Strict: raises StreamEventError(index, field, problem) for an event that cannot be
    read; tolerant: that event is kept as a `malformed_event` meta.
    """
    return map_events(events, header, _step, strict=strict).recording()


def _delta_text(i: int, obj: dict[str, Any]) -> str:
    text = obj.get("delta")
    if not isinstance(text, str):
        raise StreamEventError(i, "delta", f"missing or not a string: {text!r:.60}")
    return text


def _step(b: StreamBuilder, i: int, t_ms: float | None, name: str | None, data: str) -> None:
    kind, obj = named_event(i, name, data)
    if kind == "response.created":
        resp = field_of(i, obj, "response", dict, "an object", "response") or {}
        b.fill_model(resp.get("model"))
        b.meta(t_ms, kind="response.created")
    elif kind in _TEXT_DELTAS:
        text = _delta_text(i, obj)
        if kind == "response.refusal.delta":
            b.chunk(t_ms, text, "content", refusal=True)
        else:
            b.chunk(t_ms, text, _TEXT_DELTAS[kind])
    elif kind == "response.output_item.added":
        item = field_of(i, obj, "item", dict, "an object", "item") or {}
        index = obj.get("output_index", 0)
        item_type = item.get("type")
        if item_type in _TOOL_ITEMS:
            call_id = item.get("call_id") or item.get("id")
            b.tool_call(t_ms, index, call_id, item.get("name"))
        elif item_type not in ("message", "reasoning"):
            b.meta(t_ms, kind="output_item", item_type=item_type, index=index)
    elif kind == "response.output_item.done":
        item = field_of(i, obj, "item", dict, "an object", "item") or {}
        whole = item.get(_TOOL_ITEMS.get(str(item.get("type")), ""))
        index = obj.get("output_index", 0)
        if isinstance(whole, str) and whole and not _has_tool_text(b, index):
            b.chunk(t_ms, whole, "tool", tool_index=index, from_done=True)
    elif kind in _TOOL_DELTAS:
        b.chunk(t_ms, _delta_text(i, obj), "tool", tool_index=obj.get("output_index", 0))
    elif kind == "response.output_text.annotation.added" or kind.startswith(_BUILTIN_TOOL_EVENTS):
        extra = {"annotation": obj["annotation"]} if "annotation" in obj else {}
        b.meta(t_ms, kind=kind, index=obj.get("output_index"), item_id=obj.get("item_id"), **extra)
    elif kind in _ENDS:
        resp = field_of(i, obj, "response", dict, "an object", "response") or {}
        b.usage = field_of(i, resp, "usage", dict, "an object", "response.usage")
        if kind == "response.failed":
            err = resp.get("error")
            b.error(t_ms, err if isinstance(err, dict) else {"type": "response.failed"})
        else:
            details = resp.get("incomplete_details") or {}
            reason = details.get("reason") if isinstance(details, dict) else None
            status = resp.get("status")
            b.finish_reason = next(
                (x for x in (reason, status) if isinstance(x, str) and x), "completed"
            )
            b.close(t_ms)
    elif kind == "error":
        b.error(t_ms, {k: v for k, v in obj.items() if k != "type"} or {"type": "error"})
    elif kind not in _SKIPPED:
        raise StreamEventError(
            i, "event", f"unknown Responses event {kind!r} (not mapped; --tolerant keeps it)"
        )


def _has_tool_text(b: StreamBuilder, index: Any) -> bool:
    """Whether a piece of tool call `index`'s input has arrived already."""
    return any(
        isinstance(e, Chunk) and e.channel == "tool" and e.extra.get("tool_index") == index
        for e in b.events
    )


def import_openai_responses_sse(path: Path, options: ImportOptions) -> ImportResult:
    """Import OpenAI Responses API SSE captures (a file or a folder of files)."""
    return import_capture_files(
        Path(path),
        options,
        openai_responses_events_to_recording,
        importer="openai-responses-sse",
        api="openai.responses",
        vendor="openai",
    )
