"""Gemini `streamGenerateContent?alt=sse` streams -> Recording.

Input: a captured SSE body of unnamed `data: {GenerateContentResponse}` events, timed or
plain, in the capture format of `openai-sse` (the `.sse` sidecar `uxlab record --api
gemini` writes). One stream per file; SRC may be a folder of captures.

Mapping (`gemini_events_to_recording(events, header, strict=...)`, the one mapping of this
API: the importers call it strict, the live recorder tolerant):

- the first candidate's `content.parts[]`: `text` -> `content`; a part with
  `"thought": true` -> `reasoning`; a `functionCall` -> `meta {"kind": "tool_call",
  "index", "id", "name"}` (calls numbered from 0 in arrival order) and its `args` as one
  `tool` chunk of JSON with `tool_index`;
- code execution: an `executableCode` part -> `meta {"kind": "tool_call", "name":
  "code_execution"}` and its code as a `tool` chunk; `codeExecutionResult` -> `meta {"kind":
  "code_execution_result", "outcome", "output"}`; `inlineData` / `fileData` -> `meta {"kind":
  "inline_data" | "file_data", "mime_type", ...}` (the size of inline data, not the bytes);
  a part with none of the known keys is refused in strict mode with its keys named (the
  tolerant mode keeps it as a `malformed_event` meta);
- `finishReason` -> `end.finish_reason`; `usageMetadata` -> `end.usage`; `modelVersion`
  fills `source.model` when empty. Gemini has no terminator event: a stream whose last
  event carried a finish reason ends at its last event, else it is truncated;
- an `{"error": {...}}` event -> `error` event, then `end` with `finish_reason: "error"`.

Candidates other than the first are not imported (chat UIs show one answer).
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
from uxlab.streams.importers.event_mapping import (
    StreamBuilder,
    error_event,
    field_of,
    map_events,
)
from uxlab.streams.importers.sse_capture import import_capture_files
from uxlab.streams.recording import Header, Recording
from uxlab.streams.sse import SseEvent


def gemini_events_to_recording(
    events: Sequence[SseEvent], header: Header, *, strict: bool = True
) -> Recording:
    """Map Gemini `alt=sse` events to a Recording (see the module docstring).

    Strict: raises StreamEventError(index, field, problem) for an event that cannot be
    read; tolerant: that event is kept as a `malformed_event` meta.
    """
    return map_events(events, header, _step, strict=strict, finish_ends=True).recording()


def _step(b: StreamBuilder, i: int, t_ms: float | None, name: str | None, data: str) -> None:
    obj = event_json_object(i, data)
    if error_event(b, t_ms, name, obj):
        return
    b.fill_model(obj.get("modelVersion"))
    usage = field_of(i, obj, "usageMetadata", dict, "an object", "usageMetadata")
    if usage:
        b.usage = usage
    candidates = field_of(i, obj, "candidates", list, "a list", "candidates") or []
    if not candidates:
        return
    cand = candidates[0]
    if not isinstance(cand, dict):
        raise StreamEventError(i, "candidates[0]", f"expected an object, got {cand!r:.60}")
    content = field_of(i, cand, "content", dict, "an object", "candidates[0].content") or {}
    parts = field_of(i, content, "parts", list, "a list", "candidates[0].content.parts") or []
    for part in parts:
        _part(b, i, t_ms, part)
    if cand.get("finishReason"):
        b.finish_reason = field_of(
            i, cand, "finishReason", str, "a string", "candidates[0].finishReason"
        )


def _part(b: StreamBuilder, i: int, t_ms: float | None, part: Any) -> None:
    where = "candidates[0].content.parts[]"
    if not isinstance(part, dict):
        raise StreamEventError(i, where, f"expected an object, got {part!r:.60}")
    if "functionCall" in part:
        call = part["functionCall"]
        if not isinstance(call, dict):
            raise StreamEventError(i, f"{where}.functionCall", "expected an object")
        index = b.n_tools
        b.tool_call(t_ms, index, call.get("id"), call.get("name"))
        b.chunk(t_ms, json.dumps(call.get("args", {})), "tool", tool_index=index)
        return
    if "executableCode" in part:
        code = part["executableCode"] if isinstance(part["executableCode"], dict) else {}
        index = b.n_tools
        b.tool_call(t_ms, index, None, "code_execution")
        text = code.get("code")
        b.chunk(t_ms, text if isinstance(text, str) else "", "tool", tool_index=index)
        return
    if "codeExecutionResult" in part:
        result = (
            part["codeExecutionResult"] if isinstance(part["codeExecutionResult"], dict) else {}
        )
        b.meta(
            t_ms,
            kind="code_execution_result",
            outcome=result.get("outcome"),
            output=result.get("output"),
        )
        return
    for key, kind in (("inlineData", "inline_data"), ("fileData", "file_data")):
        if key in part:
            blob = part[key] if isinstance(part[key], dict) else {}
            extra = {"file_uri": blob.get("fileUri")} if key == "fileData" else {}
            if isinstance(blob.get("data"), str):
                extra["data_chars"] = len(blob["data"])
            b.meta(t_ms, kind=kind, mime_type=blob.get("mimeType"), **extra)
            return
    if "text" not in part and not set(part) <= _TEXT_PART_KEYS:
        raise StreamEventError(
            i, where, f"a part with unknown keys {sorted(part)} (not mapped; --tolerant keeps it)"
        )
    text = field_of(i, part, "text", str, "a string", f"{where}.text") or ""
    b.chunk(t_ms, text, "reasoning" if part.get("thought") else "content")


_TEXT_PART_KEYS = {"text", "thought", "thoughtSignature"}
"""Keys of a text part (a signature may come without text)."""


def import_gemini_sse(path: Path, options: ImportOptions) -> ImportResult:
    """Import Gemini `alt=sse` captures (a file or a folder of files)."""
    return import_capture_files(
        Path(path),
        options,
        gemini_events_to_recording,
        importer="gemini-sse",
        api="gemini.sse",
        vendor="google",
    )
