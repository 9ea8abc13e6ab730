"""`uxlab replay`: a researcher's free-play chat client over a corpus of recordings.

Pick a recording (`n` cycles the corpus), type a prompt (`/`) or keep the recorded one,
watch the shaped stream, replay it (`r`) or change the shaping settings (`s`), and compare
the measured TTFT/ITL (from the paint probe: when the bytes were flushed to the terminal,
or when the frame was queued where there is no terminal) with what the schedule asked for.
`Esc` stops the stream (abandonment), `q` quits.

With `bench_json`, the app plays every recording once without input, writes the playback
logs as JSON and exits (what the timing benchmark reads).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Footer, Input, Static

from number_text import ms
from uxlab.clock import MonotonicClock
from uxlab.collector import CollectorPacing
from uxlab.errors import UxlabError
from uxlab.glass.feed import GlassFeed
from uxlab.player import PlaybackLog, Player, fill_glass_paints
from uxlab.streams.metrics import ttft_of
from uxlab.streams.recording import Recording
from uxlab.tui import frame_cap
from uxlab.tui.glass_session import start_glass
from uxlab.tui.paint_probe import PaintProbe, ProbedSink
from uxlab.tui.stream_view import StreamView

GLASS_REPORT_WAIT_MS = 10_000.0
"""How long the benchmark mode waits, after a play, for the glass probe's last report."""
Shaper = Callable[[Recording, Any, int], Recording]
"""(recording, profile, seed) -> schedule; `uxlab.shaping.shape` in the CLI."""
ProfileParser = Callable[[str], Any]
"""Settings text ("ttft=800 itl=constant:30") -> profile; raises UxlabError when bad."""


def recording_prompt(rec: Recording) -> str:
    """The last user message of the recorded request ("" when there is none)."""
    messages = rec.header.request.get("messages") or []
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):  # content parts
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    prompt = rec.header.request.get("prompt")
    return prompt if isinstance(prompt, str) else ""


@dataclass
class Requested:
    """What the schedule asks for: first visible chunk and median gap (ms)."""

    ttft_ms: float | None
    itl_ms: float | None

    @classmethod
    def of(cls, schedule: Recording) -> Requested:
        content = [
            c.t_ms
            for c in schedule.chunks
            if c.text and c.channel == "content" and c.t_ms is not None
        ]
        gaps = [b - a for a, b in itertools.pairwise(content)]
        return cls(
            ttft_ms=ttft_of(schedule),
            itl_ms=statistics.median(gaps) if gaps else None,
        )


def _ms(value: float | None) -> str:
    return ms(value, grouped=True)


def _ttft(value: float | None) -> str:
    """A TTFT, or `no text` for a turn with no text chunk (a tool call only) or none shown."""
    return "no text" if value is None else _ms(value)


def timing_summary(requested: Requested, log: PlaybackLog | None) -> str:
    """Two lines: requested vs measured TTFT and ITL, and how the stream ended."""
    if log is None:
        return (
            f"requested TTFT {_ttft(requested.ttft_ms):>10}  ITL p50 {_ms(requested.itl_ms):>8} "
            "│ playing"
        )
    shown = [r for r in log.records if r.n_chars and r.channel == "content"]
    source = "flushed" if any(r.flushed_ms is not None for r in shown) else "queued"
    # Only chunks due at least one frame period apart could have had frames of their own.
    period_ms = 1000.0 / max(1, frame_cap())
    pairs = [
        (a, b) for a, b in itertools.pairwise(shown) if b.scheduled_ms - a.scheduled_ms >= period_ms
    ]
    shared = sum(1 for a, b in pairs if a.queued_ms is not None and a.queued_ms == b.queued_ms)
    share = f"{100.0 * shared / max(1, len(pairs)):.0f}%"
    if log.cancelled_at_ms is not None:
        ending = f"stopped at {_ms(log.cancelled_at_ms)}"
    elif log.error_at_ms is not None:
        ending = f"error at {_ms(log.error_at_ms)}"
    else:
        ending = f"done at {_ms(log.finished_ms)}"
    return (
        f"requested TTFT {_ttft(requested.ttft_ms):>10}  ITL p50 {_ms(requested.itl_ms):>8} │ "
        f"{ending}\n"
        f"measured  TTFT {_ttft(log.measured_ttft_ms()):>10}  ITL p50 "
        f"{_ms(log.measured_itl_ms()):>8} │ {source}, {share} shared a frame"
    )


