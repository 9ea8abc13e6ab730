"""Closing the terminal is a clean quit: `uxlab run` in tmux, the pane closed mid-session.

Closing a tmux pane or window hangs up its terminal (SIGHUP), as closing a terminal window
does. The program must then do what Ctrl+Q does: commit what is on screen (a give-up on the
"stopped" screen, the answers given so far), leave the session paused and resumable, and
exit. Each test closes the pane at one such moment, checks the database, runs the same
command again and finds the session continuing with the next trial. SIGTERM (`kill`) quits
the same way and gives the terminal back; the trial it left in flight runs again at the end.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from pathlib import Path

import pytest
from helpers.studies import SLOW_MS, tiny_study
from helpers.tmux import Tmux, ended_screen, need_tmux, uxlab_command, wait_gone, wait_screen


@pytest.fixture
def tmux():
    need_tmux()
    t = Tmux()
    yield t
    t.kill_server()


HANG_UPS = ("SIGHUP", "hangup")
"""How a closed terminal is recorded: the signal, or (should a failed read come first) the
driver's `hangup`; both mean the terminal went away."""
SCREENS = (
    ("Timing warnings", "Enter"),  # inside tmux: the researcher's warning screen
    ("Press a if you agree", "a"),
    ("Press Enter to begin", "Enter"),
)


def start(tmux: Tmux, study: Path, db: Path, participant: str) -> str:
    """Run the study for `participant` up to the first trial screen (returned)."""
    tmux.start(uxlab_command("run", str(study), "--participant", participant, "--db", str(db)))
    done: set[str] = set()
    while True:
        screen = wait_screen(
            tmux,
            lambda s: (
                "Press Enter to send." in s or any(m in s and m not in done for m, _ in SCREENS)
            ),
        )
        if "Press Enter to send." in screen:
            return screen
        marker, key = next((m, k) for m, k in SCREENS if m in screen and m not in done)
        done.add(marker)
        tmux.keys(key)


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def resume_offers_trial(tmux: Tmux, study: Path, db: Path, participant: str) -> str:
    """Run the same command again; returns the first trial screen, then quits with Ctrl+Q."""
    tmux.fresh()
    screen = start(tmux, study, db, participant)
    tmux.keys("C-q", "C-q")
    wait_screen(tmux, lambda _s: tmux.pane_dead(), deadline_s=30)
    return screen


@pytest.mark.slow
def test_closing_the_pane_on_the_stopped_screen_keeps_the_give_up(tmux, tmp_path):
    study = tiny_study(tmp_path, levels=f"{SLOW_MS:g}", practice=0, attention=False)
    db = tmp_path / "hup.sqlite"
    start(tmux, study, db, "P-HUP01")
    tmux.keys("Enter")
    wait_screen(tmux, lambda s: "Press Enter to send." not in s)  # sent: waiting for 30 s
    tmux.keys("Escape")
    wait_screen(tmux, lambda s: "You stopped this answer." in s)
    wait_gone(tmux.close("kill-pane"))

    (trial,) = rows(db, "SELECT trial_index, outcome, t_abandon_ms FROM trials")
    assert trial[:2] == (0, "abandoned") and 0 <= trial[2] < SLOW_MS
    assert rows(db, "SELECT state FROM sessions") == [("interrupted",)]
    (quit_event,) = rows(db, "SELECT data FROM events WHERE kind = 'quit'")
    assert json.loads(quit_event[0])["by"] in HANG_UPS
    pauses = rows(db, "SELECT detail FROM audit WHERE action = 'pause'")
    assert [json.loads(d)["by"] in HANG_UPS for (d,) in pauses] == [True]

    screen = resume_offers_trial(tmux, study, db, "P-HUP01")
    assert "Trial 2 of 2" in screen
    assert rows(db, "SELECT trial_index, outcome FROM trials ORDER BY 1") == [(0, "abandoned")]


