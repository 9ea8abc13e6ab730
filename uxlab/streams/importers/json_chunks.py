"""Streamed objects saved as JSON instead of SSE -> Recording (`--from json-chunks`).

Two shapes people have instead of an SSE capture:

- a JSON array: Gemini's `streamGenerateContent` *without* `alt=sse` answers with one JSON
  array of `GenerateContentResponse` objects, saved whole;
- JSON Lines: one streamed object per line, as an SDK loop writes them (`print(chunk.
  model_dump_json())` for OpenAI chunks; Anthropic, Responses, Cohere v2 or Gemini
  Interactions events with their `type` / `event_type`; Bedrock ConverseStream events as
  boto3 yields them, `{"contentBlockDelta": {...}}`).

Each element is one event, mapped by its API's event mapping (told from the first object:
`choices` -> OpenAI Chat, `candidates` -> Gemini, a `type` of `response.*` -> Responses,
`message_start` and the like -> Anthropic, `message-start` and the like -> Cohere, an
`event_type` of `step.*` / `interaction.*` -> Gemini Interactions, one ConverseStream key ->
Bedrock). An element may carry its arrival time as a wrapper `{"t_ms": 412.7, "data":
{...}}` (ms from the request); then every element must, and the recording is timed; else the
text is imported without times (`timing: none`), like a plain SSE body.

A file may hold several streams one after the other (a log of an agent's turns): a new
stream starts at its API's first event (`message_start`, `response.created`,
`message-start`, `interaction.created`, `messageStart`) once one has started, or, for
OpenAI Chat and Gemini, where the response id changes. Each becomes a recording (`<file>-s1`,
`-s2`, ...; `source.origin` names the stream). SRC may be a folder of `*.json` / `*.jsonl`.
A file whose objects are of no API uxlab maps is skipped, the reason naming how many lines
it has and quoting the start of its first object.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Skipped,
    TimedItems,
    event_mapping,
    import_header,
    loads_checked,
    map_located,
    origin_of,
    read_text_checked,
    selected,
)
from uxlab.streams.importers.detect_api import api_of, looks_like_ollama
from uxlab.streams.importers.event_mapping import count_malformed
from uxlab.streams.replay_file import safe_filename
from uxlab.streams.sse import SseEvent


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())
        if not files:
            raise ImportFormatError(path, None, None, "no *.json or *.jsonl files in this folder")
        return files
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    return [path]


class _Unreadable(str):
    """A line that is not JSON, kept as it is by the tolerant mode (its mapping then keeps
    it as a `malformed_event` meta)."""


def _items(path: Path, tolerant: bool = False) -> list[tuple[str, Any]]:
    """`(where, element)` of a JSON array file or a JSON Lines file; with `tolerant`, a
    line that is not JSON is an `_Unreadable` element instead of an error naming it."""
    text = read_text_checked(path)
    if text.lstrip().startswith("["):
        doc = loads_checked(text, path, None)
        return [(f"[{i}]", item) for i, item in enumerate(doc)]
    items: list[tuple[str, Any]] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            items.append((str(lineno), loads_checked(raw, path, str(lineno))))
        except ImportFormatError:
            if not tolerant:
                raise
            items.append((str(lineno), _Unreadable(raw)))
    return items


def _events(path: Path, items: list[tuple[str, Any]]) -> tuple[list[SseEvent], list[str]]:
    events: list[SseEvent] = []
    wheres: list[str] = []
    timed_items = TimedItems(path, 'element ({"t_ms", "data"})')
    for where, item in items:
        if isinstance(item, _Unreadable):  # the tolerant mode's: its mapping keeps it
            events.append(SseEvent(None, str(item), None if not events else events[-1].t_ms))
            wheres.append(where)
            continue
        if not isinstance(item, dict):
            raise ImportFormatError(path, where, None, "expected a JSON object")
        t_ms, data = timed_items.read(where, item)
        kind = (data.get("type") or data.get("event_type")) if isinstance(data, dict) else None
        text = data if isinstance(data, str) else json.dumps(data)
        # Named-event APIs take the event name; the others ignore it.
        events.append(SseEvent(kind if isinstance(kind, str) else None, text, t_ms))
        wheres.append(where)
    return events, wheres


_NAMED = ("anthropic", "openai-responses", "cohere", "gemini-interactions")
"""APIs whose mapping takes the event's type as its name."""
_STREAM_STARTS = {
    "anthropic": "message_start",
    "openai-responses": "response.created",
    "cohere": "message-start",
    "gemini-interactions": "interaction.created",
    "bedrock": "messageStart",
}
_RESPONSE_IDS = {"openai": "id", "gemini": "responseId"}


