"""The in-memory model of one token stream: a header with provenance, then timed events.

A `Recording` is what every source produces (live recorder, importers, the synthetic
generator) and what every consumer takes (inspect, shaping, the player, the SSE server).
A *schedule* is simply a Recording whose header carries a `retime` record: the player
plays any Recording, so there is one playback path.

Times (`t_ms`) are milliseconds on a monotonic clock from the moment the request was sent.
`t_ms` is `None` only for sources that carry text without timing (a plain SSE body).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

FORMAT = "uxlab.replay/1"
CHANNELS = ("content", "reasoning", "tool")
SOURCE_KINDS = ("live", "import", "synthetic")
TEXT_SOURCES = ("recorded", "synthetic", "split")
SAME_EVENT = "same_event"
"""A chunk's (or tool call start's) mark: it came in the same stream event as the output
before it (the second and later pieces of one SSE event; see `importers.event_mapping`)."""


@dataclass
class Header:
    """Provenance and time base of a recording (line 1 of a replay file)."""

    id: str
    source: dict[str, Any] = field(default_factory=lambda: {"kind": "synthetic"})
    request: dict[str, Any] = field(default_factory=dict)
    clock: dict[str, Any] = field(default_factory=lambda: {"t0": "request_sent", "unit": "ms"})
    text_source: str = "recorded"
    retime: dict[str, Any] | None = None
    format: str = FORMAT
    extra: dict[str, Any] = field(default_factory=dict)
    """Any further header keys (e.g. `http`, `license`, `created_at`), kept verbatim."""


@dataclass
class Chunk:
    """A piece of streamed output as it arrived (one SSE delta, or a group of tokens)."""

    t_ms: float | None
    text: str
    channel: str = "content"
    n_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Meta:
    """A non-output event kept for fidelity: role prelude, ping, tool-call start, ..."""

    t_ms: float | None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class ErrorEvent:
    """An error that arrived mid-stream (e.g. Anthropic `overloaded_error` after HTTP 200)."""

    t_ms: float | None
    error: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class End:
    """The end of the stream: finish reason and usage as the source reported them."""

    t_ms: float | None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Event = Chunk | Meta | ErrorEvent


@dataclass
class Recording:
    """One stream: a header, events in arrival order, and the end (None if truncated)."""

    header: Header
    events: list[Event] = field(default_factory=list)
    end: End | None = None

    # -- convenience views -------------------------------------------------------------
    @property
    def id(self) -> str:
        return self.header.id

    @property
    def truncated(self) -> bool:
        """True when the stream has no `end` event (cut off)."""
        return self.end is None

    @property
    def chunks(self) -> list[Chunk]:
        return [e for e in self.events if isinstance(e, Chunk)]

    @property
    def errors(self) -> list[ErrorEvent]:
        return [e for e in self.events if isinstance(e, ErrorEvent)]

    @property
    def text(self) -> str:
        """All content-channel text joined (what a chat client shows as the answer)."""
        return "".join(c.text for c in self.chunks if c.channel == "content")

    def chunk_times_ms(self) -> np.ndarray:
        """Arrival times of all chunks as a float array (NaN where unknown)."""
        return np.array([np.nan if c.t_ms is None else c.t_ms for c in self.chunks], dtype=float)

    def has_timing(self) -> bool:
        """False for text-only recordings (times unknown)."""
        return all(c.t_ms is not None for c in self.chunks)
