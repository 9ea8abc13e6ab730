"""Participant ids: pseudonymous codes, made or checked; the default database path."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from uxlab.store.schema import StoreError
from uxlab.study.spec import Study

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
_ID_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L


def new_participant_id() -> str:
    """A random pseudonymous id like `P-7K3QX` (from `secrets`; 31^5 = 28 million ids)."""
    return "P-" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(5))


def check_participant_id(participant: str) -> str:
    """Refuse ids that cannot be pseudonymous codes (spaces, empty, too long)."""
    if not isinstance(participant, str) or not _ID_RE.match(participant):
        raise StoreError(
            f"participant id {participant!r}: use a pseudonymous code of letters, digits, "
            "'-', '_', '.' or ':' without spaces (e.g. P-7K3QX), never a name"
        )
    return participant


def default_db_path(study: Study, root: str | Path = "results") -> Path:
    """`results/<study id>.sqlite`: one database per study (results/ is git-ignored)."""
    return Path(root) / f"{study.id}.sqlite"
