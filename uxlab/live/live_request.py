"""A live trial's request: sent at the send key press, its answer fed into the trial's
`LiveSchedule` as it arrives.

`stream_live` sends the request with the recorder's machinery (`record_stream`) and feeds
every event into the schedule at its arrival, stamped on the trial's clock (t0 = the send
key press); `LiveRun` is one trial's request from the screen shown to the stored record.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from uxlab.clock import Clock, MonotonicClock
from uxlab.live.clients import Prompt, api_key_from_env
from uxlab.live.key_scrub import ChannelGuard, KeyScrubber, text_leaves
from uxlab.live.live_schedule import LiveEndpoint, LiveSchedule
from uxlab.live.mapping import MAPPERS, Mapper
from uxlab.live.record import RecordOptions, RecordResult, record_stream
from uxlab.outcomes import EventKind
from uxlab.streams.recording import Chunk, ErrorEvent, Header, Recording
from uxlab.streams.sse import SseEvent

TAIL_WAIT_S = 2.0
"""After a complete answer, how long a trial waits for the rest of the response (usage,
terminator) before it calls the request off."""


@dataclass
class LiveResult:
    """The finished live request: the recorder's result (arrival times from the request
    send) and when the request went out, in ms from the trial's t0 (None if no event came)."""

    record: RecordResult | None
    message: str | None
    request_sent_ms: float | None = None


async def stream_live(
    schedule: LiveSchedule,
    endpoint: LiveEndpoint,
    prompt: str | Prompt,
    *,
    t0_ms: float,
    clock: Clock,
    client: httpx.AsyncClient | None = None,
    options: RecordOptions | None = None,
    on_sent: Callable[[float], None] | None = None,
    key: str | None = None,
) -> LiveResult:
    """Send `prompt` to `endpoint` and feed the answer into `schedule` as it arrives.

    `prompt` is the user's text, or a whole `Prompt` (messages, system, params) as a proxy
    forwards it; `key` overrides the endpoint's key variable (never stored).

    Arrivals are stamped on `clock` (the recorder's `perf_counter_ns` instant when the
    clock is a `MonotonicClock`, the same time base) relative to `t0_ms`, the send key
    press. Failures (HTTP errors, timeouts, cuts) end the schedule with an error event.
    """
    if key is None:
        key = api_key_from_env(endpoint.api, endpoint.api_key_env)
    if isinstance(prompt, str):
        prompt = Prompt(messages=[{"role": "user", "content": prompt}], where="live study")
    feed = _ScheduleFeed(schedule, MAPPERS[endpoint.api], KeyScrubber(key), clock, t0_ms, on_sent)
    own_client = client is None
    http = client if client is not None else httpx.AsyncClient()
    try:
        result = await record_stream(
            http,
            endpoint.api,
            endpoint.url,
            endpoint.model,
            prompt,
            key,
            "live",
            options or RecordOptions(params=dict(endpoint.params)),
            on_event=feed.on_event,
        )
    except asyncio.CancelledError:
        if not schedule.closed:
            schedule.add_error(
                {"type": "cancelled", "message": "the trial ended first"}, clock.now_ms() - t0_ms
            )
        raise
    finally:
        if own_client:
            await http.aclose()
    if not schedule.closed:
        feed.close(result.recording)
    return LiveResult(result, result.message, feed.sent_ms)


