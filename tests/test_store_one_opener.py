"""A process with several connections to one study database keeps every connection's locks.

SQLite's locks are POSIX advisory locks: closing any descriptor of the file drops all the
locks the process holds on it. A study host holds two stores on one file (codes; paint
reports); if opening the second read the file with `open()`, the first lost its shared lock,
a participant's program closing its own connection then checkpointed and deleted the
write-ahead log under the host's live connections, and later commits damaged the file
("database disk image is malformed": seen once in CI, in the browser study test).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from uxlab.store import Store
from uxlab.store.open_checks import is_sqlite_file, open_read_only

CLOSE_ANOTHER_CONNECTION = """
import sys
from uxlab.store import Store
with Store.open(sys.argv[1]) as store:
    store.db.conn.execute("SELECT COUNT(*) FROM sessions").fetchone()
"""


def _another_process_opens_and_closes(db: Path) -> None:
    subprocess.run([sys.executable, "-c", CLOSE_ANOTHER_CONNECTION, str(db)], check=True)


def _wal(db: Path) -> Path:
    return db.with_name(db.name + "-wal")


def test_opening_a_second_store_keeps_the_first_store_s_log_in_place(tmp_path):
    db = tmp_path / "study.sqlite"
    with Store.open(db) as codes, Store.open(db) as paints:  # the host's two stores
        _another_process_opens_and_closes(db)  # a participant's program ends
        assert _wal(db).exists(), "another process took itself for the last connection"
        for n, store in enumerate((codes, paints, codes)):
            store.audit.record_export(f"{n:064d}", {"n": n})
    with Store.open(db) as store:
        assert [e["detail"] for e in store.audit.entries() if e["action"] == "export"] == [
            '{"n":0}',
            '{"n":1}',
            '{"n":2}',
        ] and store.audit.is_intact()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_a_read_only_reader_in_the_same_process_keeps_the_writer_s_locks(tmp_path):
    db = tmp_path / "study.sqlite"
    with Store.open(db):
        open_read_only(db).close()  # an export in the process that also writes
        _another_process_opens_and_closes(db)
        assert _wal(db).exists(), "another process took itself for the last connection"


def test_asking_whether_a_file_is_sqlite_keeps_the_writer_s_locks(tmp_path):
    db = tmp_path / "study.sqlite"
    with Store.open(db):
        assert is_sqlite_file(db)  # `uxlab report DATA` asks this of its input
        _another_process_opens_and_closes(db)
        assert _wal(db).exists(), "another process took itself for the last connection"


def test_is_sqlite_file_tells_a_database_from_other_files(tmp_path):
    csv, empty, damaged = tmp_path / "t.csv", tmp_path / "empty", tmp_path / "damaged"
    csv.write_text("participant,outcome\nP1,completed\n", encoding="utf-8")
    empty.touch()
    damaged.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    odd = tmp_path / "a ?#% name.sqlite"
    with Store.open(odd):
        pass
    assert not is_sqlite_file(csv) and not is_sqlite_file(empty)
    assert not is_sqlite_file(tmp_path)  # a folder
    assert is_sqlite_file(damaged)  # its header says SQLite: the opener names the damage
    assert is_sqlite_file(odd)
