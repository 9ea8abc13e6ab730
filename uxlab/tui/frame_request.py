"""Paint a widget's change now: one frame per applied chunk, without the idle/timer path.

Textual paints a change in four hops: the widget goes idle and posts `Update` to its
screen, the screen goes idle and resumes its paused `screen_update` timer, and the timer
fires on its own 1/MAX_FPS grid (4.17 ms at 240 FPS), which composes and writes the
frame. The hops and the grid add their own delay and spread between a chunk and its frame
(docs/performance.md, "Direct frame request").

`request_frame(widget)` does what the timer tick would do, at once: it hands the widget's
pending scroll and repaint to its screen and runs the screen's update (layout when a scroll
needs it, compositor update, display). It steps aside, leaving the normal path to paint,
whenever anything else is pending that the tick would also handle (a layout, a recompose,
a batch, another screen on top), so a frame it paints is the frame the tick would have
painted, only sooner. At most one direct frame per frame period (`min_interval_ms`): the
frame cap still holds.

This reaches into Textual's private screen state (checked against Textual 8.2); when
those attributes are missing it does nothing and Textual paints as usual.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from textual import constants
from textual.dom import NoScreen

FRAME_PERIOD_MS = 1000.0 / constants.MAX_FPS


def direct_frames_wanted() -> bool:
    """False when ``UXLAB_DIRECT_FRAMES=0`` (the timing benchmark's A/B), else True."""
    return os.environ.get("UXLAB_DIRECT_FRAMES", "1").strip() not in ("0", "false", "no")


class FrameRequester:
    """Paints one widget's changes at once, at most once per frame period."""

    def __init__(
        self,
        min_interval_ms: float = FRAME_PERIOD_MS,
        now_ms: Callable[[], float] = lambda: time.perf_counter_ns() / 1e6,
    ) -> None:
        self.min_interval_ms = min_interval_ms
        self.now_ms = now_ms
        self.enabled = direct_frames_wanted()
        self._last_ms = float("-inf")
        self.painted = 0
        """Frames painted directly (the rest went the normal path)."""

    def request(self, widget: Any) -> bool:
        """Paint `widget`'s pending change now; False when the normal path will."""
        if not self.enabled:
            return False
        now = self.now_ms()
        if now - self._last_ms < self.min_interval_ms:
            return False
        if not paint_now(widget):
            return False
        self._last_ms = now
        self.painted += 1
        return True


def paint_now(widget: Any) -> bool:
    """Run `widget`'s screen update now (see the module docstring); False when it stepped
    aside."""
    try:
        if not widget.is_mounted or not widget.display:
            return False
        screen = widget.screen
        app = widget.app
        if (
            not screen.is_current
            or app._batch_count
            or app.is_inline
            or widget._layout_required
            or screen._layout_required
            or screen._recompose_required
            or not hasattr(screen, "_on_timer_update")
        ):
            return False
        if widget._scroll_required:  # e.g. the view followed its new bottom line
            widget._scroll_required = False
            screen._scroll_required = True
        widget._repaint_required = False
        screen._dirty_widgets.add(widget)
        screen._on_timer_update()
    except NoScreen:
        return False
    except AttributeError:  # another Textual: leave painting to it
        return False
    return True
