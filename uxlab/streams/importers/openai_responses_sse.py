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

import msgspec

from uxlab.reading import MISSING, Wording, got
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
"""An output item's index (absent or null: 0)."""


class Operation(msgspec.Struct):
    """An `apply_patch_call`'s operation."""

    type: str | None = None
    path: str | None = None
    diff: str | None = None


class ToolItem(msgspec.Struct):
    """An output item that calls a tool, as `output_item.added` / `.done` give it; each
    kind below adds the field that holds its whole input."""

    type: str | None = None
    name: str | None = None
    call_id: str | None = None
    id: str | None = None
    server_label: str | None = None
    caller: dict[str, Any] | None = None
    operation: Operation | None = None

    def whole_input(self) -> str | None:
        """The call's whole input as text (None when it has none)."""
        return None


class ArgumentsItem(ToolItem):
    """`function_call`, `mcp_call`, `mcp_approval_request`."""

    arguments: str | None = None

    def whole_input(self) -> str | None:
        return self.arguments


class CustomItem(ToolItem):
    input: str | None = None

    def whole_input(self) -> str | None:
        return self.input


class PatchItem(ToolItem):
    def whole_input(self) -> str | None:
        return self.operation.diff if self.operation else None


class ShellAction(msgspec.Struct):
    commands: list[str] | None = None


class ShellItem(ToolItem):
    action: ShellAction | None = None

    def whole_input(self) -> str | None:
        commands = self.action.commands if self.action else None
        return "\n".join(commands) if commands is not None else None


class CodeItem(ToolItem):
    """`code_interpreter_call`, `program`."""

    code: str | None = None

    def whole_input(self) -> str | None:
        return self.code


class ActionItem(ToolItem):
    """`local_shell_call`, `computer_call`: the action, as JSON."""

    action: dict[str, Any] | None = None

    def whole_input(self) -> str | None:
        return json.dumps(self.action, ensure_ascii=False) if self.action is not None else None


_TOOL_ITEMS: dict[str, tuple[type[ToolItem], str | None]] = {
    "function_call": (ArgumentsItem, None),
    "custom_tool_call": (CustomItem, None),
    "mcp_call": (ArgumentsItem, None),
    "mcp_approval_request": (ArgumentsItem, None),
    "apply_patch_call": (PatchItem, "apply_patch"),
    "shell_call": (ShellItem, "shell"),
    "local_shell_call": (ActionItem, "local_shell"),
    "computer_call": (ActionItem, "computer"),
    "code_interpreter_call": (CodeItem, "code_interpreter"),
    "program": (CodeItem, "program"),
}
"""Output items that call a tool: their model, and the tool's name when the item has none
of its own."""


class ItemHead(msgspec.Struct):
    type: Any = None


class ItemEvent(msgspec.Struct):
    """`response.output_item.added` / `.done`."""

    output_index: Index = None
    item: dict[str, Any] | None = None


class IndexEvent(msgspec.Struct):
    """An event about one output item: a tool's input piece, a built-in tool's progress,
    an annotation, a shell's command or output."""

    output_index: Index = None
    item_id: Any = None
    command_index: int | None = None
    delta: Any = None
    annotation: Any = msgspec.UNSET


class TextDelta(msgspec.Struct):
    delta: str


class ToolDelta(msgspec.Struct):
    """A piece of a tool call's input (`response.function_call_arguments.delta`, ...)."""

    delta: str
    output_index: Index = None


class IncompleteDetails(msgspec.Struct):
    reason: str | None = None


class Response(msgspec.Struct):
    """The response as the ends carry it."""

    usage: dict[str, Any] | None = None
    status: str | None = None
    incomplete_details: IncompleteDetails | None = None
    error: Any = None
    """Kept as it came (an object is the error; anything else: `response.failed`)."""


class Created(msgspec.Struct):
    model: str | None = None


class CreatedEvent(msgspec.Struct):
    """`response.created`: only its model is read."""

    response: Created | None = None


class ResponseEvent(msgspec.Struct):
    response: Response | None = None


_WORDING: Wording = {
    "delta": lambda v: f"missing or not a string: {None if v is MISSING else v!r:.60}",
    "response": got("an object"),
    "response.usage": got("an object"),
    "item": got("an object"),
    "output_index": got("a whole number"),
}
"""The words the hand-written checks said, where the model's would say less."""


_TEXT_DELTAS = {
    "response.output_text.delta": "content",
    "response.refusal.delta": "content",
    "response.reasoning_text.delta": "reasoning",
    "response.reasoning_summary_text.delta": "reasoning",
}
_ENDS = ("response.completed", "response.incomplete", "response.failed")
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


