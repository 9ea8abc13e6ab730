"""Incremental SSE framing: split arriving bytes into events, each stamped at arrival.

An event is stamped with the arrival time of the bytes that *complete* it (the blank line
that ends it), before any JSON parsing. The raw text of every event is kept so a capture
can be written next to the replay file and parsed again later.

Capture format (the `.sse` sidecar): every event block is preceded by an SSE comment line
`: t_ms=412.700` holding its arrival time in milliseconds from the request send, and ends
with a blank line, so the file is still valid SSE that any SSE parser reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_BOUNDARY = re.compile(rb"\r\n\r\n|\n\n|\r\r")


@dataclass
class WireEvent:
    """One SSE event as it arrived: arrival time, `event:` name, joined `data:` text, raw block."""

    t_ms: float
    event: str | None
    data: str
    raw: str

    @property
    def is_comment_only(self) -> bool:
        """True for blocks with no event name and no data (keep-alive comments)."""
        return (
            self.event is None
            and not self.data
            and all(line.startswith(":") or not line for line in self.raw.splitlines())
        )


def parse_block(raw: str, t_ms: float) -> WireEvent:
    """Parse one event block (without its terminating blank line) into a WireEvent."""
    event: str | None = None
    data_lines: list[str] = []
    for line in raw.splitlines():
        if not line or line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            data_lines.append(value)
    return WireEvent(t_ms=t_ms, event=event, data="\n".join(data_lines), raw=raw)


class SSEFramer:
    """Feed byte pieces with their arrival time; get complete events back."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, piece: bytes, t_ms: float) -> list[WireEvent]:
        """Add bytes that arrived at `t_ms`; return the events they completed."""
        self._buffer += piece
        events: list[WireEvent] = []
        while True:
            m = _BOUNDARY.search(self._buffer)
            if m is None:
                break
            block = self._buffer[: m.start()]
            self._buffer = self._buffer[m.end() :]
            if not block.strip():
                continue
            events.append(parse_block(block.decode("utf-8", errors="replace"), t_ms))
        return events

    def close(self, t_ms: float) -> list[WireEvent]:
        """The final event when the stream ended without a blank line (else nothing)."""
        rest, self._buffer = self._buffer, b""
        if not rest.strip():
            return []
        return [parse_block(rest.decode("utf-8", errors="replace"), t_ms)]

    @property
    def pending_bytes(self) -> int:
        """Bytes received that do not yet form a complete event."""
        return len(self._buffer)


def dumps_capture(events: Iterable[WireEvent]) -> str:
    """The `.sse` sidecar text: each raw event preceded by `: t_ms=...`."""
    parts = []
    for ev in events:
        raw = ev.raw.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
        parts.append(f": t_ms={ev.t_ms:.3f}\n{raw}\n\n")
    return "".join(parts)


def loads_capture(text: str) -> list[WireEvent]:
    """Read a `.sse` sidecar back into events (arrival times from the `: t_ms=` comments)."""
    events: list[WireEvent] = []
    for block in re.split(r"\n\n+", text.replace("\r\n", "\n")):
        if not block.strip():
            continue
        lines = block.split("\n")
        t_ms = 0.0
        if lines[0].startswith(": t_ms="):
            t_ms = float(lines[0][len(": t_ms=") :])
            lines = lines[1:]
        events.append(parse_block("\n".join(lines), t_ms))
    return events
