"""The recorder: one streaming request, every SSE event stamped at byte arrival.

Time base: `t0` is the moment the request body was handed to the kernel. It comes from
httpx's trace extension: for a body up to 64 KiB (every chat request in practice) the body
goes out in one non-blocking socket write that starts right after the trace event
`http11.send_request_body.started`, so that event is the send instant; the `...complete`
event comes only after the event loop has turned again, which on a busy machine can be
milliseconds later (a server would see the request *before* the client's t0). Bigger
bodies use `...complete`. `http.headers_ms` is the moment the response headers arrived,
and each event's `t_ms` the arrival of the bytes that complete it, all on
`time.perf_counter_ns()` and taken before any JSON parsing. The raw events with their times
are kept (`RecordResult.capture`) and written as a `.sse` sidecar next to the replay file.

Failures are recorded, not raised: an HTTP error status, a connect or read timeout, a
mid-stream `error` event, a cut connection or a stream without its terminator each give a
Recording with an `error` event and a one-line `message` for the user. The API key is
never stored: it is scrubbed from every text that came back from the server.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from uxlab.live.clients import API_NAMES, Prompt, build_request, request_record
from uxlab.live.key_scrub import KeyScrubber
from uxlab.live.mapping import map_capture
from uxlab.live.record_scrub import scrub_across_events, scrub_chunks
from uxlab.reading import InputProblem, loads_json
from uxlab.streams.recording import End, ErrorEvent, Header, Recording
from uxlab.streams.replay_file import safe_filename, write_replay
from uxlab.streams.sse import SseEvent, SseLimitError, SseParser, format_capture

OnEvent = Callable[[SseEvent, int], None]
"""(SSE event stamped with its arrival, perf_counter_ns of that arrival) -> None."""
RETRY_STATUSES = (429, 500, 502, 503, 504, 529)
_ERROR_BODY_BYTES = 64_000
SMALL_BODY_BYTES = 64 * 1024
"""Bodies up to this size go to the kernel in one non-blocking write (see the module doc)."""
_STAMPED_TRACE_EVENTS = (
    "send_request_body.started",
    "send_request_body.complete",
    "receive_response_headers.complete",
)


@dataclass
class RecordOptions:
    """How to record: retries for 429/5xx (honouring retry-after) and timeouts in seconds."""

    retries: int = 0
    max_retry_wait_s: float = 60.0
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 60.0
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class RecordResult:
    """A recorded stream, its raw capture, and what went wrong (None when nothing did)."""

    recording: Recording
    capture: list[SseEvent]
    status: int | None
    attempts: int
    message: str | None = None
    malformed_events: int = 0

    @property
    def ok(self) -> bool:
        return self.message is None


_Scrubber = KeyScrubber
"""Removes the API key from any text that came back (servers echo keys in 401s), in any
encoding and across events (`uxlab.live.key_scrub`)."""


def _vendor(api: str, url: str) -> str:
    host = urlsplit(url).hostname or ""
    known = {
        "api.openai.com": "openai",
        "api.anthropic.com": "anthropic",
        "generativelanguage.googleapis.com": "google",
    }
    if host in known:
        return known[host]
    return {"anthropic": "anthropic-compatible", "gemini": "gemini-compatible"}.get(
        api, "openai-compatible"
    )


def origin_of(url: str) -> str:
    """The URL without query or credentials (a key in `?key=` is never stored)."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def retry_after_s(headers: httpx.Headers) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _error_message(body_text: str) -> tuple[str, Any]:
    try:
        body: Any = loads_json(body_text)
    except InputProblem:
        return body_text.strip()[:300], body_text[:2000]
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        return str(err.get("message") or err.get("type") or err)[:300], body
    if isinstance(err, str):
        return err[:300], body
    return json.dumps(body)[:300], body


async def record_stream(
    client: httpx.AsyncClient,
    api: str,
    base_url: str,
    model: str,
    prompt: Prompt,
    key: str | None,
    rid: str,
    options: RecordOptions | None = None,
    on_event: OnEvent | None = None,
) -> RecordResult:
    """Send one streaming request and record it (retrying 429/5xx when asked).

    `on_event(event, arrival_ns)` is called for every SSE event as soon as it is framed,
    with the `perf_counter_ns` instant its bytes arrived (live studies re-time the stream
    as it comes in); an attempt that is retried may already have called it.
    """
    options = options or RecordOptions()
    attempts = 0
    retried: list[int] = []
    while True:
        attempts += 1
        result = await _record_once(
            client, api, base_url, model, prompt, key, rid, options, on_event
        )
        status = result.status
        if status in RETRY_STATUSES and attempts <= options.retries:
            wait_s = result.recording.errors[0].error.get("retry_after_s")
            if wait_s is None:
                wait_s = min(2.0 ** (attempts - 1), options.max_retry_wait_s)
            retried.append(status)
            await asyncio.sleep(min(wait_s, options.max_retry_wait_s))
            continue
        http = result.recording.header.extra.setdefault("http", {})
        http["attempts"] = attempts
        if retried:
            http["retried_statuses"] = retried
        result.attempts = attempts
        return result


