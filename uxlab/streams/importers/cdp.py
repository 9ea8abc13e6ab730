"""Chrome DevTools Protocol network logs -> Recordings with the browser's arrival times.

Input: the `Network.*` events of a CDP session, as a JSON list or JSON Lines, each either
a CDP message `{"method": "Network.eventSourceMessageReceived", "params": {...}}` or a
ChromeDriver performance-log entry `{"message": "{\\"message\\": {\\"method\\": ...,
\\"params\\": ...}}", ...}` (unwrapped). What is read, per `requestId`:

- `Network.requestWillBeSent` (`timestamp`, `request.url`, `request.postData`): time zero;
- `Network.eventSourceMessageReceived` (`timestamp`, `eventName`, `data`): one SSE event of
  a page's `EventSource`, at the time the browser received it;
- `Network.dataReceived` with `data` (base64; Chrome sends it for a request after
  `Network.streamResourceContent`): the raw bytes of a `fetch()` stream as they arrived, cut
  into SSE events, each at the time of the piece that completed it;
- `Network.responseReceived` (`response.status`), `Network.loadingFinished` (the end time),
  `Network.loadingFailed` (`errorText`: the stream was cut off).

`timestamp` is CDP's `MonotonicTime` in seconds; each event's `t_ms` is its timestamp minus
the request's, in ms: per-event browser arrival times (`timing: recorded`), which include
the browser's own network stack but not when the page painted the text. A request with SSE
events is mapped by its API's event mapping (told from the first event or the URL, as for
HAR files); its end is the stream's terminator (without one it is kept as a truncated
stream, with `loadingFailed`'s reason in the header when there is one). A stream without
`requestWillBeSent` has no time zero and is skipped with its `requestId` named.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uxlab.reading import InputProblem, loads_json
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Skipped,
    event_mapping,
    id_base,
    import_header,
    loads_checked,
    map_located,
    origin_of,
    read_text_checked,
    selected,
)
from uxlab.streams.importers.detect_api import api_of
from uxlab.streams.recording import Recording
from uxlab.streams.sse import SseEvent, SseParser


@dataclass
class _Request:
    """What the log says about one request."""

    first_seen: int
    start_s: float | None = None
    url: str = ""
    post: str | None = None
    status: int | None = None
    events: list[tuple[float, SseEvent]] = field(default_factory=list)
    """The stream's events with their arrival in CDP seconds (MonotonicTime)."""
    finished_s: float | None = None
    failed: str | None = None
    parser: SseParser | None = None
    from_event_source: bool = False


