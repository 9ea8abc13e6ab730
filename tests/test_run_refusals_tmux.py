"""`uxlab run` in real terminals (tmux) meeting a database it must not use, or a participant
id already live in another terminal: a clear line or screen, never Textual's crash screen,
and nothing stored is changed."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from helpers.studies import tiny_study
from helpers.tmux import Tmux, ended_screen, flat, need_tmux, uxlab_command, wait_screen

pytestmark = pytest.mark.slow  # real terminals: a few seconds per program started


@pytest.fixture
def terminals():
    need_tmux()
    made: list[Tmux] = []

    def make() -> Tmux:
        made.append(Tmux())
        return made[-1]

    yield make
    for t in made:
        t.kill_server()


def to_first_trial(tmux: Tmux) -> None:
    """Through the warning, consent and instructions screens to the first trial."""
    steps = [("Timing warnings", "Enter"), ("Press a if you agree", "a")]
    steps.append(("Press Enter to begin", "Enter"))
    done: set[str] = set()
    while True:
        screen = wait_screen(
            tmux,
            lambda s: (
                "Press Enter to send." in s or any(m in s and m not in done for m, _ in steps)
            ),
        )
        if "Press Enter to send." in screen:
            return
        marker, key = next((m, k) for m, k in steps if m in screen and m not in done)
        done.add(marker)
        tmux.keys(key)


def test_a_second_terminal_with_the_same_participant_waits_and_the_log_says_who_holds_it(
    terminals, tmp_path
):
    study = tiny_study(tmp_path, levels="20", practice=0, attention=False)
    db = tmp_path / "two.sqlite"
    first, second = terminals(), terminals()
    first.start(uxlab_command("run", str(study), "--participant", "P-TWO01", "--db", str(db)))
    to_first_trial(first)
    first.keys("Enter")  # trial 0 is in flight in the first terminal
    second.start(uxlab_command("run", str(study), "--participant", "P-TWO01", "--db", str(db)))
    # The refusal names a temporary path, so where it wraps varies: read it as words.
    screen = wait_screen(
        second,
        lambda s: "still open somewhere else" in s or "Timing warnings" in s,
    )
    if "Timing warnings" in screen:
        second.keys("Enter")
        screen = wait_screen(second, lambda s: "still open somewhere else" in s)
    # plain words for the participant, never a new id; which process: the log, after
    assert "press Enter to try again" in flat(screen) and "Traceback" not in screen
    assert f"pid {first.pane_pid()}" not in screen
    second.keys("C-q", "C-q")
    after = ended_screen(second, deadline_s=30)
    assert f"held by pid {first.pane_pid()} on host" in flat(after)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT resumed_count FROM sessions").fetchall() == [(0,)]
        assert conn.execute("SELECT COUNT(*) FROM trials").fetchone() == (1,)
    first.keys("C-q", "C-q")
    wait_screen(first, lambda _s: first.pane_dead())


def test_a_read_only_database_is_refused_in_one_line_before_any_screen(terminals, tmp_path):
    study = tiny_study(tmp_path, levels="20", practice=0, attention=False)
    db = tmp_path / "ro.sqlite"
    tmux = terminals()
    tmux.start(uxlab_command("run", str(study), "--participant", "P-RO001", "--db", str(db)))
    to_first_trial(tmux)
    tmux.keys("C-q", "C-q")
    wait_screen(tmux, lambda _s: tmux.pane_dead(), deadline_s=30)
    db.chmod(0o444)
    before = hashlib.sha256(Path(db).read_bytes()).hexdigest()
    again = terminals()
    again.start(uxlab_command("run", str(study), "--participant", "P-RO001", "--db", str(db)))
    screen = wait_screen(again, lambda s: again.pane_dead() and "read-only" in s)
    assert "uxlab run:" in screen and "Traceback" not in screen
    assert hashlib.sha256(Path(db).read_bytes()).hexdigest() == before
    db.chmod(0o644)
