"""Amazon Bedrock `ConverseStream` captures -> Recording (`--from bedrock`).

Two shapes: the raw HTTP body, in AWS's binary event-stream encoding
(`application/vnd.amazon.eventstream`), or the events as boto3 yields them
(`for event in response["stream"]`), saved as JSON Lines, one `{"contentBlockDelta": {...}}`
object per line, optionally timed as `{"t_ms": 412.7, "data": {...}}` (ms from the request).
A binary body has no times (`timing: none`); timed lines are timed.

The binary framing is decoded here (`decode_event_stream`, about forty lines): each message is
a 12-byte prelude (total length, headers length, CRC-32 of those 8 bytes), headers (name
length, name, type 7 = string with a 2-byte length; other types are skipped by their size),
the JSON payload and a CRC-32 of the whole message; both checksums are checked. It was
cross-checked against botocore's decoder (`botocore.eventstream.EventStreamBuffer`) on the
fixture; botocore is not a dependency (it would be the only user of its ~100 modules).

Mapping (event type from the `:event-type` header, or the line's one key):

- `messageStart` -> `meta {"kind": "role", "role"}`;
- `contentBlockStart` with `start.toolUse` -> `meta {"kind": "tool_call", "index":
  contentBlockIndex, "id": toolUseId, "name"}`;
- `contentBlockDelta`: `delta.text` -> `content`, `delta.reasoningContent.text` ->
  `reasoning` (a signature -> `meta {"kind": "signature"}`), `delta.toolUse.input` -> `tool`;
  a delta of another kind -> `meta {"kind": "delta", "delta"}` (kept whole);
- `contentBlockStop` -> nothing (implied), except that a tool call is whole then (one whose
  block never stopped before the stream ended is kept `incomplete`);
- `messageStop` -> `end.finish_reason` (`stopReason`); `metadata` -> `end.usage` and
  `meta {"kind": "metadata", "latency_ms"}` (Bedrock's own `metrics.latencyMs`). The two
  come in either order (AWS sends `messageStop` first; other tools log `metadata` first):
  the stream ends at the second, or at the one that came when the other never did;
- an exception (`:message-type: exception`, or an `...Exception` key) -> `error` event;
- any other event type is refused in strict mode with its name (kept by `--tolerant`).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from uxlab.reading import (
    MAX_JSON_FILE_BYTES,
    MISSING,
    InputProblem,
    Wording,
    got,
    read_bounded_bytes,
)
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Skipped,
    StreamEventError,
    TimedItems,
    event_json_object,
    import_header,
    loads_checked,
    map_located,
    origin_of,
    selected,
)
from uxlab.streams.importers.event_mapping import StreamBuilder, map_events, read_event
from uxlab.streams.recording import Header, Recording
from uxlab.streams.replay_file import safe_filename
from uxlab.streams.sse import SseEvent

_HEADER_VALUE_SIZES = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
"""Fixed sizes of event-stream header values by type (true, false, byte, short, int,
long, timestamp, uuid); types 6 (bytes) and 7 (string) carry a 2-byte length."""


_CAPTURE_SUFFIXES = (".bin", ".eventstream", ".jsonl", ".json")
"""The files a folder SRC is searched for."""


class EventStreamError(ValueError):
    """A binary event stream that does not decode; `offset` is the message's first byte."""

    def __init__(self, offset: int, problem: str):
        self.offset = offset
        super().__init__(f"byte {offset}: {problem}")