class _ScheduleFeed:
    """Feeds a recorder's events into a `LiveSchedule` as they arrive: each mapped on its
    own, stamped on `clock` from `t0_ms`, with errors made neutral and the key held back."""

    def __init__(
        self,
        schedule: LiveSchedule,
        mapper: Mapper,
        scrubber: KeyScrubber,
        clock: Clock,
        t0_ms: float,
        on_sent: Callable[[float], None] | None,
    ) -> None:
        self.schedule, self.mapper, self.scrubber = schedule, mapper, scrubber
        self.clock, self.t0_ms, self.on_sent = clock, t0_ms, on_sent
        self.monotonic = isinstance(clock, MonotonicClock)
        self.header = Header(id="live")
        self.guard = ChannelGuard(scrubber)
        """One stream of all the answer's text in arrival order, every channel and the
        errors' (never shown) text: a key split across them is never shown."""
        self.sent_ms: float | None = None
        """The recorder's send on our timeline (ms from the key press), once an event says."""

    def arrival_ms(self, arrival_ns: int) -> float:
        now = arrival_ns / 1e6 if self.monotonic else self.clock.now_ms()
        return now - self.t0_ms

    def on_event(self, ev: SseEvent, arrival_ns: int) -> None:
        t_ms = self.arrival_ms(arrival_ns)
        # the recorder's times (stamped on every event) count from its send; ours from the key
        if self.sent_ms is None and ev.t_ms is not None:
            self.sent_ms = round(t_ms - ev.t_ms, 3)
            if self.on_sent is not None:
                self.on_sent(self.sent_ms)
        # Events are mapped one at a time so chunks reach the schedule as they arrive; the
        # end (finish reason, usage) needs the whole stream and comes from the recorder's
        # full mapping (`close`).
        rec, _ = self.mapper([ev], self.header)
        for e in rec.events:
            if isinstance(e, ErrorEvent):  # the participant never sees an upstream body
                if self.scrubber.key is not None:  # but it may complete a key begun before
                    self._show(e, self.guard.feed(None, _error_text(e.error)), t_ms)
                e = ErrorEvent(t_ms=e.t_ms, error=neutral_error(e.error))
            elif isinstance(e, Chunk) and self.scrubber.key is not None:
                # a key is never shown, even one piece at a time or split across channels
                self._show(e, self.guard.feed(e.channel, e.text), t_ms)
                continue
            self.schedule.feed(e, t_ms)

    def _show(self, e: Any, pieces: list[tuple[str | None, str]], t_ms: float) -> None:
        """Feed what the guard releases: each piece on its channel (a piece held from an
        earlier event may be of another channel than `e`); an error's text never."""
        for channel, text in pieces:
            if channel is None or not text:
                continue
            if isinstance(e, Chunk) and channel == e.channel:
                self.schedule.feed(dataclasses.replace(e, text=text), t_ms)
            else:
                self.schedule.feed(Chunk(t_ms=e.t_ms, text=text, channel=channel), t_ms)

    def close(self, rec: Recording) -> None:
        """End the schedule from the recorder's whole recording: its last error, or its end
        at the recorded instant (never later than now, never before the last arrival)."""
        schedule = self.schedule
        now_ms = self.clock.now_ms() - self.t0_ms
        for channel, rest in self.guard.flush():  # text held back in case it began the key
            if channel is not None and rest:
                schedule.feed(Chunk(t_ms=None, text=rest, channel=channel), now_ms)
        if rec.errors:
            schedule.add_error(neutral_error(rec.errors[-1].error), now_ms)
            return
        end = rec.end
        end_ms = now_ms
        if end is not None and end.t_ms is not None and self.sent_ms is not None:
            last = schedule.arrivals[-1].t_ms if schedule.arrivals else 0.0
            end_ms = min(now_ms, max(end.t_ms + self.sent_ms, last))
        schedule.add_end(end_ms, end.finish_reason if end else None, end.usage if end else None)


def _error_text(error: dict[str, Any]) -> str:
    """Every text of an upstream error, its message first (a key's end may be there)."""
    return "".join(text_leaves(error))


_OWN_ERROR_KINDS = {
    "http_error": "The model service refused the request.",
    "connect_timeout": "The model service could not be reached.",
    "connect_error": "The model service could not be reached.",
    "read_timeout": "The model service stopped answering.",
    "connection_closed": "The connection to the model service was cut.",
    "malformed_stream": "The model service sent an unreadable answer.",
    "truncated": "The answer ended early.",
}


def neutral_error(error: dict[str, Any]) -> dict[str, Any]:
    """What a live trial shows and stores of an upstream failure: the recorder's own kind
    and a fixed message, never the server's text (it can echo keys or anything else). The
    recorder's scrubbed, decoded message is kept in the trial's `live_request` event."""
    kind = error.get("type")
    if kind not in _OWN_ERROR_KINDS:
        kind = "stream_error"
    out: dict[str, Any] = {
        "type": kind,
        "message": _OWN_ERROR_KINDS.get(kind, "The model service reported an error."),
    }
    status = error.get("status")
    if isinstance(status, int) and not isinstance(status, bool):
        out["status"] = status
    return out


