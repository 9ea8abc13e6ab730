"""Server-sent events (SSE) framing, and the timed SSE capture format.

`SseParser` splits a text or byte stream into events the way the WHATWG event-stream
rules do: `field: value` lines, one optional space after the colon, several `data:` lines
joined with a newline, `:` comment lines, LF / CRLF / CR line ends (even when a CRLF is cut
between two network reads), a leading byte order mark, and a blank line that ends an event.
It is incremental (`feed` as bytes arrive, `close` at the end), so the live recorder and the
importers share it.

Timed capture (`*.sse`): a plain SSE body where each event is preceded by a comment line
giving its arrival time in milliseconds from the moment the request was sent::

    : t_ms=412.700
    data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hi"}}]}

The file stays valid SSE (any SSE reader skips comments), it is readable and diffable, and a
recorder can append to it one event at a time (`format_capture_event`). A body without any
`t_ms=` comment is a plain capture: its events get `t_ms=None` (text without timing).

`SseEvent` is the one type of an SSE event in uxlab: parsed from a capture (its time from
the comment), from a live stream (`feed(piece, t_ms)` stamps the arrival), or made by an
importer from another log format; the event mappings of `uxlab.streams.importers` read it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from uxlab.errors import UxlabError

CAPTURE_TIME_KEY = "t_ms="
_TIME_COMMENT = re.compile(r"^\s*t_ms=([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|null)\s*$")


@dataclass
class SseEvent:
    """One SSE event: its name (None when unnamed), data, and when it arrived.

    The one event type of streams and live: the parser makes it, the importers' event
    mappings and the live recorder read it, a timed capture writes it (`format_capture`).
    Importers of other stream logs (JSON chunks, AWS event streams) make it too.
    """

    event: str | None
    data: str
    t_ms: float | None = None
    """Arrival in ms from the request's send: stamped by `SseParser.feed(piece, t_ms)` as the
    event arrives, read from a timed capture's last `: t_ms=` comment before the event (a
    keep-alive block written with its own time carries its comments over to the next
    event, whose own time comment comes after it), else None (text without timing)."""
    id: str | None = None
    retry_ms: int | None = None
    comments: list[str] = field(default_factory=list)
    line: int = 0
    """1-based line of the event's first line, leading comments included (for errors)."""


def _comment_time(comments: list[str]) -> float | None:
    """The time of the last `: t_ms=...` comment (None when there is none)."""
    for comment in reversed(comments):
        m = _TIME_COMMENT.match(comment)
        if m and m.group(1) != "null":
            return float(m.group(1))
    return None


class SseLimitError(UxlabError, ValueError):
    """A line or an event longer than the parser's bound (a stream that never ends a line)."""

    def __init__(self, line: int, what: str, limit: int):
        self.line = line
        self.what = what
        self.limit = limit
        super().__init__(
            f"line {line}: {what} is longer than {limit:,} characters "
            "(not an SSE stream, or one that never ends a line)"
        )


MAX_LINE_CHARS = 8 * 1024 * 1024
"""The longest SSE line (and event) accepted: far beyond any real event, small enough that a
stream without line ends cannot take the memory."""
MAX_CARRIED_COMMENTS = 64
"""Comments carried over from comment-only blocks (keep-alives) to the next event."""


