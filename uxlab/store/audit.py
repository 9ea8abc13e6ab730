"""The audit hash chain: each entry's `chain` is the SHA-256 of the one before and the entry."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from uxlab.store.backend import Connection


def chain_value(prev: str, at: str, action: str, subject: str | None, sha: str, detail: str) -> str:
    text = "\x1f".join((prev, at, action, subject or "", sha, detail))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class AuditChain:
    """The audit log as read: its entries, the first that breaks the chain, and its head."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    broken: dict[str, Any] | None = None
    """The first entry whose `chain` does not follow from the ones before it (or None)."""

    @property
    def head(self) -> str:
        """The last entry's `chain` value ("" for an empty log): anchor it elsewhere (a
        pre-registration, an e-mail) and `uxlab verify --expect-head` checks the log still
        leads to it."""
        return str(self.entries[-1]["chain"]) if self.entries else ""


def read_audit_chain(conn: Connection) -> AuditChain:
    """Every audit entry in order, each entry's chain recomputed from the one before; a
    changed, removed or inserted entry breaks it there. Reads only (a read-only connection)."""
    out = AuditChain()
    prev = ""
    cur = conn.execute(
        "SELECT seq, at, action, subject, sha256, detail, chain FROM audit ORDER BY seq"
    )
    cols = [c[0] for c in cur.description]
    for row in cur:
        entry = dict(zip(cols, row, strict=True))
        out.entries.append(entry)
        if out.broken is not None:
            continue
        fields = (entry["at"], entry["action"], entry["subject"], entry["sha256"], entry["detail"])
        if not all(f is None or isinstance(f, str) for f in fields):
            out.broken = entry  # a value changed to a number or bytes
            continue
        chain = chain_value(prev, *fields)
        if chain != entry["chain"]:
            out.broken = entry
        prev = chain
    return out


def first_broken_audit_entry(conn: Connection) -> tuple[int, dict[str, Any] | None]:
    """The number of audit entries and the first whose `chain` does not follow (or None)."""
    chain = read_audit_chain(conn)
    return len(chain.entries), chain.broken
