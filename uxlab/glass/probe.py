"""The glass probe: a small process that times every repaint of one X window.

    python -m uxlab.glass.probe --window WINDOW_ID

It opens its own connection to the X display (`DISPLAY`), finds the marker cell (the one
painted in `marker.LOCATOR`) in the window's pixels, subscribes to the DAMAGE extension on
the window with every drawn rectangle reported, and whenever a drawing covers the marker
cell notes the time on the monotonic clock the player uses (`time.perf_counter_ns`,
CLOCK_MONOTONIC on Linux, shared by every process of the machine) and reads the cell's
pixel back. The app writes a frame's marker after the frame's text, so the time is when the
whole frame was on the glass (a repaint elsewhere, e.g. of the text alone, is not taken for
the marker's). It writes one line per event to standard output:

- `window CLASS`: the window's (or its top-level parent's) WM_CLASS, e.g. `XTerm`, first;
- `ready X Y`: the marker cell was found at pixel (X, Y) of the window;
- `T FRAME LAG`: the marker of frame FRAME (mod `marker.MODULUS`) was on the glass at T ms,
  written only when the marker changed; LAG (ms) is how far behind the X server's own
  time-stamp of that drawing the probe saw it (a busy machine holds the probe up: below);
- `lost`: the window was resized: the cell is looked for again (`ready` follows);
- `error MESSAGE`: it cannot probe (it exits with status 2).

When several drawings are waiting at once (the probe was held up), the pixel is read after
all of them, and read again while more arrive, so the frame it shows belongs to the last
drawing, timed when the probe saw it: a painted time is never before the drawing, and later
than it by as long as the probe was held up; frames drawn in between are reported with it
(as sharing its repaint). The X server's own millisecond time-stamp of the drawing says how
far behind the probe was (LAG); it is not used as the time, because a server stamps events
with the time of the request it last dispatched, which can be older than the drawing.

A separate process, so its X protocol work never holds the app's event loop (it asks for a
higher priority, which only root gets); it ends when its standard input closes (the app went
away) or the window is destroyed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import sys
import time
from typing import Any

from uxlab.glass.marker import LOCATOR, frame_of_pixel

LOCATE_EVERY_S = 0.05
"""How often the whole window is searched for the locator while the cell is not found."""
READS = 5
"""Pixel reads per batch of drawings at most (read again while more drawings arrive)."""


def now_ms() -> float:
    return time.perf_counter_ns() / 1e6


class WindowProbe:
    """DAMAGE events and pixel reads on one window (python-xlib)."""

    def __init__(self, window_id: int, display_name: str | None = None) -> None:
        from Xlib import X, display
        from Xlib.error import DisplayError
        from Xlib.ext import damage

        self._X = X
        self._damage = damage
        try:
            self.display = display.Display(display_name)
        except DisplayError as exc:  # no server, or not allowed
            raise ProbeError(f"cannot open the X display {display_name or ''}: {exc}") from exc
        if not self.display.has_extension("DAMAGE"):
            raise ProbeError("the X server has no DAMAGE extension")
        self.display.damage_query_version()
        self.window = self.display.create_resource_object("window", window_id)
        try:
            self.window.change_attributes(event_mask=X.StructureNotifyMask)
            geometry = self.window.get_geometry()
        except Exception as exc:  # BadWindow and friends: python-xlib raises them here
            raise ProbeError(f"no X window {window_id:#x}: {exc}") from exc
        self.size = (geometry.width, geometry.height)
        self.damage = self.window.damage_create(damage.DamageReportRawRectangles)
        self.display.flush()
        self.cell: tuple[int, int] | None = None
        self.cell_size = (1, 1)
        """The marker cell's size in pixels (from the locator's extent)."""

    def window_class(self) -> str:
        """The emulator's WM_CLASS class name (from the window or a parent), or "unknown"."""
        window = self.window
        for _ in range(8):
            try:
                names = window.get_wm_class()
                if names:
                    return str(names[1] or names[0])
                parent = window.query_tree().parent
            except Exception:  # a window gone meanwhile: the name is only informative
                return "unknown"
            if not parent or parent.id == self.display.screen().root.id:
                return "unknown"
            window = parent
        return "unknown"

    def fileno(self) -> int:
        return int(self.display.fileno())

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        """The RGB of one pixel of the window (24-bit TrueColor, as X servers give today)."""
        image = self.window.get_image(x, y, 1, 1, self._X.ZPixmap, 0xFFFFFFFF)
        value = int.from_bytes(bytes(image.data[:4]).ljust(4, b"\0"), "little")
        return (value >> 16) & 0xFF, (value >> 8) & 0xFF, value & 0xFF

    def locate(self) -> tuple[int, int] | None:
        """The centre of the cell painted in `LOCATOR`, or None when it is not on screen."""
        import numpy as np

        width, height = self.size
        image = self.window.get_image(0, 0, width, height, self._X.ZPixmap, 0xFFFFFFFF)
        pixels = np.frombuffer(bytes(image.data), dtype="<u4")[: width * height]
        rgb = (LOCATOR[0] << 16) | (LOCATOR[1] << 8) | LOCATOR[2]
        hits = np.nonzero((pixels & 0xFFFFFF) == rgb)[0]
        if len(hits) == 0:
            return None
        ys, xs = np.divmod(hits, width)
        self.cell_size = (int(xs.max() - xs.min()) + 1, int(ys.max() - ys.min()) + 1)
        return int((xs.min() + xs.max()) // 2), int((ys.min() + ys.max()) // 2)

    def events(self) -> list[tuple[str, Any]]:
        """Events waiting now: ("damage", ((x, y, w, h), server ms)), ("resized", (w, h)),
        ("gone", None)."""
        out: list[tuple[str, Any]] = []
        notify = self.display.extension_event.DamageNotify
        while self.display.pending_events():
            event = self.display.next_event()
            if event.type == notify:
                area = event.area
                out.append(("damage", ((area.x, area.y, area.width, area.height), event.timestamp)))
            elif event.type == self._X.ConfigureNotify:
                size = (event.width, event.height)
                if size != self.size:
                    self.size = size
                    out.append(("resized", size))
            elif event.type == self._X.DestroyNotify:
                out.append(("gone", None))
        return out

    def covers_cell(self, area: tuple[int, int, int, int]) -> bool:
        """True when a drawn rectangle is the marker being drawn: it covers the cell's
        sampled pixel and is either about one cell (an emulator that draws runs of text,
        like xterm: a whole row drawn over the cell is the frame's text, not its marker,
        which is drawn after it) or the whole window (an OpenGL emulator's buffer swap, which
        shows the whole frame at once)."""
        if self.cell is None:
            return False
        x, y, w, h = area
        if not (x <= self.cell[0] < x + w and y <= self.cell[1] < y + h):
            return False
        cell_w, cell_h = self.cell_size
        one_cell = w <= 3 * cell_w and h <= 2 * cell_h
        width, height = self.size
        whole = w * h >= 0.9 * width * height
        return one_cell or whole


class ProbeError(Exception):
    """The probe cannot run (its message says why, in plain words)."""


def probe_lag_ms(seen_ms: float, server_stamp: int) -> float:
    """How long after the X server stamped a drawing (32-bit milliseconds on its monotonic
    clock, whole ms) the probe saw it; 0 when the stamp does not fit the probe's clock
    (another machine's server) or says the drawing came later."""
    whole = int(seen_ms)
    server_ms = whole - ((whole - server_stamp) & 0xFFFFFFFF)
    if not seen_ms - 10_000.0 <= server_ms <= seen_ms + 1.0:
        return 0.0
    return max(0.0, seen_ms - (server_ms + 1.0))


def run(window_id: int, out: Any = sys.stdout, stdin_fd: int | None = 0) -> int:
    """Probe `window_id` until the window or standard input goes away (see module doc)."""
    with contextlib.suppress(OSError):
        os.nice(-5)  # root only: a busy machine then delays the probe less
    try:
        probe = WindowProbe(window_id)
    except ProbeError as exc:
        out.write(f"error {exc}\n")
        out.flush()
        return 2
    out.write(f"window {probe.window_class()}\n")
    out.flush()
    last_frame: int | None = None
    next_locate = 0.0
    watch = [probe.fileno()] + ([stdin_fd] if stdin_fd is not None else [])
    carried: list[tuple[str, Any]] = []
    while True:
        if probe.cell is None and time.monotonic() >= next_locate:
            probe.cell = probe.locate()
            next_locate = time.monotonic() + LOCATE_EVERY_S
            if probe.cell is not None:
                out.write(f"ready {probe.cell[0]} {probe.cell[1]}\n")
                out.flush()
        events = carried + probe.events()  # some may have come in with the last pixel read
        seen_ms = now_ms()
        if not events:
            timeout = LOCATE_EVERY_S if probe.cell is None else None
            readable, _, _ = select.select(watch, [], [], timeout)
            if stdin_fd is not None and stdin_fd in readable and not os.read(stdin_fd, 4096):
                return 0  # the app closed our input: it is gone
            events = probe.events()
            seen_ms = now_ms()  # every drawing drained so far reached us before this instant
        last: tuple[float, float] | None = None  # (drawing ms, the probe's lag)
        for _ in range(READS):
            for kind, detail in events:
                if kind == "gone":
                    return 0
                if kind == "resized":
                    probe.cell, last_frame, last = None, None, None
                    out.write("lost\n")
                    out.flush()
                elif kind == "damage" and probe.covers_cell(detail[0]):
                    last = (seen_ms, probe_lag_ms(seen_ms, detail[1]))
            if last is None or probe.cell is None:
                events = []
                break
            frame = frame_of_pixel(probe.pixel(*probe.cell))
            events = probe.events()  # drawn while we read? then read again after them
            seen_ms = now_ms()
            if not events:
                if frame is not None and frame != last_frame:
                    last_frame = frame
                    out.write(f"{last[0]:.3f} {frame} {last[1]:.3f}\n")
                    out.flush()
                break
        carried = events  # still drawing after every read: taken up on the next turn
        probe.display.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--window", required=True, help="the X window id (decimal or 0x hex)")
    args = parser.parse_args(argv)
    try:
        return run(int(args.window, 0))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
