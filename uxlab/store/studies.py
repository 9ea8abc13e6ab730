"""Study files kept in the database: the text, its stimuli's SHA-256 and where it was."""

from __future__ import annotations

import json
from pathlib import Path

from uxlab.store.base import Database
from uxlab.store.digests import study_summary
from uxlab.study.reproduce import stimulus_files
from uxlab.study.spec import Study


class Studies:
    """`store.studies`: each study file stored once, under its SHA-256."""

    def __init__(self, db: Database):
        self.db = db

    def register(self, study: Study) -> str:
        """Store the study file once; returns its SHA-256.

        Kept with it: the full text, the SHA-256 of every stimulus file
        (`uxlab.study.reproduce.stimulus_files`) and the file's path relative to the working
        folder (`location`, NULL when outside it), so `uxlab verify` can rebuild the stimuli.
        """
        with self.db.write_transaction():
            self.add(study)
        return study.sha256

    def add(self, study: Study) -> None:
        """`register`, inside the caller's write transaction."""
        conn = self.db.conn
        exists = conn.execute("SELECT 1 FROM studies WHERE sha256 = ?", (study.sha256,)).fetchone()
        if exists:
            return
        row = {
            "sha256": study.sha256,
            "study_id": study.id,
            "version": study.version,
            "title": study.title,
            "seed": study.seed,
            "path": study.path.name,
            "text": study.text,
            "summary": json.dumps(study_summary(study), sort_keys=True),
            "registered_at": self.db.now_iso(),
            "stimuli": json.dumps(stimulus_files(study), sort_keys=True),
            "location": _location(study.path),
        }
        names = list(row)
        conn.execute(
            f"INSERT INTO studies ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            [row[k] for k in names],
        )
        self.db.append_audit("register", study.sha256, study.sha256, {"study_id": study.id})


def _location(path: Path) -> str | None:
    """The study file's path relative to the working folder (POSIX), or None outside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return None