async def _record_once(
    client: httpx.AsyncClient,
    api: str,
    base_url: str,
    model: str,
    prompt: Prompt,
    key: str | None,
    rid: str,
    options: RecordOptions,
    on_event: OnEvent | None = None,
) -> RecordResult:
    scrub = _Scrubber(key)
    built = build_request(api, base_url, model, prompt, key, options.params)
    header = _live_header(
        api, built.url, model, rid, request_record(api, model, prompt, built.body)
    )
    stamps = _Stamps()
    timeout = httpx.Timeout(options.read_timeout_s, connect=options.connect_timeout_s)
    request = client.build_request(
        "POST",
        built.url,
        headers=built.headers,
        json=built.body,
        timeout=timeout,
        extensions={"trace": stamps.trace},
    )
    stamps.choose_t0(int(request.headers.get("content-length", "0") or 0))
    try:
        response = await client.send(request, stream=True)
    except httpx.ConnectTimeout:
        text = f"no connection within {options.connect_timeout_s:g} s"
        return _failed(header, "connect_timeout", text, scrub)
    except httpx.TimeoutException as exc:
        t_ms = stamps.ms_since_t0(time.perf_counter_ns())
        text = f"no response headers within {options.read_timeout_s:g} s ({type(exc).__name__})"
        return _failed(header, "read_timeout", text, scrub, t_ms)
    except httpx.TransportError as exc:
        return _failed(header, "connect_error", f"{type(exc).__name__}: {exc}", scrub)
    http = header.extra["http"]
    http["status"] = response.status_code
    headers_ns = stamps.stamps.get("receive_response_headers.complete", time.perf_counter_ns())
    http["headers_ms"] = round(stamps.ms_since_t0(headers_ns), 3)
    capture: list[SseEvent] = []
    try:
        if response.status_code >= 400:
            return await _http_error(header, response, stamps.ms_since_t0, scrub)
        problem, end_t_ms = await _read_events(response, capture, stamps, scrub, options, on_event)
    finally:
        await response.aclose()
    scrub_across_events(api, capture, header, scrub)
    recording, malformed = map_capture(api, capture, header)
    scrub_chunks(recording, scrub)
    message = _close_recording(recording, problem, end_t_ms, response.status_code, scrub)
    if malformed and message is None:
        message = f"{malformed} malformed event(s) kept as meta events"
    return RecordResult(recording, capture, response.status_code, 1, message, malformed)


def _live_header(api: str, url: str, model: str, rid: str, request: dict[str, Any]) -> Header:
    """A live recording's header before the response: where it went, what was asked."""
    return Header(
        id=rid,
        source={
            "kind": "live",
            "api": API_NAMES[api],
            "vendor": _vendor(api, url),
            "model": model,
            "origin": origin_of(url),
        },
        request=request,
        clock={"t0": "request_sent", "unit": "ms", "source": "perf_counter"},
        extra={
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "http": {"status": None, "headers_ms": None},
        },
    )


class _Stamps:
    """The request's time base from httpx's trace events: t0 is the send (see the module
    docstring: `...started` for a small body, `...complete` for a big one)."""

    def __init__(self) -> None:
        self.stamps: dict[str, int] = {}
        self.t0_event = "send_request_body.started"
        self.before_send_ns = time.perf_counter_ns()

    async def trace(self, event_name: str, info: dict[str, Any]) -> None:
        if event_name.endswith(_STAMPED_TRACE_EVENTS):
            self.stamps[event_name.split(".", 1)[1]] = time.perf_counter_ns()

    def choose_t0(self, body_bytes: int) -> None:
        """Set the event that is t0 for a body of `body_bytes`; called just before sending."""
        if body_bytes > SMALL_BODY_BYTES:
            self.t0_event = "send_request_body.complete"
        self.before_send_ns = time.perf_counter_ns()

    def t0_ns(self) -> int:
        stamps = self.stamps
        return stamps.get(
            self.t0_event, stamps.get("send_request_body.complete", self.before_send_ns)
        )

    def ms_since_t0(self, ns: int) -> float:
        return max(0.0, (ns - self.t0_ns()) / 1e6)


