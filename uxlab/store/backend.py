"""The storage interface both backends implement: what the store needs of a connection.

SQLite's `sqlite3.Connection` (isolation_level=None) is one; `uxlab.store.postgres.
PostgresConnection` the other. The store writes its SQL once (`uxlab.store.dialect` says
what changes for PostgreSQL) and uses transactions the SQLite way: `BEGIN IMMEDIATE` for a
write (one writer at a time), `BEGIN` for a reader's snapshot, `COMMIT`, `ROLLBACK`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol


class Result(Protocol):
    """A statement's rows, as a sqlite3 cursor gives them."""

    @property
    def rowcount(self) -> int: ...

    @property
    def description(self) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class NamedRow(Protocol):
    """A row read by position or by column name (`sqlite3.Row`, or PostgreSQL's `Row`)."""

    def __getitem__(self, key: Any, /) -> Any: ...

    def keys(self) -> list[str]: ...


class Connection(Protocol):
    """One process's connection to a study database.

    `row_factory`: None gives rows as tuples; `sqlite3.Row` gives `NamedRow`s (on
    PostgreSQL too: any factory set there does).
    """

    row_factory: Any

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Result: ...

    def executemany(self, sql: str, rows: Any, /) -> Any: ...

    def close(self) -> None: ...