class ReplayApp(App[int]):
    """Free-play client: one recording at a time, shaped, played into a StreamView."""

    CSS_PATH = "uxlab.tcss"
    TITLE = "uxlab replay"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("r", "replay", "Replay"),
        Binding("n", "next", "Next"),
        Binding("escape", "stop", "Stop"),
        Binding("slash", "edit_prompt", "Prompt"),
        Binding("s", "edit_settings", "Settings"),
        Binding("t", "toggle_details", "Thinking", show=False),
    ]

    class PlaybackDone(Message):
        """A play ended (completed, stopped or failed): carries its log."""

        def __init__(self, player: Player, log: PlaybackLog, requested: Requested) -> None:
            super().__init__()
            self.player = player
            self.log = log
            self.requested = requested

    def __init__(
        self,
        recordings: list[Recording],
        *,
        profile: Any = None,
        seed: int = 0,
        shaper: Shaper | None = None,
        parse_settings: ProfileParser | None = None,
        settings_text: str = "",
        autoplay: bool = True,
        bench_json: Path | None = None,
        clock: MonotonicClock | None = None,
        glass: bool = False,
    ) -> None:
        super().__init__()
        if not recordings:
            raise UxlabError("no recordings to replay")
        self.recordings = recordings
        self.position = 0
        self.profile = profile
        self.seed = seed
        self.shaper = shaper
        self.parse_settings = parse_settings
        self.settings_text = settings_text
        self.autoplay = autoplay
        self.bench_json = bench_json
        self.clock = clock if clock is not None else MonotonicClock()
        self.probe = PaintProbe(self.clock)
        self.probe.attach(self)
        self.collector = CollectorPacing()
        """Full garbage collections between plays only (`uxlab.collector`)."""
        self.glass = glass
        """Time each chunk at the glass (`uxlab.glass`; an X terminal window)."""
        self.glass_feed: GlassFeed | None = None
        self.prompt_override: str | None = None
        self.player: Player | None = None
        self.logs: list[PlaybackLog] = []
        self._editing: str | None = None

    # -- layout --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="replay-title")
        yield StreamView(id="stream")
        yield Static(id="timing")
        yield Input(id="editor")
        yield Footer()

    def on_mount(self) -> None:
        # Objects alive after start-up never need collecting: keep them out of the full
        # collections that otherwise stall the event loop (and a token) for up to ~100 ms.
        self.collector.settle()
        if self.glass:
            self.glass_feed = start_glass(self.probe)
        self.query_one("#editor", Input).display = False
        self.query_one(StreamView).focus()
        self._show_title()
        self.query_one("#timing", Static).update("")
        if self.bench_json is not None:
            self.call_after_refresh(self._bench)
        elif self.autoplay:
            self.call_after_refresh(self.action_replay)  # after the first frame is painted

    @property
    def recording(self) -> Recording:
        return self.recordings[self.position]

    def _show_title(self) -> None:
        rec = self.recording
        shaped = self.settings_text or "as recorded"
        title = (
            f"{rec.id}  ({self.position + 1}/{len(self.recordings)})  "
            f"seed {self.seed} · {shaped} · {frame_cap()} fps"
        )
        self.query_one("#replay-title", Static).update(title)

    def _schedule(self) -> Recording:
        if self.shaper is None or self.profile is None:
            return self.recording
        return self.shaper(self.recording, self.profile, self.seed)

    # -- playing -------------------------------------------------------------------------
    def _start_play(self) -> None:
        if self.player is not None:
            self.player.cancel()
        view = self.query_one(StreamView)
        prompt = self.prompt_override or recording_prompt(self.recording)
        try:
            schedule = self._schedule()
            player = Player(schedule, ProbedSink(view, self.probe), self.clock)
        except UxlabError as exc:
            view.start(prompt, waiting=False)
            view.finish(None, None)
            self.query_one("#timing", Static).update(f"cannot play: {exc}")
            self.player = None
            return
        self.player = player
        requested = Requested.of(schedule)
        self.query_one("#timing", Static).update(timing_summary(requested, None))
        view.start(prompt)
        self._play(player, requested)

    @work(group="play")
    async def _play(self, player: Player, requested: Requested) -> None:
        log = await self._held(player)
        self.post_message(self.PlaybackDone(player, log, requested))

    async def _held(self, player: Player) -> PlaybackLog:
        """Play with the collector's long collections held off (one play at a time: a new
        play cancels the one before, whose release comes first)."""
        self.collector.hold()
        try:
            return await player.play()
        finally:
            self.collector.release()

    @on(PlaybackDone)
    def _played(self, message: PlaybackDone) -> None:
        self.logs.append(message.log)
        if message.player is not self.player:
            return  # an earlier play, replaced by `r`/`n`: its log is kept, not shown
        self.query_one("#timing", Static).update(timing_summary(message.requested, message.log))

    def on_unmount(self) -> None:
        if self.glass_feed is not None:
            self.glass_feed.close()

    @work(exclusive=True, group="play")
    async def _bench(self) -> None:
        view = self.query_one(StreamView)
        results = []
        feed = self.glass_feed
        assert self.bench_json is not None
        if feed is not None and not await asyncio.to_thread(feed.wait_ready, 60.0):
            self.bench_json.write_text(json.dumps({"error": feed.error or "no marker cell"}))
            self.exit(2)
            return
        cpu_start_s = time.process_time()
        for position in range(len(self.recordings)):
            self.position = position
            self._show_title()
            schedule = self._schedule()
            view.start(recording_prompt(self.recording))
            sink = ProbedSink(view, self.probe)
            player = Player(schedule, sink, self.clock)
            log = await self._held(player)
            if feed is not None and log.records:  # a loaded machine: the probe reports late
                await sink.wait_glass(log.records[-1].index, GLASS_REPORT_WAIT_MS)
                fill_glass_paints(log, sink)
            results.append(log.to_dict())
            self.collector.settle()
        payload: dict[str, Any] = {"frame_cap": frame_cap()}
        payload["has_terminal"] = self.probe.has_terminal
        payload["glass"] = None if feed is None else feed.describe()
        if feed is not None:  # every repaint the probe reported (absolute ms, marker number)
            payload["glass"]["repaint_log"] = [[r.t_ms, r.frame, r.lag_ms] for r in feed.repaints()]
        payload["logs"] = results
        payload["cpu_s"] = time.process_time() - cpu_start_s  # the plays only, all threads
        self.bench_json.write_text(json.dumps(payload))
        self.exit(0)

    # -- actions -------------------------------------------------------------------------
    def action_replay(self) -> None:
        """Play the current recording again (same settings and seed)."""
        self._start_play()

    def action_next(self) -> None:
        """Move to the next recording of the corpus and play it."""
        self.position = (self.position + 1) % len(self.recordings)
        self.prompt_override = None
        self._show_title()
        self._start_play()

    def action_stop(self) -> None:
        """Stop the stream now (as a participant abandoning it)."""
        if self._editing is not None:
            self._close_editor()
        elif self.player is not None:
            self.player.cancel()

    def action_toggle_details(self) -> None:
        self.query_one(StreamView).action_toggle_details()

    def action_edit_prompt(self) -> None:
        """Type a prompt; Enter sends it and plays the current recording as the answer."""
        self._open_editor("prompt", self.prompt_override or recording_prompt(self.recording))

    def action_edit_settings(self) -> None:
        """Edit the shaping settings, e.g. `ttft=800 itl=lognormal:median=30,sigma=0.3 seed=3`."""
        if self.parse_settings is None:
            self.notify("shaping is not available", severity="warning")
            return
        text = self.settings_text
        self._open_editor("settings", f"{text} seed={self.seed}".strip())

    def _open_editor(self, kind: str, value: str) -> None:
        editor = self.query_one("#editor", Input)
        self._editing = kind
        editor.placeholder = (
            "prompt, then Enter" if kind == "prompt" else "ttft=MS itl=SPEC ... seed=N, then Enter"
        )
        editor.value = value
        editor.display = True
        editor.focus()

    def _close_editor(self) -> None:
        editor = self.query_one("#editor", Input)
        editor.display = False
        self._editing = None
        self.query_one(StreamView).focus()

    @on(Input.Submitted, "#editor")
    def _submitted(self, event: Input.Submitted) -> None:
        kind = self._editing
        value = event.value.strip()
        if kind == "prompt":
            self.prompt_override = value or None
        elif kind == "settings":
            try:
                self._apply_settings(value)
            except UxlabError as exc:
                self.notify(str(exc), title="settings", severity="error", timeout=8)
                return
        self._close_editor()
        self._show_title()
        self._start_play()

    def _apply_settings(self, text: str) -> None:
        assert self.parse_settings is not None
        seed = self.seed
        kept = []
        for part in text.split():
            if part.startswith("seed="):
                try:
                    seed = int(part[5:])
                except ValueError:
                    raise UxlabError(
                        f"settings: seed={part[5:]!r}: expected a whole number"
                    ) from None
            else:
                kept.append(part)
        settings = " ".join(kept)
        self.profile = self.parse_settings(settings)
        self.settings_text = settings
        self.seed = seed

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While an editor is open, letters go to it, not to the single-key bindings.
        single_keys = {"quit", "replay", "next", "toggle_details"}
        return not (self._editing is not None and action in single_keys)
