"""Open enrolment: participants arriving from a recruitment platform with its id in the link.

A platform such as Prolific opens the study link with the participant's platform id in the
query (`?PROLIFIC_PID=...`). uxlab never stores that id: the participant id is
``R-`` + the first 16 hex digits of HMAC-SHA256(salt, platform id), with a random salt kept
beside the database (`DB.enrol_salt`, mode 0600, made on first use). The same platform id
always gives the same participant (so reopening the link resumes the session), a copy of the
database without the salt cannot be matched to platform ids by hashing guesses, and deleting
the salt file unlinks the two for good. Give the platform's id to `uxlab withdraw` through
`enrolled_participant` when a participant asks to withdraw.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

PLATFORM_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
"""What a platform id may look like (Prolific, MTurk and SONA ids all do)."""


def salt_path(db: Path) -> Path:
    """Where the enrolment salt of the study database `db` is kept."""
    return db.with_name(db.name + ".enrol_salt")


def load_or_create_salt(db: Path) -> bytes:
    """The salt beside `db`, made (32 random bytes, mode 0600) when missing."""
    path = salt_path(db)
    if path.exists():
        return bytes.fromhex(path.read_text().strip())
    salt = secrets.token_bytes(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(salt.hex() + "\n")
    return salt


def valid_platform_id(platform_id: str) -> bool:
    """True when `platform_id` looks like a recruitment platform's id."""
    return bool(PLATFORM_ID_RE.match(platform_id))


def enrolled_participant(salt: bytes, platform_id: str) -> str:
    """The pseudonymous participant id of a platform id (the same id -> the same participant)."""
    digest = hmac.new(salt, platform_id.encode("utf-8"), hashlib.sha256).hexdigest()
    return "R-" + digest[:16]
