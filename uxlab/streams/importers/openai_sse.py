"""OpenAI Chat Completions (and legacy Completions) SSE streams -> Recording.

Input: a captured SSE body (`data: {chat.completion.chunk}` events ending in `data: [DONE]`),
either a *timed capture* (each event preceded by `: t_ms=412.700`, see `uxlab.streams.sse`)
or a plain body without times, which imports the text only (`t_ms` null everywhere).
SRC may be one file or a folder of `*.sse` / `*.txt` files (one stream per file).

Mapping (`openai_chat_events_to_recording(events, header, strict=...)`, the one mapping of
this API: the importers call it strict, the live recorder tolerant; see `event_mapping`):

- the role prelude (`delta: {"role": "assistant", "content": ""}`) -> `meta {"kind": "role"}`,
  once, never an empty chunk, so TTFT counts the first real text;
- `delta.content` (and Completions' `choices[].text`) -> `chunk` on channel `content`;
  `delta.refusal` -> `content` with `"refusal": true`;
- `delta.reasoning_content` / `delta.reasoning` (vLLM, DeepSeek, OpenRouter) -> `reasoning`;
- `delta.content` as a list of parts (Mistral): `{"type": "text", "text"}` -> `content`,
  `{"type": "thinking", "thinking": [{"type": "text", "text"}, ...]}` -> `reasoning`,
  `{"type": "reference", "reference_ids"}` -> `meta {"kind": "reference"}`; a part of any
  other type is refused in strict mode with its type named (kept by the tolerant mode);
- `delta.tool_calls[]`: the first fragment of a call (its `index` not seen yet, or a new
  `id` at a seen index: a second call, never merged into the first) -> `meta {"kind":
  "tool_call"}` with its id and name (a name that comes in a later fragment fills it in),
  each `function.arguments` piece -> `chunk` on channel `tool` (with `tool_index`); the
  legacy `delta.function_call` likewise (`tool_type: "function_call"`). Calls are whole
  when the choice finishes (or at `[DONE]`); a stream cut before that leaves them
  `incomplete`;
- `finish_reason` -> `end.finish_reason`; the `include_usage` chunk (`choices: []`) ->
  `end.usage`; `[DONE]` (or the last event) gives the end time;
- a mid-stream `{"error": {...}}` (or an `event: error`) -> `error` event, then `end` with
  `finish_reason: "error"` at its time.

Only choice index 0 is imported (chat UIs show one answer); other choices are counted in a
warning. SSE chunks are not tokens, so `n_tokens` is null.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from uxlab.reading import Wording, convert, shown
from uxlab.streams.importers.base import (
    ImportOptions,
    ImportResult,
    StreamEventError,
    event_json_object,
)
from uxlab.streams.importers.event_mapping import (
    StreamBuilder,
    error_event,
    map_events,
)
from uxlab.streams.importers.sse_capture import import_capture_files
from uxlab.streams.recording import Header, Recording
from uxlab.streams.sse import SseEvent


class ToolFunction(msgspec.Struct):
    """A tool call fragment's function (or the legacy `function_call`)."""

    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(msgspec.Struct):
    index: int | None = None
    id: str | None = None
    type: str | None = None
    function: ToolFunction | None = None


class ThinkingText(msgspec.Struct, tag="text", tag_field="type"):
    text: str | None = None


class Reference(msgspec.Struct, tag="reference", tag_field="type"):
    reference_ids: Any = None


ThinkingPiece = str | ThinkingText | Reference


class TextPart(msgspec.Struct, tag="text", tag_field="type"):
    text: str | None = None


class ThinkingPart(msgspec.Struct, tag="thinking", tag_field="type"):
    thinking: list[ThinkingPiece] | ThinkingPiece | None = None


ContentPart = TextPart | ThinkingPart | Reference
"""Mistral's content parts, by their `type`."""


class Delta(msgspec.Struct):
    role: str | None = None
    content: str | list[ContentPart] | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[ToolCallDelta] | None = None
    function_call: ToolFunction | None = None


class Choice(msgspec.Struct):
    index: int | None = 0
    delta: Delta | None = None
    text: str | None = None
    """Legacy Completions: the text sits on the choice."""
    finish_reason: str | None = None


class ChatChunk(msgspec.Struct):
    """One `chat.completion.chunk` (or Completions chunk) as uxlab reads it."""

    model: str | None = None
    usage: dict[str, Any] | None = None
    choices: list[Choice] | None = None


WORDING: Wording = {
    "choices[*].delta.content": lambda v: f"expected a string or a list of parts, got {shown(v)}",
    "choices[*].delta.content[*].type": lambda v: (
        f"unknown content part type {v!r:.60} (not mapped)"
    ),
    "choices[*].delta.content[*].thinking": lambda v: f"unknown thinking part {shown(v)}",
    "choices[*].delta.content[*].thinking[*]": lambda v: f"unknown thinking part {shown(v)}",
    "choices[*].delta.content[*].thinking[*].type": lambda v: (
        f"unknown thinking part type {shown(v)}"
    ),
}
"""The words the hand-written checks said, where the model's would say less."""


