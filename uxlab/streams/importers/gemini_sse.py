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
- streamed arguments (Gemini 3 with `streamFunctionCallArguments`): a `functionCall` with
  `willContinue: true` or `partialArgs` starts (or continues) one call: its name (and id)
  come first, then `partialArgs` pieces `{jsonPath, stringValue | numberValue | boolValue
  | nullValue, willContinue}` across events, until a `functionCall` without `willContinue`
  (often an empty `{}`) ends it. Each piece is a `tool` chunk whose text continues the
  call's arguments as JSON (`{"location":"Bos` ... `ton"}`) and which keeps its path and
  raw value (`json_path`, `string_piece` or `value`); a piece that goes back to a path
  already closed cannot be written as JSON text, so from then on the call's chunks carry
  the raw pieces and its start meta says `arguments_by_path` (`uxlab.streams.tool_calls`
  rebuilds the arguments from the paths either way). A call whose end never came is kept
  `incomplete`; a new call's name arriving first leaves the open one incomplete, never
  merged;
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

import msgspec

from uxlab.reading import MISSING, Wording, got
from uxlab.streams.importers.base import (
    ImportOptions,
    ImportResult,
    StreamEventError,
    event_json_object,
)
from uxlab.streams.importers.event_mapping import StreamBuilder, error_event, map_events, read_event
from uxlab.streams.importers.sse_capture import import_capture_files
from uxlab.streams.recording import Header, Recording
from uxlab.streams.sse import SseEvent
from uxlab.streams.tool_calls import parse_json_path


class Response(msgspec.Struct):
    """A `GenerateContentResponse` as uxlab reads it (only the first candidate is read,
    so only it is checked)."""

    modelVersion: str | None = None
    usageMetadata: dict[str, Any] | None = None
    candidates: list[Any] | None = None


class Content(msgspec.Struct):
    parts: list[dict[str, Any]] | None = None
    """Told apart by which key each has (`Part` below), so read one by one."""


class Candidate(msgspec.Struct):
    content: Content | None = None
    finishReason: str | None = None


class PartialArg(msgspec.Struct):
    """A piece of a streamed call's arguments: a JSON path and at most one value."""

    jsonPath: str | None = None
    stringValue: str | msgspec.UnsetType = msgspec.UNSET
    numberValue: int | float | msgspec.UnsetType = msgspec.UNSET
    boolValue: bool | msgspec.UnsetType = msgspec.UNSET
    nullValue: Any = msgspec.UNSET
    willContinue: bool | None = None


class FunctionCall(msgspec.Struct):
    name: str | None = None
    id: str | None = None
    args: Any = msgspec.field(default_factory=dict)
    partialArgs: list[PartialArg] | None = None
    willContinue: bool | None = None


class CallPart(msgspec.Struct):
    functionCall: FunctionCall


class ExecutableCode(msgspec.Struct):
    code: str | None = None


class CodePart(msgspec.Struct):
    executableCode: ExecutableCode | None = None


class CodeResult(msgspec.Struct):
    outcome: str | None = None
    output: str | None = None


class ResultPart(msgspec.Struct):
    codeExecutionResult: CodeResult | None = None


class Blob(msgspec.Struct):
    """`inlineData` (its `data`, base64) or `fileData` (its `fileUri`)."""

    mimeType: str | None = None
    data: str | None = None
    fileUri: str | None = None


class TextPart(msgspec.Struct):
    text: str | None = None
    thought: bool | None = None


_WORDING: Wording = {
    "usageMetadata": got("an object"),
    "candidates": got("a list"),
    "candidates[*].content": got("an object"),
    "candidates[*].content.parts": got("a list"),
    "candidates[*].finishReason": got("a string"),
    "candidates[*].content.parts[*].functionCall.partialArgs": got("a list"),
    "candidates[*].content.parts[*].functionCall.partialArgs[*].jsonPath": lambda v: (
        f"expected a JSON path such as $.a, got {None if v is MISSING else v!r:.60}"
    ),
    "candidates[*].content.parts[*].functionCall.partialArgs[*].stringValue": got("a string"),
    "candidates[*].content.parts[*].text": got("a string"),
}
"""The words the hand-written checks said, where the model's would say less."""


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
    response = read_event(i, obj, Response, _WORDING)
    b.fill_model(response.modelVersion)
    if response.usageMetadata:
        b.usage = response.usageMetadata
    if not response.candidates:
        return
    cand = read_event(i, {"candidates": response.candidates[:1]}, _First, _WORDING).candidates[0]
    for k, part in enumerate((cand.content.parts if cand.content else None) or []):
        _part(b, i, t_ms, part, f"candidates[0].content.parts[{k}]")
    if cand.finishReason:
        b.finish_reason = cand.finishReason


