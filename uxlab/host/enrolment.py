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

from uxlab.errors import UxlabError

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


class EnrolmentError(UxlabError):
    """A platform id that cannot be matched to a participant (nothing was changed)."""


def host_files_beside(db: str | Path) -> Path:
    """What a study host's own files (the SSH host key; the enrolment salt before schema
    version 8) are named after: the SQLite file, or for a PostgreSQL database
    `results/<database name>` on this host (each host keeps its own)."""
    from uxlab.store.dialect import database_stem, is_postgres

    if is_postgres(db):
        return Path("results") / database_stem(str(db))
    return Path(db)


def participant_of(db: Path | str, platform_id: str) -> tuple[str, Path | None]:
    """The participant id open enrolment gave `platform_id`, with the salt kept in `db`;
    and the old salt file when it was adopted into the database just now (else None)."""
    from uxlab.store import Store, StoreError
    from uxlab.store.dialect import db_name
    from uxlab.store.enrolment_salt import enrolment_salt

    if not valid_platform_id(platform_id):
        raise EnrolmentError(
            "--enrolled: a platform id is 1-128 letters, digits, '-' or '_' (as in the "
            "study link's query); nothing was deleted"
        )
    salt_file = salt_path(host_files_beside(db))
    try:
        with Store.open(db) as store:
            got = enrolment_salt(store, salt_file, make=False)
    except StoreError as exc:
        raise EnrolmentError(f"{exc}; nothing was deleted") from None
    if got is None:
        raise EnrolmentError(
            f"--enrolled: {db_name(db)} holds no enrolment salt (kept in the database by "
            "`uxlab host --enrol`; without it platform ids cannot be matched, so give the "
            "participant id with --participant); nothing was deleted"
        )
    adopted = salt_file if got.origin == "adopted" else None
    return enrolled_participant(got.salt, platform_id), adopted
