"""A terminal driver that survives its terminal going away (the window or tmux pane closed).

When the terminal hangs up, writes to it fail with EIO. Textual's writer thread then dies and
the next 30 queued writes block the app for good, and its input thread's failed read makes
the app panic: either way the study app never gets to commit what is on screen. This driver
drops output once the terminal is gone and turns a failed read, or the first failed write,
into `on_hangup` on the event loop, so the app quits as on Ctrl+Q (SIGHUP normally arrives
at the same moment and quits first; `HANGUP_GRACE_S` gives it the chance).

A failed write counts too because a program can lose its terminal with no SIGHUP and no
failed read: a study host killed while it started the program closes the terminal before
the program has made it its controlling terminal, so no SIGHUP is ever sent, and a read
then returns end-of-file, which Textual's input thread takes for piped input and polls
again at once. Such a program ran on for good, spinning a core and holding its
participant's session, so the participant could not resume it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TextIO

from uxlab.tui.paint_probe import FlushTimedLinuxDriver

HANGUP_GRACE_S = 0.5
"""How long after a failed read or write the app is told the terminal is gone (SIGHUP, when
one comes, comes first)."""


class _HangupSafeFile:
    """The terminal's file for the writer thread: once a write fails, later ones are dropped
    and `on_lost` is called (once, from the writer thread)."""

    def __init__(self, file: TextIO, on_lost: Callable[[], None] | None = None) -> None:
        self._file = file
        self.lost = False
        self._on_lost = on_lost

    def _lose(self) -> None:
        self.lost = True
        if self._on_lost is not None:
            on_lost, self._on_lost = self._on_lost, None
            on_lost()

    def write(self, text: str) -> None:
        if not self.lost:
            try:
                self._file.write(text)
            except OSError:
                self._lose()

    def flush(self) -> None:
        if not self.lost:
            try:
                self._file.flush()
            except OSError:
                self._lose()

    def fileno(self) -> int:
        return self._file.fileno()


class HangupSafeDriver(FlushTimedLinuxDriver):
    """`LinuxDriver` that keeps running, without a terminal, long enough to quit cleanly.

    It times flushes for the app's `PaintProbe` as `FlushTimedLinuxDriver` does (the study
    app replaces the Linux driver with this one before the probe is attached, so without it
    a study's chunks would have no flush times).
    """

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        try:
            self._hangup_loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # made outside the app's loop: failed reads end input quietly
            self._hangup_loop = None
        if self._file is not None:  # sys.__stderr__: None only without any terminal at all
            # textual types the writer's file as the stream it is by default (not a protocol)
            self._file = _HangupSafeFile(self._file, self._hung_up)  # type: ignore[assignment]

    def _hung_up(self) -> None:
        """Tell the app, from any thread, that its terminal is gone (after the grace)."""
        on_hangup = getattr(self._app, "on_hangup", None)
        if on_hangup is not None and self._hangup_loop is not None:
            with suppress(RuntimeError):  # the loop has closed: the app has ended anyway
                self._hangup_loop.call_soon_threadsafe(
                    self._hangup_loop.call_later, HANGUP_GRACE_S, on_hangup
                )

    def run_input_thread(self) -> None:
        try:
            super().run_input_thread()
        except OSError:  # the terminal is gone (EIO): no panic, the app quits cleanly
            self._hung_up()
