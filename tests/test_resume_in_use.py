"""The list of unfinished sessions is honest about sessions another process runs now.

A real second process (`store_lease_child.py`) holds one participant's session; another
holder was killed, leaving a stale lease. `store.sessions.unfinished` marks the first in
use (its pid, host and how long) and not the second, on SQLite and PostgreSQL; the first
screen of `uxlab run` (driven with Pilot) lists the live one as *in use*, gives it no
number and never continues it, and continues the dead holder's session as before. A
session taken by another process after the list was shown is refused when chosen and the
list comes back, saying why.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
from pathlib import Path

from helpers.lease_holder import hold_session, release
from helpers.pilot import wait_for, wait_screen
from helpers.postgres import query
from helpers.studies import tiny_study
from textual.widgets import OptionList

from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.flow_screens import ConsentScreen, InstructionsScreen, ParticipantScreen
from uxlab.tui.resume_screen import ResumeScreen, session_line
from uxlab.tui.study_app import StudyApp

STUDY = {"levels": "20", "repeats": 2, "practice": 0, "attention": False}


def hold(db: Path | str, study_path: Path, participant: str) -> subprocess.Popen:
    """A second process holding the participant's session until told `EXIT`."""
    return hold_session(db, study_path, participant)[0]


def killed_holder(db: Path | str, study_path: Path, participant: str) -> None:
    """The participant's session, left with the lease of a process killed outright."""
    child = hold(db, study_path, participant)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()


def test_the_list_marks_a_live_holder_and_offers_a_dead_ones_session(db, tmp_path):
    study_path = tiny_study(tmp_path, **STUDY)
    study = load_study(study_path)
    killed_holder(db, study_path, "P-DEAD")
    live = hold(db, study_path, "P-LIVE")
    try:
        with Store.open(db) as store:
            store.sessions.start_or_resume(study, "P-MINE")  # this process's own lease
            listed = {s.participant: s for s in store.sessions.unfinished(study)}
        assert sorted(listed) == ["P-DEAD", "P-LIVE", "P-MINE"]
        assert listed["P-DEAD"].in_use is None and listed["P-MINE"].in_use is None
        in_use = listed["P-LIVE"].in_use
        assert in_use is not None and not in_use.other_host
        assert (in_use.pid, in_use.host) == (live.pid, socket.gethostname())
        assert in_use.held_s >= 0
    finally:
        release(live)
    with Store.open(db) as store:  # given back when the holder ended: resumable again
        listed = {s.participant: s for s in store.sessions.unfinished(study)}
    assert listed["P-LIVE"].in_use is None


def test_a_lease_of_another_host_counts_until_the_stale_time(db, tmp_path):
    study = load_study(tiny_study(tmp_path, **STUDY))
    now = [1_800_000_000.0]
    with Store.open(db, clock=lambda: now[0]) as store:
        store.sessions.start_or_resume(study, "P-AWAY")
    query(  # as if a process on another machine had taken it 10 min ago (given back here)
        db,
        "INSERT INTO session_leases SELECT session_id, 'lab-pc-2', 4242, NULL, "
        "'2027-01-15T08:00:00', ? FROM sessions",
        (now[0] - 600.0,),
    )
    stale_s = study.counterbalance.stale_after_min * 60.0
    now[0] += 60.0
    with Store.open(db, clock=lambda: now[0]) as store:
        (away,) = store.sessions.unfinished(study)
    held = away.in_use
    assert held is not None and held.other_host and (held.host, held.pid) == ("lab-pc-2", 4242)
    assert (held.held_s, held.idle_s, held.stale_after_s) == (660.0, 60.0, stale_s)
    assert "(another host: free after" in session_line(1, away, now[0])
    now[0] += stale_s
    with Store.open(db, clock=lambda: now[0]) as store:
        (away,) = store.sessions.unfinished(study)
        assert away.in_use is None  # as `sessions.start_or_resume` would take it over
        assert store.sessions.start_or_resume(study, "P-AWAY").resumed


