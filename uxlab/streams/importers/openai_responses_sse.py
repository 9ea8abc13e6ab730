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
- `response.output_item.added` of a `function_call` item -> `meta {"kind": "tool_call",
  "index": output_index, "id": call_id, "name"}`; `response.function_call_arguments.delta`
  -> `tool` chunks with `tool_index`;
- `response.completed` / `response.incomplete` -> the end (`finish_reason`: the incomplete
  reason, else the status) with `response.usage`; `response.failed` -> `error` event
  (`response.error`) and `end` with `finish_reason: "error"`; an `error` event likewise;
- the other lifecycle events (`response.in_progress`, `...done`, `content_part.added`...)
  carry nothing to show and are skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from uxlab.streams.importers.base import (
    ImportOptions,
    ImportResult,
    StreamEventError,
)
from uxlab.streams.importers.event_mapping import (
    StreamBuilder,
    TimedEvent,
    field_of,
    map_events,
    named_event,
)
from uxlab.streams.importers.sse_capture import import_capture_files
from uxlab.streams.recording import Header, Recording

_TEXT_DELTAS = {
    "response.output_text.delta": "content",
    "response.refusal.delta": "content",
    "response.reasoning_text.delta": "reasoning",
    "response.reasoning_summary_text.delta": "reasoning",
}
_ENDS = ("response.completed", "response.incomplete", "response.failed")


def openai_responses_events_to_recording(
    events: list[TimedEvent], header: Header, *, strict: bool = True
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
        if item.get("type") == "function_call":
            call_id = item.get("call_id") or item.get("id")
            b.tool_call(t_ms, obj.get("output_index", 0), call_id, item.get("name"))
    elif kind == "response.function_call_arguments.delta":
        b.chunk(t_ms, _delta_text(i, obj), "tool", tool_index=obj.get("output_index", 0))
    elif kind in _ENDS:
        resp = field_of(i, obj, "response", dict, "an object", "response") or {}
        b.usage = field_of(i, resp, "usage", dict, "an object", "response.usage")
        if kind == "response.failed":
            err = resp.get("error")
            b.error(t_ms, err if isinstance(err, dict) else {"type": "response.failed"})
        else:
            details = resp.get("incomplete_details") or {}
            b.finish_reason = details.get("reason") or resp.get("status") or "completed"
            b.close(t_ms)
    elif kind == "error":
        b.error(t_ms, {k: v for k, v in obj.items() if k != "type"} or {"type": "error"})


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
