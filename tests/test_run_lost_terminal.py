"""A participant's program whose terminal is gone before it could make it its own quits.

A study host killed while it starts a participant's program closes the pseudo-terminal's
master before the program has made the terminal its controlling one: no SIGHUP is ever
sent, and reading the terminal gives end-of-file, which Textual's input thread polls again
at once. Such a program ran on for good (a core spinning, found by
`benchmarks/durability_torture.py`), holding its participant's session, so reopening the
link was refused as "taking part right now in another process". It must notice that its
writes fail, quit as on a hang-up, and leave the session to be resumed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

from helpers.studies import tiny_study

from uxlab.store import Store
from uxlab.study import load_study

GIVE_UP_S = 120.0
"""Only for a hang (the bug): a failure then, not a timing claim."""


def test_a_program_started_on_a_terminal_already_hung_up_quits_and_can_be_resumed(tmp_path):
    study = tiny_study(tmp_path)
    db = tmp_path / "study.sqlite"
    master, tty = os.openpty()
    os.close(master)  # the host is gone before its program has started
    proc = subprocess.Popen(
        [sys.executable, "-m", "uxlab.cli.remote_participant", str(study), str(db), "P-LOST1"],
        stdin=tty, stdout=tty, stderr=tty, start_new_session=True, cwd=tmp_path,
    )  # fmt: skip
    os.close(tty)
    try:
        status = proc.wait(timeout=GIVE_UP_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert status == 1  # ended early: its session can be resumed
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT state FROM sessions").fetchall() == [("interrupted",)]
        (detail,) = conn.execute("SELECT detail FROM audit WHERE action = 'pause'").fetchone()
        assert json.loads(detail)["by"] == "hangup"
        assert conn.execute("SELECT COUNT(*) FROM session_leases").fetchone() == (0,)
    conn.close()
    with Store.open(db) as store:  # the participant opens the link again: it resumes
        session = store.sessions.start_or_resume(load_study(study), "P-LOST1")
        assert (session.resumed, session.resumed_count) == (True, 1)