@pytest.mark.slow
def test_closing_the_window_while_answering_keeps_the_answers(tmux, tmp_path):
    study = tiny_study(tmp_path, levels="20", practice=0, attention=False)
    db = tmp_path / "hup.sqlite"
    start(tmux, study, db, "P-HUP02")
    tmux.keys("Enter")
    wait_screen(tmux, lambda s: "Was the wait acceptable?" in s)
    tmux.keys("n", "Enter")
    wait_screen(tmux, lambda s: "How fast did the answer feel?" in s)
    wait_gone(tmux.close("kill-window"))

    assert rows(db, "SELECT trial_index, outcome FROM trials") == [(0, "completed")]
    assert rows(db, "SELECT question_id, value FROM responses ORDER BY 1") == [
        ("acceptable", "no"),
        ("speed", None),
    ]
    (quit_event,) = rows(db, "SELECT data FROM events WHERE kind = 'quit'")
    quit_data = json.loads(quit_event[0])
    assert quit_data["unanswered"] == ["speed"] and quit_data["by"] in HANG_UPS
    assert rows(db, "SELECT state FROM sessions") == [("interrupted",)]

    screen = resume_offers_trial(tmux, study, db, "P-HUP02")
    assert "Trial 2 of 2" in screen


@pytest.mark.slow
def test_sigterm_mid_stream_restores_the_terminal_and_the_trial_runs_again(tmux, tmp_path):
    study = tiny_study(tmp_path, levels=f"{SLOW_MS:g}", practice=0, attention=False)
    db = tmp_path / "term.sqlite"
    start(tmux, study, db, "P-TERM2")
    tmux.keys("Enter")
    wait_screen(tmux, lambda s: "Press Enter to send." not in s)  # waiting: trial in flight
    os.kill(tmux.pane_pid(), signal.SIGTERM)
    screen = ended_screen(tmux, deadline_s=30)
    # The terminal was given back: the program's exit message is on the normal screen.
    assert "session of P-TERM2 interrupted (SIGTERM)" in screen and "resume:" in screen
    assert rows(db, "SELECT trial_index, outcome FROM trials") == [(0, "running")]

    tmux.fresh()
    first = start(tmux, study, db, "P-TERM2")
    # the second planned trial, counted as the first done (the cut-off one is shown again
    # at the end, as "Trial 2 of 2": the study's total stays 2)
    assert "Trial 1 of 2" in first
    assert rows(db, "SELECT trial_index, of_index, reason FROM requeued") == [(2, 0, "interrupted")]


def _uxlab_child(tmux: Tmux) -> int | None:
    """The `uxlab run` the pane's shell started, if one is running."""
    out = os.popen(f"pgrep -P {tmux.pane_pid()} -f 'uxlab run'").read().split()
    return int(out[0]) if out else None


def _pane_terminal_line_mode(tmux: Tmux) -> bool:
    """The pane's terminal has line input and echo (a shell's prompt works)."""
    import termios

    path = tmux.cmd("display-message", "-p", "-t", "run", "#{pane_tty}").strip()
    fd = os.open(path, os.O_RDONLY | os.O_NOCTTY)
    try:
        lflag = termios.tcgetattr(fd)[3]
    finally:
        os.close(fd)
    return bool(lflag & termios.ICANON and lflag & termios.ECHO)


@pytest.mark.slow
def test_a_session_resumed_after_kill_9_gives_back_a_working_terminal(tmux, tmp_path):
    """kill -9 leaves the terminal raw (no echo, no line input); a shell such as sh does not
    put it back. The same command typed blind (to resume) starts the app again, and its clean
    end (Ctrl+Q twice) leaves the terminal in line mode: before, that app saved the raw modes
    it found and restored them, and the shell stayed unusable until `reset`."""
    study, db = tiny_study(tmp_path), tmp_path / "k.db"
    command = uxlab_command("run", str(study), "--participant", "P1", "--db", str(db))
    tmux.start("env PS1='$ ' sh", remain_on_exit=False)
    wait_screen(tmux, lambda s: "$" in s)
    tmux.keys(command.replace(" exec ", " "), "Enter")
    wait_screen(tmux, lambda s: "Timing warnings" in s or "Press a if you agree" in s)
    pid = _uxlab_child(tmux)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_gone(pid)
    assert not _pane_terminal_line_mode(tmux)  # what the killed app left
    tmux.keys(command.replace(" exec ", " "), "C-j")  # typed blind: Enter is no newline now
    wait_screen(tmux, lambda s: "Timing warnings" in s or "Press a if you agree" in s)
    resumed = _uxlab_child(tmux)
    assert resumed is not None
    tmux.keys("C-q", "C-q")
    wait_gone(resumed)
    assert _pane_terminal_line_mode(tmux)
