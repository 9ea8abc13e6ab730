"""The frame marker: a frame number written as the colour of one cell, and read back.

After each frame that holds chunks, the app writes one space with a 24-bit background
colour into the bottom-right cell (`marker_bytes`), after the frame's own bytes, so the
emulator paints it with (or after) that frame's text. The colour keeps a fixed high nibble
per channel and carries the frame number's low 12 bits in the low nibbles: a dark grey that
changes by at most 15 levels per channel, barely visible, and decoded exactly from the
window's pixels (`frame_of_pixel`). `LOCATOR` is a colour no frame number takes: the app
paints it first so the probe can find the cell in the window.

`FrameUnwrapper` restores full frame numbers from the 12 bits, given that frames are
reported in order and never more than `MODULUS // 2` frames apart.
"""

from __future__ import annotations

MODULUS = 4096
"""Frame numbers are carried modulo this (12 bits: a low nibble per channel)."""
BASE = (0x20, 0x20, 0x20)
"""The high nibbles every frame colour keeps (a dark grey)."""
LOCATOR = (0x30, 0x20, 0x30)
"""The colour that shows where the marker cell is (outside every frame colour)."""


def frame_colour(frame: int) -> tuple[int, int, int]:
    """The marker's RGB for `frame` (its low 12 bits)."""
    n = frame % MODULUS
    return (BASE[0] | (n >> 8) & 0xF, BASE[1] | (n >> 4) & 0xF, BASE[2] | n & 0xF)


def frame_of_pixel(rgb: tuple[int, int, int]) -> int | None:
    """The frame number (mod `MODULUS`) a marker pixel shows; None when it is no marker."""
    r, g, b = rgb
    if (r & 0xF0, g & 0xF0, b & 0xF0) != BASE:
        return None
    return (r & 0xF) << 8 | (g & 0xF) << 4 | (b & 0xF)


def _cell_bytes(rgb: tuple[int, int, int], rows: int, cols: int) -> str:
    r, g, b = rgb
    # Save the cursor and attributes, paint one space at the bottom-right, restore both.
    return f"\x1b7\x1b[{rows};{cols}H\x1b[48;2;{r};{g};{b}m \x1b[0m\x1b8"


def marker_bytes(frame: int, rows: int, cols: int) -> str:
    """What the app writes after frame `frame` on a `cols` x `rows` screen."""
    return _cell_bytes(frame_colour(frame), rows, cols)


def locator_bytes(rows: int, cols: int) -> str:
    """The cell painted in `LOCATOR`, so the probe can find it."""
    return _cell_bytes(LOCATOR, rows, cols)


class FrameUnwrapper:
    """Full frame numbers from reported ones modulo `MODULUS` (see the module docstring)."""

    def __init__(self, start: int = 0) -> None:
        self.last = start
        """The newest full frame number seen (or the start)."""

    def unwrap(self, low: int) -> int:
        """The full frame number closest to the last one that has these low bits."""
        base = self.last - self.last % MODULUS + low
        if base < self.last - MODULUS // 2:
            base += MODULUS
        elif base > self.last + MODULUS // 2:
            base -= MODULUS
        self.last = max(self.last, base)
        return base
