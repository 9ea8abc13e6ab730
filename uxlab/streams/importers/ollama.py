"""Ollama's native streams (`/api/generate`, `/api/chat`: NDJSON) -> Recording (`--from ollama`).

Input: the response body as Ollama streams it, one JSON object per line (what `curl` saves,
or an SDK loop printing each chunk), or each line wrapped as `{"t_ms": 412.7, "data": {...}}`
with the time the client received it (ms from the request). One stream per file; SRC may
be a folder of `*.ndjson` / `*.jsonl` / `*.json` files.

Times. Every object carries `created_at`, the server's clock when it wrote the object (RFC
3339, up to nanoseconds), and the last one (`"done": true`) carries `total_duration`, the
server's time from receiving the request to the end (ns). So without client times each
event's `t_ms` is `created_at - (the last created_at - total_duration)`: ms from when the
*server* began the request, measured by the server (header `clock: {"t0":
"server_request_start", "source": "server created_at"}`); the network and the client's
queueing are not in it. With client times `t_ms` is the client's arrival and each chunk
keeps its server time as `server_t_ms`. A stream without its last object has no
`total_duration`, so its server times have no start: it is imported as text only (unless
the lines carry client times), with a warning.

Mapping: `response` (generate) and `message.content` (chat) -> `content`; `thinking` and
`message.thinking` -> `reasoning`; `message.role` -> the role prelude (once); each
`message.tool_calls[]` entry -> a whole tool call (`meta {"kind": "tool_call"}` with its
`function.name`, and its `function.arguments` as one `tool` chunk of JSON); `{"error": ...}`
-> an `error` event and the end. The last object -> `end` with `finish_reason` =
`done_reason` and `usage` = its counts and durations as Ollama gives them (`eval_count`,
`eval_duration` in ns, `prompt_eval_count`, `prompt_eval_duration`, `load_duration`,
`total_duration`): `eval_count / eval_duration` is the server's own decode rate, which
`uxlab inspect --json` shows as `server_decode_tokens_per_s` beside the rate measured from
the chunks. Ollama streams a token per object, so `n_tokens` is 1 where the output objects
number `eval_count`, else null.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import msgspec

from uxlab.reading import convert
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    TimedItems,
    import_header,
    loads_checked,
    origin_of,
    read_text_checked,
    selected,
)
from uxlab.streams.recording import Chunk, End, ErrorEvent, Event, Meta, Recording
from uxlab.streams.replay_file import safe_filename
from uxlab.streams.stream_arrays import server_decode_rate

_SUFFIXES = (".ndjson", ".jsonl", ".json")
_CREATED_AT = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$")
Count = Annotated[int, msgspec.Meta(ge=0)]


class OllamaFunction(msgspec.Struct):
    """A tool call's function: its name and arguments (an object, or JSON text)."""

    name: str | None = None
    arguments: Any = msgspec.field(default_factory=dict)


class OllamaToolCall(msgspec.Struct):
    function: OllamaFunction
    id: str | None = None


class OllamaMessage(msgspec.Struct):
    """`/api/chat`'s `message`."""

    role: str | None = None
    content: str | None = None
    thinking: str | None = None
    tool_calls: list[OllamaToolCall] | None = None


class OllamaObject(msgspec.Struct):
    """One object of an `/api/generate` or `/api/chat` stream (unknown keys are kept out,
    not refused: Ollama adds keys)."""

    model: str | None = None
    created_at: str | None = None
    done: bool | None = None
    done_reason: str | None = None
    response: str | None = None
    thinking: str | None = None
    message: OllamaMessage | None = None
    error: Any = msgspec.UNSET
    prompt_eval_count: Count | msgspec.UnsetType = msgspec.UNSET
    eval_count: Count | msgspec.UnsetType = msgspec.UNSET
    total_duration: Count | msgspec.UnsetType = msgspec.UNSET
    load_duration: Count | msgspec.UnsetType = msgspec.UNSET
    prompt_eval_duration: Count | msgspec.UnsetType = msgspec.UNSET
    eval_duration: Count | msgspec.UnsetType = msgspec.UNSET


_USAGE_KEYS = (
    "prompt_eval_count",
    "eval_count",
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
)


def created_at_ns(value: Any) -> int | None:
    """`created_at` as ns since the epoch (all nine digits kept), None when not RFC 3339."""
    match = _CREATED_AT.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    whole, fraction, zone = match.groups()
    try:
        moment = datetime.fromisoformat(whole + ("+00:00" if zone == "Z" else zone))
    except ValueError:
        return None
    return int(moment.timestamp()) * 1_000_000_000 + int((fraction or "0").ljust(9, "0"))


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _SUFFIXES)
        if not files:
            raise ImportFormatError(path, None, None, "no *.ndjson, *.jsonl or *.json files")
        return files
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    return [path]


def _objects(file: Path) -> list[tuple[str, float | None, OllamaObject]]:
    """`(line, client time or None, object)` of every non-blank line."""
    items = TimedItems(file, 'line ({"t_ms", "data"})')
    out: list[tuple[str, float | None, OllamaObject]] = []
    for lineno, raw in enumerate(read_text_checked(file).splitlines(), start=1):
        if not raw.strip():
            continue
        where = str(lineno)
        obj = loads_checked(raw, file, where)
        if not isinstance(obj, dict):
            raise ImportFormatError(file, where, None, "expected a JSON object")
        t_ms, data = items.read(where, obj)
        if not isinstance(data, dict):
            raise ImportFormatError(file, where, "data", "expected a JSON object")
        if "error" not in data and "done" not in data:
            raise ImportFormatError(
                file,
                where,
                "done",
                "missing (expected an Ollama /api/generate or /api/chat object)",
            )
        model = convert(
            data,
            OllamaObject,
            error=partial(ImportFormatError, file, where),
        )
        out.append((where, t_ms, model))
    return out


