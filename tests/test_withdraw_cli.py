"""`uxlab withdraw` and the audit chain in `uxlab verify`: a simulated participant withdrawn
is gone from every exported table, the audit keeps a contentless `delete` entry, the chain
still verifies; a tampered audit row is named; an unknown id gets a did-you-mean; a withdrawn
invitee's code opens nothing; without a terminal `--yes` is required."""

from __future__ import annotations

import csv
import io
import json
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from helpers.cli import exits

from uxlab.cli import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL
from uxlab.store import Store
from uxlab.store.invitations import participant_for_code
from uxlab.store.lease import process_started

REPO = Path(__file__).resolve().parents[1]
STUDY = REPO / "studies" / "quickstart.toml"
WITHDRAWN = "SIM-s0-002"


class Tty(io.StringIO):
    """Typed input on a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def db(tmp_path, capsys, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "study.sqlite"
    code, _, err = exits(["simulate", "-n", "3", "--db", path, STUDY], capsys)
    assert code == EXIT_OK, err
    return path


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def sessions_of(db: Path, participant: str) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        q = "SELECT session_id FROM sessions WHERE participant = ?"
        return {r[0] for r in conn.execute(q, (participant,))}
    finally:
        conn.close()


def verify(db: Path, capsys) -> tuple[int, str]:
    code, out, err = exits(["verify", db, "--study", STUDY], capsys)
    return code, " ".join((out + err).split())  # lines wrapped at 80 columns, joined


def test_withdrawal_removes_every_row_keeps_a_contentless_audit_entry_and_verifies(db, capsys):
    gone = sessions_of(db, WITHDRAWN)
    assert gone
    marks = ",".join("?" * len(gone))
    conn = sqlite3.connect(db)
    answers = {
        r[0]
        for r in conn.execute(
            f"SELECT value FROM responses WHERE session_id IN ({marks})",
            sorted(gone),
        )
        if r[0] and len(r[0]) > 3
    }
    (n_trials,) = conn.execute(
        f"SELECT count(*) FROM trials WHERE session_id IN ({marks})",
        sorted(gone),
    ).fetchone()
    conn.close()

    code, out, err = exits(["withdraw", db, "--participant", WITHDRAWN, "--yes"], capsys)
    assert code == EXIT_OK, err
    assert f"Withdrew {WITHDRAWN}: deleted 1 session(s), {n_trials} trial(s)" in out
    assert all(answer not in out for answer in answers)  # counts only, never an answer

    code, _, err = exits(["export", db, "-o", db.parent / "export"], capsys)
    assert code == EXIT_OK, err
    for table in ("trials", "events", "sessions", "runs"):
        exported = rows(db.parent / "export" / f"{table}.csv")
        assert exported, table  # the other two participants are still there
        assert not [r for r in exported if r["session_id"] in gone], table
        assert all(r.get("participant") != WITHDRAWN for r in exported), table

    with Store.open(db) as store:
        entries = store.audit.entries()
    deletes = [e for e in entries if e["action"] == "delete"]
    assert len(deletes) == 1
    assert deletes[0]["subject"] is None
    detail = json.loads(deletes[0]["detail"])
    assert detail["sessions"] == 1 and detail["trials"] == n_trials > 0
    text = json.dumps(deletes[0])
    # the session ids (pseudonymous, already the subject of the log's earlier entries) let
    # verify tell these sessions withdrawn from sessions deleted behind the log's back
    assert WITHDRAWN not in text and detail["session_ids"] == sorted(gone)

    code, out = verify(db, capsys)
    assert code == EXIT_OK, out
    assert "hash chain is intact" in out


def test_a_tampered_audit_row_fails_verify_naming_it(db, capsys):
    assert verify(db, capsys)[0] == EXIT_OK
    conn = sqlite3.connect(db)
    (seq,) = conn.execute(
        "SELECT seq FROM audit WHERE action = 'trial' LIMIT 1 OFFSET 3"
    ).fetchone()
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("UPDATE audit SET detail = ? WHERE seq = ?", ('{"trial_index":99}', seq))
    conn.commit()
    conn.close()
    code, out = verify(db, capsys)
    assert code == EXIT_PARTIAL
    assert f"audit log entry {seq} ('trial' at " in out
    assert "breaks the hash chain" in out
    assert out.count("audit log entry") == 1  # the first bad entry, not every one after it


def test_an_unknown_participant_gets_a_did_you_mean_and_nothing_is_deleted(db, capsys):
    code, _, err = exits(["withdraw", db, "--participant", "SIM-s0-02", "--yes"], capsys)
    assert code == EXIT_INPUT
    assert "no such participant" in err and "did you mean SIM-s0-002?" in err
    assert len(sessions_of(db, WITHDRAWN)) == 1


def test_without_a_terminal_yes_is_required_and_a_wrong_answer_deletes_nothing(
    db, capsys, monkeypatch
):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code, _, err = exits(["withdraw", db, "--participant", WITHDRAWN], capsys)
    assert code == EXIT_INPUT and "--yes" in err and "nothing was deleted" in err
    monkeypatch.setattr("sys.stdin", Tty("no\n"))
    code, _, err = exits(["withdraw", db, "--participant", WITHDRAWN], capsys)
    assert code == EXIT_INPUT and "not confirmed" in err
    assert len(sessions_of(db, WITHDRAWN)) == 1
    monkeypatch.setattr("sys.stdin", Tty(f"{WITHDRAWN}\n"))
    code, _, err = exits(["withdraw", db, "--participant", WITHDRAWN], capsys)
    assert code == EXIT_OK, err
    assert not sessions_of(db, WITHDRAWN)


def test_a_withdrawn_invitees_code_opens_nothing(db, capsys, tmp_path):
    codes = tmp_path / "codes.tsv"
    code, _, err = exits(["invite", STUDY, "--db", db, "-n", "2", "-o", codes], capsys)
    assert code == EXIT_OK, err
    (code_a, who_a), (code_b, who_b) = [line.split("\t") for line in codes.read_text().splitlines()]
    code, out, err = exits(["withdraw", db, "--participant", who_a, "--yes"], capsys)
    assert code == EXIT_OK, err
    assert "1 invitation (its code opens nothing now)" in out
    with Store.open(db) as store:
        assert participant_for_code(store, "quickstart", code_a) is None
        assert participant_for_code(store, "quickstart", code_b) == who_b
    code, _, err = exits(["withdraw", db, "--participant", who_a, "--yes"], capsys)
    assert code == EXIT_INPUT and "no such participant" in err


def test_an_enrolled_participant_is_withdrawn_by_the_platform_id(db, capsys):
    from uxlab.host.enrolment import enrolled_participant
    from uxlab.store.enrolment_salt import enrolment_salt
    from uxlab.study import load_study

    platform_id = "5f3c9a71e2b04d18aa6c0e42"
    code, _, err = exits(["withdraw", db, "--enrolled", platform_id, "--yes"], capsys)
    assert code == EXIT_INPUT and "holds no enrolment salt" in err  # no open enrolment yet
    with Store.open(db) as store:
        made = enrolment_salt(store, Path(str(db) + ".enrol_salt"), make=True)  # as the host
        assert made is not None and made.origin == "made"
        enrolled = enrolled_participant(made.salt, platform_id)
        store.sessions.start_or_resume(load_study(STUDY), enrolled, environment={})
    assert len(sessions_of(db, enrolled)) == 1

    code, _, err = exits(["withdraw", db, "--enrolled", platform_id + "x", "--yes"], capsys)
    assert code == EXIT_INPUT and "no participant in" in err and "this platform id" in err
    code, _, err = exits(["withdraw", db, "--enrolled", "not an id", "--yes"], capsys)
    assert code == EXIT_INPUT and "1-128 letters" in err
    assert len(sessions_of(db, enrolled)) == 1, "nothing deleted by a refused withdrawal"

    code, out, err = exits(["withdraw", db, "--enrolled", platform_id, "--yes"], capsys)
    assert code == EXIT_OK, err
    assert f"Withdrew {enrolled}: deleted 1 session(s)" in out
    assert platform_id not in out + err, "the platform id is never printed"
    assert not sessions_of(db, enrolled) and len(sessions_of(db, WITHDRAWN)) == 1
    code, _, err = exits(
        ["withdraw", db, "--enrolled", platform_id, "--participant", WITHDRAWN], capsys
    )
    assert code == EXIT_INPUT and "not allowed with" in err


def test_a_session_running_in_a_live_process_is_not_deleted_under_it(db, capsys):
    (session_id,) = sessions_of(db, WITHDRAWN)
    runner = subprocess.Popen(["sleep", "60"])  # a live process holding the session's lease
    try:
        conn = sqlite3.connect(db)
        conn.execute(
            "INSERT INTO session_leases VALUES (?, ?, ?, ?, '2026-12-03T00:00:00', 0)",
            (session_id, socket.gethostname(), runner.pid, process_started(runner.pid)),
        )
        conn.commit()
        conn.close()
        code, _, err = exits(["withdraw", db, "--participant", WITHDRAWN, "--yes"], capsys)
        assert code == EXIT_INPUT
        assert f"session {session_id} is running now (process {runner.pid}" in err
        assert sessions_of(db, WITHDRAWN) == {session_id}
    finally:
        runner.kill()
        runner.wait()
    code, _, err = exits(["withdraw", db, "--participant", WITHDRAWN, "--yes"], capsys)
    assert code == EXIT_OK, err  # the holder is gone: its lease is stale
    assert not sessions_of(db, WITHDRAWN)


def test_a_session_live_on_another_host_is_not_deleted_until_it_is_stale(db, capsys):
    """A shared store: a lease of another machine's process counts while the session was
    active within the study's stale_after_min (120 min by default), as for resuming."""
    (session_id,) = sessions_of(db, WITHDRAWN)
    now = time.time()
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO session_leases VALUES (?, 'lab-pc-2', 4242, NULL, '2026-12-03T00:00:00', ?)",
        (session_id, now - 600.0),
    )
    conn.execute(
        "UPDATE sessions SET last_seen_s = ? WHERE session_id = ?", (now - 60.0, session_id)
    )
    conn.commit()
    code, _, err = exits(["withdraw", db, "--participant", WITHDRAWN, "--yes"], capsys)
    assert code == EXIT_INPUT
    assert f"session {session_id} is live on another host (lab-pc-2, process 4242" in err
    assert "counts as ended after 120 min without activity" in err
    assert sessions_of(db, WITHDRAWN) == {session_id}
    conn.execute(  # idle for longer than the stale time: the lease no longer counts
        "UPDATE sessions SET last_seen_s = ? WHERE session_id = ?", (now - 121 * 60.0, session_id)
    )
    conn.commit()
    conn.close()
    code, _, err = exits(["withdraw", db, "--participant", WITHDRAWN, "--yes"], capsys)
    assert code == EXIT_OK, err
    assert not sessions_of(db, WITHDRAWN)


