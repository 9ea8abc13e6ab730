"""What a store may raise besides StoreError, whichever backend it runs on."""

from __future__ import annotations

import sqlite3

import psycopg
from psycopg_pool import PoolTimeout

STORE_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error, psycopg.Error, PoolTimeout)
"""A database error of either backend (SQLite's or PostgreSQL's), e.g. for `except`."""