class _First(msgspec.Struct):
    """The first candidate alone, so its fields are said with their full path."""

    candidates: list[Candidate]


def _part(b: StreamBuilder, i: int, t_ms: float | None, part: dict[str, Any], where: str) -> None:
    """One part, read as the shape its key says (a Gemini part is told by the key it has)."""
    if "functionCall" in part:
        call = read_event(i, part, CallPart, _WORDING, f"{where}.").functionCall
        _function_call(b, i, t_ms, call, f"{where}.functionCall")
        return
    if "executableCode" in part:
        code = (
            read_event(i, part, CodePart, _WORDING, f"{where}.").executableCode or ExecutableCode()
        )
        index = b.tool_call(t_ms, b.n_tools, None, "code_execution", complete=True)
        b.chunk(t_ms, code.code or "", "tool", tool_index=index)
        return
    if "codeExecutionResult" in part:
        result = (
            read_event(i, part, ResultPart, _WORDING, f"{where}.").codeExecutionResult
            or CodeResult()
        )
        b.meta(t_ms, kind="code_execution_result", outcome=result.outcome, output=result.output)
        return
    for key, kind in (("inlineData", "inline_data"), ("fileData", "file_data")):
        if key in part:
            blob = read_event(i, part[key] or {}, Blob, _WORDING, f"{where}.{key}.")
            extra: dict[str, Any] = {"file_uri": blob.fileUri} if key == "fileData" else {}
            if blob.data is not None:
                extra["data_chars"] = len(blob.data)
            b.meta(t_ms, kind=kind, mime_type=blob.mimeType, **extra)
            return
    if "text" not in part and not set(part) <= _TEXT_PART_KEYS:
        raise StreamEventError(
            i, where, f"a part with unknown keys {sorted(part)} (not mapped; --tolerant keeps it)"
        )
    text = read_event(i, part, TextPart, _WORDING, f"{where}.")
    b.chunk(t_ms, text.text or "", "reasoning" if text.thought else "content")


_TEXT_PART_KEYS = {"text", "thought", "thoughtSignature"}


def _function_call(
    b: StreamBuilder, i: int, t_ms: float | None, call: FunctionCall, where: str
) -> None:
    """A whole call (`args`), or a piece of a streamed one (see the module docstring)."""
    partial = call.partialArgs
    name = call.name or None
    streaming: _StreamedCall | None = b.state.get("streamed_call")
    if not partial and not call.willContinue:
        if streaming is not None and name is None:
            _end_streamed(b, t_ms, streaming)  # the end marker (often `{}`)
        elif name is not None:
            b.state["streamed_call"] = None  # an open streamed call stays incomplete
            index = b.tool_call(t_ms, b.n_tools, call.id, name, complete=True)
            b.tool_args(t_ms, index, json.dumps(call.args, ensure_ascii=False))
        return
    if streaming is None or (name is not None and streaming.named):
        index = b.tool_call(t_ms, b.n_tools, call.id, name)
        streaming = b.state["streamed_call"] = _StreamedCall(index, named=name is not None)
    elif name is not None:
        streaming.named = True
        b.call_meta(streaming.index).data["name"] = name
    for k, piece in enumerate(partial or []):
        _piece(b, i, t_ms, streaming, piece, f"{where}.partialArgs[{k}]")
    if not call.willContinue:
        _end_streamed(b, t_ms, streaming)


class _StreamedCall:
    """A call whose arguments stream by JSON path, and the JSON text written of them so far."""

    def __init__(self, index: int, named: bool) -> None:
        self.index, self.named = index, named
        self.writer = JsonPathWriter()


