"""Commands quoted in hints, written so that they run as typed in the user's shell.

Every hint that names a command (`resume:`, `export:`, `next:` lines, error messages) is
built by `command(...)`: it starts with `uxlab` when the `uxlab` found on the user's PATH is
this install, and with `uv run uxlab` otherwise (a checkout set up with `uv sync`, where
`uxlab` lives only in the project's `.venv`). Arguments are shell-quoted.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sysconfig
from collections.abc import Mapping
from functools import cache
from pathlib import Path


def command(*args: str | Path) -> str:
    """`uxlab ARGS...` as the user should type it (see the module docstring)."""
    from uxlab.store.dialect import db_name

    words = [shlex.quote(str(db_name(a)) if isinstance(a, str) else str(a)) for a in args]
    return " ".join([*program_words(), *words])


@cache
def program_words() -> tuple[str, ...]:
    """`("uxlab",)` or `("uv", "run", "uxlab")`; decided once per process."""
    return ("uxlab",) if uxlab_on_path(os.environ) else ("uv", "run", "uxlab")


def uxlab_on_path(environ: Mapping[str, str], scripts_dir: str | None = None) -> bool:
    """True if `uxlab` typed in the user's shell runs this install.

    Under `uv run` the project's scripts folder is put first on PATH for this process
    only; that first entry is left out, since the user's shell does not have it (an
    activated virtual environment puts it on PATH a second time, and is then found).
    """
    scripts = _real(scripts_dir or sysconfig.get_path("scripts"))
    entries = environ.get("PATH", "").split(os.pathsep)
    if environ.get("UV_RUN_RECURSION_DEPTH") and entries and _real(entries[0]) == scripts:
        entries = entries[1:]
    found = shutil.which("uxlab", path=os.pathsep.join(entries))
    return found is not None and _real(str(Path(os.path.realpath(found)).parent)) == scripts


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))