def test_withdrawal_checkpoints_the_write_ahead_log_or_says_it_could_not(db, capsys):
    """Copies of the deleted rows in SQLite's write-ahead log: emptied when no other process
    reads the database; while one does, the output says so and how to clear it after."""
    code, out, _ = exits(["withdraw", db, "--participant", WITHDRAWN, "--yes"], capsys)
    assert code == EXIT_OK
    assert "The database file holds no copy of them (deleted pages overwritten" in out
    wal = Path(f"{db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    other = sorted(r["participant"] for r in rows_of(db, "SELECT participant FROM participants"))
    reader = sqlite3.connect(db, isolation_level=None)  # a host reading, mid-transaction
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM events").fetchone()
        code, out, _ = exits(["withdraw", db, "--participant", other[0], "--yes"], capsys)
        assert code == EXIT_OK
        text = " ".join(out.split())
        assert f"Still holding copies of the deleted rows: another process has {db} open" in text
        assert f'run sqlite3 {db} "PRAGMA wal_checkpoint(TRUNCATE)" once they have stopped' in text
        assert wal.stat().st_size > 0
    finally:
        reader.execute("COMMIT")
        reader.close()
    subprocess.run(["sqlite3", str(db), "PRAGMA wal_checkpoint(TRUNCATE)"], check=True)
    assert not wal.exists() or wal.stat().st_size == 0


def rows_of(db: Path, sql: str) -> list[dict[str, str]]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql)]
    finally:
        conn.close()


def test_withdrawal_on_postgresql_vacuums_and_says_what_stays(postgres_db, capsys, tmp_path):
    from helpers.postgres import query

    code, _, err = exits(["simulate", "-n", "2", "--db", postgres_db, STUDY], capsys)
    assert code == EXIT_OK, err
    (who,) = query(postgres_db, "SELECT MIN(participant) FROM participants")[0]
    code, out, _ = exits(["withdraw", postgres_db, "--participant", who, "--yes"], capsys)
    assert code == EXIT_OK
    text = " ".join(out.split())
    assert "PostgreSQL keeps the deleted rows' old versions in the table files" in text
    assert "VACUUM FULL participants, sessions" in text
    vacuumed = query(
        postgres_db,
        "SELECT relname FROM pg_stat_user_tables WHERE last_vacuum IS NOT NULL ORDER BY 1",
    )
    assert {"events", "responses", "trials"} <= {r[0] for r in vacuumed}
    assert query(postgres_db, "SELECT COUNT(*) FROM participants WHERE participant = ?",
                 (who,)) == [(0,)]  # fmt: skip
