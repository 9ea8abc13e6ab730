"""The store's shared core: one connection, its clock, the write transaction and the rows
every part writes (the audit chain, counters, participants)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from uxlab.store.audit import chain_value
from uxlab.store.backend import Connection


class Database:
    """The connection every part of `Store` shares (`store.sessions`, `store.trials`, ...),
    with the clock, the one write transaction and the audit append they all use."""

    def __init__(self, conn: Connection, path: Path | str, clock: Callable[[], float]):
        self.conn = conn
        self.path = path
        """The SQLite file, or the PostgreSQL URL without its password (for messages)."""
        self.clock = clock
        self.leases: set[str] = set()
        """Sessions whose lease this store holds (`uxlab.store.lease`), given back at close."""

    def now_iso(self) -> str:
        """The clock's time now, as stored (UTC, ISO 8601, milliseconds)."""
        return datetime.fromtimestamp(self.clock(), UTC).isoformat(timespec="milliseconds")

    @contextmanager
    def write_transaction(self) -> Iterator[Connection]:
        """One short write transaction, taken with BEGIN IMMEDIATE (no lock upgrades): every
        statement in it is stored, or (on any error, the COMMIT's too) none is."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException:
            # Also when COMMIT itself failed (busy, disk full): leave no transaction open,
            # so the same write can simply be tried again.
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    def append_audit(
        self, action: str, subject: str | None, sha256: str, detail: dict[str, Any]
    ) -> None:
        """Append one audit entry, chained to the last (inside a write transaction)."""
        at = self.now_iso()
        detail_json = json.dumps(detail, sort_keys=True, separators=(",", ":"))
        row = self.conn.execute("SELECT chain FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        chain = chain_value(row[0] if row else "", at, action, subject, sha256, detail_json)
        self.conn.execute(
            "INSERT INTO audit (at, action, subject, sha256, detail, chain) VALUES (?,?,?,?,?,?)",
            (at, action, subject, sha256, detail_json, chain),
        )

    def next_count(self, name: str) -> int:
        """Increment and return a persistent counter (inside a write transaction)."""
        self.conn.execute(
            "INSERT INTO counters (name, n) VALUES (?, 1) "
            "ON CONFLICT(name) DO UPDATE SET n = counters.n + 1",
            (name,),
        )
        (n,) = self.conn.execute("SELECT n FROM counters WHERE name = ?", (name,)).fetchone()
        return int(n)

    def ensure_participant(self, participant: str) -> int:
        """The participant's number, their row made first if need be (inside a write
        transaction)."""
        row = self.conn.execute(
            "SELECT number FROM participants WHERE participant = ?", (participant,)
        ).fetchone()
        if row:
            return int(row[0])
        number = self.next_count("participant_number")
        self.conn.execute(
            "INSERT INTO participants (participant, number, created_at, created_s) "
            "VALUES (?,?,?,?)",
            (participant, number, self.now_iso(), self.clock()),
        )
        return number
