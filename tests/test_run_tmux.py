"""End to end in a real terminal: `uxlab run` inside tmux, driven with send-keys.

The test reads the screen with capture-pane to know where it is (polling with a deadline),
answers like a participant, SIGKILLs the process while a trial is in flight, runs the same
command again, finishes the study, and then checks the database: no committed trial lost
or duplicated, the killed trial marked `interrupted`, the session completed after a resume.
Skipped only when tmux is not installed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from helpers.studies import tiny_study

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """One private tmux server (its own socket) with one 80x24 session."""

    def __init__(self) -> None:
        self.socket = f"uxlab-test-{uuid.uuid4().hex[:8]}"

    def cmd(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True
        )
        return out.stdout

    def start(self, command: str) -> None:
        self.cmd("new-session", "-d", "-s", "run", "-x", "80", "-y", "24", command)
        self.cmd("set-option", "-t", "run", "remain-on-exit", "on")

    def screen(self) -> str:
        return self.cmd("capture-pane", "-p", "-J", "-S", "-30", "-t", "run")

    def keys(self, *keys: str) -> None:
        self.cmd("send-keys", "-t", "run", *keys)

    def pane_pid(self) -> int:
        return int(self.cmd("display-message", "-p", "-t", "run", "#{pane_pid}").strip())

    def pane_dead(self) -> bool:
        return self.cmd("display-message", "-p", "-t", "run", "#{pane_dead}").strip() == "1"

    def kill_session(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-session", "-t", "run"], check=False)

    def kill_server(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], check=False)


@pytest.fixture
def tmux():
    t = Tmux()
    yield t
    t.kill_server()


def run_command(study: Path, db: Path) -> str:
    args = [sys.executable, "-m", "uxlab", "run", str(study), "--participant", "P-TMUX1"]
    args += ["--db", str(db)]
    env = f"cd {shlex.quote(str(REPO))} && PYTHONPATH={shlex.quote(str(REPO))} exec "
    return env + " ".join(shlex.quote(a) for a in args)


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
    tmux.kill_session()

    tmux.start(run_command(study, db))
    seen_welcome = []

    def note_welcome(screen: str) -> bool:
        if "Welcome back" in screen:
            seen_welcome.append(screen)
        return False

    final = drive(tmux, stop_when=note_welcome)
    assert seen_welcome, "the resumed session must say so on screen"
    assert "completed the study" in final and "uxlab export" in final

    with sqlite3.connect(db) as conn:
        trials = conn.execute(
            "SELECT trial_index, outcome FROM trials ORDER BY trial_index"
        ).fetchall()
        plan_len = conn.execute("SELECT json_array_length(plan) FROM sessions").fetchone()[0]
        state = conn.execute("SELECT state, resumed_count FROM sessions").fetchone()
    indexes = [t[0] for t in trials]
    assert indexes == list(range(plan_len)), "every trial exactly once"
    assert dict(trials)[2] == "interrupted"
    assert all(o == "completed" for i, o in trials if i != 2)
    assert state == ("completed", 1)
    after = committed(db)
    assert [r for r in after if r[0] < 2] == before, "committed trials unchanged by the resume"
