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

Headless runs (`App.run_test`) have no terminal: `flushed` stays None there. A frame's
flush is timed when the writer thread starts writing the frame's own bytes (the first
write after the frame before it; `_FlushTimedFile`), so nothing of it can be painted
before it, and it is never before the chunks it holds were handed out: the writer thread
writes several queued frames before one flush, and timing every frame of such a batch at
the batch's first write put a frame out before its chunk existed.

A fourth moment, *painted at the glass*, is measured when the app runs in an X terminal
window with a glass probe (`start_glass`, `uxlab.glass`): every frame that holds chunks
ends with a marker cell numbered 1, 2, 3, ... (written before the frame's end-of-update
sequence, so a terminal with synchronized output paints both together), the probe process
reports each repaint and the marker it showed, and `painted_times_ms` matches them.

Use: ``probe = PaintProbe(clock); probe.attach(app)`` before ``app.run()``; then play
through ``ProbedSink(view, probe)``, which the `Player` reads paint times from.
`frame_listeners` are told of each frame and the chunks it holds (the browser host's paint
marks use it).
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections import deque
from collections.abc import Callable
from typing import IO, Any

from textual.app import App
from textual.drivers.linux_driver import LinuxDriver

from uxlab.clock import Clock, MonotonicClock
from uxlab.glass.feed import GlassFeed
from uxlab.glass.marker import locator_bytes, marker_bytes
from uxlab.glass.matching import GlassPaint, frame_paints
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
        self._write_starts: deque[float] = deque()
        """When the writer thread began each write, in order (write n at n - 1)."""
        self._write_start_ms: list[float] = []
        self._writes_enqueued = 0
        self._unresolved_from = 0
        self._pending: list[int] = []
        self.frame_of: dict[int, int] = {}
        """Chunk index -> frame number, for the current stream."""
        self.applied_ms: dict[int, float] = {}
        self.frame_listeners: list[Callable[[int, list[int]], None]] = []
        """Called with (frame number, chunk indices) after each frame is queued."""
        self.glass: GlassFeed | None = None
        """The glass probe's repaints, when one runs (`start_glass`)."""
        self._app: App[Any] | None = None
        self._marker_of_frame: dict[int, int] = {}
        self._markers = 0

    # -- wiring --------------------------------------------------------------------------
    def attach(self, app: App[Any]) -> None:
        """Hook `app`'s frame hook and, on a Linux terminal, its output file. Before run."""
        app.paint_probe = self  # type: ignore[attr-defined]
        self._app = app
        original_end = app._end_update

        def end_update() -> None:
            self._write_marker()  # inside the frame's synchronized update, when there is one
            original_end()

        app._end_update = end_update  # type: ignore[method-assign]
        original_hook = app.post_display_hook

        def post_display_hook() -> None:
            original_hook()
            self.frame_queued()

        app.post_display_hook = post_display_hook  # type: ignore[method-assign]
        if app.driver_class is LinuxDriver:
            app.driver_class = FlushTimedLinuxDriver

    def start_glass(self, feed: GlassFeed) -> None:
        """Mark every frame with chunks for `feed`'s probe, and show it the marker cell (on
        the app's loop, while the probe is looking for it: at start and after a resize)."""
        self.glass = feed
        if self._app is not None:
            self._app.set_interval(0.1, self._show_locator)
            self._show_locator()

    def _show_locator(self) -> None:
        driver = getattr(self._app, "_driver", None)
        if self.glass is None or self.glass.ready.is_set() or driver is None:
            return
        size = self._app.size if self._app is not None else None
        if size is not None and size.width and size.height:
            driver.write(locator_bytes(size.height, size.width))

    def _write_marker(self) -> None:
        """Before a frame with chunks ends: its marker (numbered in frame order)."""
        app, feed = self._app, self.glass
        driver = getattr(app, "_driver", None)
        if feed is None or app is None or driver is None or not self._pending:
            return
        self._markers += 1
        self._marker_of_frame[len(self.frames_queued_ms)] = self._markers  # this frame's number
        driver.write(marker_bytes(self._markers, app.size.height, app.size.width))

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
        chunks = list(self._pending)
        for index in chunks:
            self.frame_of[index] = frame
        self._pending.clear()
        for listener in self.frame_listeners:
            listener(frame, chunks)

    def _resolve_flushes(self) -> None:
        while self._flushes:  # first: a flush drained here has its writes' starts below
            writes, t_ms = self._flushes.popleft()
            self._flush_writes.append(writes)
            self._flush_ms.append(t_ms)
        while self._write_starts:
            self._write_start_ms.append(self._write_starts.popleft())
        frame = self._unresolved_from
        while frame < len(self._frame_flushed_ms):
            if self._frame_flushed_ms[frame] is None:
                k = bisect.bisect_left(self._flush_writes, self._frame_writes[frame])
                if k == len(self._flush_writes):
                    break  # this frame and later ones are not flushed yet
                # the frame's own first write: the first after the frame before it (or the
                # batch's first write, when that is later: no byte left before either)
                first = self._frame_writes[frame - 1] if frame > 0 else 0
                own = self._write_start_ms[first] if first < len(self._write_start_ms) else 0.0
                self._frame_flushed_ms[frame] = max(self._flush_ms[k], own)
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

    def glass_paints(self) -> dict[int, GlassPaint]:
        """Chunk index -> when the glass showed its frame (absolute ms) and whether that
        repaint also showed a later frame, for the chunks the probe saw (empty without one)."""
        if self.glass is None:
            return {}
        frames = set(self.frame_of.values())
        markers = {f: m for f, m in self._marker_of_frame.items() if f in frames}
        paints = frame_paints(sorted(markers.values()), self.glass.repaints())
        return {
            index: paints[markers[frame]]
            for index, frame in self.frame_of.items()
            if frame in markers and markers[frame] in paints
        }

    def glass_seen(self, index: int) -> bool:
        """True when the glass probe saw chunk `index`'s frame painted (or cannot: no probe,
        no marker for it, or the probe is not watching the marker cell)."""
        glass = self.glass
        frame = self.frame_of.get(index)
        if glass is None or frame is None or frame not in self._marker_of_frame:
            return True
        if not glass.ready.is_set():
            return True
        repaints = glass.repaints()
        return (
            bool(repaints) and max(r.frame for r in repaints[-8:]) >= self._marker_of_frame[frame]
        )

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
    """The writer thread's output file: counts writes, times each write's start and each
    flush (thread side).

    A flush is timed at the start of the first write since the flush before it, and every
    write at its own start: a write can already push bytes to the terminal (a full buffer,
    a large frame), so a frame's first write is the earliest moment any of its bytes could
    reach the screen (`PaintProbe._resolve_flushes` takes the later of the two).
    """

    def __init__(self, file: IO[str], probe: PaintProbe) -> None:
        self._file = file
        self._probe = probe
        self._writes = 0
        self._batch_ms: float | None = None

    def write(self, text: str) -> int:
        t_ms = self._probe.clock.now_ms()
        if self._batch_ms is None:
            self._batch_ms = t_ms
        self._writes += 1
        self._probe._write_starts.append(t_ms)  # atomic, as the flushes' deque
        return self._file.write(text)

    def flush(self) -> None:
        t_ms = self._batch_ms if self._batch_ms is not None else self._probe.clock.now_ms()
        self._batch_ms = None
        self._file.flush()
        # deque.append is atomic: the only thing that crosses from this thread.
        self._probe._flushes.append((self._writes, t_ms))

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

    def glass_paints(self) -> dict[int, GlassPaint]:
        return self.probe.glass_paints()

    async def wait_glass(self, index: int, timeout_ms: float) -> bool:
        """Wait until the glass probe has reported chunk `index`'s frame (False on timeout)."""
        give_up = time.monotonic() + timeout_ms / 1000.0
        while not self.probe.glass_seen(index):
            if time.monotonic() > give_up:
                return False
            await asyncio.sleep(0.005)
        return True

    async def wait_painted(self, index: int, timeout_ms: float) -> bool:
        give_up = time.monotonic() + timeout_ms / 1000.0
        while getattr(self.view, "backlog_chars", 0):  # a large chunk still being fed
            if time.monotonic() > give_up:
                return False
            await asyncio.sleep(0.002)
        left_ms = max(0.0, (give_up - time.monotonic()) * 1000.0)
        if not await self.probe.wait_painted(index, left_ms):
            return False
        while not self.probe.glass_seen(index):  # the probe's report follows the repaint
            if time.monotonic() > give_up:
                return False
            await asyncio.sleep(0.002)
        return True
