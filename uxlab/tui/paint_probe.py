"""Per-chunk paint instrumentation: when each chunk's frame was queued and flushed.

Three moments are measured for every chunk, all on the player's clock:

- *applied*: the chunk was given to the view (the view marks itself dirty);
- *queued*: Textual composed a frame and queued it for output (`App.post_display_hook`).
  A chunk applied before frame k is composed is in frame k (one event loop, so there is
  no race);
- *flushed*: the bytes of that frame left for the terminal. Textual writes through a
  writer thread that flushes only when its queue is empty, so the probe wraps the
  driver's output file: the writer thread counts writes and timestamps each flush into a
  thread-safe deque; the event loop side matches frames to flushes by write count. Only
  the deque crosses threads; no widget is touched off the loop.

Headless runs (`App.run_test`) have no terminal: `flushed` stays None there.

Use: ``probe = PaintProbe(clock); probe.attach(app)`` before ``app.run()``; then play
through ``ProbedSink(view, probe)``, which the `Player` reads paint times from.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections import deque
from typing import IO, Any

from textual.app import App
from textual.drivers.linux_driver import LinuxDriver

from uxlab.clock import Clock, MonotonicClock
from uxlab.streams.recording import Chunk, End, ErrorEvent, Meta

_NO_BYTES = -1.0
"""Marker: a frame that wrote nothing (its chunks changed nothing visible)."""


class PaintProbe:
    """Maps applied chunks to frames and frames to their queue and flush times."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.has_terminal = False
        """True once the output file is wrapped (a real terminal run)."""
        self.frames_queued_ms: list[float] = []
        self._frame_writes: list[int] = []
        self._frame_flushed_ms: list[float | None] = []
        self._flushes: deque[tuple[int, float]] = deque()
        self._flush_writes: list[int] = []
        self._flush_ms: list[float] = []
        self._writes_enqueued = 0
        self._unresolved_from = 0
        self._pending: list[int] = []
        self.frame_of: dict[int, int] = {}
        """Chunk index -> frame number, for the current stream."""
        self.applied_ms: dict[int, float] = {}

    # -- wiring --------------------------------------------------------------------------
    def attach(self, app: App[Any]) -> None:
        """Hook `app`'s frame hook and, on a Linux terminal, its output file. Before run."""
        app.paint_probe = self  # type: ignore[attr-defined]
        original_hook = app.post_display_hook

        def post_display_hook() -> None:
            original_hook()
            self.frame_queued()

        app.post_display_hook = post_display_hook  # type: ignore[method-assign]
        if app.driver_class is LinuxDriver:
            app.driver_class = FlushTimedLinuxDriver

    def wrap_output(self, file: IO[str]) -> IO[str]:
        """The driver's output file, with flushes timestamped (called by the driver)."""
        self.has_terminal = True
        return _FlushTimedFile(file, self)  # type: ignore[return-value]

    # -- event loop side -----------------------------------------------------------------
    def new_stream(self) -> None:
        """Forget chunk indices of the previous stream (frames keep their numbers)."""
        self._pending.clear()
        self.frame_of = {}
        self.applied_ms = {}

    def applied(self, index: int) -> None:
        """Chunk `index` was just given to the view."""
        self.applied_ms[index] = self.clock.now_ms()
        self._pending.append(index)

    def write_enqueued(self) -> None:
        """The driver handed one more write to its writer thread."""
        self._writes_enqueued += 1

    def frame_queued(self) -> None:
        """A frame was composed and queued (from `App.post_display_hook`)."""
        frame = len(self.frames_queued_ms)
        self.frames_queued_ms.append(self.clock.now_ms())
        previous = self._frame_writes[-1] if self._frame_writes else 0
        self._frame_writes.append(self._writes_enqueued)
        no_bytes = not self.has_terminal or self._writes_enqueued == previous
        self._frame_flushed_ms.append(_NO_BYTES if no_bytes else None)
        for index in self._pending:
            self.frame_of[index] = frame
        self._pending.clear()

    def _resolve_flushes(self) -> None:
        while self._flushes:
            writes, t_ms = self._flushes.popleft()
            self._flush_writes.append(writes)
            self._flush_ms.append(t_ms)
        frame = self._unresolved_from
        while frame < len(self._frame_flushed_ms):
            if self._frame_flushed_ms[frame] is None:
                k = bisect.bisect_left(self._flush_writes, self._frame_writes[frame])
                if k == len(self._flush_writes):
                    break  # this frame and later ones are not flushed yet
                self._frame_flushed_ms[frame] = self._flush_ms[k]
            frame += 1
        self._unresolved_from = frame

    def paint_times_ms(self) -> dict[int, tuple[float | None, float | None]]:
        """Chunk index -> (frame queued, bytes flushed), absolute ms on the clock."""
        self._resolve_flushes()
        times: dict[int, tuple[float | None, float | None]] = {}
        for index, frame in self.frame_of.items():
            flushed = self._frame_flushed_ms[frame]
            times[index] = (
                self.frames_queued_ms[frame],
                None if flushed in (None, _NO_BYTES) else flushed,
            )
        return times

    def painted(self, index: int) -> bool:
        """True when chunk `index` and every chunk before it are queued (and flushed)."""
        if any(i <= index for i in self._pending):
            return False
        frames = [f for i, f in self.frame_of.items() if i <= index]
        if not frames:
            return True
        self._resolve_flushes()
        return self._frame_flushed_ms[max(frames)] is not None

    async def wait_painted(self, index: int, timeout_ms: float) -> bool:
        """Wait (polling every 2 ms) until `painted(index)`; False after `timeout_ms`."""
        give_up = time.monotonic() + timeout_ms / 1000.0
        while not self.painted(index):
            if time.monotonic() > give_up:
                return False
            await asyncio.sleep(0.002)
        return True


