"""A virtual X server (Xvfb) on a free display, for glass checks on a headless machine."""

from __future__ import annotations

import os
import random
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
    server, number = None, ""
    for display in random.sample(range(_FIRST_DISPLAY, _LAST_DISPLAY), _TRIES):
        read_fd, write_fd = os.pipe()
        args = [
            "Xvfb", f":{display}", "-displayfd", str(write_fd), "-screen", "0", size,
            "-nolisten", "tcp",
        ]  # fmt: skip
        if glx:
            args += ["+extension", "GLX"]
        server = subprocess.Popen(args, pass_fds=(write_fd,), stderr=subprocess.DEVNULL)
        os.close(write_fd)
        with os.fdopen(read_fd) as reader:
            number = reader.readline().strip()  # written once it accepts connections
        if number:
            break
        server.wait()  # that display was taken: another number
    if server is None or not number:
        raise NoXServer(f"Xvfb did not start (no display number after {_TRIES} tries)")
    try:
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


_FIRST_DISPLAY, _LAST_DISPLAY, _TRIES = 100, 30000, 10
"""Displays are drawn at random from this range, not the first free one (Xvfb's
`-displayfd` alone): servers started and stopped side by side took the same low numbers in
turn, and a server still stopping can remove the socket of the next one on its number, the
likely cause of "xterm: Xt error: Can't open display" in a full test run under load."""
