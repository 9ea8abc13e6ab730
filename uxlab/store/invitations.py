"""Invitations: unguessable single-participant codes, each bound to a pseudonymous id.

`create_invitations(store, study_id, n)` makes `n` codes (`secrets.token_urlsafe`, 144 bits)
and returns them once; the database keeps only each code's SHA-256, the participant id it
stands for and when it was made, so a copy of the database holds no usable code.
`participant_for_code(store, study_id, code)` finds the participant a code stands for,
comparing hashes in constant time. No address or name is stored. `withdraw_invited` withdraws
a participant and deletes their invitation (the code then opens nothing).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from uxlab.store.store import Store, new_participant_id

CODE_BYTES = 18
"""Random bytes per code: 144 bits, 24 URL-safe characters."""


@dataclass(frozen=True)
class Invitation:
    """A code as handed to one participant (never stored) and the id it stands for."""

    code: str
    participant: str


def code_sha256(code: str) -> str:
    """The hex SHA-256 of a code: what the database keeps instead of the code."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def new_code() -> str:
    """A fresh code; never starts with '-' (so `ssh -p PORT CODE@host` is not an option)."""
    while True:
        code = secrets.token_urlsafe(CODE_BYTES)
        if not code.startswith("-"):
            return code


def create_invitations(store: Store, study_id: str, n: int) -> list[Invitation]:
    """Make `n` invitations for `study_id` in one transaction; the codes are returned only here."""
    if n < 1:
        raise ValueError(f"the number of invitations must be >= 1 (got {n})")
    taken = set(store.withdrawal.participants())  # those with data, and those invited
    made: list[Invitation] = []
    with store.db.write_transaction() as conn:
        for _ in range(n):
            participant = new_participant_id()
            while participant in taken:
                participant = new_participant_id()
            taken.add(participant)
            code = new_code()
            conn.execute(
                "INSERT INTO invitations (code_sha256, study_id, participant, created_at) "
                "VALUES (?, ?, ?, ?)",
                (code_sha256(code), study_id, participant, store.db.now_iso()),
            )
            made.append(Invitation(code, participant))
    return made


def participant_for_code(store: Store, study_id: str, code: str) -> str | None:
    """The participant `code` invites to `study_id`, or None.

    Every stored hash of the study is compared with `hmac.compare_digest`, so how long the
    answer takes does not tell how close a guess came.
    """
    wanted = code_sha256(code)
    found = None
    for stored, participant in store.db.conn.execute(
        "SELECT code_sha256, participant FROM invitations WHERE study_id = ?", (study_id,)
    ):
        if hmac.compare_digest(stored, wanted):
            found = participant
    return found


def count_invitations(store: Store, study_id: str) -> int:
    """How many invitations `study_id` has."""
    (n,) = store.db.conn.execute(
        "SELECT count(*) FROM invitations WHERE study_id = ?", (study_id,)
    ).fetchone()
    return int(n)


def withdraw_invited(store: Store, participant: str) -> dict[str, int]:
    """`store.withdrawal.withdraw(participant)` and delete their invitation, so the code
    opens nothing. (`withdraw` alone leaves the invitation, and the code would start a new
    session.)
    """
    counts = store.withdrawal.withdraw(participant)
    with store.db.write_transaction() as conn:
        gone = conn.execute("DELETE FROM invitations WHERE participant = ?", (participant,))
    return {**counts, "invitations": gone.rowcount}