def import_ollama(path: Path, options: ImportOptions) -> ImportResult:
    """Import Ollama NDJSON streams (a file or a folder of files, one stream each)."""
    result = ImportResult()
    path = Path(path)
    for _, file in selected(_files(path), options, result):
        origin = origin_of(file, request=0)
        objects = _objects(file)
        if not objects:
            result.add(origin, "no objects in the file")
            continue
        rec, warnings = _recording(file, objects, options, origin)
        result.warnings.extend(f"{file.name}: {w}" for w in warnings)
        result.recordings.append(rec)
    return result


def _recording(
    file: Path,
    objects: list[tuple[str, float | None, OllamaObject]],
    options: ImportOptions,
    origin: str,
) -> tuple[Recording, list[str]]:
    warnings: list[str] = []
    client_timed = objects[0][1] is not None
    last = objects[-1][2]
    server_ns = [created_at_ns(obj.created_at) for _, _, obj in objects]
    total = last.total_duration if last.done else None
    start_ns: int | None = None
    if isinstance(total, int) and server_ns[-1] is not None:
        start_ns = server_ns[-1] - total
    elif not client_timed:
        warnings.append(
            "no last object with total_duration: the server's times have no start, "
            "imported text only"
        )
    for (where, _, _), ns in zip(objects, server_ns, strict=True):
        if ns is None and start_ns is not None:
            raise ImportFormatError(file, where, "created_at", "missing or not an RFC 3339 time")

    def server_ms(ns: int | None) -> float | None:
        return None if ns is None or start_ns is None else max(0.0, (ns - start_ns) / 1e6)

    chat = any(obj.message is not None for _, _, obj in objects)
    api = "ollama.chat" if chat else "ollama.generate"
    model = next((obj.model for _, _, obj in objects if obj.model is not None), None)
    stem = safe_filename(file.stem)
    header = import_header(
        f"{safe_filename(options.id_prefix)}-{stem}" if options.id_prefix else stem,
        importer="ollama",
        origin=origin,
        api=api,
        vendor="ollama",
        model=model,
        timing="recorded" if client_timed or start_ns is not None else "none",
    )
    if client_timed:
        header.clock = {"t0": "request_sent", "unit": "ms", "server_times": "server_t_ms"}
    elif start_ns is not None:
        header.clock = {"t0": "server_request_start", "unit": "ms", "source": "server created_at"}
    events: list[Event] = []
    end: End | None = None
    role: str | None = None
    n_calls = 0
    for (_, client_t, obj), ns in zip(objects, server_ns, strict=True):
        s_ms = server_ms(ns)
        t_ms = client_t if client_timed else s_ms
        extra = {"server_t_ms": round(s_ms, 6)} if client_timed and s_ms is not None else {}
        if obj.error is not msgspec.UNSET:
            err = obj.error
            events.append(ErrorEvent(t_ms, err if isinstance(err, dict) else {"message": str(err)}))
            end = End(t_ms, "error", None)
            break
        message = obj.message or OllamaMessage()
        if message.role and message.role != role:
            role = message.role
            events.append(Meta(t_ms, {"kind": "role", "role": role}))
        thinking, content = (
            (message.thinking, message.content) if chat else (obj.thinking, obj.response)
        )
        for text, channel in ((thinking, "reasoning"), (content, "content")):
            if text:
                events.append(Chunk(t_ms, text, channel, extra=dict(extra)))
        for call in message.tool_calls or []:
            events.extend(_tool_call(call, t_ms, n_calls))
            n_calls += 1
        if obj.done:
            usage = {
                k: getattr(obj, k) for k in _USAGE_KEYS if getattr(obj, k) is not msgspec.UNSET
            }
            end = End(t_ms, obj.done_reason, usage or None)
            break
    _token_counts(events, end)
    if end is None:
        warnings.append("stream ends without its last object (done: true); kept as truncated")
    rec = Recording(header=header, events=events, end=end)
    rate = server_decode_rate(end.usage if end is not None else None)
    if rate is not None:
        header.source["server_decode_tokens_per_s"] = round(rate, 3)
    return rec, warnings


def _tool_call(call: OllamaToolCall, t_ms: float | None, index: int) -> list[Event]:
    """A whole tool call of a chat object (the `index`-th of the stream): its start meta
    and its arguments."""
    args = call.function.arguments
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    start = Meta(
        t_ms, {"kind": "tool_call", "index": index, "id": call.id, "name": call.function.name}
    )
    return [start, Chunk(t_ms, text, "tool", extra={"tool_index": index})]


def _token_counts(events: list[Event], end: End | None) -> None:
    """`n_tokens` = 1 on every output chunk when they number the server's `eval_count`."""
    usage = end.usage if end is not None else None
    count = usage.get("eval_count") if usage is not None else None
    output = [e for e in events if isinstance(e, Chunk) and e.channel != "tool"]
    if isinstance(count, int) and count == len(output):
        for chunk in output:
            chunk.n_tokens = 1
