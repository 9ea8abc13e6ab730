"""Opening the participant's session for `StudyApp` (`uxlab run`): the unfinished sessions
to continue, the researcher's timing warnings (once per session), the participant id, and
what happens when the session cannot be opened (held by another process, the database
server away, a completed or refused id). Each function takes the app whose screens it
pushes and whose state it sets."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from uxlab.environment import warning_verdict
from uxlab.errors import UxlabError
from uxlab.session import StudySession
from uxlab.store.lease import SessionInUse
from uxlab.store.open_checks import describe_sqlite_error, short_reason
from uxlab.store.schema import StoreUnreachable
from uxlab.tui.flow_screens import (
    EndScreen,
    InUseScreen,
    ParticipantScreen,
    ReconnectingScreen,
    SaveFailedScreen,
)
from uxlab.tui.resume_screen import ResumeScreen
from uxlab.tui.run_result import RunResult

if TYPE_CHECKING:
    from textual.screen import Screen

    from uxlab.clock import MonotonicClock
    from uxlab.store import Store
    from uxlab.study import Study

R = TypeVar("R")

SAVE_ERRORS = (sqlite3.Error, OSError, UxlabError)
"""What a failed write raises: a locked database, a full disk, a refused write."""


class OpeningApp(Protocol):
    """What opening a session reads and sets on the app (`uxlab.tui.study_app.StudyApp`)."""

    study: Study
    store: Store
    participant: str | None
    seed: int | None
    pilot: bool
    environment: dict[str, Any]
    warnings: list[str]
    clock: MonotonicClock
    suggested_id: str
    result: RunResult
    store_away: bool
    reconnect_every_s: float
    in_use_every_s: float
    attempts_in_use: int

    async def push_screen_wait(self, screen: Screen[R], *, mode: str | None = None) -> R: ...

    def exit(self, result: RunResult | None = None) -> None: ...

    async def show_warnings(self, warnings: list[str]) -> None: ...


async def warn_once(app: OpeningApp, participant: str | None) -> None:
    """Show the researcher the timing warnings once per session: at its start, and on a
    resume only when their verdict changed (`warning_verdict`) since the session's last
    start or resume. Whether they were shown is kept with this run's environment
    (`timing_warnings_shown`), beside the warnings themselves."""
    verdict = warning_verdict(app.warnings)
    before = None
    if participant is not None:
        try:
            last = app.store.sessions.last_run_environment(app.study, participant)
        except SAVE_ERRORS:  # unreadable now: showing them is the safe side
            last = None
        before = None if last is None else last.get("timing_verdict")
    show = bool(app.warnings) and verdict != before
    app.environment["timing_verdict"] = verdict
    app.environment["timing_warnings_shown"] = show
    if show:
        await app.show_warnings(app.warnings)


async def pick_unfinished(app: OpeningApp, problem: str = "") -> str | None:
    """The unfinished session the researcher continues (its participant id), or None
    for a new participant (also when there is none to list)."""
    unfinished = app.store.sessions.unfinished(app.study)
    if not unfinished:
        return None
    others = app.store.sessions.unfinished_of_other_versions(app.study)
    return await app.push_screen_wait(
        ResumeScreen(unfinished, app.study.title, n_other_versions=others, problem=problem)
    )


async def open_session(app: OpeningApp) -> StudySession:
    """The participant's session, opened or continued; asks for the id when none was given,
    and waits (or asks again) until the session can be opened."""
    problem = ""
    given = app.participant  # the id given to the program (--participant, a link)
    picked = False  # the participant was chosen on the list of unfinished sessions
    if app.participant is None:  # continue an unfinished session, or start a new one
        app.participant = await pick_unfinished(app)
        picked = app.participant is not None
    await warn_once(app, app.participant)
    while True:
        participant = app.participant
        if participant is None:
            participant = await app.push_screen_wait(
                ParticipantScreen(app.suggested_id, app.study.title, problem)
            )
        try:
            return StudySession.open(
                app.study,
                app.store,
                participant,
                seed=app.seed,
                environment=app.environment,
                pilot=app.pilot,
                clock=app.clock,
            )
        except SessionInUse as exc:
            if not picked:  # the participant's own id: wait for it, never a new id
                app.participant = await wait_while_in_use(app, exc)
                continue
            problem = str(exc)  # the researcher's list: which process, where
            app.participant = await pick_unfinished(app, problem)
            picked = app.participant is not None
        except StoreUnreachable:  # the server away: wait for it, then the same id again
            app.participant = participant
            app.store_away = True
            await app.push_screen_wait(
                ReconnectingScreen("the session", app.store.ping, app.reconnect_every_s)
            )
            app.store_away = False
        except (UxlabError, sqlite3.Error) as exc:  # e.g. a completed session
            name = getattr(exc, "sqlite_errorname", "") or ""
            if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):  # r tries the same id
                app.participant = participant
                reason = short_reason(exc, Path(app.store.path))
                await app.push_screen_wait(SaveFailedScreen("the session", reason))
                continue
            problem = (
                describe_sqlite_error(exc, Path(app.store.path))
                if isinstance(exc, sqlite3.Error)
                else str(exc)
            )
            if given is not None and participant == given:
                await refused_for_good(app, problem)  # never as someone else
            app.participant = None
            # nothing pre-filled: an Enter must not start the study again as someone
            # new; the id is the one the researcher gives
            app.suggested_id = ""
            if picked:  # e.g. taken by another process since the list was shown
                app.participant = await pick_unfinished(app, problem)
                picked = app.participant is not None


async def refused_for_good(app: OpeningApp, problem: str) -> None:
    """The id given to the program cannot take part (it completed the study, its study
    file changed): say so in plain words and end; the reason goes to the log. Never the
    id screen: a participant identified by their link or command must not go on under
    another id."""
    app.result.notes.append(f"refused: {problem}")
    if "already completed" in problem:  # what there is to do is done: as completed
        app.result.outcome, app.result.participant = "completed", app.participant
        body = "You have already completed this study. Thank you for taking part."
    else:
        body = (
            "Your session cannot be opened here. Please tell the researcher: the reason "
            "is in their log."
        )
    await app.push_screen_wait(EndScreen("Thank you", body + "\n\nPress **Enter** to close."))
    app.exit(app.result)
    await asyncio.Event().wait()  # the app is exiting: the flow goes no further


async def wait_while_in_use(app: OpeningApp, exc: SessionInUse) -> str | None:
    """The participant's session is held by another process (one still closing after
    an outage, another window): say so plainly and try again (by itself every
    `in_use_every_s`, and on Enter); returns the id to try next (the same, or one the
    participant typed after `i`: None asks for it). Which process: the log only."""
    app.result.notes.append(
        f"{exc.participant}'s session {exc.session_id} was held by pid {exc.held.pid} on "
        f"host {exc.held.host} (for {exc.held.held_s:.0f} s) when it was opened here; "
        "the participant was asked to wait and try again"
    )
    app.attempts_in_use += 1
    choice = await app.push_screen_wait(
        InUseScreen(exc.participant, app.in_use_every_s, app.attempts_in_use)
    )
    if choice == "other":
        app.suggested_id = ""  # nothing pre-filled: they type the id they were given
        return None
    return exc.participant
