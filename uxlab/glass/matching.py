"""Painted times per chunk from the repaints a glass probe saw.

A *repaint* is (when the window's pixels changed, the frame number its marker showed).
Frames are numbered in the order they were written, and the marker always shows the newest
frame the emulator has painted, so frame `k` reached the glass at the first repaint showing
a frame number of at least `k` (and not before the frame's bytes were flushed). When that
repaint shows a later frame, frame `k` was never on screen alone: its chunks *shared a
repaint* with the later frame's (the emulator batched them).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Repaint:
    """One repaint of the window: when (ms, the player's clock) and the frame it showed."""

    t_ms: float
    frame: int
    lag_ms: float = 0.0
    """How long after the drawing the probe read it (a busy machine holds the probe up)."""


@dataclass(frozen=True)
class GlassPaint:
    """When a frame reached the glass, and whether it shared that repaint with a later one."""

    painted_ms: float
    shown_frame: int
    shared: bool


def frame_paints(
    frames: Sequence[int],
    repaints: Sequence[Repaint],
    flushed_ms: Mapping[int, float] | None = None,
) -> dict[int, GlassPaint]:
    """Frame number -> its paint at the glass, for each of `frames` that reached it.

    `repaints` in the order seen (times never decrease). A frame's paint is the first
    repaint at or after its flush (`flushed_ms`, when known) that shows that frame or a
    later one; frames no repaint shows are left out (not painted yet, or the probe lost
    the window).
    """
    times = [r.t_ms for r in repaints]
    # The newest frame shown so far, at each repaint: the marker never goes back, but a
    # stray pixel read (another window over it) must not pull the running maximum down.
    newest: list[int] = []
    top = -1
    for r in repaints:
        top = max(top, r.frame)
        newest.append(top)
    out: dict[int, GlassPaint] = {}
    for frame in frames:
        start = 0
        if flushed_ms is not None and frame in flushed_ms:
            start = bisect.bisect_left(times, flushed_ms[frame])
        j = bisect.bisect_left(newest, frame, lo=start)
        if j == len(repaints):
            continue
        shown = repaints[j].frame if repaints[j].frame >= frame else newest[j]
        out[frame] = GlassPaint(times[j], shown, shared=shown != frame)
    return out
