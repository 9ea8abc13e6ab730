"""The hint lines commands print after writing a study database; `command(...)` (from
`uxlab.command_hint`) quotes a command so that it runs as typed in the user's shell."""

from __future__ import annotations

from pathlib import Path

from uxlab.command_hint import command, uxlab_on_path

__all__ = ["after_database", "command", "uxlab_on_path"]


def after_database(db: str | Path) -> list[str]:
    """The `export:`/`report:` hint lines printed after a study database was written, and
    the file to open once they ran (a PostgreSQL database's default output folders are under
    the folder the commands run in)."""
    from uxlab.cli.places import output_for
    from uxlab.store.dialect import is_postgres

    export, report = output_for(db, "export"), output_for(db, "report")
    where = " (under the folder they are run from)" if is_postgres(db) else ""
    return [
        f"export:  {command('export', db)}",
        f"report:  {command('report', db)}",
        f"then:    open {report}/report.html{where}",
        f"         (the export's trial table: {export}/trials.csv)",
    ]
