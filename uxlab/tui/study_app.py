"""`uxlab run`: one participant's session of a study, in the terminal, end to end.

The path: the timing check, the unfinished sessions to continue (only when there are any,
and no `--participant`), timing warnings for the researcher (only when there are any, and
on a resume only when their verdict changed: `session_opening.warn_once`), participant id,
consent, instructions, practice trials, the trials with breaks, the end-of-study questions
and the end screen. The flow is one worker that pushes a screen, waits for its result and
asks the `StudySession` controller what comes next; a trial is committed to the store
before the next screen is pushed. Every key press during a trial is stamped here, where it
enters the app, on the session clock (`key_time_ms`): the Enter that sends is t = 0.

Ctrl+Q or Ctrl+C pressed twice quits at any moment (the first press only asks, so a slip
ends nothing: `uxlab.tui.quit_confirm`): the session becomes `interrupted` and running the
same command with the same participant id continues. SIGHUP (the terminal window or tmux
pane was closed), SIGTERM and SIGINT sent as a signal (`kill -INT`; the Ctrl+C key itself
arrives as a key) quit at once, the same way (`QUIT_SIGNALS`; `HangupSafeDriver` keeps the
app alive without its terminal long enough). What the participant did is kept
(`StudySession.quit`): a trial whose outcome is final (over, or given up) is committed with
the answers given so far; a trial not yet sent is offered again on resume; only a trial quit
mid-stream stays in flight and is stored as `interrupted` on resume.

When a write fails (another process holds the database beyond the busy timeout, a full
disk), a screen names the reason and `r` tries the same write again; nothing is lost. When
a database server is away (PostgreSQL restarting), "Reconnecting…" tries again by itself;
Ctrl+Q (twice) or a signal there quits without waiting, writing nothing more (the trial on
screen is left in flight, stored as `interrupted` on resume), so the participant can reopen
the study at once.

A participant whose session another process still holds (one closing after an outage, a
second window) is never offered a new id: the screen says so in plain words, tries again by
itself and on Enter, and `i` types another id; which process holds it (pid, host, session)
goes to the researcher's log (`RunResult.notes`), not to the participant's screen.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input, Static

from uxlab.clock import MonotonicClock
from uxlab.collector import CollectorPacing
from uxlab.glass.feed import GlassFeed
from uxlab.outcomes import EventKind
from uxlab.phases import Phase
from uxlab.session import StudySession, TrialRun
from uxlab.store import Store, new_participant_id
from uxlab.store.open_checks import short_reason
from uxlab.store.schema import StoreUnreachable
from uxlab.study import Study
from uxlab.timing_check import TimingCheck
from uxlab.tui import frame_cap
from uxlab.tui.calibration import calibrate
from uxlab.tui.check_screen import CheckScreen
from uxlab.tui.flow_screens import (
    BreakScreen,
    ConsentScreen,
    EndQuestionsScreen,
    EndScreen,
    InstructionsScreen,
    ReconnectingScreen,
    SaveFailedScreen,
    TextScreen,
    WarningsScreen,
)
from uxlab.tui.glass_session import start_glass
from uxlab.tui.paint_probe import PaintProbe
from uxlab.tui.quit_confirm import QuitGuard
from uxlab.tui.run_result import RunResult
from uxlab.tui.session_opening import SAVE_ERRORS, open_session
from uxlab.tui.trial_screen import TrialScreen, key_label

T = TypeVar("T")
SAVING_NOTE_S = 0.3
"""A write in a worker thread that takes longer than this shows "Saving…"."""
QUIT_SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
"""Signals that quit like Ctrl+Q: what is on screen is committed and the session paused.
SIGINT too: sent by another program it left the session `running` (KeyboardInterrupt)."""
_signals_owner: StudyApp | None = None
"""The app whose handlers hold `QUIT_SIGNALS` now (at most one per process)."""


class StudyApp(App[RunResult]):
    """The participant's client for one study session (see the module docstring)."""

    CSS_PATH = Path(__file__).with_name("uxlab.tcss")  # absolute: subclasses live elsewhere
    ENABLE_COMMAND_PALETTE = False
    start_flow = True
    """False in hosts that show one screen (snapshot tests)."""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit_study('Ctrl+Q')", "Quit", priority=True),
        Binding("ctrl+c", "quit_study('Ctrl+C')", "Quit", show=False, priority=True),
    ]

    def __init__(
        self,
        study: Study,
        store: Store,
        *,
        participant: str | None = None,
        seed: int | None = None,
        pilot: bool = False,
        environment: dict[str, Any] | None = None,
        warnings: list[str] | None = None,
        clock: MonotonicClock | None = None,
        suggested_id: str | None = None,
        timing_check: bool = False,
        glass: bool = False,
    ) -> None:
        super().__init__()
        if self.driver_class.__name__ == "LinuxDriver":  # a real terminal that may hang up
            from uxlab.tui.hangup import HangupSafeDriver

            self.driver_class = HangupSafeDriver
        self.title = study.title
        self.study = study
        self.store = store
        self.participant = participant
        self.seed = seed
        self.pilot = pilot
        self.environment = dict(environment or {})
        self.warnings = list(warnings or [])
        self.environment["timing_warnings"] = self.warnings
        self.clock = clock if clock is not None else MonotonicClock()
        self.suggested_id = suggested_id or new_participant_id()
        self.probe = PaintProbe(self.clock)
        self.probe.attach(self)
        self.collector = CollectorPacing()
        """Full garbage collections between trials, never while a stream plays."""
        self.timing_check_first = timing_check
        """Play the timing check on screen before the session (`uxlab.tui.calibration`)."""
        self.timing_check: TimingCheck | None = None
        self.glass = glass
        """Time each chunk at the glass of this X terminal window (`uxlab.glass`)."""
        self.glass_feed: GlassFeed | None = None
        self.session: StudySession | None = None
        self.current_run: TrialRun | None = None
        self.key_time_ms: float | None = None
        self.result = RunResult()
        self._size_logged: tuple[int, int] | None = None
        self._unsaved_events: list[tuple[str, dict[str, Any], float]] = []
        self._signals_before: dict[int, Any] = {}
        self.quit_guard = QuitGuard(self.set_timer)
        """A first Ctrl+Q/Ctrl+C asks, the second quits (`uxlab.tui.quit_confirm`)."""

    def compose(self) -> ComposeResult:
        yield Static("", id="blank")

    def on_mount(self) -> None:
        self._catch_quit_signals()
        if self.glass:
            self.glass_feed = start_glass(self.probe)
        if self.start_flow:
            self._flow()

    def on_unmount(self) -> None:
        global _signals_owner
        if self.glass_feed is not None:
            self.glass_feed.close()
        if _signals_owner is not self:
            return
        loop = asyncio.get_running_loop()
        for sig, before in self._signals_before.items():
            loop.remove_signal_handler(sig)
            signal.signal(sig, before)
        self._signals_before.clear()
        _signals_owner = None

    def _catch_quit_signals(self) -> None:
        """SIGHUP, SIGTERM and SIGINT quit like Ctrl+Q (from the event loop, between screens'
        work).

        One app at a time holds them (apps run one after another, e.g. simulated ones); the
        handlers that were there before come back when it unmounts.
        """
        global _signals_owner
        if _signals_owner is not None and getattr(_signals_owner, "_running", False):
            return  # (an owner that stopped without unmounting is replaced)
        _signals_owner = self
        loop = asyncio.get_running_loop()
        for sig in QUIT_SIGNALS:
            before = signal.getsignal(sig)
            try:
                loop.add_signal_handler(sig, self._quit_on_signal, sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread
                continue
            self._signals_before[sig] = before

    def _quit_on_signal(self, sig: int) -> None:
        self._quit(signal.Signals(sig).name)

    def on_hangup(self) -> None:
        """The terminal went away without a SIGHUP reaching us (`HangupSafeDriver`)."""
        self._quit("hangup")

    # -- every key press ---------------------------------------------------------------------
    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            self.key_time_ms = self.clock.now_ms()
            self.quit_guard.other_key(event.key)
            run = self.current_run
            trial_screen = isinstance(self.screen, (TrialScreen, CheckScreen))
            if run is not None and run.phase != Phase.ANSWERED and trial_screen:
                name = event.key
                if event.is_printable and isinstance(self.focused, Input):
                    name = "char"  # typed text is stored only as the answer itself
                run.key(name, self.key_time_ms)
        await super().on_event(event)

    # -- the terminal's size: at the start, and every resize -----------------------------------
    def _log_start_size(self) -> None:
        """The size the session starts (or resumes) at, as a session event `terminal`."""
        assert self.session is not None
        cols, rows = self.size
        data = {"cols": cols, "rows": rows, "resumed": self.session.resumed}
        self.session.log_event(EventKind.TERMINAL, data)
        self._size_logged = (cols, rows)

    def on_resize(self, event: events.Resize) -> None:
        """Log a resize as a `resize` event: with the trial on screen (stored with it), or
        else as a session event at once (if that write fails, it is kept and written at the
        next resize or after the next trial is stored)."""
        size = (event.size.width, event.size.height)
        ss = self.session
        if ss is None or self._size_logged is None or size == self._size_logged:
            return
        self._size_logged = size
        data = {"cols": size[0], "rows": size[1]}
        run = self.current_run
        if run is not None and run.committed_sha256 is None:
            run.note(EventKind.RESIZE, data)
            return
        self._unsaved_events.append((EventKind.RESIZE, data, self.clock.now_ms()))
        self._write_session_events()

    @property
    def events_pending(self) -> int:
        """Session events (a resize) not written yet: the database was locked; tried again."""
        return len(self._unsaved_events)

    def _write_session_events(self) -> None:
        """Write the session events kept so far, in order (a failure keeps the rest)."""
        ss = self.session
        try:
            while ss is not None and self._unsaved_events:
                kind, what, t_ms = self._unsaved_events[0]
                ss.log_event(kind, what, t_ms)
                self._unsaved_events.pop(0)
        except SAVE_ERRORS:  # a locked database: tried again later
            pass

    # -- the flow ----------------------------------------------------------------------------
    @work(exclusive=True, group="flow")
    async def _flow(self) -> None:
        study = self.study
        if self.timing_check_first:
            await self._check_timing()
        if self.glass_feed is not None:
            self.environment["glass"] = self.glass_feed.describe()
        ss = await self._open_session()
        self.session = ss
        await self._saving("the session", self._log_start_size)
        self.collector.settle()  # start-up's objects: collected and frozen once
        self.result.participant = ss.participant
        self.result.session_id = ss.session.id
        note = ss.resume_note()
        if ss.needs_consent:
            agreed = await self.push_screen_wait(ConsentScreen(study.texts["consent"], note))
            if not agreed:
                ss.decline_consent()
                self.result.outcome = "declined"
                await self.push_screen_wait(
                    EndScreen(
                        "Thank you",
                        "You did not agree to take part, so the study ends here. Nothing "
                        "about you is stored, only that consent was declined.\n\n"
                        "Press **Enter** to close.",
                    )
                )
                self.exit(self.result)
                return
            await self._saving("your consent", ss.accept_consent)
            note = ""
        if ss.next_trial() is not None:
            await self.push_screen_wait(
                InstructionsScreen(study.texts["instructions"], self._keys_text(ss), note)
            )
        await self._saving("the session", ss.start_running)
        while (trial := ss.next_trial()) is not None:
            if ss.break_before(trial):
                await self.push_screen_wait(BreakScreen(self._done_text(ss, trial)))
                ss.break_taken(trial)
            if ss.practice_just_ended(trial):
                await self.push_screen_wait(
                    TextScreen(
                        "Practice over",
                        "That was the practice. From now on every trial counts.\n\n"
                        "Press **Enter** to start.",
                    )
                )
            run = await self._saving("the start of this trial", partial(ss.begin, trial))
            self.current_run = run
            run = await self.push_screen_wait(self._trial_screen(run, ss.progress(trial)))
            # One transaction, before anything else appears (retried until it is stored),
            # in a worker thread: a trial of 100,000 events does not freeze the screen.
            await self._saving("this trial", partial(ss.commit, run), off_loop=True)
            self.current_run = None
            self._write_session_events()
            self.result.committed.append(trial.index)
            self.collector.settle()  # between trials: nothing is timed now
        await self._end_questions(ss)
        await self._saving("your answers", ss.finish)
        self.result.outcome = "completed"
        debrief = study.texts.get("debrief", "")
        await self.push_screen_wait(
            EndScreen(
                "Thank you",
                (debrief + "\n\n" if debrief else "")
                + "The study is complete and your answers are saved.\n\n"
                "Press **Enter** to close.",
            )
        )
        self.exit(self.result)

    async def _check_timing(self) -> None:
        """The timing check, on screen in the study's own view: kept with the session and,
        when it finds a problem, shown to the researcher before anything else."""
        check = await calibrate(
            self,
            self.study,
            frame_cap_fps=self.environment.get("frame_cap_fps") or frame_cap(),
            multiplexer=self.environment.get("multiplexer"),
        )
        self.timing_check = check
        self.environment["timing_check"] = check.to_environment()
        warning = check.warning()
        if warning is not None:
            self.warnings.append(warning)
        self.collector.settle()

    async def _end_questions(self, ss: StudySession) -> None:
        """Ask the end-of-study questions not answered yet, saving each answer as it is given
        (while the next question shows, so no key is lost between them)."""
        questions = ss.end_questions
        if not questions:
            return
        given: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        asked_before = len(ss.study.end_questions) - len(questions)
        await self.push_screen(
            EndQuestionsScreen(questions, self.clock.now_ms, given.put_nowait, asked_before)
        )
        for _ in questions:
            answer = await given.get()
            await self._saving("your answer", partial(ss.save_end_answers, answer))

    def _trial_screen(self, run: TrialRun, progress: str) -> TrialScreen | CheckScreen:
        """An attention check has its own screen (no stream, only its question)."""
        if run.is_check:
            return CheckScreen(run, progress)
        return TrialScreen(run, progress, self.probe, self.collector)

    async def _saving(self, what: str, write: Callable[[], T], off_loop: bool = False) -> T:
        """Run a store write; when it fails, say why and run it again on `r`."""
        while True:
            try:
                return await self._off_loop(write) if off_loop else write()
            except StoreUnreachable:  # a database server away: try again by itself
                self.store_away = True
                await self.push_screen_wait(
                    ReconnectingScreen(what, self.store.ping, self.reconnect_every_s)
                )
                self.store_away = False
            except SAVE_ERRORS as exc:
                # only a SQLite error reads the path (its file); a PostgreSQL store has a name there
                reason = short_reason(exc, Path(self.store.path))  # e.g. "... (the disk is full)"
                await self.push_screen_wait(SaveFailedScreen(what, reason))

    reconnect_every_s = 1.0
    """How often the reconnecting screen tries the database again (a PostgreSQL server away)."""
    in_use_every_s = 3.0
    """How often the screen of a session held by another process tries again by itself."""
    attempts_in_use = 0
    """How many times the participant's session was found held by another process."""
    store_away = False
    """The database server is away (the reconnecting screen is up, or a write just found it
    away): a quit writes nothing more, and the store is closed without waiting for it."""

    _writing = False
    """A store write runs in a worker thread (`_off_loop`)."""
    _quit_waiting: str | None = None
    """A quit asked for during that write (by a key or a signal): it runs once it is over."""

    async def _off_loop(self, write: Callable[[], T]) -> T:
        """Run a store write in a worker thread, so the screen stays live meanwhile.

        The store is used by one thread at a time: a quit asked for meanwhile waits for the
        write (one transaction), then runs, and the flow goes no further. A cancelled flow
        also waits for the write before it ends, so the store is never closed under it.
        """
        self._writing = True
        note = self.set_timer(SAVING_NOTE_S, lambda: self._saving_note("Saving…"))
        task = asyncio.ensure_future(asyncio.to_thread(write))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            await asyncio.wait([task])
            raise
        except StoreUnreachable:
            self.store_away = True  # a quit waiting for this write must not write again
            raise
        finally:
            note.stop()
            self._saving_note("")
            self._writing = False
            if self._quit_waiting is not None:
                by, self._quit_waiting = self._quit_waiting, None
                self._quit(by)
                if task.done() and not task.cancelled() and task.exception() is None:
                    await asyncio.Event().wait()  # the app is exiting: nothing after the write

    def _saving_note(self, text: str) -> None:
        """Say "Saving…" on the blank screen while a long write runs (a huge trial)."""
        for blank in self.query("#blank"):
            if isinstance(blank, Static):
                blank.update(text)

    async def show_warnings(self, warnings: list[str]) -> None:
        """Put the timing warnings before the researcher (a host whose participant sits
        at the screen alone logs them for the researcher instead)."""
        await self.push_screen_wait(WarningsScreen(warnings))

    async def _open_session(self) -> StudySession:
        """The participant's session (`uxlab.tui.session_opening`; a simulated run opens
        its own)."""
        return await open_session(self)

    def _keys_text(self, ss: StudySession) -> str:
        stop = key_label(self.study.abandon.key)
        parts = [
            f"**Keys:** Enter sends the prompt; **{stop}** stops waiting for an answer at any "
            "moment; answer the questions with the keys shown at the bottom of the screen.",
        ]
        if ss.n_practice and (upcoming := ss.next_trial()) is not None and upcoming.practice:
            n = ss.n_practice
            if ss.resumed:  # the resume note says which practice trial comes next
                parts.append("The practice trials come first.")
            else:
                parts.append(f"You start with {n} practice trial{'s' if n > 1 else ''}.")
        n_checks = ss.n_checks
        checks = f", and {n_checks} short attention check{'s' * (n_checks > 1)}" if n_checks else ""
        parts.append(f"There are {ss.n_main} trials{checks}. Press **Enter** to begin.")
        return "\n\n".join(parts)

    @staticmethod
    def _done_text(ss: StudySession, trial: Any) -> str:
        return f"Trial {ss.main_done_before(trial)} of {ss.n_main} done"

    # -- quitting ----------------------------------------------------------------------------
    def action_quit_study(self, key_label: str = "Ctrl+Q") -> None:
        """A first press asks "press again to leave" (`uxlab.tui.quit_confirm`); the second
        quits, keeping what is final (`StudySession.quit`): the session can be resumed.
        Once the study is over (completed, or consent declined) one press quits."""
        over = self.result.outcome in ("completed", "declined")
        saved = self.session is not None
        if over or self.quit_guard.press(self.screen, key_label, saved):
            self._quit("key")

    def _quit(self, by: str) -> None:
        """Quit by a key or a signal (`by`); a second signal while exiting changes nothing.
        With the database server away, at once: nothing more is written (module docstring)."""
        if self.result.quit_by is not None:
            return
        if self._writing:  # a trial is being stored off the loop: quit once it is
            self._quit_waiting = by
            return
        self.result.quit_by = by
        ss = self.session
        if (
            ss is not None
            and self.store_away
            and self.result.outcome
            not in (
                "completed",
                "declined",
            )
        ):
            self.result.quit_trial = "in_flight" if self.current_run is not None else "none"
            self.result.save_error = "the database server was away"
            self.result.outcome = "interrupted"
            self.result.notes.append(
                f"quit ({by}) while the database server was away: nothing more was written; "
                "the session resumes from its last stored trial (a trial on screen is stored "
                "as interrupted and played again)"
            )
            self.exit(self.result)
            return
        if ss is not None and self.result.outcome not in ("completed", "declined"):
            run = self.current_run
            t_ms = self.key_time_ms if by == "key" else self.clock.now_ms()
            try:
                self.result.quit_trial = ss.quit(run, t_ms, by)
            except SAVE_ERRORS as exc:  # the store is unusable now: leave, lose nothing more
                self.result.save_error = str(exc)
                self.result.quit_trial = "in_flight"
            if run is not None and run.committed_sha256 is not None:
                self.result.quit_trial = "committed"
                if run.trial.index not in self.result.committed:
                    self.result.committed.append(run.trial.index)
            self.result.outcome = "interrupted"
        self.exit(self.result)
