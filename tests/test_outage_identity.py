"""Outages without a second identity: a participant who reopens the study while their
session is still held (by a process closing after a database outage, by another window) is
asked to wait and try again, never offered a new id, and keeps their id once it is free;
Ctrl+Q or SIGHUP on the "Reconnecting…" screen quits at once, writing nothing more.

The race is driven without sleeps: the holder is a real second process released when the
test says so, retries are the participant's Enter (the automatic retry is set far off, or
waited for), and a lease held on another host goes stale on the store's injected clock.
"""

from __future__ import annotations

import os
import signal

import pytest
from helpers.lease_holder import hold_session, release
from helpers.pilot import wait_for, wait_screen
from helpers.postgres import query
from helpers.studies import tiny_study
from textual.widgets import Input

from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.flow_screens import (
    ConsentScreen,
    InstructionsScreen,
    InUseScreen,
    ParticipantScreen,
    ReconnectingScreen,
)
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

STUDY = {"levels": "20", "repeats": 2, "practice": 0, "attention": False, "break_every": 10}


class Clock:
    """A wall clock the test moves (the store's clock: lease ages, staleness)."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def sessions_of(db, participant: str) -> list[tuple]:
    return query(db, "SELECT session_id, state FROM sessions WHERE participant = ?",
                 (participant,))  # fmt: skip


async def test_reopening_while_the_session_is_held_waits_and_keeps_the_id(db, tmp_path):
    """The holder still runs: Enter tries again and waits again (no new id anywhere); once
    it has gone, Enter continues the same session under the same id."""
    study_path = tiny_study(tmp_path, **STUDY)
    holder, session_id = hold_session(db, study_path, "P-KEEP")
    app = StudyApp(load_study(study_path), Store.open(db), participant="P-KEEP",
                   suggested_id="P-NEWID")  # fmt: skip
    app.in_use_every_s = 3600.0  # only the participant's Enter tries again
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_screen(pilot, InUseScreen)
            first = app.screen
            await pilot.press("enter")  # still held: asked again, never a new id
            await wait_for(pilot, lambda: isinstance(app.screen, InUseScreen)
                           and app.screen is not first)  # fmt: skip
            assert app.screen.attempt == 2 and "Tried 2 times" in str(
                app.screen.query_one(".progress").content
            )
            assert not any(isinstance(s, ParticipantScreen) for s in app.screen_stack)
            release(holder)  # the other process ends (as after its quit)
            await pilot.press("enter")
            await wait_screen(pilot, (ConsentScreen, InstructionsScreen))
            assert app.session.participant == "P-KEEP" and app.session.session.id == session_id
            await pilot.press("ctrl+q", "ctrl+q")
    finally:
        release(holder)
        app.store.close()
    assert sessions_of(db, "P-KEEP") == [(session_id, "interrupted")]
    assert sessions_of(db, "P-NEWID") == []
    assert len(app.return_value.notes) == 2  # each refusal logged for the researcher


async def test_the_wait_screen_tries_again_by_itself_and_i_types_another_id(tmp_path):
    study_path = tiny_study(tmp_path, **STUDY)
    db = tmp_path / "results.sqlite"
    holder, session_id = hold_session(db, study_path, "P-AUTO")
    app = StudyApp(load_study(study_path), Store.open(db), participant="P-AUTO")
    app.in_use_every_s = 0.2
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_screen(pilot, InUseScreen)
            await wait_for(pilot, lambda: app.attempts_in_use >= 2)  # by itself, again
            release(holder)
            await wait_screen(pilot, (ConsentScreen, InstructionsScreen))  # by itself
            assert app.session.session.id == session_id
            await pilot.press("ctrl+q", "ctrl+q")
    finally:
        release(holder)
        app.store.close()
    holder, _ = hold_session(db, study_path, "P-TYPE")
    app = StudyApp(load_study(study_path), Store.open(db), participant="P-TYPE")
    app.in_use_every_s = 3600.0
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_screen(pilot, InUseScreen)
            await pilot.press("i")  # a different id: typed, nothing pre-filled
            await wait_screen(pilot, ParticipantScreen)
            assert app.screen.query_one(Input).value == ""
            await pilot.press("ctrl+q", "ctrl+q")
    finally:
        release(holder)
        app.store.close()


async def test_a_lease_on_another_host_is_waited_for_until_stale_on_the_store_clock(tmp_path):
    """Held on another host (its process cannot be checked): the participant waits; once
    the session has been idle for the study's stale_after_min (the injected clock moves),
    the same Enter continues it under the same id."""
    study_path = tiny_study(tmp_path, **STUDY)
    study = load_study(study_path)
    db = tmp_path / "results.sqlite"
    clock = Clock(1_900_000_000.0)
    with Store.open(db, clock=clock) as store:
        session = store.sessions.start_or_resume(study, "P-HOST")
    query(db, "INSERT INTO session_leases (session_id, host, pid, pid_started, taken_at, "
          "taken_s) VALUES (?, 'elsewhere', 4242, NULL, 'then', ?)",
          (session.id, clock.t))  # fmt: skip
    app = StudyApp(study, Store.open(db, clock=clock), participant="P-HOST")
    app.in_use_every_s = 3600.0
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_screen(pilot, InUseScreen)
            first = app.screen
            clock.t += study.counterbalance.stale_after_min * 60.0 - 1  # not stale yet
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.screen is not first)
            assert isinstance(app.screen, InUseScreen)
            clock.t += 2  # now idle for longer than stale_after_min: given up
            await pilot.press("enter")
            await wait_screen(pilot, (ConsentScreen, InstructionsScreen))
            assert app.session.session.id == session.id
            await pilot.press("ctrl+q", "ctrl+q")
    finally:
        app.store.close()
    assert "host elsewhere" in app.return_value.notes[0]


class CountingWrites:
    """Counts the write transactions begun on a store's connection."""

    def __init__(self, store: Store) -> None:
        self.n = 0
        conn = store.db.conn
        execute = conn.execute

        def counted(sql: str, *args):
            if sql.strip().upper() == "BEGIN IMMEDIATE":
                self.n += 1
            return execute(sql, *args)

        conn.execute = counted  # type: ignore[method-assign]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["ctrl+q", "SIGHUP"])
