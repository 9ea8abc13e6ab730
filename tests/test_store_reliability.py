"""The store under SIGKILL and under two writers at once, with real subprocesses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
from helpers.postgres import query

from uxlab.store import Store
from uxlab.study import load_study

HERE = Path(__file__).parent
CHILD = HERE / "store_kill_child.py"
CORPUS = HERE / "data" / "bad_studies" / "corpus"


def write_study(tmp_path: Path, repeats: int) -> Path:
    path = tmp_path / "kill.toml"
    path.write_text(f"""
[study]
id = "kill"
title = "crash test"
seed = 3
[texts]
consent = "ok"
instructions = "go"
[stimuli]
corpus = "{CORPUS.as_posix()}"
[factors]
ttft_ms = [100, 400, 1600, 3200]
[design]
repeats = {repeats}
[[questions]]
id = "acceptable"
type = "yesno"
text = "Acceptable?"
""")
    return path


def start(db: Path, study: Path, participant: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(db), str(study), participant, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def committed_rows(db: Path | str) -> list[tuple[int, str, int]]:
    return query(
        db,
        "SELECT t.trial_index, t.outcome, "
        "(SELECT COUNT(*) FROM responses r WHERE r.session_id = t.session_id "
        " AND r.trial_index = t.trial_index) "
        "FROM trials t ORDER BY t.trial_index",
    )


def test_sigkill_at_many_points_never_loses_a_committed_trial(tmp_path, db):
    """On PostgreSQL the killed host's connection dies mid-transaction too: the server
    rolls it back, and nothing it committed is lost."""
    study = write_study(tmp_path, repeats=20)  # 80 trials
    rng = np.random.default_rng(2024)
    server = subprocess.Popen(
        [sys.executable, str(CHILD), "--fork", str(db), str(study), "P-KILL1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reported: set[int] = set()
    in_flight: int | None = None
    try:
        for run in range(20):
            server.stdin.write("RUN\n")
            server.stdin.flush()
            pid_line = server.stdout.readline().split()
            assert pid_line[0] == "PID", pid_line
            first = server.stdout.readline().split()
            assert first[0] == "RESUMED", first
            interrupted = set() if first[1] == "-" else {int(x) for x in first[1].split(",")}
            assert not interrupted & reported  # a reported commit is never marked interrupted
            if run and in_flight is not None and in_flight not in reported:
                outcome = dict((i, o) for i, o, _ in committed_rows(db))[in_flight]
                assert in_flight in interrupted or outcome == "completed"
                assert outcome in ("interrupted", "completed")
            # kill after a random number of progress lines (the child keeps writing meanwhile)
            for _ in range(int(rng.integers(1, 8))):
                line = server.stdout.readline().split()
                if line[0] == "COMMIT":
                    reported.add(int(line[1]))
                elif line[0] == "BEGIN":
                    in_flight = int(line[1])
            os.kill(int(pid_line[1]), signal.SIGKILL)
            while True:  # progress the worker printed before it died, then its exit
                line = server.stdout.readline().split()
                if line[0] == "EXIT":
                    assert os.WIFSIGNALED(int(line[1]))
                    break
                if line[0] == "COMMIT":
                    reported.add(int(line[1]))
                elif line[0] == "BEGIN":
                    in_flight = int(line[1])
            rows = committed_rows(db)  # also checks PRAGMA integrity_check
            indexes = [i for i, _, _ in rows]
            assert len(indexes) == len(set(indexes))  # each trial at most once
            by_index = {i: (o, n) for i, o, n in rows}
            for i in reported:  # every trial the child reported committed is there, whole
                assert by_index[i] == ("completed", 1)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        server.stdout.close()
        server.stderr.close()
    assert len(reported) >= 20
    # a clean resume marks the last in-flight trial; the data says it was resumed 20 times
    with Store.open(db) as store:
        session = store.sessions.start_or_resume(load_study(study), "P-KILL1")
        assert session.resumed_count == 20
        rows = committed_rows(db)
        assert all(o in ("completed", "interrupted") for _, o, _ in rows)
        assert session.next_index == max(i for i, _, _ in rows) + 1
        assert store.audit.is_intact()


def test_two_processes_write_different_participants_at_once(tmp_path, db):
    study = write_study(tmp_path, repeats=5)  # 20 trials each
    with Store.open(db) as store:
        store.studies.register(load_study(study))
    a = start(db, study, "P-AAAAA")
    b = start(db, study, "P-BBBBB")
    out_a, err_a = a.communicate(timeout=120)
    out_b, err_b = b.communicate(timeout=120)
    assert a.returncode == 0, err_a
    assert b.returncode == 0, err_b
    assert out_a.strip().endswith("DONE") and out_b.strip().endswith("DONE")
    counts = dict(
        query(
            db,
            "SELECT s.participant, COUNT(*) FROM trials t JOIN sessions s "
            "ON s.session_id = t.session_id WHERE t.outcome = 'completed' "
            "GROUP BY s.participant",
        )
    )
    assert counts == {"P-AAAAA": 20, "P-BBBBB": 20}
    assert {r[0] for r in query(db, "SELECT state FROM sessions")} == {"completed"}
    numbers = sorted(r[0] for r in query(db, "SELECT number FROM participants"))
    assert numbers == [1, 2]
    with Store.open(db) as store:
        assert store.audit.is_intact()
