"""Arrival-stamped SSE events: the project's SSE parser fed with bytes as they arrive.

`SSEFramer.feed(piece, t_ms)` hands each network read to `uxlab.streams.sse.SseParser`
(the importers' incremental parser: LF/CRLF/CR line ends even when cut between reads,
multi-line data, comments) and stamps every event it completes with the arrival time of the
read that completed it, before any JSON parsing.

Capture format (the `.sse` sidecar) is the importers' timed capture: every event preceded
by an SSE comment `: t_ms=412.700` (its arrival in ms from the request send), so the file is
still valid SSE and `uxlab import --from openai-sse` (or `anthropic-sse`) reads it back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from uxlab.streams.sse import SseParser, format_capture_event, parse_sse


@dataclass
class WireEvent:
    """One SSE event as it arrived: arrival time, `event:` name, joined `data:` text."""

    t_ms: float
    event: str | None
    data: str

    @property
    def raw(self) -> str:
        """The event as a timed-capture block (`: t_ms=...`, `event:`, `data:` lines)."""
        return format_capture_event(self.t_ms, self.data, self.event)


class SSEFramer:
    """Feed byte pieces with their arrival time; get complete events back.

    Raises UnicodeDecodeError when the stream is not UTF-8 (the recorder reports it).
    """

    def __init__(self) -> None:
        self._parser = SseParser()

    def feed(self, piece: bytes, t_ms: float) -> list[WireEvent]:
        """Add bytes that arrived at `t_ms`; return the events they completed."""
        return [WireEvent(t_ms, ev.event, ev.data) for ev in self._parser.feed(piece)]

    def close(self, t_ms: float) -> list[WireEvent]:
        """The final event when the stream ended without a blank line (else nothing)."""
        return [WireEvent(t_ms, ev.event, ev.data) for ev in self._parser.close()]


def dumps_capture(events: Iterable[WireEvent]) -> str:
    """The `.sse` sidecar text: each event preceded by `: t_ms=...`."""
    return "".join(ev.raw for ev in events)


def loads_capture(text: str) -> list[WireEvent]:
    """Read a `.sse` sidecar back into events (arrival times from the `: t_ms=` comments)."""
    return [
        WireEvent(ev.t_ms if ev.t_ms is not None else 0.0, ev.event, ev.data)
        for ev in parse_sse(text)
    ]
