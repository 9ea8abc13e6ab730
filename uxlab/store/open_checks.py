"""What a study database must pass before uxlab changes anything in it, and plain messages.

`Store.open` calls, in order:

1. `check_path(path)` before connecting: a folder, an unreadable file, a file marked read-only
   (no write bit, or on a read-only file system) are refused with one line. It looks at the
   file's metadata only, never opens it: see "One opener" below.
2. `check_database(conn, path)` on the fresh connection, before the switch to WAL and before
   any migration: `PRAGMA integrity_check` must say `ok` (a damaged file is refused, untouched;
   a file that is not SQLite at all, with the wrong 16-byte header, is named as such), and a
   file that already holds tables must be a uxlab study database (its schema version in
   `PRAGMA user_version` and uxlab's core tables), so a foreign SQLite file, even one with its
   own `trials` table, is refused with nothing changed.
3. `describe_sqlite_error(exc, path)` turns any `sqlite3.Error` met while opening (or later)
   into what happened: a full disk, a disk error, a read-only file, a damaged file, a lock held
   by another process, rather than one catch-all "not a uxlab study database".

Readers (export, verify) open with `open_read_only(path)`: the same checks on a `mode=ro`
connection, so reading can never change the data.

Why `integrity_check`, not `quick_check`: `quick_check` checks each page and row but not
that every index holds exactly its table's rows. A file whose indexes disagree with their
tables passed it, took new sessions, and was then refused by the first reader that met the
damage, leaving the new participants' data reachable only through `.recover`. The full check
costs about twice as much (docs/how-to/run-a-study.md, "When something goes wrong").

One opener: a study database is opened only through SQLite, never with `open()`, while it may
be in use. SQLite's locks are POSIX advisory locks, which belong to the process and the file:
closing *any* descriptor of the file drops every lock this process holds on it, including
those of its other live connections (a study host holds one for codes and one for paint
reports). Another process closing its connection then believes it is the last one, checkpoints
and deletes the write-ahead log under the live connections, and their next commits damage
the file ("database disk image is malformed"; SQLite's "How To Corrupt An SQLite Database
File", section 2.2). The raw header is read only after SQLite has said the file is not a
database.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from uxlab.store.backend import Connection
from uxlab.store.dialect import is_postgres
from uxlab.store.schema import SCHEMA_VERSION, StoreError

SQLITE_HEADER = b"SQLite format 3\x00"
CORE_TABLES = ("studies", "participants", "sessions", "trials", "responses", "events", "audit")
"""Tables every uxlab study database has (a foreign file lacks some)."""
LOW_DISK_BYTES = 1 << 20
"""Free space below which a failed write is reported as a full disk."""
_NOTHING_CHANGED = "nothing was changed"


def check_path(path: Path) -> None:
    """Refuse a path uxlab must not write to; a missing or empty file is a new database."""
    if path.is_dir():
        raise StoreError(f"{path}: is a folder, not a study database file; give a file path")
    if not path.exists():
        return
    try:
        st = path.stat()  # metadata only: opening the file could drop a live connection's locks
    except OSError as exc:
        raise StoreError(
            f"{path}: cannot read the file ({exc.strerror}); {_NOTHING_CHANGED}"
        ) from None
    if not os.access(path, os.R_OK):
        raise StoreError(f"{path}: cannot read the file (permission denied); {_NOTHING_CHANGED}")
    if st.st_size == 0:
        return
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(
        path, os.W_OK
    ):
        raise StoreError(
            f"{path}: the database is read-only (mode {stat.filemode(st.st_mode)}); uxlab must "
            f"write every answer to it, so {_NOTHING_CHANGED}. Make it writable "
            f"(chmod u+w {path}) or read it without changes with `uxlab export {path}`"
        )


def _starts_with_sqlite_header(path: Path) -> bool:
    """Whether the file starts with SQLite's header. Only for a file SQLite has just refused as
    "not a database": no live connection of this process can hold locks on such a file, so
    opening (and closing) it here drops none (module docstring, "One opener")."""
    try:
        with path.open("rb") as fh:
            return fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return True  # unreadable now: let SQLite's own words stand


def is_sqlite_file(path: Path) -> bool:
    """Whether `path` is a SQLite file (a study database or an exported table), asked of SQLite
    itself, so a database this process has open keeps its locks ("One opener")."""
    if not path.is_file() or path.stat().st_size == 0:
        return False
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return True  # SQLite's own words come when it is opened for real
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB":
            return _starts_with_sqlite_header(path)  # a damaged database still says so
        return True
    finally:
        conn.close()
    return True


def holds_trial_table(path: Path) -> bool:
    """True for a SQLite file holding the exported trial table (not a uxlab study database)."""
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as con:
            cols = [r[1] for r in con.execute("PRAGMA table_info(trials)")]
    except sqlite3.DatabaseError:
        return False  # damaged: the store's exporter says so in one line
    return "participant" in cols and "outcome" in cols and "levels" not in cols


def not_sqlite_message(path: Path) -> str:
    """One line for a file that is not SQLite at all."""
    return (
        f"{path}: not a uxlab study database (not a SQLite file at all: it does not start "
        "with the SQLite header); "
        f"{_NOTHING_CHANGED}. Give the path of a study database (results/<study id>.sqlite) "
        "or a new file name"
    )


def check_database(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a damaged or foreign database; reads only (call before any write or pragma)."""
    text_factory = conn.text_factory
    conn.text_factory = _lenient_text  # a damaged name in the check's report is not UTF-8
    try:
        _check_database(conn, path)
    finally:
        conn.text_factory = text_factory


