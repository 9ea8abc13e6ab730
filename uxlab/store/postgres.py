"""The PostgreSQL backend: a connection the store drives exactly as it drives SQLite's.

`PostgresConnection` takes the store's SQL (`uxlab.store.dialect` rewrites the few
differences) and keeps SQLite's transaction rules, so every store module runs unchanged:

- `BEGIN IMMEDIATE` (every write) takes one pooled connection, begins a transaction and
  takes the store's write lock (`pg_advisory_xact_lock`), held to COMMIT: write
  transactions of every host run one after another, as SQLite's do on one file. That keeps
  the audit hash chain linear (each entry reads the one before), the group counts and
  counters exact under concurrent starts, and a lease taken by one host only. Each
  transaction is short (one trial), and PostgreSQL's `synchronous_commit` (on) makes each
  COMMIT durable before it returns.
- `BEGIN` (a reader: export, verify) is one REPEATABLE READ, READ ONLY snapshot.
- A statement outside a transaction runs on its own (autocommit).

A server gone away (restarted, failed over, the connection dropped) fails the transaction
as a whole: nothing of it is stored, the pool drops the broken connection and the next
write connects anew. `StoreUnreachable` (a StoreError) says so, so the runner shows its
"saving failed, reconnecting" screen and tries the same write again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import psycopg.errors
from psycopg_pool import ConnectionPool, PoolTimeout

from uxlab.store.dialect import REFUSE_CHANGE_FUNCTION, redact, to_postgres
from uxlab.store.schema import StoreError, StoreUnreachable

# The pool logs each failed reconnection as a warning; with no handler configured Python
# prints it on stderr, over a participant's screen. Whoever configures logging still gets it.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

WRITE_LOCK = 0x75786C6162  # "uxlab": the advisory lock every write transaction holds
CONNECT_TIMEOUT_S = 10.0
ERRORS: tuple[type[BaseException], ...] = (psycopg.Error, PoolTimeout)
"""What a PostgreSQL store may raise besides StoreError (the counterpart of sqlite3.Error)."""


class Row(tuple[Any, ...]):
    """A row read by position or by column name, as `sqlite3.Row` is."""

    names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self.names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self.names)


def named(rows: list[tuple[Any, ...]], description: Sequence[Any]) -> list[tuple[Any, ...]]:
    """`rows` as `Row`s (their column names from the cursor's `description`)."""
    names = {c.name: i for i, c in enumerate(description)}
    out: list[tuple[Any, ...]] = []
    for values in rows:
        row = Row(values)
        row.names = names
        out.append(row)
    return out


class Rows:
    """A finished statement's rows, read like a sqlite3 cursor."""

    def __init__(
        self, rows: list[tuple[Any, ...]], rowcount: int, description: Sequence[Any] | None
    ):
        self._rows = rows
        self._next = 0
        self.rowcount = rowcount
        self.description = (
            None if description is None else [(c.name, None, None, None, None, None, None)
                                              for c in description]
        )  # fmt: skip

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._next = self._rows[self._next :], len(self._rows)
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row


class PostgresConnection:
    """The store's connection to a PostgreSQL database (see the module docstring)."""

    def __init__(
        self,
        url: str,
        max_connections: int = 4,
        migrations_needed: bool = False,
        timeout_s: float = CONNECT_TIMEOUT_S,
    ):
        self.url = url
        self.name = redact(url)
        self._tx: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()  # one transaction at a time, as with sqlite3
        self.row_factory: Any = None
        """None: rows are tuples; anything else (`sqlite3.Row`): rows read by name too."""
        try:  # one direct connection first: the server's own words when it refuses (fast)
            psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT_S)).close()
        except psycopg.Error as exc:
            raise StoreError(f"{self.name}: cannot open the database ({_reason(exc)})") from None
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            kwargs={
                "autocommit": True,
                "connect_timeout": int(CONNECT_TIMEOUT_S),
                # each COMMIT durable before it returns, whatever the server's default
                "options": "-c synchronous_commit=on",
            },
            check=ConnectionPool.check_connection,  # a connection broken by a restart: anew
            timeout=timeout_s,
            open=False,
            name="uxlab-store",
        )
        try:
            self.pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
            if migrations_needed:
                self._check_is_a_store()
            else:
                self._bootstrap()
        except BaseException as exc:
            self.pool.close()
            if isinstance(exc, ERRORS):
                raise StoreError(
                    f"{self.name}: cannot open the database ({_reason(exc)})"
                ) from None
            raise

    def _bootstrap(self) -> None:
        """What the migrations need first: their table and the audit triggers' function."""
        with self.pool.connection() as conn:
            (made,) = conn.execute("SELECT to_regclass('schema_migrations')").fetchone() or (None,)
            if made is not None:  # made with the function, in one transaction, earlier
                return
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            conn.execute(REFUSE_CHANGE_FUNCTION)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, "
                "applied_at TEXT NOT NULL)"
            )

    def _check_is_a_store(self) -> None:
        """For a reader (export, verify): refuse a database uxlab never wrote to."""
        tables = {r[0] for r in self.execute("SELECT name FROM sqlite_master")}
        if "sessions" not in tables or "schema_migrations" not in tables:
            raise StoreError(f"{self.name}: not a uxlab study database (no uxlab tables)")

    # --- what the store calls ----------------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        return self._tx is not None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        """Run one statement of the store's SQL; BEGIN [IMMEDIATE], COMMIT and ROLLBACK
        open and close this connection's transaction."""
        word = sql.strip().upper()
        if word in ("BEGIN", "BEGIN IMMEDIATE"):
            self._begin(write=word == "BEGIN IMMEDIATE")
            return Rows([], -1, None)
        if word == "COMMIT":
            self._end("COMMIT")
            return Rows([], -1, None)
        if word == "ROLLBACK":
            self._end("ROLLBACK")
            return Rows([], -1, None)
        text = to_postgres(sql)
        if text is None:
            return Rows([], -1, None)
        if self._tx is not None:
            return self._run(self._tx, text, params)
        try:
            with self.pool.connection() as conn:
                return self._run(conn, text, params)
        except PoolTimeout as exc:
            raise self._unreachable(exc) from None

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        text = to_postgres(sql)
        if text is None or not rows:
            return
        try:
            if self._tx is not None:
                with self._tx.cursor() as cur:
                    cur.executemany(text, rows)
                return
            with self.pool.connection() as conn, conn.cursor() as cur:
                cur.executemany(text, rows)
        except psycopg.OperationalError as exc:
            raise self._unreachable(exc) from None
        except PoolTimeout as exc:
            raise self._unreachable(exc) from None

    def close(self) -> None:
        if self._tx is not None:
            self._end("ROLLBACK")
        self.pool.close()

    def close_now(self) -> None:
        """Close without waiting for a server that is away (nothing is left to write)."""
        self._tx = None
        self.pool.close(timeout=0.0)

    # --- transactions ---------------------------------------------------------------------------

    def _begin(self, write: bool) -> None:
        if self._tx is not None:
            raise StoreError(f"{self.name}: a transaction is already open")
        self._lock.acquire()
        try:
            conn = self.pool.getconn()
        except PoolTimeout as exc:
            self._lock.release()
            raise self._unreachable(exc) from None
        self._tx = conn
        try:
            if write:
                conn.execute("BEGIN")
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            else:
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        except psycopg.OperationalError as exc:
            self._end("ROLLBACK")
            raise self._unreachable(exc) from None

    def _end(self, word: str) -> None:
        conn, self._tx = self._tx, None
        if conn is None:
            return
        try:
            conn.execute(word)
        except psycopg.OperationalError as exc:
            if word == "COMMIT":
                # Whether the server committed before the connection broke is unknown only
                # in that instant; the next resume reads what is there.
                raise self._unreachable(exc) from None
        finally:
            if not conn.closed and conn.info.transaction_status != 0:  # not IDLE: discard
                conn.close()
            self.pool.putconn(conn)
            self._lock.release()

    def _run(self, conn: psycopg.Connection[Any], text: str, params: Sequence[Any]) -> Rows:
        try:
            cur = conn.execute(text, tuple(params))
            rows = cur.fetchall() if cur.description is not None else []
            if self.row_factory is not None and cur.description is not None:
                rows = named(rows, cur.description)
            return Rows(rows, cur.rowcount, cur.description)
        except psycopg.OperationalError as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, exc: BaseException) -> StoreUnreachable:
        return StoreUnreachable(
            f"{self.name}: the database server cannot be reached ({_reason(exc)}); "
            "reconnecting — nothing committed is lost, and this write is tried again"
        )


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
