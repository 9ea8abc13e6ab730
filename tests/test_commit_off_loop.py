"""A trial is committed off the UI loop: while its transaction runs (here held open by a
gate, as a 100,000-event trial would hold it), the app still handles key presses and
repaints; the trial is stored once the write is over; a quit meanwhile waits for it.

No time is measured here (see `benchmarks/commit_off_loop.py` for the loop's stall)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from helpers.pilot import asking, wait_for, wait_screen
from helpers.studies import tiny_study

from uxlab.store import Store
from uxlab.store.base import Database
from uxlab.store.trials import Trials
from uxlab.study import load_study
from uxlab.tui.flow_screens import ConsentScreen, InstructionsScreen
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

STUDY = {"practice": 0, "attention": False, "repeats": 2, "break_every": 10, "levels": "20"}


class GatedTrials(Trials):
    """The real trials part, whose commits wait for `gate` (in whichever thread runs them)."""

    def __init__(self, db: Database):
        super().__init__(db)
        self.gate, self.entered = threading.Event(), threading.Event()
        self.threads: list[str] = []

    def commit(self, *args, **kw):  # type: ignore[override]
        self.threads.append(threading.current_thread().name)
        self.entered.set()
        assert self.gate.wait(timeout=60), "the test never opened the gate"
        return super().commit(*args, **kw)


class GatedStore(Store):
    """The real store, with its trials part gated."""

    trials: GatedTrials

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.trials = GatedTrials(self.db)


def make_app(tmp_path: Path) -> tuple[StudyApp, GatedStore]:
    study = load_study(tiny_study(tmp_path, **STUDY))
    store = GatedStore.open(tmp_path / "results.sqlite")
    return StudyApp(study, store, participant="P-LOOP1"), store


def stored(tmp_path: Path) -> list[tuple]:
    with sqlite3.connect(tmp_path / "results.sqlite") as conn:
        return conn.execute("SELECT trial_index, outcome FROM trials ORDER BY 1").fetchall()


async def answer_first_trial(pilot) -> TrialScreen:
    await wait_screen(pilot, ConsentScreen)
    await pilot.press("a")
    await wait_screen(pilot, InstructionsScreen)
    await pilot.press("enter")
    await wait_screen(pilot, TrialScreen)
    screen = pilot.app.screen
    await pilot.press("enter")
    await wait_for(pilot, lambda: asking(pilot.app, "acceptable"))
    await pilot.press("y", "enter")
    await wait_for(pilot, lambda: asking(pilot.app, "speed"))
    await pilot.press("4", "enter")
    return screen


async def test_the_loop_runs_while_a_trial_is_committed(tmp_path):
    app, store = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await answer_first_trial(pilot)
        await wait_for(pilot, store.trials.entered.is_set)  # the commit is running, held open
        assert store.trials.threads[-1] != threading.main_thread().name
        before = app.key_time_ms
        await pilot.press("x")  # handled by the loop meanwhile
        await pilot.pause()
        assert app.key_time_ms is not None and app.key_time_ms != before
        assert stored(tmp_path) == [(0, "running")]  # not stored yet, nothing half-stored
        blank = app.query_one("#blank")
        await wait_for(pilot, lambda: "Saving" in str(blank.content))  # a long write says so
        store.trials.gate.set()
        await wait_for(pilot, lambda: stored(tmp_path)[0] == (0, "completed"))
        await wait_for(pilot, lambda: "Saving" not in str(blank.content))
        await wait_for(
            pilot, lambda: isinstance(app.screen, TrialScreen) and app.screen.run.trial.index == 1
        )
        await pilot.press("ctrl+q", "ctrl+q")
    assert app.return_value.committed == [0]
    store.close()


async def test_a_quit_during_the_commit_waits_for_it_and_keeps_the_trial(tmp_path):
    app, store = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await answer_first_trial(pilot)
        await wait_for(pilot, store.trials.entered.is_set)
        await pilot.press("ctrl+q", "ctrl+q")  # while the trial is being written
        await pilot.pause()
        assert app.is_running  # waits for the write: nothing is closed under it
        store.trials.gate.set()
        await wait_for(pilot, lambda: not app.is_running)
    result = app.return_value
    assert result.outcome == "interrupted" and result.committed == [0]
    assert result.quit_trial == "committed"
    store.close()
    assert stored(tmp_path) == [(0, "completed")]  # trial 1 was never begun


def test_the_streamed_trial_digest_is_the_same_digest():
    """The commit hashes its payload piece by piece; the digest must not change."""
    import json

    from uxlab.store.store import sha256_json, sha256_json_streamed

    rows = [
        ("S-1", 0, i, None if i % 5 else i / 3, "chunk", json.dumps({"é": i})) for i in range(50)
    ]
    payload = {
        "session_id": "S-1",
        "trial_index": 0,
        "outcome": "completed",
        "timings": {"shown_last_ms": 9.5, "t_abandon_ms": None, "extra": [1, {"b": 2, "a": 1}]},
        "responses": {"why": ("line\u2028two \U0001f600", 1.5)},
        "events": rows,
    }
    for obj in (payload, [], {}, "x", [[], {}], {"k": ()}):
        assert sha256_json_streamed(obj) == sha256_json(obj)


async def test_a_database_turned_read_only_mid_session_says_so_and_loses_nothing(tmp_path):
    from uxlab.tui.flow_screens import SaveFailedScreen

    study = load_study(tiny_study(tmp_path, **STUDY))
    store = Store.open(tmp_path / "results.sqlite")
    app = StudyApp(study, store, participant="P-RO001")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        await pilot.press("enter")
        await wait_screen(pilot, TrialScreen)
        await pilot.press("enter")
        await wait_for(pilot, lambda: asking(app, "acceptable"))
        await pilot.press("y", "enter")
        await wait_for(pilot, lambda: asking(app, "speed"))
        store.db.conn.execute("PRAGMA query_only = ON")  # SQLite refuses every write from now
        await pilot.press("4", "enter")
        await wait_screen(pilot, SaveFailedScreen)
        assert "the database file is read-only" in app.screen.body
        assert stored(tmp_path) == [(0, "running")]
        store.db.conn.execute("PRAGMA query_only = OFF")
        await pilot.press("r")
        await wait_for(pilot, lambda: stored(tmp_path)[0] == (0, "completed"))
        await wait_for(
            pilot, lambda: isinstance(app.screen, TrialScreen) and app.screen.run.trial.index == 1
        )
        await pilot.press("ctrl+q", "ctrl+q")
    store.close()