def warm_up() -> None:
    """Import now what httpx loads on its first connection (250-300 ms on a loaded
    machine), so it never falls between the send key press and the request."""
    import anyio._backends._asyncio  # noqa: F401
    import httpcore._backends.anyio  # noqa: F401


class LiveRun:
    """One trial's live request: prepared when the trial is shown (the HTTP client is made
    then: building one costs 70-300 ms, which must not fall between the send key press and
    the request), started at the send, cancelled if the trial ends first (give-up, timeout,
    the profile's error); and what it adds to the stored trial."""

    def __init__(
        self,
        schedule: LiveSchedule,
        endpoint: LiveEndpoint,
        clock: Clock,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.schedule = schedule
        self.endpoint = endpoint
        self.clock = clock
        self._own_client = client is None
        self.client = client if client is not None else httpx.AsyncClient()
        warm_up()
        self.prompt = ""
        self.t0_ms = 0.0
        self.result: LiveResult | None = None
        self.cancelled_at_ms: float | None = None
        self.request_sent_ms: float | None = None
        self._task: asyncio.Task[LiveResult] | None = None

    def start(self, prompt: str, t0_ms: float) -> None:
        """Send `prompt` now; `t0_ms` is the send key press on the clock."""
        self.prompt, self.t0_ms = prompt, t0_ms
        self._task = asyncio.ensure_future(
            stream_live(
                self.schedule,
                self.endpoint,
                prompt,
                t0_ms=t0_ms,
                clock=self.clock,
                client=self.client,
                on_sent=self._sent,
            )
        )

    def _sent(self, t_ms: float) -> None:
        self.request_sent_ms = t_ms

    async def finish(self) -> LiveResult | None:
        """After the play: stop the request if it is still running, and wait for it."""
        task = self._task
        if task is None:
            return None
        if not task.done() and self.schedule.end is not None and not self.schedule.cut_by_profile:
            # the answer is complete; usage and the terminator may still be on their way
            await asyncio.wait({task}, timeout=TAIL_WAIT_S)
        if not task.done():
            self.cancelled_at_ms = self.clock.now_ms() - self.t0_ms
            task.cancel()
        try:
            self.result = await task
        except asyncio.CancelledError:
            message = "cancelled: the trial ended before the answer did"
            self.result = LiveResult(None, message, self.request_sent_ms)
        finally:
            if self._own_client:
                await self.client.aclose()
        return self.result

    def add_to_record(self, timings: dict[str, Any], events: list[dict[str, Any]]) -> None:
        """Violations into the trial's timings; arrivals, due/arrival per shown chunk and
        the request (endpoint without key, prompt, HTTP status) into its events."""
        schedule = self.schedule
        timings.update(schedule.violations())
        shown = {s.index: s for s in schedule.shown}
        for ev in events:
            s = shown.get(ev.get("index", -1)) if ev.get("kind") == EventKind.CHUNK else None
            if s is not None:
                ev.update(due_ms=s.due_ms, arrival_ms=s.arrival_ms, violation_ms=s.violation_ms)
        for a in schedule.arrivals:
            ev = {"kind": EventKind.ARRIVAL, "t_ms": a.t_ms, "event": a.kind}
            if a.kind == "chunk":
                ev.update(channel=a.channel, n_chars=a.n_chars)
            events.append(ev)
        record = self.result.record if self.result is not None else None
        http = record.recording.header.extra.get("http", {}) if record is not None else {}
        events.append(
            {
                "kind": EventKind.LIVE_REQUEST,
                "t_ms": 0.0,
                **self.endpoint.to_dict(),
                "prompt": self.prompt,
                "status": http.get("status"),
                "headers_ms": http.get("headers_ms"),
                "request_sent_ms": self.request_sent_ms,
                "message": self.result.message if self.result is not None else None,
                "cancelled_at_ms": self.cancelled_at_ms,
                "cut_by_profile": schedule.cut_by_profile,
            }
        )
        events.sort(key=lambda e: float("inf") if e["t_ms"] is None else e["t_ms"])
