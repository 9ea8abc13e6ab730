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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from uxlab.reading import MISSING, InputProblem, Wording, convert, loads_json
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

T = TypeVar("T")

MonotonicTime = float
"""CDP's time: seconds since an arbitrary point, microsecond resolution."""


class Params(msgspec.Struct):
    """The params every `Network.*` event uxlab reads has: the request it is about."""

    requestId: str | None = None


class CdpRequest(msgspec.Struct):
    url: str | None = None
    postData: str | None = None


class RequestWillBeSent(Params, kw_only=True):
    timestamp: MonotonicTime
    request: CdpRequest | None = None


class CdpResponse(msgspec.Struct):
    status: float | None = None


class ResponseReceived(Params):
    response: CdpResponse | None = None


class EventSourceMessageReceived(Params, kw_only=True):
    timestamp: MonotonicTime
    data: str
    eventName: str | None = None


class DataReceived(Params, kw_only=True):
    """A piece of a `fetch()` body; `data` only after `Network.streamResourceContent`."""

    timestamp: MonotonicTime
    data: str | None = None


class LoadingFinished(Params, kw_only=True):
    timestamp: MonotonicTime


class LoadingFailed(Params, kw_only=True):
    timestamp: MonotonicTime
    errorText: str | None = None


def _timestamp(value: Any) -> str:
    return f"expected CDP MonotonicTime (s), got {None if value is MISSING else value!r:.40}"


_WORDING: Wording = {
    "timestamp": _timestamp,
    "data": lambda v: (
        "missing (expected a string)" if v is MISSING else f"expected a string, got {v!r:.60}"
    ),
}
"""The words the hand-written checks said, where the model's would say less."""


def _params(path: Path, where: str, params: dict[str, Any], model: type[T]) -> T:
    """An event's params as `model`, else an ImportFormatError naming `params.<field>`."""

    def error(field: str | None, problem: str) -> ImportFormatError:
        return ImportFormatError(path, where, f"params.{field}" if field else "params", problem)

    return convert(params, model, _WORDING, error=error)


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


def _collect(path: Path) -> dict[str, _Request]:
    requests: dict[str, _Request] = {}
    for where, msg in _messages(path):
        if msg["method"] not in _READ:
            continue
        model, handle = _READ[msg["method"]]
        p = _params(path, where, msg["params"], model)
        if p.requestId is not None:
            handle(path, where, requests.setdefault(p.requestId, _Request(len(requests))), p)
    return requests


def _sent(path: Path, where: str, req: _Request, p: RequestWillBeSent) -> None:
    request = p.request or CdpRequest()
    req.start_s, req.url, req.post = p.timestamp, request.url or "", request.postData


def _response(path: Path, where: str, req: _Request, p: ResponseReceived) -> None:
    status = p.response.status if p.response else None
    req.status = int(status) if status is not None else None


def _event_source(path: Path, where: str, req: _Request, p: EventSourceMessageReceived) -> None:
    name = None if p.eventName in (None, "", "message") else p.eventName
    req.events.append((p.timestamp, SseEvent(name, p.data)))
    req.from_event_source = True


def _data(path: Path, where: str, req: _Request, p: DataReceived) -> None:
    if p.data is None:
        return  # a piece whose bytes Chrome did not send (no streamResourceContent)
    try:
        piece = base64.b64decode(p.data, validate=True)
    except binascii.Error:
        raise ImportFormatError(path, where, "params.data", "not base64") from None
    req.parser = req.parser or SseParser()
    try:
        req.events.extend((p.timestamp, ev) for ev in req.parser.feed(piece))
    except UnicodeDecodeError as exc:
        raise ImportFormatError(
            path, where, "params.data", f"not UTF-8 text once decoded from base64 ({exc.reason})"
        ) from None


def _finished(path: Path, where: str, req: _Request, p: LoadingFinished) -> None:
    req.finished_s = p.timestamp
    if req.parser is None:
        return
    try:
        req.events.extend((p.timestamp, ev) for ev in req.parser.close())
    except UnicodeDecodeError as exc:
        raise ImportFormatError(
            path, where, None, f"the stream's bytes end inside a UTF-8 character ({exc.reason})"
        ) from None


def _failed(path: Path, where: str, req: _Request, p: LoadingFailed) -> None:
    req.failed = p.errorText or "failed"
    req.finished_s = p.timestamp


_READ: dict[str, tuple[type[Params], Callable[..., None]]] = {
    "Network.requestWillBeSent": (RequestWillBeSent, _sent),
    "Network.responseReceived": (ResponseReceived, _response),
    "Network.eventSourceMessageReceived": (EventSourceMessageReceived, _event_source),
    "Network.dataReceived": (DataReceived, _data),
    "Network.loadingFinished": (LoadingFinished, _finished),
    "Network.loadingFailed": (LoadingFailed, _failed),
}
"""The events uxlab reads, by method: the model of their params and what they say of
their request; the other `Network.*` events are passed over."""


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
