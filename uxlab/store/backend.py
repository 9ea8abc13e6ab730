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


class Connection(Protocol):
    """One process's connection to a study database."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Result: ...

    def executemany(self, sql: str, rows: Any, /) -> Any: ...

    def close(self) -> None: ...
