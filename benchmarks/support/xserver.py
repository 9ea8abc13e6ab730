"""A virtual X server (Xvfb) on a free display, for glass checks on a headless machine."""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager


class NoXServer(Exception):
    """Xvfb is not installed or did not start (the message says which)."""


@contextmanager
def virtual_display(glx: bool = True, size: str = "1280x800x24") -> Iterator[dict[str, str]]:
    """Start Xvfb on a free display number; yields an environment with its DISPLAY.

    `glx` adds the GLX extension, which OpenGL emulators (alacritty, kitty) need, with
    Mesa's software renderer (`LIBGL_ALWAYS_SOFTWARE=1` in their environment).

    The server never resets (`-noreset`). By default an X server resets whenever its last
    client disconnects, and every probe (`display_reachable`, `xdotool search`) is such a
    client: a client that connects during the reset is refused ("Can't open display"). On
    the 2-core machine with three busy loops, 7 of 1,200 short clients in a row were refused
    that way, and 0 of 600 with `-noreset` (2026-12-07).
    """
    if shutil.which("Xvfb") is None:
        raise NoXServer("Xvfb is not installed (e.g. apt-get install -y xvfb)")
    server, number = None, ""
    draw = random.SystemRandom()  # not the global generator, which a test may have seeded
    for display in draw.sample(range(_FIRST_DISPLAY, _LAST_DISPLAY), _TRIES):
        read_fd, write_fd = os.pipe()
        args = [
            "Xvfb", f":{display}", "-displayfd", str(write_fd), "-screen", "0", size,
            "-nolisten", "tcp", "-noreset",
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
    give_up = time.monotonic() + _READY_S
    while not display_reachable(number):  # what a client (xterm) will connect to
        if server.poll() is not None or time.monotonic() > give_up:
            server.kill()
            server.wait()
            raise NoXServer(f"Xvfb reported display :{number} but does not accept connections")
        time.sleep(0.05)
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

_READY_S = 10.0
"""How long a started Xvfb may take to accept a connection on its socket."""


def display_reachable(number: str) -> bool:
    """Whether display `:number` accepts a connection on its socket file, as an X client
    (xterm) connects (a failure message says this too: `display_state`)."""
    path = f"/tmp/.X11-unix/X{number}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(2.0)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def display_state(env: dict[str, str]) -> str:
    """What a failure message says of the environment's display: its socket file there or
    not, and whether it accepts a connection now."""
    number = env.get("DISPLAY", "").lstrip(":").split(".")[0]
    path = f"/tmp/.X11-unix/X{number}"
    there = "there" if os.path.exists(path) else "missing"
    now = "accepts connections" if display_reachable(number) else "refuses connections"
    return f"display :{number}: socket {path} {there}, {now}"
