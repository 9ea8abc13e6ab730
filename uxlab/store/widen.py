"""Widening the 32-bit number columns of PostgreSQL study databases made by older uxlab.

uxlab's schema declares its numbers INTEGER and REAL; on PostgreSQL they must be `bigint`
and `double precision` (`uxlab.store.dialect.ddl_to_postgres`), as SQLite's are 64-bit.
Before that rewrite also ran on migration statements headed by a comment, the tables of
schema versions 5 to 8 (`requeued`, `session_leases`, `browser_paints`, `enrolment_salt`)
were created on PostgreSQL with 32-bit `integer` and `real` columns. What went wrong:

- `real` keeps 24 significant bits. A lease's `taken_s` (wall-clock seconds, about 1.8e9)
  was rounded to a multiple of 128 s, so a lease's age (in the "in use" message, and which
  host's lease is stale) came out up to 64 s off. A painted time (ms after the trial's
  send, kept to 0.001 ms) later than 16.4 s could read back 0.001 ms off (0.002 ms past
  32.8 s): 20000.124 reads 20000.123.
- the `integer` columns hold small numbers (a pid, trial and chunk indexes, the salt row's
  id, all below 2^31): nothing overflowed, but a value beyond 2^31 would be refused
  ("integer out of range") where SQLite takes it. They are widened to the declared width.

`widen_narrow_columns(store)` runs when `Store.open` opens a PostgreSQL database, after the
migrations: every column the current migrations declare INTEGER or REAL (found by running
them in an in-memory SQLite database, `declared_columns`) that the database holds as
`integer` or `real` (`information_schema.columns`) is changed with one `ALTER TABLE ...
ALTER COLUMN ... TYPE` per table, all in one transaction under the store's advisory write
lock, with an audit entry (`widen`: the columns and their types before and after) in the
same transaction. Its schema version is unchanged (`schema_migrations` numbers migrations,
which this is not: it repairs tables the migrations were meant to make). Hosts opening at
once: one widens, the others wait on the lock, then find nothing narrow and change nothing;
opened again, it does nothing (the check is a catalogue read, without the lock).

PostgreSQL rewrites each widened table, holding an ACCESS EXCLUSIVE lock on it (no reads,
no writes) to COMMIT; every other host's writes wait on the write lock meanwhile. Only the
tables' owner may alter them: a role that may not is refused with a StoreError that says
so, and nothing is changed.

A `real` value is widened through its text (`USING col::text::double precision`, with
`extra_float_digits = 1`: the shortest text that reads back as the same 32-bit value), so
every value reads back after the widening exactly as it read before (a plain cast would
turn the 12345.678 a reader saw into 12345.677734375). Digits lost when the value was
written are not recovered: an old lease's `taken_s` stays as rounded; the next take of the
lease writes the exact time.

The read-only opener (`open_read_only`: what export and verify read through) never writes,
so it does not widen: it reads a narrow database as found, which gives the same values as
the widened one (above). (`uxlab export` then opens the store to note itself in the audit
log, which widens.)
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from functools import lru_cache

from uxlab.store.backend import Connection
from uxlab.store.base import StoreBase
from uxlab.store.digests import sha256_json
from uxlab.store.schema import StoreError, migrate

WIDE = {"INTEGER": "bigint", "REAL": "double precision"}
"""A declared SQLite type -> the PostgreSQL type uxlab gives it."""
NARROW = {"bigint": "integer", "double precision": "real"}
"""A wide PostgreSQL type -> its 32-bit counterpart, what older uxlab made instead."""
INSUFFICIENT_PRIVILEGE = "42501"
"""PostgreSQL's error code when the role may not alter a table (only its owner may)."""


@dataclass(frozen=True)
class NarrowColumn:
    """A column held 32-bit (`now`) that the schema makes 64-bit (`wide`)."""

    table: str
    column: str
    now: str
    wide: str


@lru_cache(maxsize=1)
def declared_columns() -> dict[tuple[str, str], str]:
    """(table, column) -> the PostgreSQL type the current migrations give it, for every
    column they declare INTEGER or REAL (read from SQLite after running them in memory)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(conn, ":memory:", "1970-01-01T00:00:00.000+00:00")
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        declared = {}
        for table in tables:
            for _, name, kind, *_ in conn.execute(f"PRAGMA table_info({table})"):
                if kind.upper() in WIDE:
                    declared[(table, name)] = WIDE[kind.upper()]
        return declared
    finally:
        conn.close()


def narrow_columns(conn: Connection) -> list[NarrowColumn]:
    """The columns of a PostgreSQL study database held 32-bit that the schema makes 64-bit."""
    declared = declared_columns()
    rows = conn.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND data_type IN ('integer', 'real') "
        "ORDER BY table_name, ordinal_position"
    ).fetchall()
    found = []
    for table, column, now in rows:
        wide = declared.get((table, column))
        if wide is not None and NARROW[wide] == now:
            found.append(NarrowColumn(table, column, now, wide))
    return found


def widen_narrow_columns(store: StoreBase) -> list[NarrowColumn]:
    """Widen a PostgreSQL store's narrow columns (see the module docstring); those widened
    now (empty when there were none, or another host widened them first)."""
    if not narrow_columns(store.conn):  # the usual case: a catalogue read, no lock
        return []
    with store._write() as conn:  # the write lock: one host widens, the others wait
        narrow = narrow_columns(conn)  # again: another host may have widened them
        if not narrow:
            return []
        conn.execute("SET LOCAL extra_float_digits = 1")
        for table in dict.fromkeys(c.table for c in narrow):
            changes = ", ".join(
                f'ALTER COLUMN "{c.column}" TYPE {c.wide} USING "{c.column}"::text::{c.wide}'
                for c in narrow
                if c.table == table
            )
            try:
                conn.execute(f'ALTER TABLE "{table}" {changes}')  # one rewrite per table
            except Exception as exc:
                if getattr(exc, "sqlstate", None) != INSUFFICIENT_PRIVILEGE:
                    raise
                raise StoreError(_not_owner(store, narrow, exc)) from None
        detail = {
            "columns": [
                {"table": c.table, "column": c.column, "from": c.now, "to": c.wide} for c in narrow
            ],
            "why": "made 32-bit by an older uxlab; the schema declares 64-bit",
        }
        store._audit("widen", None, sha256_json(detail), detail)
    return narrow


def _not_owner(store: StoreBase, narrow: list[NarrowColumn], exc: BaseException) -> str:
    tables = ", ".join(dict.fromkeys(c.table for c in narrow))
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return (
        f"{store.path}: made by an older uxlab, its tables {tables} have 32-bit columns to "
        f"widen to 64-bit, which only the tables' owner may do ({reason}); nothing was "
        "changed. Open it once as the role that owns its tables (any uxlab command)"
    )
