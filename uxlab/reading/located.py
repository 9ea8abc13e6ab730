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


_HEADER = re.compile(r"^\[(\[)?\s*([^\[\]]+?)\s*\]")
_STUDY_KEY = re.compile(r"^\[(\[)?([^\[\]]+)\]\]?(?:\[(\d+)\])?(?:\.([^\[]+))?")


def toml_key_line(text: str, key: str | None) -> int | None:
    """The 1-based line of a key path in TOML `text`, as a study file's errors name it:
    `[design].max_run` (its `max_run = ...` line), `[[questions]][1].scale` (in the second
    `[[questions]]`), `[factors].ttft_ms[2]` (the line where `ttft_ms` starts), `[texts]`
    (the header). A key that is not written (a missing one) gives its table's header line,
    a key written as its own table (`[factors.ttft_ms]`) that header; None when the table
    is not found either (written inline, or dotted)."""
    match = _STUDY_KEY.match(key or "")
    if match is None:
        return None
    array, section, index, name = bool(match[1]), match[2].strip(), match[3], match[4]
    if name is not None and "." in name:  # `ttft.ms`: a quoted key, or a key of a sub-table
        return _key_line(text, array, section, index, name) or _key_line(
            text, array, section, index, name.split(".")[0]
        )
    found = _key_line(text, array, section, index, name)
    if found is None and not array and "." in section:  # a table written inline in its parent
        parent, _, last = section.rpartition(".")
        found = _key_line(text, False, parent, None, last)
    return found


def _key_line(
    text: str, array: bool, section: str, index: str | None, name: str | None
) -> int | None:
    """The line of `name` in the table `section` (`index`: which of an array of tables),
    else of the table's own header, else None."""
    wanted = int(index) if array and index is not None else 0
    header_line = sub_header_line = key_line = None
    seen: dict[str, int] = {}
    here = False
    in_string = False
    for i, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        quotes = stripped.count('"""') % 2 or stripped.count("'''") % 2
        if in_string:  # inside a multi-line string: no headers or keys here
            in_string = not quotes
            continue
        in_string = bool(quotes)
        if header := _HEADER.match(stripped):
            is_array, title = bool(header[1]), re.sub(r"[\s\"']", "", header[2])
            count = seen.get(title, -1) + 1 if is_array else 0
            seen[title] = count
            here = title == section and is_array == array and count == wanted
            if here and header_line is None:
                header_line = i
            if name is not None and title == f"{section}.{name}" and sub_header_line is None:
                sub_header_line = i
        elif (
            here
            and name is not None
            and key_line is None
            and re.match(rf"^[\"']?{re.escape(name)}[\"']?\s*=", stripped)
        ):
            key_line = i
    return key_line or sub_header_line or header_line