def _lenient_text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _check_database(conn: sqlite3.Connection, path: Path) -> None:
    try:
        problems = [r[0] for r in conn.execute("PRAGMA integrity_check(5)").fetchall()]
    except sqlite3.DatabaseError as exc:
        name = getattr(exc, "sqlite_errorname", "") or ""
        if is_environmental(exc) and not name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
            raise  # a full disk, a lock: `describe_sqlite_error` says which
        if name == "SQLITE_NOTADB" and not _starts_with_sqlite_header(path):
            raise StoreError(not_sqlite_message(path)) from None
        problems = [str(exc)]  # also a damaged schema ("unknown function: ...")
    except UnicodeDecodeError:  # SQLite's message quotes damaged bytes
        problems = ["a damaged name or page (SQLite's own message is not readable text)"]
    if problems != ["ok"]:
        raise StoreError(damaged_message(path, problems))
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        tables = sorted(
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        )
    except sqlite3.DatabaseError as exc:
        if not is_environmental(exc):
            raise StoreError(damaged_message(path, [str(exc)])) from None
        raise
    if not tables and version == 0:
        return  # an empty file: a new database
    if version > SCHEMA_VERSION:
        return  # a newer uxlab's file: `migrate` refuses it with that message
    missing = [t for t in CORE_TABLES if t not in tables]
    if version == 0 or missing:
        shown = ", ".join(tables[:6]) + (", ..." if len(tables) > 6 else "")
        why = (
            "it has no uxlab schema version"
            if version == 0
            else f"it lacks uxlab's tables {', '.join(missing)}"
        )
        raise StoreError(
            f"{path}: not a uxlab study database ({why}; its tables: {shown or 'none'}); "
            f"{_NOTHING_CHANGED}. Give uxlab its own database file, e.g. "
            "results/<study id>.sqlite"
        )


@contextmanager
def reading(path: str | Path) -> Iterator[None]:
    """Turn what a damaged value raises while a database is read (bytes that are not UTF-8,
    JSON that does not parse, a page SQLite cannot read) into one clear StoreError.

    `PRAGMA integrity_check` checks the file's structure, not the stored values: a flipped byte
    inside a text can pass it and is only met here. `path`: a SQLite file, or a PostgreSQL
    URL as `dialect.db_name` gives it (no password), whose damage is not the file's.
    """
    if not isinstance(path, Path):
        with _reading_server(path):
            yield
        return
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if is_environmental(exc) and not (exc.sqlite_errorname or "").startswith(
            ("SQLITE_CORRUPT", "SQLITE_NOTADB")
        ):
            raise StoreError(describe_sqlite_error(exc, path)) from None
        raise StoreError(damaged_message(path, [_short(str(exc))])) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StoreError(
            damaged_message(path, [f"a stored value cannot be read: {_short(str(exc))}"])
        ) from None


@contextmanager
def _reading_server(url: str) -> Iterator[None]:
    """`reading` for a PostgreSQL database: a stored value that does not decode is named,
    without a SQLite file's way to a copy (the server keeps its own pages)."""
    try:
        yield
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StoreError(
            f"{url}: a stored value cannot be read: {_short(str(exc))}; {_NOTHING_CHANGED}. "
            "The database holds a value uxlab did not write: restore it from a backup "
            "(pg_dump's), or find what else wrote to it"
        ) from None


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


_INDEX_PROBLEMS = ("missing from index", "wrong # of entries in index", "non-unique entry in")
"""What `integrity_check` says of an index that disagrees with its table (REINDEX mends it)."""


