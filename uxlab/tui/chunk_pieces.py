"""Large chunks fed to the screen in bounded pieces, one per event-loop turn.

A chunk of a megabyte fed at once blocks the loop while it is wrapped: keys (the abandon
key) wait behind it. `ChunkPieces` queues such a chunk as pieces and feeds one per loop
turn; chunks arriving behind it queue too (order is kept), and a `finish` that comes
while pieces are queued runs after the last of them. Without a running loop (a plain
call), everything is fed at once.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from uxlab.streams.recording import End, ErrorEvent

Feed = Callable[[str, str, "int | None"], None]
"""(text, channel, the chunk's index on its last piece, else None) -> None."""
Finish = Callable[["End | None", "ErrorEvent | None"], None]


class ChunkPieces:
    """The queue of pieces not yet fed, and the loop turns that feed them."""

    def __init__(self, feed: Feed, finish: Finish, piece_chars: int) -> None:
        self._feed = feed
        self._finish = finish
        self.piece_chars = piece_chars
        self._queue: deque[tuple[str, str, int | None]] = deque()
        """Pieces not yet fed: (text, channel, index on the last piece)."""
        self._handle: asyncio.Handle | None = None
        self._finish_after: tuple[End | None, ErrorEvent | None] | None = None

    def __bool__(self) -> bool:
        return bool(self._queue)

    @property
    def chars(self) -> int:
        """Characters queued but not fed yet."""
        return sum(len(piece) for piece, _, _ in self._queue)

    def feeds_at_once(self, text: str) -> bool:
        """Whether a chunk of `text` may be fed now (short, and nothing queued before it)."""
        return not self._queue and len(text) <= self.piece_chars

    def offer(self, text: str, channel: str, index: int) -> None:
        """Feed chunk `index` now when it may be (`feeds_at_once`), else queue it in pieces."""
        if self.feeds_at_once(text):
            self._feed(text, channel, index)
        else:
            self.add(text, channel, index)

    def add(self, text: str, channel: str, index: int) -> None:
        """Queue chunk `index` as pieces and start feeding them."""
        size = self.piece_chars
        pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
        last = len(pieces) - 1
        for n, piece in enumerate(pieces):
            self._queue.append((piece, channel, index if n == last else None))
        self._schedule()

    def finish_after(self, end: End | None, error: ErrorEvent | None) -> None:
        """Run the view's `finish(end, error)` once the last queued piece is fed."""
        self._finish_after = (end, error)

    def feed_one(self) -> None:
        """One piece per loop turn: whatever else is ready (a key) runs in between."""
        self._handle = None
        if self._queue:
            self._feed(*self._queue.popleft())
        if self._queue:
            self._schedule()
        else:
            self._run_finish()

    def drop(self) -> None:
        """Forget the queued pieces (they were never on screen) and a pending finish."""
        self._queue.clear()
        self._finish_after = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule(self) -> None:
        if self._handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a plain call): feed everything now
            while self._queue:
                self._feed(*self._queue.popleft())
            self._run_finish()
            return
        self._handle = loop.call_soon(self.feed_one)

    def _run_finish(self) -> None:
        pending, self._finish_after = self._finish_after, None
        if pending is not None:
            self._finish(*pending)
