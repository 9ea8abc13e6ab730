"""Where commands write by default: one rule for every command.

- What is made from a study file goes under `results/` in the current folder, named after
  the study's id: its database `results/<study id>.sqlite` (`run`, `simulate`, `host`,
  `invite`) and its plan `results/plan/<study id>/` (`plan`).
- What is made from a file goes beside it, named after it: `results/quickstart.sqlite`
  gives `results/quickstart-export/` and `results/quickstart-report/`; `lab.csv` gives
  `lab-report/`. A PostgreSQL database (`postgresql://.../lab`) gives `results/lab-export/`.
- What is made from a folder goes inside it: `uxlab report out/` writes `out/report/`, and
  `uxlab demo -o results/demo` writes `results/demo/export/` and `results/demo/report/`.
- Commands that write recordings (`import`, `shape`, `record`) have no default: `-o` names
  the corpus.
"""

from __future__ import annotations

from pathlib import Path


def output_for(source: str | Path, what: str) -> Path:
    """The default output folder of `what` ("export", "report") made from `source`."""
    from uxlab.store.dialect import database_stem, is_postgres

    if is_postgres(source):  # a shared PostgreSQL database: results/<database name>-<what>
        return Path("results") / f"{database_stem(str(source))}-{what}"
    source = Path(source)
    if source.is_dir():
        return source / what
    return source.with_name(f"{source.stem}-{what}")


def host_files_beside(db: str | Path) -> Path:
    """What a study host's own files (the SSH host key; the enrolment salt before schema
    version 8) are named after: the SQLite file, or for a PostgreSQL database
    `results/<database name>` on this host (each host keeps its own)."""
    from uxlab.store.dialect import database_stem, is_postgres

    if is_postgres(db):
        return Path("results") / database_stem(str(db))
    return Path(db)
