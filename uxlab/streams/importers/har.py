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
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from uxlab.reading import MISSING, InputProblem, Wording, convert, loads_json
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

Ms = int | float | msgspec.UnsetType
"""A phase duration in ms as HAR writes it (-1: the phase did not happen; absent: unset)."""


class Named(msgspec.Struct):
    """`log.browser` or `log.creator`."""

    name: Any = None
    version: Any = None


class Log(msgspec.Struct):
    entries: list[dict[str, Any]]
    """Read one by one: an entry that is not an event stream is not read further."""
    browser: Named | None = None
    creator: Named | None = None


class Har(msgspec.Struct):
    log: Log


class Content(msgspec.Struct):
    mimeType: str | None = None
    text: str | None = None
    encoding: str | None = None


class Response(msgspec.Struct):
    status: int | None = None
    content: Content | None = None


class Body(msgspec.Struct):
    content: Content | None = None


class Answer(msgspec.Struct):
    """An entry as far as telling an event stream needs: its response's content (the
    other entries are not read further)."""

    response: Body | None = None


class PostData(msgspec.Struct):
    text: str | None = None


class Request(msgspec.Struct):
    url: str | None = None
    postData: PostData | None = None


class Timings(msgspec.Struct):
    blocked: Ms = msgspec.UNSET
    dns: Ms = msgspec.UNSET
    connect: Ms = msgspec.UNSET
    ssl: Ms = msgspec.UNSET
    send: Ms = msgspec.UNSET
    wait: Ms = msgspec.UNSET
    receive: Ms = msgspec.UNSET


class Entry(msgspec.Struct, kw_only=True):
    """An event-stream entry, read whole."""

    request: Request | None = None
    response: Response | None = None
    timings: Timings


_NOT_HAR = 'missing (expected a HAR file: {"log": {"entries": [...]}})'
_WORDING: Wording = {
    "timings": lambda v: (
        "missing (expected the HAR timings)"
        if v is MISSING
        else f"expected the HAR timings (an object), got {v!r:.40}"
    ),
    **{f"timings.{k}": lambda v: f"expected a number of ms, got {v!r:.40}" for k in _PHASES},
}
"""The words the hand-written checks said, where the model's would say less."""


def _error(path: Path, where: str | None, field: str | None, problem: str) -> ImportFormatError:
    return ImportFormatError(path, where, field, problem)


def _har_error(path: Path, field: str | None, problem: str) -> ImportFormatError:
    """The file is not a HAR at all (no log.entries list), or a part of its log is wrong
    (an entry that is not an object is said at the entry)."""
    if field in (None, "log", "log.entries"):
        return ImportFormatError(path, None, "log.entries", _NOT_HAR)
    if field and field.startswith("log.entries["):
        return ImportFormatError(path, field, None, problem)
    return ImportFormatError(path, None, field, problem)


def import_har(path: Path, options: ImportOptions) -> ImportResult:
    """One recording per event-stream entry of a HAR file (text, first byte, end)."""
    path = Path(path)
    log = convert(read_json(path), Har, error=partial(_har_error, path)).log
    # HAR 1.2: `browser` (optional) names the browser, `creator` the program that wrote the
    # file (the same for DevTools' own export; another for a HAR built from a CDP log)
    named = log.browser or log.creator or Named()
    browser = " ".join(str(v) for v in (named.name, named.version) if v)
    result = ImportResult()
    bodies = _bodies(path, log.entries)
    streams = Requests(bodies, lambda item: item[3] is not None, options, result)
    for _, (e, where, entry, body) in streams:  # request indices count event streams
        assert body is not None
        rec = _entry(path, where, e, entry, body, options, browser)
        origin = origin_of(path, entry=e)
        result.add(origin, rec)
    if streams.n_others:
        result.warnings.append(f"{streams.n_others} entries are not event streams (not imported)")
    return result


def _bodies(
    path: Path, entries: list[dict[str, Any]]
) -> Iterator[tuple[int, str, dict[str, Any], str | None]]:
    """(entry number, where, entry, its event-stream body or None) for each entry."""
    for e, entry in enumerate(entries):
        where = f"log.entries[{e}]"
        yield e, where, entry, _body(path, where, entry)


def _body(path: Path, where: str, entry: dict[str, Any]) -> str | None:
    """The response body of an event-stream entry (None for any other entry)."""
    response = convert(entry, Answer, error=partial(_error, path, where)).response
    content = response.content if response else None
    if content is None or content.text is None:
        return None
    text = content.text
    if content.encoding == "base64":
        try:
            text = base64.b64decode(text, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise ImportFormatError(
                path, where, "response.content.text", f"not base64 of UTF-8 text ({exc})"
            ) from None
    if "event-stream" in (content.mimeType or "") or text.lstrip().startswith(("data:", "event:")):
        return text
    return None


def _entry(
    path: Path,
    where: str,
    e: int,
    entry: dict[str, Any],
    body: str,
    options: ImportOptions,
    browser: str,
) -> Recording | str:
    read = convert(entry, Entry, _WORDING, error=partial(_error, path, where))
    request = read.request or Request()
    url = request.url or ""
    events = response_text_events(None, body)
    api = api_of(url, events)
    if api is None:
        return f"an event stream of an API uxlab does not map ({url[:80]})"
    timings = {k: v for k in _PHASES if (v := getattr(read.timings, k)) is not msgspec.UNSET}
    phases = {k: max(float(timings.get(k, -1)), 0.0) for k in _PHASES}
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
        har_timings=timings,
        http_status=read.response.status if read.response else None,
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


def _request_body(request: Request) -> dict[str, Any]:
    text = request.postData.text if request.postData else None
    if text is not None:
        try:
            body = loads_json(text)
        except InputProblem:
            return {}
        return body if isinstance(body, dict) else {}
    return {}
