"""SIGTERM (and SIGHUP) quit `uxlab run`'s app exactly like Ctrl+Q, driven with Pilot.

The signal is real (`os.kill` of this process); the app's handler turns it into the same
quit as the key: what is on screen is committed, the session paused, the signal named in
the quit event and in the audit log. (Closing a real terminal: `test_run_signals_tmux.py`.)
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3

from helpers.pilot import asking, wait_for
from test_study_app import ONE_LEVEL, make_app, start_trials


def stored(tmp_path, sql: str) -> list[tuple]:
    with sqlite3.connect(tmp_path / "results.sqlite") as conn:
        return conn.execute(sql).fetchall()


async def test_sigterm_while_answering_commits_the_answers_and_pauses(tmp_path):
    study = {**ONE_LEVEL, "levels": "20"}
    app = make_app(tmp_path, participant="P-TERM1", study=study)
    before = signal.getsignal(signal.SIGTERM)
    async with app.run_test(size=(80, 24)) as pilot:
        await start_trials(pilot)
        await pilot.press("enter")
        await wait_for(pilot, lambda: asking(app, "acceptable"))
        await pilot.press("y", "enter")
        await wait_for(pilot, lambda: asking(app, "speed"))
        os.kill(os.getpid(), signal.SIGTERM)
        await wait_for(pilot, lambda: app.return_value is not None)
    assert signal.getsignal(signal.SIGTERM) is before  # the app's handler is gone again
    result = app.return_value
    assert (result.outcome, result.quit_by, result.quit_trial) == (
        "interrupted",
        "SIGTERM",
        "committed",
    )
    app.store.close()
    assert stored(tmp_path, "SELECT question_id, value FROM responses ORDER BY 1") == [
        ("acceptable", "yes"),
        ("speed", None),
    ]
    (quit_data,) = stored(tmp_path, "SELECT data FROM events WHERE kind = 'quit'")[0]
    assert json.loads(quit_data)["by"] == "SIGTERM"
    assert stored(tmp_path, "SELECT state FROM sessions") == [("interrupted",)]
    (detail,) = stored(tmp_path, "SELECT detail FROM audit WHERE action = 'pause'")[0]
    assert json.loads(detail)["by"] == "SIGTERM"


async def test_sighup_before_a_session_exists_just_quits(tmp_path):
    app = make_app(tmp_path)  # on the participant-id screen: nothing to keep
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        os.kill(os.getpid(), signal.SIGHUP)
        await wait_for(pilot, lambda: app.return_value is not None)
    assert (app.return_value.outcome, app.return_value.quit_by) == ("quit", "SIGHUP")
    app.store.close()
    assert stored(tmp_path, "SELECT COUNT(*) FROM sessions") == [(0,)]
