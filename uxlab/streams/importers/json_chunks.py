"""Streamed objects saved as JSON instead of SSE -> Recording (`--from json-chunks`).

Two shapes people have instead of an SSE capture:

- a JSON array: Gemini's `streamGenerateContent` *without* `alt=sse` answers with one JSON
  array of `GenerateContentResponse` objects, saved whole;
- JSON Lines: one streamed object per line, as an SDK loop writes them (`print(chunk.
  model_dump_json())` for OpenAI chunks, Anthropic or Responses events with their `type`).

Each element is one event, mapped by its API's event mapping (told from the first object:
`choices` -> OpenAI Chat, `candidates` -> Gemini, a `type` of `response.*` -> Responses,
`message_start` and the like -> Anthropic). An element may carry its arrival time as a
wrapper `{"t_ms": 412.7, "data": {...}}` (ms from the request); then every element must, and
the recording is timed; else the text is imported without times (`timing: none`), like a
plain SSE body. A file per stream; SRC may be a folder of `*.json` / `*.jsonl` files.
"""

from __future__ import annotations

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
from uxlab.streams.importers.har import api_of
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


def _items(path: Path) -> list[tuple[str, Any]]:
    """`(where, element)` of a JSON array file or a JSON Lines file."""
    text = read_text_checked(path)
    if text.lstrip().startswith("["):
        doc = loads_checked(text, path, None)
        return [(f"[{i}]", item) for i, item in enumerate(doc)]
    return [
        (str(lineno), loads_checked(raw, path, str(lineno)))
        for lineno, raw in enumerate(text.splitlines(), start=1)
        if raw.strip()
    ]


def _events(path: Path, items: list[tuple[str, Any]]) -> tuple[list[SseEvent], list[str]]:
    events: list[SseEvent] = []
    wheres: list[str] = []
    timed_items = TimedItems(path, 'element ({"t_ms", "data"})')
    for where, item in items:
        if not isinstance(item, dict):
            raise ImportFormatError(path, where, None, "expected a JSON object")
        t_ms, data = timed_items.read(where, item)
        name = data.get("type") if isinstance(data, dict) else None
        text = data if isinstance(data, str) else json.dumps(data)
        # Named-event APIs take the event name; the others ignore it.
        events.append(SseEvent(name if isinstance(name, str) else None, text, t_ms))
        wheres.append(where)
    return events, wheres


def import_json_chunks(path: Path, options: ImportOptions) -> ImportResult:
    """Import JSON-array or JSON-Lines stream logs (one stream per file)."""

    result = ImportResult()
    for _, file in selected(_files(Path(path)), options, result):
        origin = origin_of(file, request=0)
        events, wheres = _events(file, _items(file))
        if not events:
            result.skipped.append(Skipped(origin, "no elements in the file"))
            continue
        api = api_of("", events)
        if api is None:
            result.skipped.append(
                Skipped(origin, "objects of an API uxlab does not map (no choices/candidates/type)")
            )
            continue
        timed = events[0].t_ms is not None
        stem = safe_filename(file.stem)
        header = import_header(
            f"{safe_filename(options.id_prefix)}-{stem}" if options.id_prefix else stem,
            importer="json-chunks",
            origin=origin,
            api=api,
            timing="recorded" if timed else "none",
        )
        if api != "anthropic" and api != "openai-responses":
            events = [SseEvent(None, ev.data, ev.t_ms) for ev in events]
        rec = map_located(
            event_mapping(api),
            events,
            header,
            file,
            wheres.__getitem__,
            strict=not options.tolerant,
        )
        if not timed:
            result.warnings.append(f"{file.name}: no t_ms per element, imported text only")
        if rec.end is None:
            result.warnings.append(f"{file.name}: stream ends without an end; kept as truncated")
        result.recordings.append(rec)
    return result
