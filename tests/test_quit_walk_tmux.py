"""The whole quit-and-resume walk as a participant meets it, in a real 80x24 terminal: a
trial is cut off four ways (Ctrl+C twice, Ctrl+Q twice, the window closed, kill -9), each
followed by a resume. Every screen shows the study's own total, each resume says in one
sentence that the cut-off trial is shown again at the end, the researcher's warnings screen
appears once, a single Ctrl+Q or Ctrl+C does not quit, and every trial is stored once."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
from pathlib import Path

import pytest
from helpers.studies import SLOW_MS, tiny_study
from helpers.tmux import Tmux, flat, need_tmux, uxlab_command, wait_gone, wait_screen

pytestmark = pytest.mark.slow

ACCEPTABLE = "Was the wait acceptable?"
HEADER = re.compile(r"^ ?(Trial (\d+) of (\d+)|Practice \d+ of \d+|Attention check)", re.M)


@pytest.fixture
def tmux():
    need_tmux()
    t = Tmux()
    yield t
    t.kill_server()


class Walk:
    """Reads each screen and presses what a participant would (see `step`)."""

    def __init__(self, tmux: Tmux, command: str, db: Path) -> None:
        self.tmux, self.command, self.db = tmux, command, db
        self.warnings_seen = 0
        self.headers: list[str] = []
        self.notes: list[str] = []
        self.quits: list[str] = ["C-c", "C-q", "close", "kill"]

    def start(self) -> None:
        self.tmux.fresh()
        self.tmux.start(self.command)

    def step(self, screen: str) -> str | None:
        """Act on one screen; returns the quit done (None otherwise, "end" at the end)."""
        words = flat(screen)
        head = HEADER.search(screen)
        if "Timing warnings" in screen:
            self.warnings_seen += 1
            self.tmux.keys("Enter")
            # a loaded machine may still show it at the next look: count it once
            wait_screen(self.tmux, lambda s: "Timing warnings" not in s, deadline_s=60)
        elif "Press a if you agree" in screen:
            self.tmux.keys("a")
        elif "Press Enter to begin" in words or "Practice over" in screen:
            if "Welcome back" in words:
                self.notes.append(words[words.index("Welcome back") :].split(" Press ")[0])
            self.tmux.keys("Enter")
            # a repaint of the same page (a loaded machine) must not be read as a new one
            gone = "Press Enter to begin" if "Press Enter to begin" in words else "Practice over"
            wait_screen(self.tmux, lambda s: gone not in flat(s) or self.tmux.pane_dead())
        elif "Take a short rest" in screen:
            self.tmux.keys("Enter")
        elif "Press Enter to send." in screen and head:
            self.headers.append(head.group(1))
            self.tmux.keys("Enter")
            wait_screen(self.tmux, lambda s: "Press Enter to send." not in s)
        elif "Press Esc to stop waiting." in screen and "Assistant:" in screen and head:
            answer = screen.split("Assistant:", 1)[1].split("Press Esc", 1)[0]
            if "●" not in answer and "○" not in answer:
                return None  # the answer is streaming: wait for the questions
            if self.quits and head.group(1).startswith("Trial") and self.slow_in_flight():
                return self.quit(self.quits.pop(0))
            self.tmux.keys("Escape")  # a slow one: give up (no questions after a give-up)
        elif "Press Enter for the next trial" in screen:
            self.tmux.keys("Enter")
        elif ACCEPTABLE in screen and "1/2" in screen:
            self.tmux.keys("y", "Enter")
        elif "How fast did the answer feel?" in screen:
            self.tmux.keys("4", "Enter")
        elif "Anything else you noticed?" in screen:
            self.tmux.keys("o", "k", "Enter")
        elif "Press Enter to close" in screen:
            self.tmux.keys("Enter")
            return "end"
        else:
            return None
        wait_screen(self.tmux, lambda s: s != screen or self.tmux.pane_dead())
        return None

    def slow_in_flight(self) -> bool:
        """The trial on screen waits 30 s for its first token (as stored when it began): a
        quit now cuts it off mid-wait however slowly this machine paints (a fast trial seen
        still waiting on a loaded machine may be answered before the quit lands)."""
        with sqlite3.connect(self.db) as conn:
            row = conn.execute(
                "SELECT levels FROM trials WHERE outcome = 'running' ORDER BY trial_index DESC"
            ).fetchone()
        return row is not None and json.loads(row[0]).get("ttft_ms") == SLOW_MS

    def quit(self, how: str) -> str:
        """Cut the waiting trial off `how`; then start the same command again."""
        tmux = self.tmux
        if how in ("C-c", "C-q"):
            tmux.keys(how)  # a slip: it asks, the trial goes on
            label = "Ctrl+C" if how == "C-c" else "Ctrl+Q"
            asked = f"Press {label} again to leave; your answers so far are saved."
            screen = wait_screen(tmux, lambda s: asked in flat(s))
            assert not tmux.pane_dead() and "Esc Stop" in screen  # over the hint: still waiting
            tmux.keys(how)
            wait_screen(tmux, lambda _s: tmux.pane_dead())
        elif how == "close":
            wait_gone(tmux.close("kill-window"), deadline_s=60)
        else:
            pid = tmux.pane_pid()
            os.kill(pid, signal.SIGKILL)
            wait_gone(pid, deadline_s=60)
        self.start()
        return how


def test_four_ways_to_quit_each_resumed_keep_the_count_and_every_trial_once(tmux, tmp_path):
    study = tiny_study(tmp_path, levels=f"20, {SLOW_MS:g}", repeats=4, attention=False)
    db = tmp_path / "walk.sqlite"
    args = ["run", str(study), "--participant", "P-WALK1", "--db", str(db), "--no-timing-check"]
    walk = Walk(tmux, uxlab_command(*args), db)
    walk.start()
    done: list[str] = []
    while True:
        screen = wait_screen(tmux, lambda s: s.strip() != "", deadline_s=120)
        what = walk.step(screen)
        if what == "end":
            break
        if what is not None:
            done.append(what)
    wait_screen(tmux, lambda _s: tmux.pane_dead())

    assert done == ["C-c", "C-q", "close", "kill"]
    assert walk.warnings_seen == 1  # for the researcher, once: the verdict never changed
    mains = [h for h in walk.headers if h.startswith("Trial")]
    totals = {h.rsplit(" ", 1)[1] for h in mains}
    assert totals == {"8"}, mains  # the study's 8 main trials, on every screen
    assert mains[-1] == "Trial 8 of 8"
    numbers = [int(h.split()[1]) for h in mains]
    assert numbers == sorted(numbers), mains  # never back, never past the total
    assert len(walk.notes) == 4
    for note in walk.notes:
        assert "was not finished, so it will be shown again at the end" in note, note
        assert "(the study still has 8 trials)" in note

    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT trial_index, outcome FROM trials ORDER BY 1").fetchall()
        requeued = conn.execute("SELECT of_index FROM requeued ORDER BY 1").fetchall()
        answers = conn.execute(
            "SELECT trial_index, question_id, COUNT(*) FROM responses GROUP BY 1, 2"
        ).fetchall()
    outcomes = dict(rows)
    assert len(rows) == len(outcomes)  # each trial stored once
    cut = sorted(i for i, o in outcomes.items() if o == "interrupted")
    assert cut == [i for (i,) in requeued] and len(cut) == 4  # each cut-off one shown again
    assert all(o in ("completed", "abandoned") for i, o in outcomes.items() if i not in cut)
    assert all(n == 1 for _, _, n in answers)  # every answer once
