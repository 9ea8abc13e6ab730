"""The timing check on screen: the test schedule played in the study's own view.

`CalibrationScreen` looks like a trial (the same header, chat view and hint, the same
stylesheet) and plays `uxlab.timing_check.check_schedule` through the paint probe, so its
chunks go the same paint path as a trial's and their flushed lateness (and, with a glass
probe, their lateness at the glass) is measured exactly as a trial's is. `calibrate()`
pushes it, reads the machine around it and judges the play with
`uxlab.timing_check.judge_play`: the same tolerance the trials are flagged by.
`CalibrationApp` is the screen alone, for `uxlab check-timing`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol

from textual import work
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Static

from uxlab.clock import Clock, MonotonicClock
from uxlab.collector import CollectorPacing
from uxlab.glass.feed import GlassFeed
from uxlab.machine import cpu_times, machine_state, steal_share
from uxlab.player import PlaybackLog, Player
from uxlab.streams.recording import Recording
from uxlab.timing_check import (
    TEST_DURATION_MS,
    TimingCheck,
    check_schedule,
    judge_play,
    study_tolerance_for_check,
)
from uxlab.tui.paint_probe import PaintProbe, ProbedSink
from uxlab.tui.stream_view import StreamView

GLASS_READY_S = 10.0
"""How long the check waits for a glass probe to find its marker cell."""


class CalibrationScreen(Screen[PlaybackLog]):
    """For the researcher: the test schedule, played like a trial (see the module doc)."""

    def __init__(
        self,
        schedule: Recording,
        probe: PaintProbe,
        clock: Clock,
        collector: CollectorPacing | None = None,
    ) -> None:
        super().__init__()
        self.schedule = schedule
        self.probe = probe
        self.clock = clock
        self.collector = collector

    def compose(self) -> ComposeResult:
        end = self.schedule.end
        seconds = (end.t_ms or 0.0) / 1000.0 if end is not None else 0.0
        yield Static(f"Timing check (for the researcher) · {seconds:.0f} s", id="trial-header")
        yield StreamView(id="chat", markdown_on_finish=False)
        yield Static("Checking how faithfully this terminal shows a stream…", id="trial-hint")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(StreamView).start("timing check", waiting=False)
        self.call_after_refresh(self._play)

    @work(exclusive=True, group="calibration")
    async def _play(self) -> None:
        view = self.query_one(StreamView)
        player = Player(self.schedule, ProbedSink(view, self.probe), self.clock)
        if self.collector is not None:
            self.collector.hold()
        try:
            log = await player.play()
        finally:
            if self.collector is not None:
                self.collector.release()
        self.dismiss(log)


class Calibrated(Protocol):
    """What an app that plays the check has: its paint probe, clock, collector pacing and
    glass probe (the study app and `CalibrationApp`)."""

    probe: PaintProbe
    clock: MonotonicClock
    collector: CollectorPacing
    glass_feed: GlassFeed | None

    async def push_screen_wait(self, screen: Any) -> Any: ...


async def calibrate(
    app: Calibrated,
    study: Any,
    *,
    frame_cap_fps: int | None = None,
    multiplexer: str | None = None,
    duration_ms: float = TEST_DURATION_MS,
) -> TimingCheck:
    """Play the test schedule on `app`'s screen and judge it (see the module docstring)."""
    glass = app.glass_feed
    glass_note = None
    if glass is not None and not await asyncio.to_thread(glass.wait_ready, GLASS_READY_S):
        glass_note = "the glass probe " + (
            f"stopped: {glass.error}" if glass.error else "did not find its marker cell"
        )
    gap, _, _ = study_tolerance_for_check(study)
    before = cpu_times()
    screen = CalibrationScreen(
        check_schedule(gap, duration_ms), app.probe, app.clock, app.collector
    )
    log = await app.push_screen_wait(screen)
    stolen = steal_share(before, cpu_times())
    return judge_play(
        study,
        log,
        frame_cap_fps=frame_cap_fps,
        machine=machine_state(),
        steal=stolen,
        multiplexer=multiplexer,
        glass=None if glass is None else glass.describe(),
        glass_note=glass_note,
    )


class CalibrationApp(App[TimingCheck]):
    """`uxlab check-timing`: the on-screen check alone; returns its `TimingCheck`."""

    CSS_PATH = Path(__file__).with_name("uxlab.tcss")
    ENABLE_COMMAND_PALETTE = False

    def __init__(
        self,
        study: Any,
        *,
        glass: bool = False,
        frame_cap_fps: int | None = None,
        multiplexer: str | None = None,
        duration_ms: float = TEST_DURATION_MS,
    ) -> None:
        super().__init__()
        self.study = study
        self.clock = MonotonicClock()
        self.probe = PaintProbe(self.clock)
        self.probe.attach(self)
        self.collector = CollectorPacing()
        self.glass = glass
        self.glass_feed: GlassFeed | None = None
        self.frame_cap_fps = frame_cap_fps
        self.multiplexer = multiplexer
        self.duration_ms = duration_ms

    def compose(self) -> ComposeResult:
        yield Static("", id="blank")

    def on_mount(self) -> None:
        self.collector.settle()
        if self.glass:
            from uxlab.tui.glass_session import start_glass

            self.glass_feed = start_glass(self.probe)
        self._check()

    def on_unmount(self) -> None:
        if self.glass_feed is not None:
            self.glass_feed.close()

    @work(exclusive=True, group="check")
    async def _check(self) -> None:
        check = await calibrate(
            self,
            self.study,
            frame_cap_fps=self.frame_cap_fps,
            multiplexer=self.multiplexer,
            duration_ms=self.duration_ms,
        )
        self.exit(check)