def _step(b: StreamBuilder, i: int, t_ms: float | None, name: str | None, data: str) -> None:
    kind, obj = named_event(i, name, data)
    calls: dict[int, int] = b.state.setdefault("calls", {})
    if kind == "response.created":
        created = read_event(i, obj, CreatedEvent, _WORDING).response or Created()
        b.fill_model(created.model)
        b.meta(t_ms, kind="response.created")
    elif kind in _TEXT_DELTAS:
        text = read_event(i, obj, TextDelta, _WORDING).delta
        if kind == "response.refusal.delta":
            b.chunk(t_ms, text, "content", refusal=True)
        else:
            b.chunk(t_ms, text, _TEXT_DELTAS[kind])
    elif kind in ("response.output_item.added", "response.output_item.done"):
        item_event = read_event(i, obj, ItemEvent, _WORDING)
        index = item_event.output_index or 0
        raw_item = item_event.item or {}
        item_type = read_event(i, raw_item, ItemHead, _WORDING, "item.").type
        tool = _TOOL_ITEMS.get(item_type) if isinstance(item_type, str) else None
        item = read_event(i, raw_item, tool[0], _WORDING, "item.") if tool else None
        if kind == "response.output_item.done":
            if index in calls:
                whole = item.whole_input() if item else None
                if whole and not _has_tool_text(b, calls[index]):
                    b.tool_args(t_ms, calls[index], whole, from_done=True)
                b.tool_done(calls[index])
        elif item is not None:
            _start_call(b, t_ms, index, item)
        elif item_type not in ("message", "reasoning"):
            b.meta(t_ms, kind="output_item", item_type=item_type, index=index)
    elif kind in _TOOL_DELTAS:
        piece = read_event(i, obj, ToolDelta, _WORDING)
        index = piece.output_index or 0
        if index not in calls:  # pieces of a call whose item was never announced
            _start_call(b, t_ms, index, ToolItem(type=kind.split(".")[1]))
        text = piece.delta
        if kind == "response.shell_call_command.delta" and b.state.pop(
            f"new_command_{calls[index]}", False
        ):
            text = "\n" + text
        b.tool_args(t_ms, calls[index], text)
    elif kind == "response.shell_call_command.added":
        event = read_event(i, obj, IndexEvent, _WORDING)
        if (event.output_index or 0) in calls and event.command_index:
            b.state[f"new_command_{calls[event.output_index or 0]}"] = True
    elif kind == "response.shell_call_output_content.delta":
        event = read_event(i, obj, IndexEvent, _WORDING)
        delta = event.delta
        chars = (
            sum(len(v) for v in delta.values() if isinstance(v, str))
            if isinstance(delta, dict)
            else None
        )
        b.meta(t_ms, kind="tool_output", index=event.output_index or 0, chars=chars)
    elif kind == "response.output_text.annotation.added" or kind.startswith(_BUILTIN_TOOL_EVENTS):
        event = read_event(i, obj, IndexEvent, _WORDING)
        extra = {} if event.annotation is msgspec.UNSET else {"annotation": event.annotation}
        b.meta(t_ms, kind=kind, index=event.output_index or 0, item_id=event.item_id, **extra)
    elif kind in _ENDS:
        resp = read_event(i, obj, ResponseEvent, _WORDING).response or Response()
        b.usage = resp.usage
        if kind == "response.failed":
            err = resp.error
            b.error(t_ms, err if isinstance(err, dict) else {"type": "response.failed"})
        else:
            reason = resp.incomplete_details.reason if resp.incomplete_details else None
            b.finish_reason = reason or resp.status or "completed"
            if kind == "response.completed":
                b.finish_tool_calls()  # a completed response has every item done
            b.close(t_ms)
    elif kind == "error":
        b.error(t_ms, {k: v for k, v in obj.items() if k != "type"} or {"type": "error"})
    elif kind not in _SKIPPED:
        raise StreamEventError(
            i, "event", f"unknown Responses event {kind!r} (not mapped; --tolerant keeps it)"
        )


def _start_call(b: StreamBuilder, t_ms: float | None, output_index: int, item: ToolItem) -> None:
    """A tool-calling output item starts: its start meta (see the module docstring)."""
    operation = item.operation or Operation()
    tool = _TOOL_ITEMS.get(item.type or "")
    b.state["calls"][output_index] = b.tool_call(
        t_ms,
        output_index,
        item.call_id or item.id,
        item.name if item.name is not None else (tool[1] if tool else None),
        tool_type=str(item.type),
        server=item.server_label,
        caller=item.caller,
        operation=operation.type,
        path=operation.path,
    )


def _has_tool_text(b: StreamBuilder, index: int) -> bool:
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
