"""Session facts through the real app: the terminal's size when a session starts or resumes,
and every resize, as events in the events table (and in `uxlab export`'s events.csv)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time

import pandas as pd
import pytest
from helpers.pilot import do_trial, wait_for, wait_screen
from helpers.studies import tiny_study
from test_run_tmux import Tmux, run_command

from uxlab.cli import main
from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.flow_screens import ConsentScreen, InstructionsScreen
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen


def events(db, kinds=("terminal", "resize")) -> list[tuple[int, str, dict]]:
    with Store.open(db) as store:
        rows = store.db.conn.execute(
            "SELECT trial_index, kind, data FROM events ORDER BY trial_index, seq"
        ).fetchall()
    return [(i, k, json.loads(d)) for i, k, d in rows if k in kinds]


async def test_start_size_and_every_resize_are_stored_and_exported(tmp_path):
    study = load_study(tiny_study(tmp_path, levels="20, 40", practice=0, attention=False))
    db = tmp_path / "results.sqlite"
    app = StudyApp(study, Store.open(db), participant="P-SIZE1")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        await pilot.resize_terminal(100, 30)  # between screens: a session event at once
        await wait_for(pilot, lambda: len(events(db)) == 2)
        await pilot.press("enter")
        await wait_screen(pilot, TrialScreen)
        await pilot.resize_terminal(70, 22)  # during trial 0: stored with the trial
        await wait_for(pilot, lambda: app.size == (70, 22))
        await do_trial(pilot, give_up=False)
        await wait_for(pilot, lambda: 0 in app.session.committed)
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()
    got = events(db)
    assert got == [
        (-1, "terminal", {"cols": 80, "rows": 24, "resumed": False}),
        (-1, "resize", {"cols": 100, "rows": 30}),
        (0, "resize", {"cols": 70, "rows": 22}),
    ]

    again = StudyApp(study, Store.open(db), participant="P-SIZE1")
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_screen(pilot, InstructionsScreen)
        await pilot.press("ctrl+q", "ctrl+q")
    again.store.close()
    assert events(db)[2] == (-1, "terminal", {"cols": 120, "rows": 40, "resumed": True})

    out = tmp_path / "export"
    assert main(["export", str(db), "-o", str(out)]) == 0
    table = pd.read_csv(out / "events.csv")
    sized = table[table.kind.isin(["terminal", "resize"])]
    assert len(sized) == 4 and list(sized.columns) == [
        "session_id",
        "trial_index",
        "t_ms",
        "kind",
        "data",
    ]
    assert {json.loads(d)["cols"] for d in sized.data} == {80, 100, 70, 120}
    assert sized.t_ms.notna().all()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_real_terminal_resize_is_logged(tmp_path):
    """tmux resizes the window: the terminal's SIGWINCH reaches the app as a `resize` event."""
    path = tiny_study(tmp_path, levels="20", practice=0, attention=False)
    db = tmp_path / "tmux.sqlite"
    tmux = Tmux()
    try:
        # Under pytest the process environment holds COLUMNS/LINES (set below Python's
        # os.environ), which would pin the app's size: the app starts without them.
        tmux.start("unset COLUMNS LINES; " + run_command(path, db))

        def until(check, what: str) -> None:
            deadline = time.monotonic() + 30
            while not check():
                assert time.monotonic() < deadline, f"no {what} on:\n{tmux.screen()}"
                time.sleep(0.05)

        for marker, key in [("Timing warnings", "Enter"), ("Press a if you agree", "a")]:
            until(lambda m=marker: m in tmux.screen(), marker)
            tmux.keys(key)
        until(lambda: "Press Enter to begin" in tmux.screen(), "the instructions")
        tmux.cmd("resize-window", "-t", "run", "-x", "100", "-y", "30")
        until(lambda: len(events(db)) == 2, "a resize event")
        tmux.keys("C-q", "C-q")
    finally:
        tmux.kill_server()
    logged = events(db)
    assert logged[:2] == [
        (-1, "terminal", {"cols": 80, "rows": 24, "resumed": False}),
        (-1, "resize", {"cols": 100, "rows": 30}),
    ]
    # tmux may size the window again while the app quits (seen on a loaded machine: back
    # to 80x24); that is a resize too, and logged as one
    assert all(kind == "resize" for _, kind, _ in logged[2:])


async def test_a_resize_on_a_locked_database_is_written_after_the_next_trial(tmp_path):
    study = load_study(tiny_study(tmp_path, levels="20", practice=0, attention=False))
    db = tmp_path / "results.sqlite"
    app = StudyApp(study, Store.open(db, busy_timeout_s=0.2), participant="P-SIZE2")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        await pilot.resize_terminal(100, 30)
        await wait_for(pilot, lambda: app.events_pending)  # the write failed: kept
        other.execute("ROLLBACK")
        other.close()
        await pilot.press("enter")
        await wait_screen(pilot, TrialScreen)
        await do_trial(pilot, give_up=False)
        await wait_for(pilot, lambda: not app.events_pending)
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()
    logged = events(db)
    assert logged[:2] == [
        (-1, "terminal", {"cols": 80, "rows": 24, "resumed": False}),
        (-1, "resize", {"cols": 100, "rows": 30}),
    ]
    # tmux may size the window again while the app quits (seen on a loaded machine: back
    # to 80x24); that is a resize too, and logged as one
    assert all(kind == "resize" for _, kind, _ in logged[2:])