def _messages(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """`(where, CDP message)` for every entry of a JSON list or a JSON Lines file."""
    text = read_text_checked(path)
    items: list[tuple[str, Any]] = []
    if text.lstrip().startswith("["):
        doc = loads_checked(text, path, None)
        items = [(f"[{i}]", item) for i, item in enumerate(doc)]
    else:
        items = [
            (str(lineno), loads_checked(raw, path, str(lineno)))
            for lineno, raw in enumerate(text.splitlines(), start=1)
            if raw.strip()
        ]
    out: list[tuple[str, dict[str, Any]]] = []
    for where, item in items:
        if isinstance(item, dict) and isinstance(item.get("message"), str):
            inner = loads_checked(item["message"], path, where)  # a ChromeDriver log entry
            item = inner.get("message", inner) if isinstance(inner, dict) else inner
        if not isinstance(item, dict):
            raise ImportFormatError(path, where, None, "expected a CDP message object")
        if isinstance(item.get("method"), str) and item["method"].startswith("Network."):
            params = item.get("params")
            if not isinstance(params, dict):
                raise ImportFormatError(path, where, "params", "expected an object")
            out.append((where, item))
    return out


def _seconds(params: dict[str, Any], path: Path, where: str) -> float:
    value = params.get("timestamp")
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ImportFormatError(
            path, where, "params.timestamp", f"expected CDP MonotonicTime (s), got {value!r:.40}"
        )
    return float(value)


def _collect(path: Path) -> dict[str, _Request]:
    requests: dict[str, _Request] = {}
    for where, msg in _messages(path):
        method, params = msg["method"], msg["params"]
        rid = params.get("requestId")
        if not isinstance(rid, str):
            continue
        req = requests.setdefault(rid, _Request(first_seen=len(requests)))
        if method == "Network.requestWillBeSent":
            req.start_s = _seconds(params, path, where)
            request = params.get("request") if isinstance(params.get("request"), dict) else {}
            req.url = str(request.get("url") or "")
            post = request.get("postData")
            req.post = post if isinstance(post, str) else None
        elif method == "Network.responseReceived":
            response = params.get("response") if isinstance(params.get("response"), dict) else {}
            status = response.get("status")
            req.status = int(status) if isinstance(status, int | float) else None
        elif method == "Network.eventSourceMessageReceived":
            data = params.get("data")
            if not isinstance(data, str):
                raise ImportFormatError(path, where, "params.data", "expected a string")
            name = params.get("eventName")
            name = None if name in (None, "", "message") else str(name)
            req.events.append((_seconds(params, path, where), SseEvent(name, data)))
            req.from_event_source = True
        elif method == "Network.dataReceived" and isinstance(params.get("data"), str):
            try:
                piece = base64.b64decode(params["data"], validate=True)
            except binascii.Error:
                raise ImportFormatError(path, where, "params.data", "not base64") from None
            t_s = _seconds(params, path, where)
            req.parser = req.parser or SseParser()
            req.events.extend((t_s, ev) for ev in req.parser.feed(piece))
        elif method == "Network.loadingFinished":
            req.finished_s = _seconds(params, path, where)
            if req.parser is not None:
                req.events.extend((req.finished_s, ev) for ev in req.parser.close())
        elif method == "Network.loadingFailed":
            req.failed = str(params.get("errorText") or "failed")
            req.finished_s = _seconds(params, path, where)
    return requests


def import_cdp(path: Path, options: ImportOptions) -> ImportResult:
    """One recording per request of a CDP network log that carried SSE events."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    requests = _collect(path)
    result = ImportResult()
    streams = [(rid, r) for rid, r in requests.items() if r.events]
    if not streams:
        raise ImportFormatError(
            path,
            None,
            None,
            "no Network.eventSourceMessageReceived, and no Network.dataReceived with data: "
            "the log holds no stream (enable Network and, for fetch streams, call "
            "Network.streamResourceContent)",
        )
    for index, (rid, req) in selected(streams, options, result):
        origin = origin_of(path, request=rid)
        if req.start_s is None:
            result.skipped.append(
                Skipped(origin, f"no Network.requestWillBeSent for {rid}: time zero unknown")
            )
            continue
        rec = _recording(path, rid, req, options, index, origin)
        result.add(origin, rec)
    return result


def _recording(
    path: Path, rid: str, req: _Request, options: ImportOptions, index: int, origin: str
) -> Recording | str:
    assert req.start_s is not None
    # CDP times have microsecond resolution: keep the ms to 3 decimals, not float noise
    times = [round((t_s - req.start_s) * 1000.0, 3) for t_s, _ in req.events]
    events = [SseEvent(ev.event, ev.data, t) for t, (_, ev) in zip(times, req.events, strict=True)]
    if any(t < 0 for t in times):
        raise ImportFormatError(
            path, f"request {rid}", "params.timestamp", "an event before requestWillBeSent"
        )
    back = next((k for k in range(1, len(times)) if times[k] < times[k - 1]), None)
    if back is not None:
        raise ImportFormatError(
            path,
            f"request {rid} (event {back})",
            "params.timestamp",
            f"{times[back]} ms is earlier than the event before ({times[back - 1]} ms)",
        )
    api = api_of(req.url, events)
    if api is None:
        return f"an event stream of an API uxlab does not map ({req.url.split('?', 1)[0][:80]})"
    try:
        body = loads_json(req.post) if req.post else {}
    except InputProblem:
        body = {}  # a request body that is not JSON: not kept
    source = "eventSourceMessageReceived" if req.from_event_source else "dataReceived"
    header = import_header(
        f"{id_base(path, options)}-r{index:03d}",
        importer="cdp",
        origin=origin,
        api=api,
        request=body if isinstance(body, dict) else {},
        timing=f"recorded: browser arrival (Network.{source})",
        url=req.url.split("?", 1)[0] or None,
        http_status=req.status,
        loading_failed=req.failed,
    )
    return map_located(
        event_mapping(api),
        events,
        header,
        path,
        lambda i: f"request {rid} (event {i})",
        strict=not options.tolerant,
    )  # no terminator: kept as a truncated stream, as the SSE importers do
