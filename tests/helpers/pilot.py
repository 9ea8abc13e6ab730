"""Driving the study app with Pilot: wait for a condition or a screen, play one trial screen,
and small apps that show one screen (a trial screen with or without the study app around it).

The waits are event-driven polls with a generous deadline that only turns a hang into a
clear failure; nothing asserts on how long anything took.
"""

from __future__ import annotations

import time

from textual.app import App

from helpers.studies import SLOW_MS
from uxlab.session import StudySession
from uxlab.tui.check_screen import CheckScreen
from uxlab.tui.questions import QuestionPanel
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen


async def wait_for(pilot, condition, timeout_s: float = 60.0) -> None:
    """Let the app run until `condition()` holds (fails after a generous deadline).

    The failure names the screen and where each of the app's workers is waiting. The
    deadline is a minute: in one CI run a live study's flow had not reached its next screen
    15 s after a trial, where it commits the trial with an fsync (a durable store) while
    the durability tests beside it fsync and kill writers; the likely cause, not proven
    (40 repeated runs under load did not fail).
    """
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            screen = type(pilot.app.screen).__name__
            raise AssertionError(f"timed out waiting; screen is {screen}{workers_at(pilot.app)}")
        await pilot.pause(0.01)


def workers_at(app: App) -> str:
    """Where each running worker of `app` waits: its chain of awaits, innermost last."""
    lines = []
    for worker in app.workers:
        task = getattr(worker, "_task", None)  # Textual keeps no public handle on it
        coro = task.get_coro() if task is not None else None
        where = []
        while coro is not None:
            frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
            if frame is not None:
                where.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
            coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
        lines.append(f"\n  worker {worker.name} ({worker.state.name}): " + " > ".join(where))
    return "".join(lines)


async def wait_screen(pilot, kind: type) -> None:
    """Let the app run until its current screen is a `kind`."""
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, kind))


async def settle(pilot, condition) -> None:
    """Wait for `condition`, then one more refresh: the screen as it will be snapped."""
    await wait_for(pilot, condition)
    await pilot.pause()


def asking(app, question_id: str | None = None) -> bool:
    """A question's widget (that question's, when `question_id` is given) has the focus."""
    focused = app.focused
    return focused is not None and any(
        isinstance(w, QuestionPanel) and question_id in (None, w.question.id)
        for w in focused.ancestors_with_self
    )


async def do_trial(pilot, answers=("y", "4"), give_up: bool | None = None) -> str:
    """Send, then give up on a slow trial or wait for the end and answer; returns the outcome.

    `give_up=None` gives up exactly on the tiny study's slow level (`SLOW_MS`).
    """
    app = pilot.app
    screen = app.screen
    if isinstance(screen, CheckScreen):  # an attention check: only its question, answered right
        (question,) = screen.run.questions
        await wait_for(pilot, lambda: asking(app, question.id))
        await pilot.press("n", "enter")
        await wait_for(pilot, lambda: app.screen is not screen)
        return screen.run.outcome
    assert isinstance(screen, TrialScreen)
    run = screen.run
    await pilot.press("enter")
    slow = run.trial.levels.get("ttft_ms") == SLOW_MS if give_up is None else give_up
    if slow:
        await pilot.press("escape")
    await wait_for(pilot, lambda: run.phase in ("over", "answered"))
    keys = answers if run.trial.attention is None else ("n", "4")
    for question, key in zip(run.questions, keys, strict=False):
        await wait_for(pilot, lambda q=question: asking(app, q.id))
        await pilot.press(*key, "enter")  # "secret" types six letters
    if not run.questions:  # a give-up: the stopped answer stays until Enter
        await wait_for(pilot, lambda: screen.awaiting_next)
        await pilot.press("enter")
    await wait_for(pilot, lambda: app.screen is not screen)
    return run.outcome


class TrialHost(App[None]):
    """A bare app showing one trial screen for `run`; `result` is what the screen returned."""

    def __init__(self, run, progress: str = "Trial 1 of 1") -> None:
        super().__init__()
        self.trial_run = run
        self.progress = progress
        self.result = None

    def on_mount(self) -> None:
        self.push_screen(TrialScreen(self.trial_run, self.progress, None), self._done)

    def _done(self, run) -> None:
        self.result = run


class OneScreen(StudyApp):
    """The study app (its stylesheet) showing one screen, built after mount, not the flow."""

    start_flow = False

    def __init__(self, make_screen, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.make_screen = make_screen

    def on_mount(self) -> None:
        self.push_screen(self.make_screen(self))


def trial_screen(app: StudyApp) -> TrialScreen:
    """`make_screen` for OneScreen: participant P-SNAP1's first trial, ready to send."""
    ss = StudySession.open(app.study, app.store, "P-SNAP1", clock=app.clock)
    ss.accept_consent()
    ss.start_running()
    app.session = ss
    run = ss.begin(ss.next_trial())
    app.current_run = run
    return TrialScreen(run, ss.progress(run.trial), app.probe)
