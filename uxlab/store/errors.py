"""What a store may raise besides StoreError, whichever backend it runs on."""

from __future__ import annotations

import sqlite3
import sys


def store_errors() -> tuple[type[Exception], ...]:
    """A database error of either backend (SQLite's, PostgreSQL's), e.g. for `except`.

    PostgreSQL's driver is imported only when a PostgreSQL store is opened (it takes a
    noticeable part of a second), so its errors are included once it is loaded.
    """
    errors: list[type[Exception]] = [sqlite3.Error]
    if "psycopg" in sys.modules:
        errors.append(sys.modules["psycopg"].Error)
    if "psycopg_pool" in sys.modules:
        errors.append(sys.modules["psycopg_pool"].PoolTimeout)
    return tuple(errors)