async def test_quitting_on_the_reconnecting_screen_writes_nothing_and_the_id_is_kept(
    tmp_path, postgres_cluster, how
):
    """The server stops mid-session; on "Reconnecting…" the participant quits (the key or
    the terminal closed): no write is tried (none could succeed: the quit is at once), the
    store closes without waiting for the server, and once it is back the same id continues
    the same session, the trial on screen stored as interrupted and played again."""
    db = postgres_cluster.database()
    study = load_study(tiny_study(tmp_path, **STUDY))
    store = Store.open(db, busy_timeout_s=1.0)
    app = StudyApp(study, store, participant="P-AWAY")
    app.reconnect_every_s = 0.2
    restarted = False
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_screen(pilot, ConsentScreen)
            await pilot.press("a")
            await wait_screen(pilot, InstructionsScreen)
            await pilot.press("enter")
            await wait_screen(pilot, TrialScreen)
            postgres_cluster.stop_now()
            await pilot.press("enter")  # send: the trial's commit meets the server away
            await pilot.press("y", "enter", "4", "enter")
            await wait_screen(pilot, ReconnectingScreen)
            writes = CountingWrites(store)
            if how == "ctrl+q":
                await pilot.press("ctrl+q", "ctrl+q")
            else:
                os.kill(os.getpid(), signal.SIGHUP)
            await wait_for(pilot, lambda: app.return_value is not None)
            assert writes.n == 0  # nothing tried against the server away
        assert app.store_away
        store.close(server_away=True)  # as `uxlab run` does: no wait for the server
        result = app.return_value
        assert (result.outcome, result.quit_trial) == ("interrupted", "in_flight")
        assert result.quit_by == ("key" if how == "ctrl+q" else "SIGHUP")
        assert any("while the database server was away" in n for n in result.notes)
        postgres_cluster.start_again()
        restarted = True
        again = StudyApp(study, Store.open(db), participant="P-AWAY")
        async with again.run_test(size=(80, 24)) as pilot:
            await wait_screen(pilot, (ConsentScreen, InstructionsScreen, TrialScreen))
            assert again.session.session.id == result.session_id  # the same id and session
            assert again.session.session.interrupted == [0]
            await pilot.press("ctrl+q", "ctrl+q")
        again.store.close()
    finally:
        if not restarted:
            postgres_cluster.start_again()
    assert [r[0] for r in query(db, "SELECT participant FROM sessions")] == ["P-AWAY"]


@pytest.mark.slow
async def test_the_server_away_when_the_session_opens_waits_and_keeps_the_id(
    tmp_path, postgres_cluster
):
    """The study's server goes away between the program's start and its session's opening
    (the torture found a participant's keys then typed a new id on the id screen): the
    program waits on "Reconnecting…" and opens the same id's session once it is back."""
    db = postgres_cluster.database()
    study = load_study(tiny_study(tmp_path, **STUDY))
    store = Store.open(db, busy_timeout_s=1.0)
    app = StudyApp(study, store, participant="P-OPEN", suggested_id="P-NEWID")
    app.reconnect_every_s = 0.2
    postgres_cluster.stop_now()
    restarted = False
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_screen(pilot, ReconnectingScreen)
            assert not any(isinstance(s, ParticipantScreen) for s in app.screen_stack)
            await pilot.press("enter", "o", "k", "enter")  # keys meanwhile change nothing
            postgres_cluster.start_again()
            restarted = True
            await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen), timeout_s=60)
            assert app.session.participant == "P-OPEN"
            await pilot.press("ctrl+q", "ctrl+q")
    finally:
        if not restarted:
            postgres_cluster.start_again()
        app.store.close()
    assert [r[0] for r in query(db, "SELECT participant FROM sessions")] == ["P-OPEN"]


async def test_an_id_that_completed_the_study_is_thanked_never_offered_the_id_screen(tmp_path):
    """A participant whose link (or --participant) names a completed session: thanked and
    ended in plain words; the id screen, where keys would start someone new, never comes."""
    from uxlab.tui.flow_screens import EndScreen

    study = load_study(tiny_study(tmp_path, **STUDY))
    db = tmp_path / "results.sqlite"
    with Store.open(db) as store:
        session = store.sessions.start_or_resume(study, "P-DONE")
        for state in ("consented", "running", "completed"):
            store.sessions.set_state(session, state)
    app = StudyApp(study, Store.open(db), participant="P-DONE", suggested_id="P-NEWID")
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_screen(pilot, EndScreen)
            assert "You have already completed this study" in app.screen.body
            assert not any(isinstance(s, ParticipantScreen) for s in app.screen_stack)
            await pilot.press("o", "k", "enter")
            await wait_for(pilot, lambda: app.return_value is not None)
    finally:
        app.store.close()
    assert (app.return_value.outcome, app.return_value.participant) == ("completed", "P-DONE")
    assert "already completed study" in app.return_value.notes[0]
    assert [r[0] for r in query(db, "SELECT participant FROM sessions")] == ["P-DONE"]
