"""Paint marks for a browser-hosted study: after each frame that holds a trial's chunks, the
app writes a `uxlab.paint_marks.PaintMark` to the terminal (through the driver, so it
follows the frame's bytes in the same stream). Only `uxlab host` turns this on.
"""

from __future__ import annotations

from typing import Any

from uxlab.paint_marks import PaintMark


def enable_paint_marks(app: Any) -> None:
    """Write a paint mark after every frame of `app` (a `StudyApp`) that holds chunks.

    Call after the app's `PaintProbe` is attached (in its constructor), before it runs.
    """
    probe = app.probe
    frame_hook = app.post_display_hook  # the probe's: it assigns pending chunks to the frame

    def post_display_hook() -> None:
        pending = list(probe._pending)
        frame_hook()
        run = getattr(app, "current_run", None)
        session = getattr(app, "session", None)
        driver = getattr(app, "_driver", None)
        if not pending or run is None or run.t0_ms is None or session is None or driver is None:
            return
        mark = PaintMark(
            session_id=session.session.id,
            trial_index=run.trial.index,
            first_chunk=min(pending),
            last_chunk=max(pending),
            t0_ms=run.t0_ms,
            queued_ms=probe.frames_queued_ms[-1],
        )
        driver.write(mark.encode())

    app.post_display_hook = post_display_hook
