"""Open enrolment: participants arriving from a recruitment platform with its id in the link.

A platform such as Prolific opens the study link with the participant's platform id in the
query (`?PROLIFIC_PID=...`). uxlab never stores that id: the participant id is
``R-`` + the first 16 hex digits of HMAC-SHA256(salt, platform id), with a random salt kept
in the study database (`uxlab.store.enrolment_salt`, made on first use, one for every host
sharing the database). The same platform id always gives the same participant, on any host
(so reopening the link resumes the session), and an export (`uxlab export`, which never
holds the salt) cannot be matched to platform ids by hashing guesses. Give the platform's
id to `uxlab withdraw --enrolled` when a participant asks to withdraw.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from pathlib import Path

PLATFORM_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
"""What a platform id may look like (Prolific, MTurk and SONA ids all do)."""


def salt_path(db: Path) -> Path:
    """Where development builds before 0.1.0 kept the enrolment salt of the study database
    `db` (a file that is now adopted into the database once)."""
    return db.with_name(db.name + ".enrol_salt")


def valid_platform_id(platform_id: str) -> bool:
    """True when `platform_id` looks like a recruitment platform's id."""
    return bool(PLATFORM_ID_RE.match(platform_id))


def enrolled_participant(salt: bytes, platform_id: str) -> str:
    """The pseudonymous participant id of a platform id (the same id -> the same participant)."""
    digest = hmac.new(salt, platform_id.encode("utf-8"), hashlib.sha256).hexdigest()
    return "R-" + digest[:16]
