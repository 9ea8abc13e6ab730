"""End to end in a real terminal: `uxlab run` inside tmux, driven with send-keys.

The test reads the screen with capture-pane to know where it is (polling with a deadline),
answers like a participant, SIGKILLs the process while a trial is in flight, runs the same
command again, finishes the study, and then checks the database: no committed trial lost
or duplicated, the killed trial marked `interrupted` and run again at the end, the session
completed after a resume.
tmux is required (`helpers.tmux.need_tmux`: a clear failure, never a silent skip).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from helpers.studies import tiny_study
from helpers.tmux import Tmux, need_tmux, uxlab_command


@pytest.fixture
def tmux():
    need_tmux()
    t = Tmux()
    yield t
    t.kill_server()


def run_command(study: Path, db: Path) -> str:
    return uxlab_command("run", str(study), "--participant", "P-TMUX1", "--db", str(db))


def committed(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT t.trial_index, t.outcome, r.question_id, r.value FROM trials t "
            "LEFT JOIN responses r ON r.session_id = t.session_id "
            "AND r.trial_index = t.trial_index WHERE t.outcome != 'running' ORDER BY 1, 3"
        ).fetchall()


# Screen markers -> keys to send. The first marker found on the screen decides.
ACTIONS = [
    ("Timing warnings", ["Enter"]),
    ("Press a if you agree", ["a"]),
    ("Practice over", ["Enter"]),
    ("Take a short rest", ["Enter"]),
    ("Press Enter to begin", ["Enter"]),
    ("Press Enter to send.", ["Enter"]),
    ("Press Enter for the next trial", ["Enter"]),
    ("Please answer No", None),  # an attention check's answer: handled below
    ("Was the wait acceptable?", ["y", "Enter"]),
    ("How fast did the answer feel?", ["4", "Enter"]),
    ("Anything else you noticed?", ["o", "k", "Enter"]),
    ("Press Enter to close", ["Enter"]),
]


def drive(tmux: Tmux, stop_when=None, deadline_s: float = 60.0) -> str:
    """Answer screens until the program exits (or `stop_when(screen)`); returns the screen."""
    give_up = time.monotonic() + deadline_s
    last_acted = None
    while time.monotonic() < give_up:
        if tmux.pane_dead():
            return tmux.screen()
        screen = tmux.screen()
        if stop_when is not None and stop_when(screen):
            return screen
        for marker, keys in ACTIONS:
            if marker not in screen:
                continue
            lines = [ln.strip() for ln in screen.splitlines() if ln.strip()]
            state = (marker, tuple(lines[:2]), "1/2" in screen, "2/2" in screen)
            if state != last_acted:
                if keys is None:  # attention check: its one question, answered as it asks
                    keys = ["n", "Enter"]
                    if "Was the wait acceptable?" not in screen:
                        break  # not painted yet
                tmux.keys(*keys)
                last_acted = state
            break
        time.sleep(0.05)
    raise AssertionError(f"uxlab run did not finish in time; the screen:\n{tmux.screen()}")


@pytest.mark.slow
def test_kill_mid_study_and_resume_loses_and_duplicates_nothing(tmux, tmp_path):
    study = tiny_study(tmp_path, levels="20, 40", itl=2)
    db = tmp_path / "tmux.sqlite"
    tmux.start(run_command(study, db))

    def third_trial_in_flight(screen: str) -> bool:
        return "1/2" in screen and len({r[0] for r in committed(db)}) == 2 if db.exists() else False

    screen = drive(tmux, stop_when=third_trial_in_flight)
    assert "Trial 2 of" in screen  # practice 1 + trial 1 committed, trial 2 in flight
    before = committed(db)
    os.kill(tmux.pane_pid(), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not tmux.pane_dead():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with sqlite3.connect(db) as conn:
        assert conn.execute(
            "SELECT trial_index FROM trials WHERE outcome = 'running'"
        ).fetchall() == [(2,)]
    tmux.fresh()  # a new server: killing the only session ends this one, and a new session
    # started on its socket while it goes away fails (tmux: exit 1, seen in CI)

    tmux.start(run_command(study, db))
    seen_welcome = []

    def note_welcome(screen: str) -> bool:
        if "Welcome back" in screen:
            seen_welcome.append(screen)
        return False

    final = drive(tmux, stop_when=note_welcome)
    assert seen_welcome, "the resumed session must say so on screen"
    assert "completed the study" in final and "uxlab export" in final
    assert "timing:" in final and "timing tolerance" in " ".join(final.split())  # the count

    with sqlite3.connect(db) as conn:
        trials = conn.execute(
            "SELECT trial_index, outcome FROM trials ORDER BY trial_index"
        ).fetchall()
        plan_len = conn.execute("SELECT json_array_length(plan) FROM sessions").fetchone()[0]
        state = conn.execute("SELECT state, resumed_count FROM sessions").fetchone()
        requeued = conn.execute("SELECT trial_index, of_index, reason FROM requeued").fetchall()
        cells = conn.execute(
            "SELECT condition_id, seed, replay_id FROM trials WHERE trial_index IN (2, ?) "
            "ORDER BY trial_index",
            (plan_len,),
        ).fetchall()
    indexes = [t[0] for t in trials]
    assert indexes == list(range(plan_len + 1)), "every trial exactly once, then the re-run"
    assert dict(trials)[2] == "interrupted"
    assert requeued == [(plan_len, 2, "interrupted")] and cells[0] == cells[1]
    assert all(o == "completed" for i, o in trials if i != 2)
    assert state == ("completed", 1)
    after = committed(db)
    assert [r for r in after if r[0] < 2] == before, "committed trials unchanged by the resume"
