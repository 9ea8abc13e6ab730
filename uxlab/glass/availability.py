"""Can glass timing run here? One plain sentence when it cannot.

Glass timing needs an X display with the DAMAGE extension (a desktop session on X11, or
Xvfb), the X window of the terminal emulator the app runs in (`WINDOWID`, which xterm,
alacritty and kitty set for their child), and python-xlib. It cannot see a terminal over
SSH (the window is on another machine), under Wayland without XWayland, or on macOS.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping


def glass_problem(env: Mapping[str, str], platform: str = sys.platform) -> str | None:
    """Why the glass cannot be timed for a terminal with this environment (None: it can,
    as far as the environment tells; the probe itself checks the X server for DAMAGE)."""
    if platform == "darwin":
        return "macOS has no X server damage events for terminal windows"
    if platform.startswith("win"):
        return "Windows terminals have no X server to ask for repaints"
    if not env.get("DISPLAY"):
        if env.get("WAYLAND_DISPLAY"):
            return "this is a Wayland session without an X display (DISPLAY is not set)"
        if env.get("SSH_CONNECTION") or env.get("SSH_TTY"):
            return "this terminal is reached over SSH: its window is on the other machine"
        return "there is no X display (DISPLAY is not set)"
    window = env.get("WINDOWID", "")
    if not window.strip().isdigit():
        return (
            "the terminal did not say which X window it is (WINDOWID is not set; xterm, "
            "alacritty and kitty set it)"
        )
    try:
        import Xlib  # noqa: F401
    except ImportError:
        return "python-xlib is not installed"
    return None
