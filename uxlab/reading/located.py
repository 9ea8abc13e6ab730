"""Where a problem is: `InputProblem` (a field and a problem, no file yet) and `LocatedError`
(the one `<path>:<line>: <field>: <problem>` formatter every file reader's error derives
from), with the helpers that find a key's line in a TOML file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from uxlab.errors import UxlabError


class InputProblem(ValueError):
    """A value that breaks the reading rules; `field` is its path (None: the whole input)."""

    def __init__(self, field: str | None, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}" if field else problem)


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


def toml_line_of(text: str, section: str, key: str) -> int | None:
    """The 1-based line of `key = ...` in `[section]` of TOML `text` (None when written
    another way: a dotted key, an inline table)."""
    current = None
    for i, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if header := re.match(r"^\[\s*([A-Za-z0-9_.-]+)\s*\]", stripped):
            current = header.group(1)
        elif current == section and re.match(rf"^{re.escape(key)}\s*=", stripped):
            return i
    return None


def strip_path(message: str, path: str | Path) -> str:
    """`message` without a leading `<path> ` (an inner error that named the file already)."""
    prefix = f"{path} "
    return message[len(prefix) :] if message.startswith(prefix) else message