def _chunk(i: int, obj: dict[str, Any]) -> ChatChunk:
    """The event's object as a ChatChunk, else a StreamEventError naming the field."""
    return convert(
        obj, ChatChunk, WORDING, error=lambda field, problem: StreamEventError(i, field, problem)
    )


def openai_chat_events_to_recording(
    events: Sequence[SseEvent], header: Header, *, strict: bool = True
) -> Recording:
    """Map OpenAI Chat Completions SSE events to a Recording (see the module docstring).

    Strict: raises StreamEventError(index, field, problem) for an event that is not a chunk
    object; tolerant: that event is kept as a `malformed_event` meta. The header's
    `source.model` is filled from the chunks when it is empty.
    """
    other_choices = 0

    def step(b: StreamBuilder, i: int, t_ms: float | None, name: str | None, data: str) -> None:
        nonlocal other_choices
        if data.strip() == "[DONE]":
            b.finish_tool_calls()
            b.close(t_ms)
            return
        obj = event_json_object(i, data)
        if error_event(b, t_ms, name, obj):
            return
        chunk = _chunk(i, obj)
        b.fill_model(chunk.model)
        if chunk.usage:
            b.usage = chunk.usage
        if chunk.choices is None:
            if chunk.usage:
                return
            raise StreamEventError(i, "choices", "missing (expected a list of choices)")
        for choice in chunk.choices:
            if choice.index not in (0, None):
                other_choices += 1
                continue
            _choice(b, t_ms, choice)
            if choice.finish_reason:
                b.finish_reason = choice.finish_reason
                b.finish_tool_calls()

    b = map_events(events, header, step, strict=strict, finish_ends=True)
    if other_choices:
        b.notes.append(f"{other_choices} delta(s) of choices other than index 0 were not imported")
    return b.recording()


def _choice(b: StreamBuilder, t_ms: float | None, choice: Choice) -> None:
    delta = choice.delta
    if delta is None:
        # Legacy Completions stream: the text sits on the choice itself.
        if choice.text is not None:
            b.chunk(t_ms, choice.text, "content")
        return
    content = delta.content
    if isinstance(content, list):
        content = _content_parts(b, t_ms, content)
    if delta.role:
        b.role_prelude(t_ms, delta.role)
    reasoning = delta.reasoning_content or delta.reasoning
    if reasoning:
        b.chunk(t_ms, reasoning, "reasoning")
    b.chunk(t_ms, content or "", "content")
    if delta.refusal is not None:
        b.chunk(t_ms, delta.refusal, "content", refusal=True)
    for call in delta.tool_calls or []:
        fn = call.function or ToolFunction()
        _tool_piece(b, t_ms, call.index or 0, call.id, fn, call.type)
    if delta.function_call is not None:
        _tool_piece(b, t_ms, "function_call", None, delta.function_call, "function_call")


def _tool_piece(
    b: StreamBuilder,
    t_ms: float | None,
    api_index: int | str,
    call_id: str | None,
    fn: ToolFunction,
    kind: str | None,
) -> None:
    """One fragment of a tool call: starts the call when it is the first of its index (or
    carries a new id there), names it when the name comes late, adds its arguments piece."""
    calls: dict[Any, tuple[int, Any]] = b.state.setdefault("calls", {})
    name = fn.name
    call_id = call_id or None
    known = calls.get(api_index)
    if known is None or (call_id is not None and known[1] is not None and call_id != known[1]):
        index = api_index if isinstance(api_index, int) else b.n_tools
        tool_type = kind if kind is not None and kind != "function" else None
        index = b.tool_call(t_ms, index, call_id, name, tool_type=tool_type)
        calls[api_index] = (index, call_id)
    else:
        index = known[0]
        meta = b.call_meta(index)
        if name and not meta.data.get("name"):
            meta.data["name"] = name
        if call_id and not meta.data.get("id"):
            meta.data["id"] = call_id
            calls[api_index] = (index, call_id)
    b.tool_args(t_ms, index, fn.arguments or "")


def _content_parts(b: StreamBuilder, t_ms: float | None, parts: list[ContentPart]) -> str:
    """Map Mistral's list of content parts; returns the text of its `text` parts."""
    text = ""
    for part in parts:
        if isinstance(part, TextPart):
            text += part.text or ""
        elif isinstance(part, ThinkingPart):
            thinking = part.thinking
            for piece in thinking if isinstance(thinking, list) else [thinking]:
                if isinstance(piece, str):
                    b.chunk(t_ms, piece, "reasoning")
                elif isinstance(piece, ThinkingText):
                    b.chunk(t_ms, piece.text or "", "reasoning")
                elif isinstance(piece, Reference):
                    b.meta(t_ms, kind="reference", reference_ids=piece.reference_ids)
        else:
            b.meta(t_ms, kind="reference", reference_ids=part.reference_ids)
    return text


def import_openai_sse(path: Path, options: ImportOptions) -> ImportResult:
    """Import OpenAI Chat Completions SSE captures (a file or a folder of files)."""
    return import_capture_files(
        Path(path),
        options,
        openai_chat_events_to_recording,
        importer="openai-sse",
        api="openai.chat",
        vendor="openai",
    )