async def _read_events(
    response: httpx.Response,
    capture: list[SseEvent],
    stamps: _Stamps,
    scrub: _Scrubber,
    options: RecordOptions,
    on_event: OnEvent | None,
) -> tuple[tuple[str, str] | None, float]:
    """Frame the body's SSE events into `capture` as they arrive, each stamped and scrubbed;
    returns (what cut the stream, if anything: (kind, text)), and the stream's end in ms."""
    framer = SseParser()  # stamps each event with the arrival of the read completing it
    problem: tuple[str, str] | None = None
    try:
        async for piece in response.aiter_raw():
            arrival_ns = time.perf_counter_ns()
            t_ms = stamps.ms_since_t0(arrival_ns)
            for ev in framer.feed(piece, t_ms):
                ev.data, ev.event = scrub(ev.data), ev.event and scrub(ev.event)
                capture.append(ev)
                if on_event is not None:
                    on_event(ev, arrival_ns)
    except httpx.ReadTimeout:
        problem = ("read_timeout", f"no bytes for {options.read_timeout_s:g} s mid-stream")
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        problem = (
            "connection_closed",
            f"the connection was cut mid-stream ({type(exc).__name__}: {exc})",
        )
    except UnicodeDecodeError as exc:
        problem = ("malformed_stream", f"the stream is not UTF-8 ({exc.reason})")
    except SseLimitError as exc:
        problem = ("malformed_stream", f"the stream broke the SSE limits ({exc})")
    end_t_ms = stamps.ms_since_t0(time.perf_counter_ns())
    if problem is None or problem[0] != "malformed_stream":
        for ev in framer.close(end_t_ms):
            ev.data, ev.event = scrub(ev.data), ev.event and scrub(ev.event)
            capture.append(ev)
    return problem, end_t_ms


def _close_recording(
    recording: Recording,
    problem: tuple[str, str] | None,
    end_t_ms: float,
    status: int,
    scrub: _Scrubber,
) -> str | None:
    """End a recording whose stream was cut or had no terminator with an error event;
    the one-line message for the user (None: nothing went wrong)."""
    message = None
    if problem is not None:
        kind, text = problem
        last_t = max([end_t_ms] + [e.t_ms for e in recording.events if e.t_ms is not None])
        if recording.end is None:
            recording.events.append(
                ErrorEvent(t_ms=last_t, error={"type": kind, "message": scrub(text)})
            )
            message = f"{kind}: {scrub(text)}"
    elif recording.end is None:
        recording.events.append(
            ErrorEvent(
                t_ms=end_t_ms,
                error={"type": "truncated", "message": "the stream ended without its terminator"},
            )
        )
        message = "truncated: the stream ended without its terminator"
    if recording.end is not None and recording.end.finish_reason == "error" and message is None:
        err = recording.errors[-1].error if recording.errors else {}
        message = (
            f"mid-stream error after HTTP {status}: "
            + scrub(str(err.get("type") or "") + " " + str(err.get("message") or "")).strip()
        )
    return message


async def _http_error(
    header: Header, response: httpx.Response, ms_since_t0: Any, scrub: _Scrubber
) -> RecordResult:
    body = b""
    try:
        async for piece in response.aiter_raw():
            body += piece
            if len(body) > _ERROR_BODY_BYTES:
                break
    except httpx.HTTPError:
        pass
    t_ms = ms_since_t0(time.perf_counter_ns())
    text = scrub(body.decode("utf-8", errors="replace"))
    message, parsed = _error_message(text)
    error: dict[str, Any] = {
        "type": "http_error",
        "status": response.status_code,
        "message": message,
        "body": parsed,
    }
    wait_s = retry_after_s(response.headers)
    if wait_s is not None:
        error["retry_after_s"] = wait_s
    rec = Recording(
        header=header,
        events=[ErrorEvent(t_ms=t_ms, error=error)],
        end=End(t_ms=t_ms, finish_reason="error"),
    )
    return RecordResult(rec, [], response.status_code, 1, f"HTTP {response.status_code}: {message}")


def _failed(
    header: Header, kind: str, text: str, scrub: _Scrubber, t_ms: float = 0.0
) -> RecordResult:
    text = scrub(text)
    rec = Recording(
        header=header,
        events=[ErrorEvent(t_ms=t_ms, error={"type": kind, "message": text})],
        end=End(t_ms=t_ms, finish_reason="error"),
    )
    return RecordResult(rec, [], None, 1, f"{kind}: {text}")


def unique_id(outdir: Path, rid: str) -> str:
    """`rid`, or `rid-2`, `rid-3`... so an earlier recording in `outdir` is never overwritten."""
    return free_id(
        rid, lambda c: (outdir / f"{c}.jsonl").exists() or (outdir / f"{c}.sse").exists()
    )


def free_id(rid: str, taken: Callable[[str], bool]) -> str:
    """`rid` made safe as a file name, or `rid-2`, `rid-3`...: the first one not `taken`."""
    base = safe_filename(rid)
    candidate, n = base, 1
    while taken(candidate):
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def save_result(result: RecordResult, outdir: str | Path) -> Path:
    """Write `<id>.jsonl` and, when events arrived, the `<id>.sse` capture sidecar."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    rec = result.recording
    if result.capture:
        sidecar = outdir / f"{safe_filename(rec.id)}.sse"
        rec.header.extra["capture"] = sidecar.name
        sidecar.write_text(format_capture(result.capture), encoding="utf-8")
    return write_replay(rec, outdir / f"{safe_filename(rec.id)}.jsonl")
