"""An X server for glass tests: Xvfb on a free display (`benchmarks.support.xserver`).

Xvfb and xterm are test requirements (CI installs them): without them `need_x()` fails the
test with how to install them, unless `UXLAB_SKIP_GLASS=1` asks to skip glass tests on purpose.
"""

from __future__ import annotations

import os
import shutil

import pytest

from benchmarks.support.xserver import display_state
from benchmarks.support.xserver import virtual_display as xvfb

__all__ = ["display_state", "need_x", "xvfb"]


def need_x(*programs: str) -> None:
    """Fail (never skip silently) when Xvfb or a needed program is missing."""
    missing = [p for p in ("Xvfb", *programs) if shutil.which(p) is None]
    if not missing:
        return
    if os.environ.get("UXLAB_SKIP_GLASS") == "1":
        pytest.skip("UXLAB_SKIP_GLASS=1: glass tests skipped on request")
    pytest.fail(
        f"{', '.join(missing)} not installed, and the glass tests time a real terminal window "
        "under an X server: install them (e.g. apt-get install -y xvfb xterm), or set "
        "UXLAB_SKIP_GLASS=1 to skip them"
    )
