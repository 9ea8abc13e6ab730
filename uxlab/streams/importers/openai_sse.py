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
    index_of,
    map_events,
)
from uxlab.streams.importers.sse_capture import import_capture_files
from uxlab.streams.recording import Header, Recording
from uxlab.streams.sse import SseEvent


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
        b.fill_model(obj.get("model"))
        usage = field_of(i, obj, "usage", dict, "an object", "usage")
        if usage:
            b.usage = usage
        choices = obj.get("choices")
        if choices is None:
            if usage:
                return
            raise StreamEventError(i, "choices", "missing (expected a list of choices)")
        if not isinstance(choices, list):
            raise StreamEventError(i, "choices", f"expected a list, got {choices!r:.60}")
        for choice in choices:
            if not isinstance(choice, dict):
                raise StreamEventError(i, "choices[]", f"expected an object, got {choice!r:.60}")
            if choice.get("index", 0) != 0:
                other_choices += 1
                continue
            _choice(b, i, t_ms, choice)
            if choice.get("finish_reason"):
                b.finish_reason = field_of(
                    i, choice, "finish_reason", str, "a string", "choices[0].finish_reason"
                )
                b.finish_tool_calls()

    b = map_events(events, header, step, strict=strict, finish_ends=True)
    if other_choices:
        b.notes.append(f"{other_choices} delta(s) of choices other than index 0 were not imported")
    return b.recording()


def _choice(b: StreamBuilder, i: int, t_ms: float | None, choice: dict[str, Any]) -> None:
    delta = choice.get("delta")
    if delta is None:
        # Legacy Completions stream: the text sits on the choice itself.
        text = choice.get("text")
        if isinstance(text, str):
            b.chunk(t_ms, text, "content")
        return
    if not isinstance(delta, dict):
        raise StreamEventError(i, "choices[0].delta", f"expected an object, got {delta!r:.60}")
    content = delta.get("content")
    if isinstance(content, list):
        content = _content_parts(b, i, t_ms, content)
    content = field_of(
        i, {"content": content}, "content", str, "a string or a list of parts",
        "choices[0].delta.content",
    )  # fmt: skip
    tool_calls = field_of(i, delta, "tool_calls", list, "a list", "choices[0].delta.tool_calls")
    if delta.get("role"):
        b.role_prelude(t_ms, delta["role"])
    for key in ("reasoning_content", "reasoning"):
        text = delta.get(key)
        if isinstance(text, str) and text:
            b.chunk(t_ms, text, "reasoning")
            break
    b.chunk(t_ms, content or "", "content")
    refusal = delta.get("refusal")
    if isinstance(refusal, str):
        b.chunk(t_ms, refusal, "content", refusal=True)
    for call in tool_calls or []:
        if not isinstance(call, dict):
            raise StreamEventError(i, "choices[0].delta.tool_calls[]", "expected an object")
        fn = call.get("function") or {}
        if not isinstance(fn, dict):
            raise StreamEventError(
                i, "choices[0].delta.tool_calls[].function", f"expected an object, got {fn!r:.60}"
            )
        kind = call.get("type")
        _tool_piece(b, i, t_ms, index_of(i, call), call.get("id"), fn, kind)
    legacy = delta.get("function_call")
    if isinstance(legacy, dict):
        _tool_piece(b, i, t_ms, "function_call", None, legacy, "function_call")


def _tool_piece(
    b: StreamBuilder,
    i: int,
    t_ms: float | None,
    api_index: Any,
    call_id: Any,
    fn: dict[str, Any],
    kind: Any,
) -> None:
    """One fragment of a tool call: starts the call when it is the first of its index (or
    carries a new id there), names it when the name comes late, adds its arguments piece."""
    calls: dict[Any, tuple[int, Any]] = b.state.setdefault("calls", {})
    name = fn.get("name") if isinstance(fn.get("name"), str) else None
    call_id = call_id if isinstance(call_id, str) and call_id else None
    known = calls.get(api_index)
    if known is None or (call_id is not None and known[1] is not None and call_id != known[1]):
        index = api_index if isinstance(api_index, int) else b.n_tools
        tool_type = kind if isinstance(kind, str) and kind != "function" else None
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
    args = fn.get("arguments")
    if args is not None and not isinstance(args, str):
        raise StreamEventError(
            i,
            "choices[0].delta.tool_calls[].function.arguments",
            f"expected a string, got {args!r:.60}",
        )
    b.tool_args(t_ms, index, args or "")


def _content_parts(b: StreamBuilder, i: int, t_ms: float | None, parts: list[Any]) -> str:
    """Map Mistral's list of content parts; returns the text of its `text` parts."""
    text = ""
    for k, part in enumerate(parts):
        where = f"choices[0].delta.content[{k}]"
        if not isinstance(part, dict):
            raise StreamEventError(i, where, f"expected a content part object, got {part!r:.60}")
        kind = part.get("type")
        if kind == "text":
            text += field_of(i, part, "text", str, "a string", f"{where}.text") or ""
        elif kind == "thinking":
            thinking = part.get("thinking")
            pieces = thinking if isinstance(thinking, list) else [thinking]
            for piece in pieces:
                if isinstance(piece, str):
                    b.chunk(t_ms, piece, "reasoning")
                elif isinstance(piece, dict) and piece.get("type") == "text":
                    value = field_of(i, piece, "text", str, "a string", f"{where}.thinking[].text")
                    b.chunk(t_ms, value or "", "reasoning")
                elif isinstance(piece, dict) and piece.get("type") == "reference":
                    b.meta(t_ms, kind="reference", reference_ids=piece.get("reference_ids"))
                else:
                    raise StreamEventError(
                        i, f"{where}.thinking", f"unknown thinking part {piece!r:.60}"
                    )
        elif kind == "reference":
            b.meta(t_ms, kind="reference", reference_ids=part.get("reference_ids"))
        else:
            raise StreamEventError(
                i, f"{where}.type", f"unknown content part type {kind!r} (not mapped)"
            )
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
