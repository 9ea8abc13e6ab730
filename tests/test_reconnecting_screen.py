"""The participant's screen while a shared PostgreSQL server restarts mid-session: a clear
"Reconnecting…" page that goes on by itself once the server is back, nothing lost.

Driven with Pilot at 80x24 against the real server the tests start (`helpers.postgres`),
stopped at once (`pg_ctl stop -m immediate`, as a crash or a failover) and started again.
"""

from __future__ import annotations

import pytest
from helpers.pilot import asking, wait_for, wait_screen
from helpers.postgres import query
from helpers.studies import tiny_study

from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.flow_screens import (
    ConsentScreen,
    InstructionsScreen,
    ReconnectingScreen,
    SaveFailedScreen,
)
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

ONE_LEVEL = {"practice": 0, "attention": False, "repeats": 2, "break_every": 10, "levels": "20"}


@pytest.mark.slow
async def test_a_server_restart_shows_reconnecting_then_the_session_goes_on(
    tmp_path, postgres_cluster
):
    db = postgres_cluster.database()
    study = load_study(tiny_study(tmp_path, **ONE_LEVEL))
    store = Store.open(db, busy_timeout_s=1.0)  # a write waits 1 s for the server
    app = StudyApp(study, store, participant="P-AWAY1")
    app.reconnect_every_s = 0.2
    restarted = False
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_screen(pilot, ConsentScreen)
            await pilot.press("a")
            await wait_screen(pilot, InstructionsScreen)
            await pilot.press("enter")
            await wait_screen(pilot, TrialScreen)
            trial = app.screen
            await pilot.press("enter")
            await wait_for(pilot, lambda: asking(app, "acceptable"))
            await pilot.press("y", "enter")
            await wait_for(pilot, lambda: asking(app, "speed"))
            postgres_cluster.stop_now()  # the server goes away before the trial is saved
            await pilot.press("4", "enter")
            await wait_screen(pilot, ReconnectingScreen)
            away = app.screen
            assert "Reconnecting to the study's database to save this trial" in away.body
            assert "Everything you answered so far is saved" in away.body
            assert "postgresql://" not in away.body  # no address shown to a participant
            await pilot.press("enter")  # nothing to confirm: it stays
            assert app.screen is away
            postgres_cluster.start_again()
            restarted = True
            await wait_for(
                pilot, lambda: app.screen is not away and app.screen is not trial, timeout_s=60
            )
            await wait_screen(pilot, TrialScreen)
            assert not isinstance(app.screen, SaveFailedScreen)
            assert app.screen.run.trial.index == 1
            await pilot.press("ctrl+q", "ctrl+q")
    finally:
        if not restarted:
            postgres_cluster.start_again()
    app.store.close()
    assert app.return_value.committed == [0]
    rows = query(db, "SELECT trial_index, outcome FROM trials ORDER BY 1")
    assert rows[0] == (0, "completed")
