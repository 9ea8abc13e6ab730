"""The study store: SQLite (or shared PostgreSQL) persistence of sessions, trials and
events; resume; export."""

from uxlab.store.export import export_db, read_tables
from uxlab.store.schema import SCHEMA_VERSION, StoreError
from uxlab.store.store import (
    SessionRecord,
    Store,
    check_participant_id,
    default_db_path,
    new_participant_id,
)

__all__ = [
    "SCHEMA_VERSION",
    "SessionRecord",
    "Store",
    "StoreError",
    "check_participant_id",
    "default_db_path",
    "export_db",
    "new_participant_id",
    "read_tables",
]
