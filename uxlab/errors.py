"""The base error of uxlab: anything a user can act on (bad file, bad option, bad study).

`LocatedError` is the base of errors at a place in a file (path, line, field, problem).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class UxlabError(Exception):
    """An error with a message that says what was wrong, where, and what would be right."""


class LocatedError(UxlabError, ValueError):
    """A problem at a place in a file: the file, the line (when known), the field and what is
    wrong, said as `<path>:<line>: <field>: <problem>` (the line and field left out when
    unknown). The one base of the file-reading errors (study files, replay files, imports)."""

    def __init__(
        self, path: str | Path, line: int | str | None, field: str | None, problem: str
    ) -> None:
        self.path = str(path)
        self.line = line
        """The 1-based line, or another position in the file's own terms (`event 3`)."""
        self.field = field
        """The field, key or key path at fault (`channel`, `[abandon].key`)."""
        self.problem = problem
        where = self.path if line is None else f"{self.path}:{line}"
        what = f"{field}: {problem}" if field else problem
        super().__init__(f"{where}: {what}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its parts when it crosses a process boundary (a worker pool).
        return (type(self), (self.path, self.line, self.field, self.problem))