class _FlushTimedFile:
    """The writer thread's output file: counts writes, timestamps flushes (thread side)."""

    def __init__(self, file: IO[str], probe: PaintProbe) -> None:
        self._file = file
        self._probe = probe
        self._writes = 0

    def write(self, text: str) -> int:
        self._writes += 1
        return self._file.write(text)

    def flush(self) -> None:
        self._file.flush()
        # deque.append is atomic: the only thing that crosses from this thread.
        self._probe._flushes.append((self._writes, self._probe.clock.now_ms()))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


class FlushTimedLinuxDriver(LinuxDriver):
    """Textual's Linux driver with the output file wrapped by the app's `PaintProbe`."""

    def __init__(self, app: App[Any], **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._paint_probe: PaintProbe | None = getattr(app, "paint_probe", None)
        if self._paint_probe is not None:
            self._file = self._paint_probe.wrap_output(self._file)

    def write(self, data: str) -> None:
        super().write(data)
        if self._paint_probe is not None:
            self._paint_probe.write_enqueued()


class ProbedSink:
    """A player sink that shows chunks in a view and reports their paint times."""

    def __init__(self, view: Any, probe: PaintProbe) -> None:
        self.view = view
        self.probe = probe
        probe.new_stream()
        # A view that feeds a large chunk in pieces says when its last piece goes in: the
        # chunk's frame is the one that completes it (`uxlab.tui.stream_view`).
        self._view_reports_fed = hasattr(view, "on_chunk_fed")
        if self._view_reports_fed:
            view.on_chunk_fed = probe.applied

    def apply(self, index: int, chunk: Chunk) -> None:
        if chunk.text and not self._view_reports_fed:
            self.probe.applied(index)  # first: the view may paint the frame before it returns
        self.view.apply(index, chunk)

    def apply_meta(self, meta: Meta) -> None:
        apply_meta = getattr(self.view, "apply_meta", None)
        if apply_meta is not None:
            apply_meta(meta)

    def finish(self, end: End | None, error: ErrorEvent | None) -> None:
        self.view.finish(end, error)

    def cancel(self) -> None:
        self.view.cancel()

    def paint_times_ms(self) -> dict[int, tuple[float | None, float | None]]:
        return self.probe.paint_times_ms()

    async def wait_painted(self, index: int, timeout_ms: float) -> bool:
        give_up = time.monotonic() + timeout_ms / 1000.0
        while getattr(self.view, "backlog_chars", 0):  # a large chunk still being fed
            if time.monotonic() > give_up:
                return False
            await asyncio.sleep(0.002)
        left_ms = max(0.0, (give_up - time.monotonic()) * 1000.0)
        return await self.probe.wait_painted(index, left_ms)
