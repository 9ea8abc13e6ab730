"""Reading SSE capture files and the shared driver of the `*-sse` importers.

A capture is one stream per file, in the timed capture format of `uxlab.streams.sse` (each
event preceded by `: t_ms=...`; the `.sse` sidecar `uxlab record` writes) or a plain body
without times. SRC may be one file or a folder of `*.sse` / `*.txt` files.
`import_capture_files` reads each file, checks its times, and maps its events with the
API's mapping (strict unless `ImportOptions.tolerant`), turning a `StreamEventError` into
an `ImportFormatError` naming the file and the event's line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from uxlab.reading import MAX_JSON_FILE_BYTES, InputProblem, check_range, read_bounded_bytes
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Skipped,
    import_header,
    map_located,
    origin_of,
    selected,
)
from uxlab.streams.importers.detect_api import api_of_object, looks_like_ollama
from uxlab.streams.importers.event_mapping import count_malformed
from uxlab.streams.recording import Header, Recording
from uxlab.streams.replay_file import safe_filename
from uxlab.streams.sse import SseEvent, SseLimitError, parse_sse

EventMapping = Callable[..., Recording]
"""`(events, header, *, strict) -> Recording`: one API's event mapping."""


def response_text_events(t_ms: float | None, raw: str) -> list[SseEvent]:
    """The events of one benchmark-recorded response body, all arriving at `t_ms`.

    A body that starts like SSE (`data:`, `event:` or a `:` comment) is parsed as SSE; any
    other non-blank body (a plain JSON response) is one event; a blank body is none.
    """
    parsed = parse_sse(raw) if raw.lstrip().startswith(("data:", "event:", ":")) else []
    if parsed:
        return [SseEvent(ev.event, ev.data, t_ms) for ev in parsed]
    return [SseEvent(None, raw, t_ms)] if raw.strip() else []


def _capture_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".sse", ".txt") and p.is_file())
        if not files:
            raise ImportFormatError(
                path, None, None, "no *.sse or *.txt capture files in this folder"
            )
        return files
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    return [path]


def _capture_id(file: Path, options: ImportOptions) -> str:
    stem = safe_filename(file.stem)
    return f"{safe_filename(options.id_prefix)}-{stem}" if options.id_prefix else stem


def read_capture(path: Path) -> list[SseEvent]:
    """The events of one capture file, their times checked (each knows its line)."""
    try:
        raw = read_bounded_bytes(path, MAX_JSON_FILE_BYTES, "capture file")
        sse = parse_sse(raw)
    except UnicodeDecodeError as exc:
        raise ImportFormatError(path, None, None, f"not UTF-8 ({exc.reason})") from None
    except InputProblem as exc:
        raise ImportFormatError(path, None, exc.field, exc.problem) from None
    except SseLimitError as exc:
        raise ImportFormatError(path, str(exc.line), None, str(exc).partition(": ")[2]) from None
    timed = [ev.t_ms for ev in sse]
    n_timed = sum(t is not None for t in timed)
    if 0 < n_timed < len(sse):
        first = next(ev for ev in sse if ev.t_ms is None)
        raise ImportFormatError(
            path,
            str(first.line),
            "t_ms",
            "this event has no `: t_ms=` comment while others do (time every event or none)",
        )
    last = -1.0
    for ev in sse:
        t = ev.t_ms
        if t is not None:
            try:
                check_range(t, "t_ms", "t_ms")
            except InputProblem as exc:
                raise ImportFormatError(path, str(ev.line), exc.field, exc.problem) from None
            if t < last:
                raise ImportFormatError(
                    path, str(ev.line), "t_ms", f"{t} is earlier than the previous event ({last})"
                )
            last = t
    return sse


def _json_hint(file: Path) -> str:
    """A hint when a file that is not SSE is JSON: Ollama's NDJSON (`--from ollama`), or
    other JSON (Gemini's array answer, SDK chunk logs: `--from json-chunks`)."""
    with file.open("rb") as f:
        first = f.readline(_HINT_BYTES).decode("utf-8", "replace").lstrip()
    if looks_like_ollama(first):
        return " (it is Ollama's NDJSON: import it with --from ollama)"
    if first.startswith(("[", "{")):
        return " (it is JSON: import it with --from json-chunks)"
    return ""


_HINT_BYTES = 4096
"""How much of a file's first line the hint reads."""


API_NAMES: dict[str, str] = {
    "openai": "OpenAI Chat Completions",
    "openai-responses": "OpenAI Responses",
    "anthropic": "Anthropic Messages",
    "gemini": "Gemini generateContent",
    "gemini-interactions": "Gemini Interactions",
    "cohere": "Cohere v2 chat",
    "bedrock": "Bedrock ConverseStream",
}
"""How a message names each API of `detect_api` (its names are the importers' without -sse)."""

_EVENTS_LOOKED_AT = 8
"""How many of a capture's first events may say which API it speaks."""


def check_api(file: Path, events: Sequence[SseEvent], importer: str) -> None:
    """Refuse a capture whose first telling event is another API's (an Anthropic capture
    given to `--from gemini-sse` mapped to an empty stream, kept as truncated), naming the
    event's line and the `--from` that reads it."""
    expected = importer.removesuffix("-sse")
    for ev in events[:_EVENTS_LOOKED_AT]:
        try:
            obj = json.loads(ev.data)
        except (ValueError, RecursionError):  # the mapping names what is wrong with it
            continue
        found = api_of_object(ev.event, obj) if isinstance(obj, dict) else None
        if found is None:
            continue
        if found != expected:
            use = found if found == "bedrock" else f"{found}-sse"
            raise ImportFormatError(
                file,
                str(ev.line),
                None,
                f"this capture's events are {API_NAMES.get(found, found)} events, not "
                f"{API_NAMES.get(expected, expected)} ones: import it with --from {use}",
            )
        return


def import_capture_files(
    path: Path,
    options: ImportOptions,
    mapping: EventMapping,
    importer: str,
    api: str,
    vendor: str,
) -> ImportResult:
    """Shared driver for SSE capture importers: one recording per capture file."""
    result = ImportResult()
    for _, file in selected(_capture_files(path), options, result):
        events = read_capture(file)
        origin = origin_of(file, request=0)
        if not events:
            result.skipped.append(Skipped(origin, "no SSE events in the file" + _json_hint(file)))
            continue
        check_api(file, events, importer)
        timed = events[0].t_ms is not None
        header: Header = import_header(
            _capture_id(file, options),
            importer=importer,
            origin=origin,
            api=api,
            vendor=vendor,
            timing="recorded" if timed else "none",
        )
        lines = [str(ev.line) for ev in events]
        rec = map_located(
            mapping,
            events,
            header,
            file,
            lines.__getitem__,
            strict=not options.tolerant,
            hint=" (--tolerant keeps such an event as a malformed_event meta)",
        )
        if not timed:
            result.warnings.append(f"{file.name}: no `: t_ms=` comments, imported text only")
        if rec.end is None:
            result.warnings.append(f"{file.name}: stream ends without an end; kept as truncated")
        n_bad = count_malformed(rec)
        if n_bad:
            result.warnings.append(
                f"{file.name}: {n_bad} malformed event(s) kept as `malformed_event` meta events"
            )
        result.recordings.append(rec)
    return result