def damaged_message(path: Path, problems: list[str]) -> str:
    """One line for a file that fails `PRAGMA integrity_check`, with the way to a usable
    copy: REINDEX when only indexes disagree with their tables, else the sqlite3 shell's
    `.recover` (or `.dump` where the shell was built without it), the original kept."""
    first = _short("; ".join(p.replace("\n", " ") for p in problems[:2]), 200)
    if problems and all(any(i in p for i in _INDEX_PROBLEMS) for p in problems):
        return (
            f"{path}: the database's indexes disagree with its tables (SQLite integrity_check: "
            f"{first}); {_NOTHING_CHANGED}. Keep the file as it is and rebuild the indexes of "
            f'a copy: sqlite3 {path} ".backup repaired.sqlite" && sqlite3 repaired.sqlite '
            "REINDEX; then check the copy with uxlab verify repaired.sqlite and use it"
        )
    return (
        f"{path}: the database is damaged (SQLite integrity_check: {first}); "
        f"{_NOTHING_CHANGED}. Keep the file as it is and recover what it holds into a new "
        f"file: sqlite3 {path} .recover | sqlite3 recovered.sqlite (where the shell's .recover "
        "stops at 'SQL logic error', as in builds without sqlite_dbpage, use .dump instead, "
        f'then sqlite3 recovered.sqlite "PRAGMA user_version = {SCHEMA_VERSION}"); check it '
        "with uxlab verify recovered.sqlite, or restore a backup"
    )


def describe_sqlite_error(exc: sqlite3.Error, path: Path) -> str:
    """What a SQLite error at `path` means for the user, in one line."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    maybe_space = name.startswith(("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_CANTOPEN"))
    if name == "SQLITE_FULL" or (maybe_space and _disk_is_full(path)):
        return (
            f"{path}: the disk is full ({text}); free some space and run the same command "
            "again, nothing already stored is lost"
        )
    if name.startswith("SQLITE_READONLY"):
        return (
            f"{path}: the database or its folder is read-only ({text}); make both writable "
            "and run the same command again"
        )
    if name.startswith("SQLITE_CORRUPT"):
        return damaged_message(path, [text])
    if name == "SQLITE_NOTADB":
        return f"{path}: not a SQLite database ({text}); {_NOTHING_CHANGED}"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return (
            f"{path}: another process holds the database locked ({text}); wait for it to "
            "finish and run the same command again"
        )
    if name.startswith("SQLITE_CANTOPEN"):
        return (
            f"{path}: cannot open the file ({text}); check that its folder exists and is writable"
        )
    if name.startswith("SQLITE_IOERR"):
        return (
            f"{path}: disk I/O error ({text}, {name}): the disk may be full (or a file size "
            "limit reached), failing or removed; check it and run the same command again"
        )
    return f"{path}: SQLite error ({text}{', ' + name if name else ''})"


_PLAIN_CAUSES = (
    ("SQLITE_FULL", "the disk is full"),
    ("SQLITE_READONLY", "the database file is read-only"),
    ("SQLITE_BUSY", "another program is using the study database"),
    ("SQLITE_LOCKED", "another program is using the study database"),
    ("SQLITE_CORRUPT", "the database file is damaged"),
    ("SQLITE_CANTOPEN", "the database file cannot be opened"),
    ("SQLITE_IOERR", "a disk error"),
)


def short_reason(exc: BaseException, path: Path) -> str:
    """A failed write's reason for the screen: SQLite's words and what they mean."""
    text = str(exc).rstrip(".") or type(exc).__name__
    if not isinstance(exc, sqlite3.Error):
        return text
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")) and _disk_is_full(path):
        return f"{text} (the disk is full)"
    cause = next((c for prefix, c in _PLAIN_CAUSES if name.startswith(prefix)), None)
    return f"{text} ({cause})" if cause else text


ENVIRONMENTAL = (
    "SQLITE_FULL",
    "SQLITE_IOERR",
    "SQLITE_READONLY",
    "SQLITE_CORRUPT",
    "SQLITE_NOTADB",
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
    "SQLITE_CANTOPEN",
    "SQLITE_PERM",
)
"""Error names that come from the file, the disk or another process, not from uxlab's SQL."""


def is_environmental(exc: sqlite3.Error) -> bool:
    """Whether `exc` says something about the file, the disk or another process."""
    return (getattr(exc, "sqlite_errorname", "") or "").startswith(ENVIRONMENTAL)


def _disk_is_full(path: Path) -> bool:
    folder = path.parent if path.parent.exists() else Path(".")
    try:
        return shutil.disk_usage(folder).free < LOW_DISK_BYTES
    except OSError:
        return False


def open_read_only(db: str | Path) -> Connection:
    """A read-only connection (`mode=ro`): an export cannot change the data.

    For a PostgreSQL URL: a connection whose `BEGIN` is a READ ONLY snapshot.
    """
    if is_postgres(db):
        from uxlab.store.postgres import PostgresConnection

        return PostgresConnection(str(db), max_connections=1, migrations_needed=True)
    db = Path(db)
    if not db.is_file():
        raise StoreError(f"{db}: no such database")
    if db.stat().st_size == 0:  # SQLite reads an empty file as an empty database
        raise StoreError(not_sqlite_message(db))
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        check_database(conn, db)  # a damaged or foreign file: one line, not a traceback
        conn.execute("SELECT COUNT(*) FROM sessions").fetchone()
    except StoreError:
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:
        conn.close()
        if is_environmental(exc):
            raise StoreError(describe_sqlite_error(exc, db)) from None
        raise StoreError(f"{db}: not a uxlab study database ({exc})") from None
    return conn
