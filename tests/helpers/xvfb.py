"""An X server for glass tests: Xvfb on a free display, started and stopped by the test.

Xvfb and xterm are test requirements (CI installs them): without them `need_x()` fails the
test with how to install them, unless `UXLAB_SKIP_GLASS=1` asks to skip glass tests on purpose.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


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


@contextmanager
def xvfb(glx: bool = False) -> Iterator[dict[str, str]]:
    """A fresh Xvfb (80x24 windows fit easily); yields an environment with its DISPLAY."""
    read_fd, write_fd = os.pipe()
    args = ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x800x24", "-nolisten", "tcp"]
    if glx:
        args += ["+extension", "GLX"]
    server = subprocess.Popen(args, pass_fds=(write_fd,), stderr=subprocess.DEVNULL)
    os.close(write_fd)
    try:
        with os.fdopen(read_fd) as reader:
            number = reader.readline().strip()
        if not number:
            raise AssertionError("Xvfb did not start (no display number)")
        env = dict(os.environ, DISPLAY=f":{number}")
        env.pop("WINDOWID", None)
        yield env
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
