"""Damaged, read-only and foreign databases, a full disk, and a session held by another
process: each gives one clear line, and nothing in the file is changed or lost."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.lease_holder import hold_session, release
from helpers.postgres import query

from uxlab.cli import main
from uxlab.store import Store, StoreError
from uxlab.study import load_study

HERE = Path(__file__).parent
GOOD = HERE / "data" / "bad_studies" / "good.toml"


def make_db(path: Path, n_trials: int = 4) -> Path:
    """A real study database with one session and a few committed trials."""
    study = load_study(GOOD)
    with Store.open(path) as store:
        session = store.sessions.start_or_resume(study, "P-AAAAA")
        store.sessions.set_state(session, "consented")
        store.sessions.set_state(session, "running")
        for i in range(n_trials):
            store.trials.begin(session, i)
            store.trials.commit(
                session,
                i,
                "completed",
                {"shown_first_ms": 300.0, "shown_last_ms": 900.0, "scheduled_end_ms": 900.0},
                {"acceptable": ("yes", 1200.0)},
                [{"kind": "chunk", "t_ms": 300.0 + k, "text": "x" * 200} for k in range(50)],
            )
    return path


def files_of(db: Path) -> dict[str, str]:
    """SHA-256 of the database and of every sidecar file beside it."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(db.parent.iterdir())
        if p.name.startswith(db.name)
    }


