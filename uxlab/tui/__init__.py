"""The Textual terminal client. The only package of uxlab that imports `textual`.

Importing this package sets Textual's frame cap *before* Textual is imported: Textual reads
``TEXTUAL_FPS`` once, at import, and its default of 60 frames per second turns a 10 ms vs
30 ms token schedule into ~16 vs ~24 ms on screen. uxlab asks for 240 unless
``UXLAB_FPS`` (or ``uxlab replay --fps``) says otherwise. `frame_cap()` reports the cap
actually in force, which every session records.
"""

from __future__ import annotations

import os
import sys

from uxlab.errors import UxlabError

DEFAULT_FPS = 240
"""The frame cap uxlab asks for (frames per second)."""


class FrameCapError(UxlabError):
    """A frame cap that is not a positive whole number."""


def _parse_fps(value: str, where: str) -> int:
    try:
        fps = int(value)
    except ValueError:
        fps = 0
    if fps < 1:
        raise FrameCapError(f"{where}={value!r}: the frame cap must be a whole number >= 1")
    return fps


def requested_frame_cap() -> int:
    """The cap uxlab asks for: ``UXLAB_FPS`` if set, else ``TEXTUAL_FPS`` if set, else 240."""
    if os.environ.get("UXLAB_FPS"):
        return _parse_fps(os.environ["UXLAB_FPS"], "UXLAB_FPS")
    if os.environ.get("TEXTUAL_FPS"):
        return _parse_fps(os.environ["TEXTUAL_FPS"], "TEXTUAL_FPS")
    return DEFAULT_FPS


def frame_cap() -> int:
    """The frame cap Textual runs with in this process (what a session must record)."""
    from textual import constants

    return int(constants.MAX_FPS)


def _apply_frame_cap() -> None:
    if "textual" in sys.modules:
        return  # too late to change: frame_cap() reports what is in force
    fps = requested_frame_cap()
    if os.environ.get("UXLAB_FPS"):
        os.environ["TEXTUAL_FPS"] = str(fps)
    else:
        os.environ.setdefault("TEXTUAL_FPS", str(fps))


_apply_frame_cap()