def decode_event_stream(body: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """`(offset, string headers, payload)` of every message of an AWS binary event stream."""
    out: list[tuple[int, dict[str, str], bytes]] = []
    pos = 0
    while pos < len(body):
        if len(body) - pos < 16:
            raise EventStreamError(pos, "a message shorter than its 16 bytes of framing")
        total, headers_len, prelude_crc = struct.unpack_from(">III", body, pos)
        if zlib.crc32(body[pos : pos + 8]) != prelude_crc:
            raise EventStreamError(pos, "prelude checksum does not match")
        if total < 16 + headers_len or pos + total > len(body):
            raise EventStreamError(pos, f"length {total} does not fit the body")
        (message_crc,) = struct.unpack_from(">I", body, pos + total - 4)
        if zlib.crc32(body[pos : pos + total - 4]) != message_crc:
            raise EventStreamError(pos, "message checksum does not match")
        headers: dict[str, str] = {}
        h = pos + 12
        end_h = h + headers_len
        while h < end_h:
            name_len = body[h]
            name = body[h + 1 : h + 1 + name_len].decode("utf-8", "replace")
            kind = body[h + 1 + name_len]
            h += 2 + name_len
            if kind in (6, 7):
                (size,) = struct.unpack_from(">H", body, h)
                value = body[h + 2 : h + 2 + size]
                if kind == 7:
                    headers[name] = value.decode("utf-8", "replace")
                h += 2 + size
            elif kind in _HEADER_VALUE_SIZES:
                h += _HEADER_VALUE_SIZES[kind]
            else:
                raise EventStreamError(pos, f"header {name!r} of unknown type {kind}")
        out.append((pos, headers, body[end_h : pos + total - 4]))
        pos += total
    return out


class MessageStart(msgspec.Struct):
    role: str | None = None


class ToolUseStart(msgspec.Struct):
    toolUseId: str | None = None
    name: str | None = None


class Start(msgspec.Struct):
    """What a content block starts as (only a tool use is mapped)."""

    toolUse: ToolUseStart | None = None


class Block(msgspec.Struct):
    """`contentBlockStart` / `contentBlockStop`: the block's index (absent or null: 0)."""

    contentBlockIndex: int | None = None
    start: Start | None = None


class BlockDelta(msgspec.Struct, kw_only=True):
    """`contentBlockDelta`; its delta is told by the key it has (`TextDelta`, ...)."""

    contentBlockIndex: int | None = None
    delta: dict[str, Any]


class TextDelta(msgspec.Struct):
    text: str | None = None


class Reasoning(msgspec.Struct):
    text: str | None = None
    signature: str | None = None


class ReasoningDelta(msgspec.Struct):
    reasoningContent: Reasoning


class ToolUseInput(msgspec.Struct):
    input: str | None = None


class ToolUseDelta(msgspec.Struct):
    toolUse: ToolUseInput


class MessageStop(msgspec.Struct):
    stopReason: str | None = None


class Metrics(msgspec.Struct):
    latencyMs: int | float | None = None


class Metadata(msgspec.Struct):
    usage: dict[str, Any] | None = None
    metrics: Metrics | None = None


_WORDING: Wording = {
    "contentBlockIndex": got("a whole number"),
    "start": got("an object"),
    "delta": lambda v: "missing (expected an object)" if v is MISSING else got("an object")(v),
    "delta.text": got("a string"),
    "delta.reasoningContent.text": got("a string"),
    "delta.toolUse.input": got("a string"),
    "stopReason": got("a string"),
    "usage": got("an object"),
}
"""The words the hand-written checks said, where the model's would say less."""


def bedrock_events_to_recording(
    events: Sequence[SseEvent], header: Header, *, strict: bool = True
) -> Recording:
    """Map ConverseStream events (event type as the name, JSON payload as the data) to a
    Recording."""
    b = map_events(events, header, _step, strict=strict)
    if b.end is None and "end_t" in b.state:  # only one of messageStop and metadata came
        b.close(b.state["end_t"])
    return b.recording()


def _step(b: StreamBuilder, i: int, t_ms: float | None, name: str | None, data: str) -> None:
    obj = event_json_object(i, data)
    kind = name or ""
    if kind.endswith("Exception"):
        b.error(t_ms, {"type": kind, **{k: v for k, v in obj.items() if k != "type"}})
    elif kind == "messageStart":
        b.role_prelude(t_ms, read_event(i, obj, MessageStart, _WORDING).role or "assistant")
    elif kind == "contentBlockStart":
        block = read_event(i, obj, Block, _WORDING)
        tool = block.start.toolUse if block.start else None
        if tool is not None:
            start = block.contentBlockIndex or 0
            b.state.setdefault("calls", {})[start] = b.tool_call(
                t_ms, start, tool.toolUseId, tool.name
            )
    elif kind == "contentBlockDelta":
        _delta(b, i, t_ms, read_event(i, obj, BlockDelta, _WORDING))
    elif kind == "contentBlockStop":
        index = b.state.get("calls", {}).get(
            read_event(i, obj, Block, _WORDING).contentBlockIndex or 0
        )
        if index is not None:
            b.tool_done(index)
    elif kind == "messageStop":
        b.finish_reason = read_event(i, obj, MessageStop, _WORDING).stopReason
        b.finish_tool_calls()
        _end_part(b, t_ms, "messageStop")
    elif kind == "metadata":
        metadata = read_event(i, obj, Metadata, _WORDING)
        b.usage = metadata.usage
        latency = metadata.metrics.latencyMs if metadata.metrics else None
        b.meta(t_ms, kind="metadata", latency_ms=latency)
        _end_part(b, t_ms, "metadata")
    else:
        raise StreamEventError(
            i, "event", f"unknown ConverseStream event {kind!r} (not mapped; --tolerant keeps it)"
        )


def _end_part(b: StreamBuilder, t_ms: float | None, part: str) -> None:
    """`messageStop` or `metadata` came: the stream ends when both have."""
    seen: set[str] = b.state.setdefault("end_parts", set())
    seen.add(part)
    b.state["end_t"] = t_ms
    if len(seen) == 2:
        b.close(t_ms)


def _delta(b: StreamBuilder, i: int, t_ms: float | None, event: BlockDelta) -> None:
    """A delta, read as the shape its key says (text, reasoning, a tool's input); a delta
    of another kind is kept whole."""
    delta, index = event.delta, event.contentBlockIndex or 0
    if "text" in delta:
        b.chunk(t_ms, read_event(i, delta, TextDelta, _WORDING, "delta.").text or "", "content")
    elif "reasoningContent" in delta:
        reasoning = read_event(i, delta, ReasoningDelta, _WORDING, "delta.").reasoningContent
        b.chunk(t_ms, reasoning.text or "", "reasoning")
        if reasoning.signature is not None:
            b.meta(t_ms, kind="signature", length=len(reasoning.signature))
    elif "toolUse" in delta:
        text = read_event(i, delta, ToolUseDelta, _WORDING, "delta.").toolUse.input
        b.tool_args(t_ms, b.state.get("calls", {}).get(index, index), text or "")
    else:
        b.meta(t_ms, kind="delta", index=index, delta=delta)


def _events(path: Path) -> tuple[list[SseEvent], list[str], bool]:
    """The events of a capture, where each came from, and whether they are timed."""
    try:
        raw = read_bounded_bytes(path, MAX_JSON_FILE_BYTES, "source file")
    except InputProblem as exc:
        raise ImportFormatError(path, None, exc.field, exc.problem) from None
    if raw.lstrip()[:1] in (b"{", b"["):
        return _json_events(path, raw)
    try:
        messages = decode_event_stream(raw)
    except EventStreamError as exc:
        raise ImportFormatError(
            path, f"byte {exc.offset}", None, f"not an AWS event stream ({exc})"
        ) from None
    events: list[SseEvent] = []
    wheres: list[str] = []
    for offset, headers, payload in messages:
        name = headers.get(":exception-type") or headers.get(":event-type")
        events.append(SseEvent(name, payload.decode("utf-8", "replace")))
        wheres.append(f"byte {offset}")
    return events, wheres, False


def _json_events(path: Path, raw: bytes) -> tuple[list[SseEvent], list[str], bool]:
    events: list[SseEvent] = []
    wheres: list[str] = []
    items = TimedItems(path, "line")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(path, None, None, f"not UTF-8 ({exc.reason})") from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = str(lineno)
        obj = loads_checked(line, path, where)
        if not isinstance(obj, dict):
            raise ImportFormatError(path, where, None, "expected a JSON object")
        t_ms, obj = items.read(where, obj)
        if not isinstance(obj, dict) or len(obj) != 1:
            raise ImportFormatError(
                path, where, None, 'expected one event as boto3 yields it: {"<eventType>": {...}}'
            )
        ((name, payload),) = obj.items()
        events.append(SseEvent(str(name), json.dumps(payload), t_ms))
        wheres.append(where)
    return events, wheres, bool(items.timed)


def import_bedrock(path: Path, options: ImportOptions) -> ImportResult:
    """Import Bedrock ConverseStream captures (binary or JSON Lines; a file or a folder)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _CAPTURE_SUFFIXES)
        if not files:
            raise ImportFormatError(
                path,
                None,
                None,
                f"no capture files ({', '.join(_CAPTURE_SUFFIXES)}) in this folder",
            )
    elif path.exists():
        files = [path]
    else:
        raise FileNotFoundError(f"{path}: no such file or folder")
    result = ImportResult()
    for _, file in selected(files, options, result):
        events, wheres, timed = _events(file)
        origin = origin_of(file, request=0)
        if not events:
            result.skipped.append(Skipped(origin, "no events in the file"))
            continue
        stem = safe_filename(file.stem)
        header = import_header(
            f"{safe_filename(options.id_prefix)}-{stem}" if options.id_prefix else stem,
            importer="bedrock",
            origin=origin,
            api="bedrock.converse_stream",
            vendor="aws",
            timing="recorded" if timed else "none",
        )
        rec = map_located(
            bedrock_events_to_recording,
            events,
            header,
            file,
            wheres.__getitem__,
            strict=not options.tolerant,
        )
        if not timed:
            result.warnings.append(f"{file.name}: no times per event, imported text only")
        result.recordings.append(rec)
    return result