def _for_mapping(api: str, events: list[SseEvent]) -> list[SseEvent]:
    """The events as the API's mapping takes them (a name or not; Bedrock's one key)."""
    if api in _NAMED:
        return events
    if api != "bedrock":
        return [SseEvent(None, ev.data, ev.t_ms) for ev in events]
    out = []
    for ev in events:
        obj = json.loads(ev.data)
        if isinstance(obj, dict) and len(obj) == 1:
            ((name, payload),) = obj.items()
            out.append(SseEvent(str(name), json.dumps(payload), ev.t_ms))
        else:
            out.append(SseEvent(None, ev.data, ev.t_ms))
    return out


def _streams(api: str, events: list[SseEvent]) -> list[tuple[int, int]]:
    """`(first, end)` event positions of each stream in a file (see the module docstring)."""
    bounds = [0]
    start_kind, id_key = _STREAM_STARTS.get(api), _RESPONSE_IDS.get(api)
    seen_start, last_id = False, None
    for k, ev in enumerate(events):
        if start_kind is not None and ev.event == start_kind:
            if seen_start:
                bounds.append(k)
            seen_start = True
        elif id_key is not None:
            obj = json.loads(ev.data) if ev.data.lstrip().startswith("{") else None
            rid = obj.get(id_key) if isinstance(obj, dict) else None
            if isinstance(rid, str) and rid:
                if last_id is not None and rid != last_id:
                    bounds.append(k)
                last_id = rid
    bounds.append(len(events))
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def _unknown_api_reason(items: list[tuple[str, Any]], events: list[SseEvent]) -> str:
    """Why a file was skipped: how many lines (or elements), and the start of the first."""
    first = events[0].data
    kind = events[0].event
    what = "element(s)" if items and items[0][0].startswith("[") else "line(s)"
    shape = (
        f"its `type` {kind!r} is not one uxlab maps"
        if kind
        else "it has no `choices`, `candidates`, `type` or `event_type`"
    )
    hint = ""
    if looks_like_ollama(first):
        hint = " (it looks like Ollama's NDJSON: import it with --from ollama)"
    return (
        f"{len(events)} {what} of an API uxlab does not map: {shape}; "
        f"the first begins {first[:80]!r}{hint}"
    )


def import_json_chunks(path: Path, options: ImportOptions) -> ImportResult:
    """Import JSON-array or JSON-Lines stream logs (one or more streams per file)."""

    result = ImportResult()
    for _, file in selected(_files(Path(path)), options, result):
        items = _items(file, options.tolerant)
        all_events, all_wheres = _events(file, items)
        if not all_events:
            result.skipped.append(Skipped(origin_of(file, request=0), "no elements in the file"))
            continue
        api = api_of("", all_events)
        if api is None:
            reason = _unknown_api_reason(items, all_events)
            result.skipped.append(Skipped(origin_of(file, request=0), reason))
            continue
        timed = all_events[0].t_ms is not None
        streams = _streams(api, all_events)
        stem = safe_filename(file.stem)
        base = f"{safe_filename(options.id_prefix)}-{stem}" if options.id_prefix else stem
        for k, (first, end) in enumerate(streams):
            several = len(streams) > 1
            header = import_header(
                f"{base}-s{k + 1}" if several else base,
                importer="json-chunks",
                origin=origin_of(file, request=0, **({"stream": k} if several else {})),
                api=api,
                timing="recorded" if timed else "none",
            )
            wheres = all_wheres[first:end]
            rec = map_located(
                event_mapping(api),
                _for_mapping(api, all_events[first:end]),
                header,
                file,
                wheres.__getitem__,
                strict=not options.tolerant,
            )
            name = f"{file.name} (stream {k + 1} of {len(streams)})" if several else file.name
            if rec.end is None:
                result.warnings.append(f"{name}: stream ends without an end; kept as truncated")
            n_bad = count_malformed(rec)
            if n_bad:
                result.warnings.append(
                    f"{name}: {n_bad} malformed event(s) kept as `malformed_event` meta events"
                )
            result.recordings.append(rec)
        if not timed:
            result.warnings.append(f"{file.name}: no t_ms per element, imported text only")
    return result
