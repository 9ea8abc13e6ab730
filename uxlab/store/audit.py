"""The audit hash chain: each entry's `chain` is the SHA-256 of the one before and the entry."""

from __future__ import annotations

import hashlib
from typing import Any

from uxlab.store.backend import Connection


def _chain(prev: str, at: str, action: str, subject: str | None, sha: str, detail: str) -> str:
    text = "\x1f".join((prev, at, action, subject or "", sha, detail))
    return hashlib.sha256(text.encode()).hexdigest()


def first_broken_audit_entry(conn: Connection) -> tuple[int, dict[str, Any] | None]:
    """The number of audit entries and the first whose `chain` does not follow (or None).

    Each entry's chain is recomputed from the one before; a changed, removed or inserted
    entry breaks it there. Reads only, so it also runs on a read-only connection.
    """
    prev = ""
    n_entries = 0
    broken = None
    cur = conn.execute(
        "SELECT seq, at, action, subject, sha256, detail, chain FROM audit ORDER BY seq"
    )
    cols = [c[0] for c in cur.description]
    for row in cur:
        n_entries += 1
        if broken is not None:
            continue
        entry = dict(zip(cols, row, strict=True))
        fields = (entry["at"], entry["action"], entry["subject"], entry["sha256"], entry["detail"])
        if not all(f is None or isinstance(f, str) for f in fields):
            broken = entry  # a value changed to a number or bytes
            continue
        chain = _chain(prev, *fields)
        if chain != entry["chain"]:
            broken = entry
        prev = chain
    return n_entries, broken