class SseParser:
    """Incremental SSE parser: `feed()` text or bytes, get the events completed so far.

    Linear in the input: each piece is scanned once for line ends, and a line that is not
    finished yet is kept as a list of pieces (joined once, when its end arrives). A line or
    an event longer than `max_line_chars` raises `SseLimitError`.
    """

    def __init__(self, max_line_chars: int | None = None) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
        self.max_line_chars = MAX_LINE_CHARS if max_line_chars is None else max_line_chars
        self._partial: list[str] = []
        self._partial_len = 0
        self._line_no = 0
        self._started = False
        self._pending_cr = False
        self._reset_event()

    def _reset_event(self) -> None:
        self._event: str | None = None
        self._data: list[str] = []
        self._event_len = 0
        self._id: str | None = None
        self._retry: int | None = None
        self._comments: list[str] = []
        self._first_line = 0

    def feed(self, chunk: str | bytes, t_ms: float | None = None) -> list[SseEvent]:
        """Add the next piece of the stream; return the events it completed.

        `t_ms`: when the piece arrived; the events it completed are stamped with it (a live
        stream's arrival, instead of any `: t_ms=` comment). Bytes that are not UTF-8 raise
        `UnicodeDecodeError`.
        """
        text = self._decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._pending_cr and text:
            self._pending_cr = False
            text = text.removeprefix("\n")  # the LF of a CRLF cut between two reads
        return _stamped(self._scan(text, final=False), t_ms)

    def close(self, t_ms: float | None = None) -> list[SseEvent]:
        """End of stream: dispatch an event left without its closing blank line (stamped
        with `t_ms`, the end's arrival, when given)."""
        tail = self._decoder.decode(b"", final=True)
        if self._pending_cr:
            tail = tail.removeprefix("\n")
        events = self._scan(tail, final=True)
        if self._partial:
            events.extend(self._line(self._take_partial("")))
        events.extend(self._dispatch())
        return _stamped(events, t_ms)

    def _take_partial(self, rest: str) -> str:
        """The unfinished line so far plus `rest`, and the partial line emptied."""
        if not self._partial:
            return rest
        self._partial.append(rest)
        line = "".join(self._partial)
        self._partial = []
        self._partial_len = 0
        return line

    def _scan(self, text: str, final: bool) -> list[SseEvent]:
        """Split `text` (new input only) at line ends; keep an unfinished last line."""
        events: list[SseEvent] = []
        start = 0
        n = len(text)
        while start < n:
            i_lf = text.find("\n", start)
            i_cr = text.find("\r", start, i_lf if i_lf >= 0 else n)
            if i_lf < 0 and i_cr < 0:
                break
            if i_cr >= 0:
                end, nxt = i_cr, i_cr + 1
                if nxt < n:
                    if text[nxt] == "\n":
                        nxt += 1
                elif not final:
                    self._pending_cr = True
            else:
                end, nxt = i_lf, i_lf + 1
            if self._partial_len + end - start > self.max_line_chars:
                raise SseLimitError(self._line_no + 1, "a line", self.max_line_chars)
            events.extend(self._line(self._take_partial(text[start:end])))
            start = nxt
        if start < n:
            rest = text[start:]
            self._partial_len += len(rest)
            if self._partial_len > self.max_line_chars:
                raise SseLimitError(self._line_no + 1, "a line", self.max_line_chars)
            self._partial.append(rest)
        return events

    def _line(self, line: str) -> list[SseEvent]:
        self._line_no += 1
        if line == "":
            return self._dispatch()
        if not self._first_line:
            self._first_line = self._line_no
        if line.startswith(":"):
            self._comments.append(line[1:].removeprefix(" "))
            if len(self._comments) > MAX_CARRIED_COMMENTS:  # keep-alives without an event
                del self._comments[0]
            return []
        name, sep, value = line.partition(":")
        if sep:
            value = value.removeprefix(" ")
        if name == "data":
            self._event_len += len(value) + 1
            if self._event_len > self.max_line_chars:
                raise SseLimitError(self._line_no, "an event's data", self.max_line_chars)
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        # Unknown field names are ignored, as the SSE rules say.
        return []

    def _dispatch(self) -> list[SseEvent]:
        if not self._data and self._event is None:
            # A block of comments only: its comments carry over to the next event,
            # so a time comment written as its own block still times that event.
            return []
        ev = SseEvent(
            event=self._event,
            data="\n".join(self._data),
            id=self._id,
            t_ms=_comment_time(self._comments),
            retry_ms=self._retry,
            comments=self._comments,
            line=self._first_line,
        )
        self._reset_event()
        return [ev]


def _stamped(events: list[SseEvent], t_ms: float | None) -> list[SseEvent]:
    if t_ms is not None:
        for ev in events:
            ev.t_ms = t_ms
    return events


def parse_sse(text: str | bytes) -> list[SseEvent]:
    """All events of a complete SSE body (a string or bytes)."""
    parser = SseParser()
    events = parser.feed(text)
    events.extend(parser.close())
    return events


def format_capture_event(t_ms: float | None, data: str, event: str | None = None) -> str:
    """One event of a timed capture: the `: t_ms=` comment, `event:`, `data:` lines, blank."""
    lines = [f": {CAPTURE_TIME_KEY}{'null' if t_ms is None else f'{t_ms:.3f}'}"]
    if event is not None:
        lines.append(f"event: {event}")
    lines.extend(f"data: {part}" for part in data.split("\n"))
    return "\n".join(lines) + "\n\n"


def format_capture(events: Iterable[SseEvent]) -> str:
    """A timed capture of `events` (the live recorder's `.sse` sidecar): each event preceded
    by its `: t_ms=` comment, so `parse_sse` reads the same events and times back."""
    return "".join(format_capture_event(ev.t_ms, ev.data, ev.event) for ev in events)
