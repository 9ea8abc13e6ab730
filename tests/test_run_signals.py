"""SIGTERM, SIGINT (sent as a signal) and SIGHUP quit `uxlab run`'s app exactly like Ctrl+Q,
driven with Pilot.

The signal is real (`os.kill` of this process); the app's handler turns it into the same
quit as the key: what is on screen is committed, the session paused, the signal named in
the quit event and in the audit log. (Closing a real terminal: `test_run_signals_tmux.py`.)
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3

import pytest
from helpers.pilot import asking, wait_for
from test_study_app import ONE_LEVEL, make_app, start_trials


def stored(tmp_path, sql: str) -> list[tuple]:
    with sqlite3.connect(tmp_path / "results.sqlite") as conn:
        return conn.execute(sql).fetchall()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_while_answering_commits_the_answers_and_pauses(tmp_path, sig):
    """SIGINT as a signal (not the Ctrl+C key) once left the session `running`."""
    study = {**ONE_LEVEL, "levels": "20"}
    app = make_app(tmp_path, participant="P-TERM1", study=study)
    before = signal.getsignal(sig)
    async with app.run_test(size=(80, 24)) as pilot:
        await start_trials(pilot)
        await pilot.press("enter")
        await wait_for(pilot, lambda: asking(app, "acceptable"))
        await pilot.press("y", "enter")
        await wait_for(pilot, lambda: asking(app, "speed"))
        os.kill(os.getpid(), sig)
        await wait_for(pilot, lambda: app.return_value is not None)
    assert signal.getsignal(sig) is before  # the app's handler is gone again
    result = app.return_value
    assert (result.outcome, result.quit_by, result.quit_trial) == (
        "interrupted",
        sig.name,
        "committed",
    )
    app.store.close()
    assert stored(tmp_path, "SELECT question_id, value FROM responses ORDER BY 1") == [
        ("acceptable", "yes"),
        ("speed", None),
    ]
    (quit_data,) = stored(tmp_path, "SELECT data FROM events WHERE kind = 'quit'")[0]
    assert json.loads(quit_data)["by"] == sig.name
    assert stored(tmp_path, "SELECT state FROM sessions") == [("interrupted",)]
    (detail,) = stored(tmp_path, "SELECT detail FROM audit WHERE action = 'pause'")[0]
    assert json.loads(detail)["by"] == sig.name


async def test_sighup_before_a_session_exists_just_quits(tmp_path):
    app = make_app(tmp_path)  # on the participant-id screen: nothing to keep
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        os.kill(os.getpid(), signal.SIGHUP)
        await wait_for(pilot, lambda: app.return_value is not None)
    assert (app.return_value.outcome, app.return_value.quit_by) == ("quit", "SIGHUP")
    app.store.close()
    assert stored(tmp_path, "SELECT COUNT(*) FROM sessions") == [(0,)]
