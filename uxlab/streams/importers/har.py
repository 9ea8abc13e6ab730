"""Browser HAR exports (devtools "Save all as HAR with content") -> Recordings.

A HAR file (HTTP Archive 1.2) lists every request a page made::

    {"log": {"creator": {"name": "WebInspector", "version": "537.36"},
             "entries": [{"startedDateTime": ..., "time": 2140.5,
                          "request": {"method": "POST", "url": ".../v1/chat/completions",
                                      "postData": {"mimeType": "application/json", "text": ...}},
                          "response": {"status": 200, "content": {"mimeType":
                                       "text/event-stream", "text": "data: {...}\\n\\n...",
                                       "encoding": "base64"?}},
                          "timings": {"blocked": 1.2, "dns": -1, "connect": -1, "ssl": -1,
                                      "send": 0.1, "wait": 412.3, "receive": 1727.0}}, ...]}}

Every entry whose response is an event stream (`text/event-stream`, or a body that starts
like SSE) becomes one recording; the others are skipped and counted. The body is mapped by
the event mapping of its API, told from the first event's shape (`choices`, `candidates`,
`message_start`, `response.*`) or else from the URL (`/chat/completions`, `/messages`,
`/responses`, `:streamGenerateContent`); an event stream of another API is skipped with its
URL named.

**What a HAR can and cannot give.** A HAR keeps the whole response body and a handful of
phase durations per request, not when each event arrived. So the text, reasoning and tool
calls are recorded (`text_source: "recorded"`) but every chunk has `t_ms: null`
(`timing: none`): `inspect` shows no TTFT, ITL or stalls for it. What is recorded: time zero
is when the request started to go out (the start of `send`; connection set-up, `blocked`,
`dns`, `connect`, `ssl`, came before and is kept in `source.har_timings`); the first byte of
the response came `send + wait` later (a `meta {"kind": "first_byte"}` at that time; it is
the time to the response headers, not to the first token, which may come much later in the
same response) and the body was complete `send + wait + receive` later (the `end`, so
`inspect` shows it as e2e). For per-event browser arrival times, record a Chrome DevTools
Protocol log instead (`--from cdp`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from uxlab.reading import InputProblem, loads_json
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Requests,
    event_mapping,
    id_base,
    import_header,
    map_located,
    origin_of,
    read_json,
)
from uxlab.streams.importers.detect_api import api_of
from uxlab.streams.importers.sse_capture import response_text_events
from uxlab.streams.recording import End, Meta, Recording

_PHASES = ("blocked", "dns", "connect", "ssl", "send", "wait", "receive")


def import_har(path: Path, options: ImportOptions) -> ImportResult:
    """One recording per event-stream entry of a HAR file (text, first byte, end)."""
    path = Path(path)
    doc = read_json(path)
    log = doc.get("log") if isinstance(doc, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(log, dict) or not isinstance(entries, list):
        raise ImportFormatError(
            path, None, "log.entries", 'missing (expected a HAR file: {"log": {"entries": [...]}})'
        )
    # HAR 1.2: `browser` (optional) names the browser, `creator` the program that wrote the
    # file (the same for DevTools' own export; another for a HAR built from a CDP log)
    named = log.get("browser")
    named = named if isinstance(named, dict) else log.get("creator")
    named = named if isinstance(named, dict) else {}
    browser = " ".join(str(named.get(k)) for k in ("name", "version") if named.get(k))
    result = ImportResult()
    streams = Requests(_bodies(path, entries), lambda item: item[3] is not None, options, result)
    for _, (e, where, entry, body) in streams:  # request indices count event streams
        assert body is not None
        rec = _entry(path, where, e, entry, body, options, browser)
        origin = origin_of(path, entry=e)
        result.add(origin, rec)
    if streams.n_others:
        result.warnings.append(f"{streams.n_others} entries are not event streams (not imported)")
    return result


def _bodies(
    path: Path, entries: list[Any]
) -> Iterator[tuple[int, str, dict[str, Any], str | None]]:
    """(entry number, where, entry, its event-stream body or None) for each entry."""
    for e, entry in enumerate(entries):
        where = f"log.entries[{e}]"
        if not isinstance(entry, dict):
            raise ImportFormatError(path, where, None, "expected an object")
        yield e, where, entry, _body(path, where, entry)


def _body(path: Path, where: str, entry: dict[str, Any]) -> str | None:
    """The response body of an event-stream entry (None for any other entry)."""
    response = entry.get("response")
    content = response.get("content") if isinstance(response, dict) else None
    if not isinstance(content, dict):
        return None
    text = content.get("text")
    if not isinstance(text, str):
        return None
    if content.get("encoding") == "base64":
        try:
            text = base64.b64decode(text, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise ImportFormatError(
                path, where, "response.content.text", f"not base64 of UTF-8 text ({exc})"
            ) from None
    mime = str(content.get("mimeType") or "")
    if "event-stream" in mime or text.lstrip().startswith(("data:", "event:")):
        return text
    return None


def _ms(timings: dict[str, Any], key: str, path: Path, where: str) -> float:
    """A phase duration in ms; HAR writes -1 for a phase that did not happen."""
    value = timings.get(key, -1)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ImportFormatError(
            path, where, f"timings.{key}", f"expected a number of ms, got {value!r:.40}"
        )
    return max(float(value), 0.0)


def _entry(
    path: Path,
    where: str,
    e: int,
    entry: dict[str, Any],
    body: str,
    options: ImportOptions,
    browser: str,
) -> Recording | str:
    raw_request = entry.get("request")
    request = raw_request if isinstance(raw_request, dict) else {}
    url = str(request.get("url") or "")
    events = response_text_events(None, body)
    api = api_of(url, events)
    if api is None:
        return f"an event stream of an API uxlab does not map ({url[:80]})"
    timings = entry.get("timings")
    if not isinstance(timings, dict):
        raise ImportFormatError(path, where, "timings", "missing (expected the HAR timings)")
    phases = {k: _ms(timings, k, path, where) for k in _PHASES}
    first_byte_ms = phases["send"] + phases["wait"]
    end_ms = first_byte_ms + phases["receive"]
    header = import_header(
        f"{id_base(path, options)}-e{e:03d}",
        importer="har",
        origin=origin_of(path, entry=e),
        api=api,
        request=_request_body(request),
        timing="none: a HAR keeps the body and phase durations, not when each event arrived",
        browser=browser or None,
        url=url.split("?", 1)[0] or None,
        har_timings={k: timings.get(k) for k in _PHASES if k in timings},
        http_status=(entry.get("response") or {}).get("status"),
    )
    rec = map_located(
        event_mapping(api),
        events,
        header,
        path,
        lambda i: f"{where} (event {i})",
        strict=not options.tolerant,
    )
    rec.events.insert(0, Meta(t_ms=first_byte_ms, data={"kind": "first_byte"}))
    if rec.end is not None:  # else the body was cut off: kept as a truncated stream
        rec.end = End(t_ms=end_ms, finish_reason=rec.end.finish_reason, usage=rec.end.usage)
    return rec


def _request_body(request: dict[str, Any]) -> dict[str, Any]:
    post = request.get("postData")
    text = post.get("text") if isinstance(post, dict) else None
    if isinstance(text, str):
        try:
            body = loads_json(text)
        except InputProblem:
            return {}
        return body if isinstance(body, dict) else {}
    return {}
