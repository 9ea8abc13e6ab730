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
- `response.output_item.added` of an item that calls a tool -> `meta {"kind": "tool_call",
  "index": output_index, "id": call_id, "name", "tool_type"}` (and `server` for MCP,
  `caller` for a call made from a program, `operation`/`path` for a patch), its input's
  pieces -> `tool` chunks with `tool_index`, and the call is whole at its
  `output_item.done` or `response.completed` (one cut off before is kept `incomplete`).
  The items and their input:
  `function_call` (`arguments`, `function_call_arguments.delta`), `custom_tool_call`
  (`input`, `custom_tool_call_input.delta`), `mcp_call` (`arguments`,
  `mcp_call_arguments.delta`), `mcp_approval_request` (`arguments`, whole), `apply_patch_call`
  (named `apply_patch`; the operation's `diff`, `apply_patch_call_operation_diff.delta`),
  `shell_call` (`shell`; its commands, one per line, `shell_call_command.delta`),
  `local_shell_call` (`local_shell`; the `action` as JSON, whole), `computer_call`
  (`computer`; the `action`), `code_interpreter_call` (`code_interpreter`; the `code`,
  `code_interpreter_call_code.delta`) and `program` (code that calls tools; its `code`).
  When a call's `output_item.done` arrives and no piece of its input did, the whole input
  becomes one `tool` chunk then (`from_done`);
- an added item of another kind that is not the message or reasoning (web search, file
  search, image generation, MCP tool listing, a shell's output, ...) -> `meta {"kind":
  "output_item", "item_type", "index"}`; the progress events of built-in tools
  (`response.web_search_call.searching`, `...completed`, `response.mcp_call.failed`, ...)
  and `response.output_text.annotation.added` -> `meta {"kind": <event name>}`, so the time
  a tool ran stays visible; a shell's output (`shell_call_output_content.delta`) -> `meta
  {"kind": "tool_output", "index", "chars"}` (what the command printed is not the model's);
- `response.completed` / `response.incomplete` -> the end (`finish_reason`: the incomplete
  reason, else the status) with `response.usage`; `response.failed` -> `error` event
  (`response.error`) and `end` with `finish_reason: "error"`; an `error` event likewise;
- the lifecycle events whose content the deltas already carried (`response.in_progress`,
  `response.queued`, `...text.done`, `content_part.added`/`done`, ...) are skipped;
- any other event is refused in strict mode (`event: unknown Responses event 'x'`), and
  kept as a `malformed_event` meta by the tolerant mode: never dropped silently.
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

_TEXT_DELTAS = {
    "response.output_text.delta": "content",
    "response.refusal.delta": "content",
    "response.reasoning_text.delta": "reasoning",
    "response.reasoning_summary_text.delta": "reasoning",
}
_ENDS = ("response.completed", "response.incomplete", "response.failed")
_TOOL_ITEMS: dict[str, str | None] = {
    "function_call": None,
    "custom_tool_call": None,
    "mcp_call": None,
    "mcp_approval_request": None,
    "apply_patch_call": "apply_patch",
    "shell_call": "shell",
    "local_shell_call": "local_shell",
    "computer_call": "computer",
    "code_interpreter_call": "code_interpreter",
    "program": "program",
}
"""Output items that call a tool, and the tool's name when the item has none of its own."""
_TOOL_DELTAS = (
    "response.function_call_arguments.delta",
    "response.custom_tool_call_input.delta",
    "response.mcp_call_arguments.delta",
    "response.code_interpreter_call_code.delta",
    "response.apply_patch_call_operation_diff.delta",
    "response.shell_call_command.delta",
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
        "response.apply_patch_call_operation_diff.done",
        "response.shell_call_command.done",
        "response.shell_call_output_content.done",
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
        index = index_of(i, obj, "output_index")
        item_type = item.get("type")
        if item_type in _TOOL_ITEMS:
            _start_call(b, t_ms, index, item)
        elif item_type not in ("message", "reasoning"):
            b.meta(t_ms, kind="output_item", item_type=item_type, index=index)
    elif kind == "response.output_item.done":
        item = field_of(i, obj, "item", dict, "an object", "item") or {}
        index = b.state.get("calls", {}).get(index_of(i, obj, "output_index"))
        if index is not None:
            whole = _whole_input(item)
            if whole and not _has_tool_text(b, index):
                b.tool_args(t_ms, index, whole, from_done=True)
            b.tool_done(index)
    elif kind in _TOOL_DELTAS:
        index = b.state.get("calls", {}).get(index_of(i, obj, "output_index"))
        if index is None:  # pieces of a call whose item was never announced
            index = _start_call(
                b, t_ms, index_of(i, obj, "output_index"), {"type": kind.split(".")[1]}
            )
        text = _delta_text(i, obj)
        if kind == "response.shell_call_command.delta" and b.state.pop(
            f"new_command_{index}", False
        ):
            text = "\n" + text
        b.tool_args(t_ms, index, text)
    elif kind == "response.shell_call_command.added":
        index = b.state.get("calls", {}).get(index_of(i, obj, "output_index"))
        if index is not None and obj.get("command_index", 0):
            b.state[f"new_command_{index}"] = True
    elif kind == "response.shell_call_output_content.delta":
        delta = obj.get("delta")
        chars = (
            sum(len(v) for v in delta.values() if isinstance(v, str))
            if isinstance(delta, dict)
            else None
        )
        b.meta(t_ms, kind="tool_output", index=index_of(i, obj, "output_index"), chars=chars)
    elif kind == "response.output_text.annotation.added" or kind.startswith(_BUILTIN_TOOL_EVENTS):
        extra = {"annotation": obj["annotation"]} if "annotation" in obj else {}
        b.meta(
            t_ms,
            kind=kind,
            index=index_of(i, obj, "output_index"),
            item_id=obj.get("item_id"),
            **extra,
        )
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
            if kind == "response.completed":
                b.finish_tool_calls()  # a completed response has every item done
            b.close(t_ms)
    elif kind == "error":
        b.error(t_ms, {k: v for k, v in obj.items() if k != "type"} or {"type": "error"})
    elif kind not in _SKIPPED:
        raise StreamEventError(
            i, "event", f"unknown Responses event {kind!r} (not mapped; --tolerant keeps it)"
        )


def _start_call(
    b: StreamBuilder, t_ms: float | None, output_index: Any, item: dict[str, Any]
) -> int:
    """A tool-calling output item starts: its start meta (see the module docstring)."""
    item_type = str(item.get("type"))
    name = item.get("name") if isinstance(item.get("name"), str) else _TOOL_ITEMS.get(item_type)
    raw_operation = item.get("operation")
    operation: dict[str, Any] = raw_operation if isinstance(raw_operation, dict) else {}
    caller = item.get("caller")
    index = b.tool_call(
        t_ms,
        output_index if isinstance(output_index, int) else b.n_tools,
        item.get("call_id") or item.get("id"),
        name,
        tool_type=item_type,
        server=item.get("server_label"),
        caller=caller if isinstance(caller, dict) else None,
        operation=operation.get("type"),
        path=operation.get("path"),
    )
    b.state.setdefault("calls", {})[output_index] = index
    return index


def _whole_input(item: dict[str, Any]) -> str:
    """A finished tool-calling item's whole input as text ("" when it has none)."""
    item_type = item.get("type")
    if item_type in ("function_call", "mcp_call", "mcp_approval_request"):
        value = item.get("arguments")
    elif item_type == "custom_tool_call":
        value = item.get("input")
    elif item_type == "apply_patch_call":
        operation = item.get("operation")
        value = operation.get("diff") if isinstance(operation, dict) else None
    elif item_type == "shell_call":
        action = item.get("action")
        commands = action.get("commands") if isinstance(action, dict) else None
        value = (
            "\n".join(c for c in commands if isinstance(c, str))
            if isinstance(commands, list)
            else None
        )
    elif item_type in ("code_interpreter_call", "program"):
        value = item.get("code")
    elif item_type in ("local_shell_call", "computer_call"):
        action = item.get("action")
        value = json.dumps(action, ensure_ascii=False) if isinstance(action, dict) else None
    else:
        value = None
    return value if isinstance(value, str) else ""


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
