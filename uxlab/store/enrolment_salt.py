"""The open-enrolment salt of a study database, kept in the database itself.

Open enrolment (`uxlab host --enrol`) stores a participant as ``R-`` + a salted HMAC of the
recruitment platform's id (`uxlab.host.enrolment`). The salt is one row of the table
`enrolment_salt`, written once: the first host to need it makes it in one of the store's
write transactions (on PostgreSQL under its advisory write lock) and every later reader, on
this host or another sharing the database, gets the same row. So one platform id is the
same participant on every host, and `uxlab withdraw --enrolled` finds them anywhere.

Development builds before 0.1.0 kept the salt in a file beside the database
(`DB.enrol_salt`); when the table has no row yet and that file exists, its salt is adopted,
so existing enrolments keep their ids. The salt is never exported (`uxlab export` writes its
four tables only) nor logged.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from uxlab.store.schema import StoreError

if TYPE_CHECKING:
    from uxlab.store.store import Store


@dataclass(frozen=True)
class EnrolmentSalt:
    """The salt, and where it came from now: `stored` (already in the database), `made`
    (new, written now) or `adopted` (read from the salt file beside the database, written now)."""

    salt: bytes
    origin: str


def stored_salt(store: Store) -> bytes | None:
    """The salt kept in the database, or None when no host has enrolled anyone yet."""
    row = store.db.conn.execute("SELECT salt FROM enrolment_salt WHERE id = 1").fetchone()
    return bytes.fromhex(row[0]) if row else None


def enrolment_salt(store: Store, salt_file: Path, *, make: bool) -> EnrolmentSalt | None:
    """The database's salt; when it has none, the salt of `salt_file` (a file from a
    development build before 0.1.0) is adopted, or with `make` a new random one is written.
    The first writer wins: a host that lost the race gets the winner's salt. None when there
    is no salt and `make` is false."""
    salt = stored_salt(store)
    if salt is not None:
        return EnrolmentSalt(salt, "stored")
    adopted = _read_salt_file(salt_file)
    if adopted is None and not make:
        return None
    candidate = adopted if adopted is not None else secrets.token_bytes(32)
    with store.db.write_transaction() as conn:
        conn.execute(
            "INSERT INTO enrolment_salt (id, salt, made_at) VALUES (1, ?, ?) "
            "ON CONFLICT (id) DO NOTHING",
            (candidate.hex(), store.db.now_iso()),
        )
        (kept,) = conn.execute("SELECT salt FROM enrolment_salt WHERE id = 1").fetchone()
    salt = bytes.fromhex(kept)
    if salt != candidate:
        return EnrolmentSalt(salt, "stored")  # another host wrote it first
    return EnrolmentSalt(salt, "adopted" if adopted is not None else "made")


def _read_salt_file(path: Path) -> bytes | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the enrolment salt ({exc})") from None
    try:
        salt = bytes.fromhex(text)
    except ValueError:
        salt = b""
    if len(salt) < 16:
        raise StoreError(f"{path}: not an enrolment salt (expected hex digits, one line)")
    return salt
