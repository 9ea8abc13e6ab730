"""Paint marks: a private escape sequence the study app writes after each frame that holds
chunks, so a browser page can say when that frame was painted.

The app (in a browser-hosted session only) writes ``OSC 7311 ; payload BEL`` right after a
frame's bytes. A terminal ignores an OSC it does not know; the host (`uxlab.host`) takes the
app's mark out of the byte stream, keeps its payload, and passes the page a short number in
its place, so a page can report only on marks it was sent. The payload says which chunks the
frame holds and when, on the player's clock (CLOCK_MONOTONIC, shared by every process of the
machine), the trial started and the frame was queued.
"""

from __future__ import annotations

from dataclasses import dataclass

OSC_NUMBER = 7311
"""The private OSC number of a paint mark (unassigned by xterm and the common terminals)."""
PREFIX = f"\x1b]{OSC_NUMBER};".encode()
END = b"\x07"


@dataclass(frozen=True)
class PaintMark:
    """One frame's chunks: session, trial, chunk range, and when (absolute ms)."""

    session_id: str
    trial_index: int
    first_chunk: int
    last_chunk: int
    t0_ms: float
    """The trial's send (absolute, player's clock): stored times are relative to it."""
    queued_ms: float
    """When the frame was queued for output (absolute, player's clock)."""

    def encode(self) -> str:
        """The escape sequence the app writes."""
        payload = (
            f"{self.session_id},{self.trial_index},{self.first_chunk},{self.last_chunk},"
            f"{self.t0_ms:.3f},{self.queued_ms:.3f}"
        )
        return f"\x1b]{OSC_NUMBER};{payload}\x07"

    @classmethod
    def decode(cls, payload: bytes) -> PaintMark | None:
        """A payload as written by `encode` (without the OSC framing), or None if malformed."""
        try:
            sid, trial, first, last, t0, queued = payload.decode("ascii").split(",")
            mark = cls(sid, int(trial), int(first), int(last), float(t0), float(queued))
        except (UnicodeDecodeError, ValueError):
            return None
        if not sid or mark.first_chunk < 0 or mark.last_chunk < mark.first_chunk:
            return None
        return mark


class MarkRewriter:
    """Takes paint marks out of a byte stream and puts a short number in their place.

    `feed(data)` returns the bytes to forward (a mark split across reads is held back until
    its end arrives) and the marks found, each with the number the page will see.
    """

    MAX_HELD = 4096
    """A mark start with no end after this many bytes is passed on as it is."""

    def __init__(self) -> None:
        self._held = b""
        self._next = 0

    def feed(self, data: bytes) -> tuple[bytes, list[tuple[int, PaintMark]]]:
        buf = self._held + data
        self._held = b""
        out: list[bytes] = []
        found: list[tuple[int, PaintMark]] = []
        pos = 0
        while True:
            start = buf.find(PREFIX, pos)
            if start < 0:
                tail = _partial_prefix_len(buf)
                keep = max(pos, len(buf) - tail)
                out.append(buf[pos:keep])
                self._held = buf[keep:]
                break
            end = buf.find(END, start + len(PREFIX))
            if end < 0:
                if len(buf) - start > self.MAX_HELD:
                    out.append(buf[pos:])
                else:
                    out.append(buf[pos:start])
                    self._held = buf[start:]
                break
            out.append(buf[pos:start])
            mark = PaintMark.decode(buf[start + len(PREFIX) : end])
            if mark is not None:
                number = self._next
                self._next += 1
                found.append((number, mark))
                out.append(PREFIX + str(number).encode() + END)
            pos = end + 1
        return b"".join(out), found


def _partial_prefix_len(buf: bytes) -> int:
    """How many bytes at the end of `buf` could begin a mark (0 when none)."""
    for n in range(min(len(PREFIX) - 1, len(buf)), 0, -1):
        if buf.endswith(PREFIX[:n]):
            return n
    return 0
