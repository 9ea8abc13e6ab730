"""The audit log as the store reads it (`store.audit`): its entries, whether the chain holds,
and the entry an export appends."""

from __future__ import annotations

from typing import Any

from uxlab.store.audit import first_broken_audit_entry
from uxlab.store.base import Database


class AuditLog:
    """`store.audit`: the append-only, hash-chained log (`uxlab verify` checks it in full)."""

    def __init__(self, db: Database):
        self.db = db

    def entries(self) -> list[dict[str, Any]]:
        """Every entry in order, as stored."""
        cur = self.db.conn.execute(
            "SELECT seq, at, action, subject, sha256, detail, chain FROM audit ORDER BY seq"
        )
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur]

    def is_intact(self) -> bool:
        """True when every entry's chain value matches the entries before it."""
        return first_broken_audit_entry(self.db.conn)[1] is None

    def record_export(self, digest: str, detail: dict[str, Any]) -> None:
        """Append an `export` entry (the only write an export makes)."""
        with self.db.write_transaction():
            self.db.append_audit("export", None, digest, detail)