def _piece(
    b: StreamBuilder, i: int, t_ms: float | None, call: _StreamedCall, piece: PartialArg, where: str
) -> None:
    path = piece.jsonPath
    tokens = parse_json_path(path) if path is not None else None
    if not tokens:
        raise StreamEventError(
            i, f"{where}.jsonPath", f"expected a JSON path such as $.a, got {path!r:.60}"
        )
    assert path is not None
    value: Any
    is_string = not isinstance(piece.stringValue, msgspec.UnsetType)
    if is_string:
        value = piece.stringValue
    elif not isinstance(piece.numberValue, msgspec.UnsetType):
        value = piece.numberValue
    elif not isinstance(piece.boolValue, msgspec.UnsetType):
        value = piece.boolValue
    elif piece.nullValue is not msgspec.UNSET:
        value = None
    else:
        return  # a piece without a value (an empty container): nothing to add
    text = call.writer.piece(tokens, value, is_string=is_string, more=bool(piece.willContinue))
    if text is None:
        if not call.writer.broken_reported:
            call.writer.broken_reported = True
            b.call_meta(call.index).data["arguments_by_path"] = True
        text = value if isinstance(value, str) else json.dumps(value)
    extra = {"string_piece": value} if is_string else {"value": value}
    # Empty text (an empty piece in the middle of a string) adds nothing, as it should.
    b.tool_args(t_ms, call.index, text, json_path=path, **extra)


def _end_streamed(b: StreamBuilder, t_ms: float | None, call: _StreamedCall) -> None:
    closing = call.writer.close()
    if closing:
        b.tool_args(t_ms, call.index, closing, json_syntax=True)
    b.tool_done(call.index)
    b.state["streamed_call"] = None


class JsonPathWriter:
    """Writes values that arrive by JSON path as one JSON text, piece by piece.

    `piece` returns the text that continues the document (a separator, a key, an opened
    container, the value or its next part), or None when the piece cannot continue it
    (its path goes back to a member already written): the caller keeps the raw piece then,
    and so does every later piece. `close` returns what closes every open string and
    container (`{}` when nothing came).
    """

    def __init__(self) -> None:
        self.stack: list[_Open] = []
        """The open containers, the root object first."""
        self.open_string: list[str | int] | None = None
        self.broken = False
        self.broken_reported = False

    def piece(self, tokens: list[str | int], value: Any, is_string: bool, more: bool) -> str | None:
        if self.broken:
            return None
        out = ""
        if self.open_string is not None:
            if self.open_string == tokens and is_string:
                self.open_string = list(tokens) if more else None
                return _escaped(value) + ("" if more else '"')
            self.open_string = None
            out += '"'
        if not self.stack:
            out += "{"
            self.stack.append(_Open(None, is_array=False))
        chain = [c.token for c in self.stack[1:]]
        common = 0
        while common < min(len(chain), len(tokens) - 1) and chain[common] == tokens[common]:
            common += 1
        while len(self.stack) > common + 1:
            out += "]" if self.stack.pop().is_array else "}"
        for depth in range(common, len(tokens)):
            member = self.stack[-1].member(tokens[depth])
            if member is None:
                self.broken = True
                return None
            out += member
            if depth < len(tokens) - 1:
                is_array = isinstance(tokens[depth + 1], int)
                out += "[" if is_array else "{"
                self.stack.append(_Open(tokens[depth], is_array))
        if is_string:
            out += '"' + _escaped(value)
            if more:
                self.open_string = list(tokens)
            else:
                out += '"'
        else:
            out += json.dumps(value)
        return out

    def close(self) -> str:
        if self.broken:
            return ""
        if not self.stack:
            return "{}"
        out = '"' if self.open_string is not None else ""
        self.open_string = None
        while self.stack:
            out += "]" if self.stack.pop().is_array else "}"
        return out


class _Open:
    """An open container of `JsonPathWriter`: its key (or index) in its parent, and what
    it holds so far."""

    def __init__(self, token: str | int | None, is_array: bool) -> None:
        self.token, self.is_array = token, is_array
        self.keys: set[str] = set()
        self.length = 0

    def member(self, token: str | int) -> str | None:
        """The separator and key that start member `token`, or None if it cannot be added
        here (written before, an index behind the end, or the wrong kind of container)."""
        if isinstance(token, str):
            if self.is_array or token in self.keys:
                return None
            sep = "," if self.keys else ""
            self.keys.add(token)
            return sep + json.dumps(token, ensure_ascii=False) + ":"
        if not self.is_array or token < self.length:
            return None
        out = ("," if self.length else "") + "null," * (token - self.length)
        self.length = token + 1
        return out


def _escaped(text: str) -> str:
    """`text` as it is inside a JSON string (without the quotes)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


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
