"""A study error said at its line: `<path>:<line>: <message>`, where the line is the one
that writes the key the error names (or, for a key that is not written, its table's header)."""

from __future__ import annotations

import re
from pathlib import Path

from uxlab.study import StudyError


def assert_said_at_key(err: StudyError, path: str | Path, text: str, message: str) -> None:
    """`err` starts `path:LINE: message`, and line LINE of `text` writes its key or a header."""
    assert err.line is not None, f"no line in: {err}"
    assert str(err).startswith(f"{path}:{err.line}: {message}"), str(err)
    written = text.splitlines()[int(err.line) - 1].strip()
    _, _, key = (err.key or "").partition("].")
    name = re.split(r"[\[]", key)[0].strip('"') if key else ""
    assert written.startswith("[") or (name and name in written), (err.line, written, err.key)