def cli(capsys, *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    err = capsys.readouterr().err
    return status, err


def test_a_read_only_database_is_refused_before_anything_changes(tmp_path, capsys):
    db = make_db(tmp_path / "ro.sqlite")
    db.chmod(0o444)
    before = files_of(db)
    with pytest.raises(StoreError, match="read-only") as info:
        Store.open(db)
    assert "chmod u+w" in str(info.value)
    # `uxlab run` refuses before the app starts (no crash screen), in one line
    status, err = cli(capsys, "run", str(GOOD), "--participant", "P-BBBBB", "--db", str(db))
    assert status == 2 and "read-only" in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert files_of(db) == before  # no -wal/-shm created, not a byte changed
    # reading is still fine: the export works and the database is not written
    status, err = cli(capsys, "export", str(db), "-o", str(tmp_path / "out"))
    assert status == 0 and (tmp_path / "out" / "trials.csv").is_file(), err
    assert files_of(db)[db.name] == before[db.name]
    db.chmod(0o644)


def flip_page_headers(db: Path) -> None:
    """Damage the file the way a bad disk does: every b-tree page's type byte is wrong."""
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for start in range(page, len(data), page):
        data[start] ^= 0xFF
    db.write_bytes(bytes(data))


def test_a_damaged_database_is_refused_and_export_and_verify_say_so(tmp_path, capsys):
    db = make_db(tmp_path / "bad.sqlite")
    flip_page_headers(db)
    before = files_of(db)
    with pytest.raises(StoreError, match="damaged") as info:
        Store.open(db)
    assert "nothing was changed" in str(info.value)
    for argv in (
        ["export", str(db), "-o", str(tmp_path / "out")],
        ["verify", str(db)],
        ["report", str(db), "-o", str(tmp_path / "report")],
    ):
        status, err = cli(capsys, *argv)
        assert status == 2, argv
        assert "damaged" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
    status, err = cli(capsys, "run", str(GOOD), "--participant", "P-BBBBB", "--db", str(db))
    assert status == 2 and "damaged" in err
    assert files_of(db) == before
    assert not (tmp_path / "out" / "trials.csv").exists()


def damage_an_index(db: Path) -> None:
    """Make an index disagree with its table, as a torn write to an index page does: every
    page reads and `PRAGMA quick_check` passes, `integrity_check` does not."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = 'CREATE INDEX sessions_participant ON "
        "sessions(study_sha256)' WHERE name = 'sessions_participant'"
    )
    conn.commit()
    conn.close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    assert "missing from index" in conn.execute("PRAGMA integrity_check").fetchone()[0]
    conn.close()


def test_a_file_with_damaged_indexes_is_refused_before_anything_is_written(tmp_path, capsys):
    """quick_check passed such a file, `run` and `simulate` stored new sessions in it, and the
    next reader refused it: the new data was reachable only through `.recover`."""
    db = make_db(tmp_path / "index.sqlite")
    damage_an_index(db)
    before = files_of(db)
    with pytest.raises(StoreError, match="indexes disagree with its tables") as info:
        Store.open(db)
    assert "missing from index sessions_participant" in str(info.value)
    for argv in (
        ["simulate", str(GOOD), "-n", "1", "--db", str(db)],
        ["run", str(GOOD), "--participant", "P-BBBBB", "--db", str(db)],
        ["export", str(db), "-o", str(tmp_path / "out")],
    ):
        status, err = cli(capsys, *argv)
        assert status == 2 and "indexes disagree" in err and "Traceback" not in err, argv
        assert len(err.strip().splitlines()) == 1
    unchanged(db, before)
    # the way out the message gives works: REINDEX a copy, which then verifies and opens
    route = str(info.value).split("rebuild the indexes of a copy: ")[1].split("; then")[0]
    assert route == (f'sqlite3 {db} ".backup repaired.sqlite" && sqlite3 repaired.sqlite REINDEX')
    subprocess.run(route, shell=True, cwd=tmp_path, check=True)
    status, err = cli(capsys, "verify", str(tmp_path / "repaired.sqlite"), "--study", str(GOOD))
    assert status in (0, 1) and "indexes disagree" not in err  # opened and checked
    with Store.open(tmp_path / "repaired.sqlite") as store:
        assert store.audit.is_intact()
    unchanged(db, before)


def unchanged(db: Path, before: dict[str, str]) -> None:
    """The file as it was; a WAL-mode file read by SQLite gets an empty -wal beside it."""
    now = files_of(db)
    assert now[db.name] == before[db.name]
    assert Path(f"{db}-wal").stat().st_size == 0 if Path(f"{db}-wal").exists() else True


def test_a_foreign_sqlite_file_with_its_own_trials_table_is_left_alone(tmp_path, capsys):
    db = tmp_path / "other.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE trials (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO trials (name) VALUES ('their data')")
    conn.commit()
    conn.close()
    before = files_of(db)
    with pytest.raises(StoreError, match="not a uxlab study database") as info:
        Store.open(db)
    assert "trials" in str(info.value) and "nothing was changed" in str(info.value)
    status, err = cli(capsys, "export", str(db), "-o", str(tmp_path / "out"))
    assert status == 2 and "not a uxlab study database" in err
    assert files_of(db) == before
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # not switched to WAL
    assert conn.execute("SELECT name FROM trials").fetchall() == [("their data",)]
    conn.close()


def test_a_full_disk_at_open_is_named_as_such(tmp_path):
    """A file size limit makes every write past 0 bytes fail, as a full disk does."""
    script = textwrap.dedent(
        """
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        from uxlab.cli import main
        sys.exit(main(["simulate", sys.argv[1], "-n", "1", "--db", sys.argv[2]]))
        """
    )
    db = tmp_path / "full.sqlite"
    done = subprocess.run(
        [sys.executable, "-c", script, str(GOOD), str(db)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "disk" in done.stderr and "full" in done.stderr
    assert "not a uxlab study database" not in done.stderr and "Traceback" not in done.stderr


def hold(db: Path, participant: str) -> tuple[subprocess.Popen, str]:
    return hold_session(db, GOOD, participant)


def trial_rows(db: Path | str) -> list[tuple]:
    return query(
        db,
        "SELECT t.trial_index, t.outcome, s.resumed_count, "
        "(SELECT COUNT(*) FROM responses r WHERE r.session_id = t.session_id "
        " AND r.trial_index = t.trial_index) "
        "FROM trials t JOIN sessions s USING (session_id) ORDER BY t.trial_index",
    )


def test_a_second_process_cannot_take_over_a_live_session(db):
    study = load_study(GOOD)
    child, session_id = hold(db, "P-HHHHH")
    try:
        before = trial_rows(db)
        assert before == [(0, "running", 0, 0)]
        with Store.open(db) as store, pytest.raises(StoreError) as info:
            store.sessions.start_or_resume(study, "P-HHHHH")
        message = str(info.value)
        assert f"pid {child.pid} on host {socket.gethostname()}" in message
        assert "started" in message and "ago" in message and session_id in message
        assert trial_rows(db) == before  # the first participant's trial is still in flight
        child.stdin.write("COMMIT\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "COMMITTED"
        assert trial_rows(db) == [(0, "completed", 0, 1)]  # their answer is stored
    finally:
        release(child)  # it closes its store and ends with status 0
    with Store.open(db) as store:  # given back at close: the same id resumes
        session = store.sessions.start_or_resume(study, "P-HHHHH")
        assert session.resumed and session.next_index == 1


def test_a_killed_holder_leaves_a_stale_lease_that_is_taken_over(db):
    study = load_study(GOOD)
    child, _ = hold(db, "P-KKKKK")
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with Store.open(db) as store:
        session = store.sessions.start_or_resume(study, "P-KKKKK")
        assert session.resumed and session.interrupted == [0]
    assert trial_rows(db) == [(0, "interrupted", 1, 0)]


def test_a_lease_held_on_another_host_expires_only_after_the_stale_time(db):
    study = load_study(GOOD)
    now = [1_800_000_000.0]
    with Store.open(db, clock=lambda: now[0]) as store:
        store.sessions.start_or_resume(study, "P-RRRRR")
    query(  # as if a process on another machine had taken it (and is still active)
        db,
        "INSERT INTO session_leases SELECT session_id, 'lab-pc-2', 4242, NULL, "
        "'2027-01-15T08:00:00', ? FROM sessions",
        (now[0],),
    )
    now[0] += 60.0
    with Store.open(db, clock=lambda: now[0]) as store, pytest.raises(StoreError) as info:
        store.sessions.start_or_resume(study, "P-RRRRR")
    assert "pid 4242 on host lab-pc-2" in str(info.value) and "another host" in str(info.value)
    now[0] += study.counterbalance.stale_after_min * 60.0
    with Store.open(db, clock=lambda: now[0]) as store:
        assert store.sessions.start_or_resume(study, "P-RRRRR").resumed


def test_simulate_resumes_after_a_kill_like_run(tmp_path, capsys):
    """A rerun keeps the participants already done and continues the one cut short."""
    import asyncio

    from uxlab.simulate.driver import simulate_session

    db = tmp_path / "sim.sqlite"
    study = load_study(GOOD)
    with Store.open(db) as store:
        asyncio.run(simulate_session(study, store, 1))
        cut = asyncio.run(simulate_session(study, store, 2, stop_after=3))  # as if killed
    assert cut.n_trials == 3
    assert main(["simulate", str(GOOD), "-n", "3", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "SIM-s0-001: already completed by an earlier run, kept" in out
    assert "SIM-s0-002:" in out and "resumed" in out
    conn = sqlite3.connect(db)
    states = conn.execute("SELECT participant, state FROM sessions ORDER BY participant").fetchall()
    assert states == [(f"SIM-s0-00{k}", "completed") for k in (1, 2, 3)]
    (n_interrupted,) = conn.execute(
        "SELECT COUNT(*) FROM trials WHERE outcome = 'interrupted'"
    ).fetchone()
    assert n_interrupted == 1  # the trial in flight at the "kill", marked, not dropped
    conn.close()


async def test_the_study_app_asks_to_wait_instead_of_taking_over(tmp_path):
    """`uxlab run` with a participant id live elsewhere: the participant is asked, in plain
    words, to wait (never offered a new id); which process holds it goes to the log."""
    from helpers.pilot import wait_for

    from uxlab.tui.flow_screens import InUseScreen
    from uxlab.tui.study_app import StudyApp

    db = tmp_path / "app.sqlite"
    child, session_id = hold(db, "P-TWICE")
    try:
        before = trial_rows(db)
        store = Store.open(db)
        app = StudyApp(load_study(GOOD), store, participant="P-TWICE")
        app.in_use_every_s = 3600.0  # only Enter tries again here
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, InUseScreen))
            shown = app.screen.body
            assert "Your session (P-TWICE) is still open somewhere else" in shown
            assert str(child.pid) not in shown and session_id not in shown
            assert "pid" not in shown and "host" not in shown
            await pilot.press("ctrl+q", "ctrl+q")
        store.close()
        assert trial_rows(db) == before  # the live session was not touched
        (note,) = app.return_value.notes
        assert f"session {session_id} was held by pid {child.pid} on host " in note
    finally:
        child.kill()
        child.wait()


def test_simulate_killed_for_real_then_rerun_completes_everyone(tmp_path):
    """SIGKILL `uxlab simulate` once its first participant is done; the same command again
    keeps that one, finishes the rest, and every trial begun is kept (none lost)."""
    db = tmp_path / "killed.sqlite"
    cmd = [sys.executable, "-u", "-m", "uxlab", "simulate", str(GOOD), "-n", "4"]
    cmd += ["--db", str(db), "--durable"]
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = child.stdout.readline()
    assert first.startswith("  SIM-s0-001:"), first + child.stderr.read()
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    conn = sqlite3.connect(db)
    before = conn.execute(
        "SELECT session_id, trial_index FROM trials WHERE outcome NOT IN ('running')"
    ).fetchall()
    conn.close()
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "SIM-s0-001: already completed by an earlier run, kept" in again.stdout
    conn = sqlite3.connect(db)
    states = conn.execute("SELECT participant, state FROM sessions ORDER BY 1").fetchall()
    after = set(conn.execute("SELECT session_id, trial_index FROM trials").fetchall())
    conn.close()
    assert states == [(f"SIM-s0-00{k}", "completed") for k in (1, 2, 3, 4)]
    assert set(before) <= after  # nothing committed before the kill was lost


@pytest.mark.parametrize(
    ("damage", "commands"),
    [  # verify reads the plans, not the events; export reads both
        ("UPDATE events SET data = CAST(X'FFFE7B22' AS TEXT) WHERE rowid = 3", ["export"]),
        ('UPDATE sessions SET plan = \'[{"index": 0, "blo\'', ["export", "verify"]),
    ],
)
def test_a_damaged_value_inside_a_sound_file_is_named_by_export_and_verify(
    tmp_path, capsys, damage, commands
):
    """A flipped byte inside a stored text passes `quick_check`; reading it says so."""
    db = make_db(tmp_path / "values.sqlite")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(damage)
    conn.close()
    for command in commands:
        argv = [command, str(db)] + (["-o", str(tmp_path / "out")] if command == "export" else [])
        status, err = cli(capsys, *argv)
        assert status == 2, argv
        assert "damaged" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_on_postgresql_a_damaged_value_is_named_without_sqlite_advice(postgres_db, capsys):
    """The same damage on a PostgreSQL database: one line naming the database (no
    password), the value, and a way on that fits a server (not a SQLite shell's .recover)."""
    make_db(postgres_db)
    query(postgres_db, "UPDATE sessions SET plan = ?", ('[{"index": 0, "blo',))
    for command in ("export", "verify"):
        status, err = cli(capsys, command, postgres_db)
        assert status == 2, (command, err)
        line = err.strip()
        assert len(line.splitlines()) == 1 and "Traceback" not in line, err
        assert "a stored value cannot be read" in line and "backup" in line, err
        assert "sqlite3" not in line and "integrity_check" not in line, err