def trial_outcomes(db: Path, participant: str) -> list[tuple]:
    return query(
        db,
        "SELECT t.trial_index, t.outcome FROM trials t JOIN sessions s USING (session_id) "
        "WHERE s.participant = ? ORDER BY t.trial_index",
        (participant,),
    )


async def test_the_picker_shows_the_live_session_in_use_and_never_continues_it(tmp_path):
    study_path = tiny_study(tmp_path, **STUDY)
    study = load_study(study_path)
    db = tmp_path / "results.sqlite"
    killed_holder(db, study_path, "P-DEAD")
    live = hold(db, study_path, "P-LIVE")
    try:
        app = StudyApp(study, Store.open(db), suggested_id="P-OTHER")
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_screen(pilot, ResumeScreen)
            screen = app.screen
            assert [s.participant for s in screen.resumable] == ["P-DEAD"]
            assert [s.participant for s in screen.in_use] == ["P-LIVE"]
            options = screen.query_one(OptionList)
            row = options.get_option("P-LIVE")
            assert row.disabled and not options.get_option("P-DEAD").disabled
            text = str(row.prompt)
            assert "in use" in text and f"pid {live.pid} on host {socket.gethostname()}" in text
            assert text.lstrip().startswith("P-LIVE")  # no number to press
            assert options.highlighted == options.get_option_index("P-DEAD")
            await pilot.press("2", "end", "up", "down")  # no key reaches the live session
            await pilot.pause()
            assert app.screen is screen and options.highlighted_option.id == "P-DEAD"
            await pilot.press("enter")
            await wait_screen(pilot, (ConsentScreen, InstructionsScreen))
            assert app.session.participant == "P-DEAD" and app.session.resumed
            assert app.session.session.interrupted == [0]  # the killed holder's trial in flight
            await pilot.press("ctrl+q", "ctrl+q")
        app.store.close()
        assert trial_outcomes(db, "P-LIVE") == [(0, "running")]  # untouched, still in flight
        assert live.poll() is None
    finally:
        release(live)


async def test_a_session_taken_after_the_list_was_shown_brings_the_list_back(tmp_path):
    study_path = tiny_study(tmp_path, **STUDY)
    study = load_study(study_path)
    db = tmp_path / "results.sqlite"
    with Store.open(db) as store:
        store.sessions.start_or_resume(study, "P-RACE")  # no trial begun; lease given back
    app = StudyApp(study, Store.open(db), suggested_id="P-OTHER")
    live = None
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_screen(pilot, ResumeScreen)
            first = app.screen
            assert [s.participant for s in first.resumable] == ["P-RACE"]
            live = hold(db, study_path, "P-RACE")  # another terminal continues it meanwhile
            await pilot.press("1")
            await wait_for(
                pilot, lambda: isinstance(app.screen, ResumeScreen) and app.screen is not first
            )
            again = app.screen
            assert "taking part right now in another process" in again.problem
            assert f"pid {live.pid}" in again.problem and "nothing was changed" in again.problem
            assert again.resumable == [] and [s.participant for s in again.in_use] == ["P-RACE"]
            await pilot.press("1", "enter")  # nothing to continue: neither key does anything
            await pilot.pause()
            assert app.screen is again
            await pilot.press("n")
            await wait_screen(pilot, ParticipantScreen)
            await pilot.press("ctrl+q", "ctrl+q")
        assert app.session is None
        assert trial_outcomes(db, "P-RACE") == [(0, "running")]  # the holder's trial, intact
    finally:
        app.store.close()
        if live is not None:
            release(live)


def test_rows_of_sessions_in_use_say_where_and_for_how_long():
    from uxlab.store.records import InUse, UnfinishedSession

    free = UnfinishedSession("S-1", "P-7K3QX", "running", 3, 20, "", 1_000_000.0, False)
    busy = dataclasses.replace(free, in_use=InUse("lab-pc-1", 4242, 750.0))
    assert session_line(1, free, now_s=1_000_060.0).startswith(" 1  P-7K3QX")
    first, second = session_line(1, busy, now_s=1_000_060.0).split("\n")
    assert first.startswith("    P-7K3QX") and "in use" in first and len(first) <= 72
    assert second == "    in use by pid 4242 on host lab-pc-1 for 12 min"
