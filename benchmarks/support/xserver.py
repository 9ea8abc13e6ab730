"""A virtual X server (Xvfb) on a free display, for glass checks on a headless machine."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


class NoXServer(Exception):
    """Xvfb is not installed or did not start (the message says which)."""


@contextmanager
def virtual_display(glx: bool = True, size: str = "1280x800x24") -> Iterator[dict[str, str]]:
    """Start Xvfb on a free display number; yields an environment with its DISPLAY.

    `glx` adds the GLX extension, which OpenGL emulators (alacritty, kitty) need, with
    Mesa's software renderer (`LIBGL_ALWAYS_SOFTWARE=1` in their environment).
    """
    if shutil.which("Xvfb") is None:
        raise NoXServer("Xvfb is not installed (e.g. apt-get install -y xvfb)")
    read_fd, write_fd = os.pipe()
    args = ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", size, "-nolisten", "tcp"]
    if glx:
        args += ["+extension", "GLX"]
    server = subprocess.Popen(args, pass_fds=(write_fd,), stderr=subprocess.DEVNULL)
    os.close(write_fd)
    try:
        with os.fdopen(read_fd) as reader:
            number = reader.readline().strip()
        if not number:
            raise NoXServer("Xvfb did not start (it gave no display number)")
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
