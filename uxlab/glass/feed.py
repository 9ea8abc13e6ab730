"""The app's side of the glass probe: start it, read what it saw, hand out repaints.

`GlassFeed.start(window_id)` starts `python -m uxlab.glass.probe` on the app's own terminal
window and reads its lines in a thread (only a deque and two events cross threads; nothing
touches the app from there). `repaints()` unwraps the probe's 12-bit marker numbers into
full ones (`marker.FrameUnwrapper`) in the order they came: the app numbers its markers
1, 2, 3, ... (one per frame that holds chunks), so consecutive markers never wrap apart.
The probe's standard input is a pipe the feed holds: when the app exits, the probe sees it
close and ends too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import deque
from typing import IO

from uxlab.glass.marker import FrameUnwrapper
from uxlab.glass.matching import Repaint

LAG_WARN_MS = 2.0
"""A probe that read a drawing later than this after it was behind (a busy machine)."""
READY_TIMEOUT_S = 10.0
"""How long `wait_ready` waits for the probe to find the marker cell by default."""


class GlassFeed:
    """A running glass probe and the repaints it reported (see the module docstring)."""

    def __init__(self, lines: IO[str], process: subprocess.Popen[str] | None = None) -> None:
        self._process = process
        self._lines = lines
        self._raw: deque[tuple[float, int, float]] = deque()
        self._unwrap = FrameUnwrapper()
        self._repaints: list[Repaint] = []
        self.ready = threading.Event()
        """Set while the probe knows where the marker cell is."""
        self.ended = threading.Event()
        self.error: str | None = None
        """Why the probe stopped, in its words (None while it runs or after a clean end)."""
        self.cell: tuple[int, int] | None = None
        self.emulator: str | None = None
        """The terminal emulator's X class name (`XTerm`, `Alacritty`, `kitty`)."""
        self.losses = 0
        """How many times the window was resized (and the cell looked for again)."""
        self._thread = threading.Thread(target=self._read, name="uxlab-glass", daemon=True)
        self._thread.start()

    @classmethod
    def start(cls, window_id: int, env: dict[str, str] | None = None) -> GlassFeed:
        """Start the probe on X window `window_id` (the display is the environment's)."""
        process = subprocess.Popen(
            [sys.executable, "-m", "uxlab.glass.probe", "--window", str(window_id)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env if env is not None else dict(os.environ),
        )
        assert process.stdout is not None
        return cls(process.stdout, process)

    # -- the reader thread -------------------------------------------------------------------
    def _read(self) -> None:
        try:
            for line in self._lines:
                self._take(line.strip())
        except (OSError, ValueError):
            pass
        finally:
            self.ready.clear()
            self.ended.set()

    def _take(self, line: str) -> None:
        head, _, rest = line.partition(" ")
        if head == "window":
            self.emulator = rest or None
        elif head == "ready":
            x, y = rest.split()
            self.cell = (int(x), int(y))
            self.ready.set()
        elif head == "lost":
            self.ready.clear()
            self.losses += 1
        elif head == "error":
            self.error = rest or "the glass probe failed"
        else:
            fields = rest.split()
            try:
                t_ms, frame = float(head), int(fields[0])
                lag_ms = float(fields[1]) if len(fields) > 1 else 0.0
            except (ValueError, IndexError):
                return
            self._raw.append((t_ms, frame, lag_ms))  # deque.append: atomic across threads

    # -- the app's side -----------------------------------------------------------------------
    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> bool:
        """Block until the probe found the marker cell (False on timeout or if it ended)."""
        return self.ready.wait(timeout_s)

    def repaints(self) -> list[Repaint]:
        """Every repaint reported so far, with full frame numbers, oldest first."""
        while self._raw:
            t_ms, low, lag_ms = self._raw.popleft()
            self._repaints.append(Repaint(t_ms, self._unwrap.unwrap(low), lag_ms))
        return self._repaints

    def describe(self) -> dict[str, object]:
        """What a session's environment keeps of the probe, with how often it fell behind
        (read a drawing more than `LAG_WARN_MS` after it: its times there are less exact)."""
        repaints = self.repaints()
        behind = sum(1 for r in repaints if r.lag_ms > LAG_WARN_MS)
        return {
            "probe": "x11-damage",
            "emulator": self.emulator,
            "cell_px": self.cell,
            "resized": self.losses,
            "error": self.error,
            "repaints": len(repaints),
            "probe_behind_share": round(behind / len(repaints), 4) if repaints else None,
        }

    def close(self) -> None:
        """Stop the probe (closing its input ends it; killed if it lingers)."""
        process = self._process
        if process is None:
            return
        self._process = None
        try:
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=2.0)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
