"""Opening a terminal emulator window at 80x24 running a command (glass checks, benchmarks).

`EMULATORS` names the X terminal emulators uxlab knows how to open at a given size: xterm
(core X drawing), alacritty and kitty (OpenGL; under Xvfb they need Mesa's software GL,
`software_gl=True`). `check_in_new_window` runs `uxlab check-timing --glass` in a new window
and returns what it measured there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

EMULATORS = ("xterm", "alacritty", "kitty")
RESULT_TIMEOUT_S = 120.0
"""How long a check in a new window may take before it is given up."""


class GlassRunError(Exception):
    """The emulator could not be opened, or its check gave no result (message says why)."""


def window_command(name: str, argv: Sequence[str], cols: int = 80, rows: int = 24) -> list[str]:
    """The command line that opens `name` at `cols` x `rows` running `argv`."""
    if name == "xterm":
        return ["xterm", "-geometry", f"{cols}x{rows}", "-e", *argv]
    if name == "alacritty":
        return ["alacritty", "-o", f"window.dimensions.columns={cols}",
                "-o", f"window.dimensions.lines={rows}", "-e", *argv]  # fmt: skip
    if name == "kitty":
        return ["kitty", "-o", f"initial_window_width={cols}c",
                "-o", f"initial_window_height={rows}c", *argv]  # fmt: skip
    raise GlassRunError(f"unknown terminal {name!r}: uxlab opens {', '.join(EMULATORS)}")


def open_window(
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    software_gl: bool = False,
    log: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Open `name` running `argv` (the environment's DISPLAY; see the module docstring); the
    emulator's own output goes to `log` when given (why a window did not open), else nowhere."""
    if name not in EMULATORS:
        raise GlassRunError(f"unknown terminal {name!r}: uxlab opens {', '.join(EMULATORS)}")
    if shutil.which(name) is None:
        raise GlassRunError(f"{name} is not installed (e.g. apt-get install -y {name})")
    env = dict(os.environ if env is None else env)
    if not env.get("DISPLAY"):
        raise GlassRunError("there is no X display (DISPLAY is not set) to open a window on")
    env.pop("WINDOWID", None)  # the new window sets its own
    env["COLORTERM"] = "truecolor"
    if software_gl:
        env["LIBGL_ALWAYS_SOFTWARE"] = "1"
    if log is None:
        return subprocess.Popen(
            window_command(name, argv),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            window_command(name, argv), env=env, stdout=out, stderr=subprocess.STDOUT
        )


def wait_for_file(path: Path, process: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Wait until `path` exists (True), the window closes, or `timeout_s` passes."""
    give_up = time.monotonic() + timeout_s
    while time.monotonic() < give_up:
        if path.exists() and path.stat().st_size > 0:
            time.sleep(0.1)  # written whole, then the program exits
            return True
        if process.poll() is not None:
            return path.exists()
        time.sleep(0.1)
    return False


def close_window(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def check_in_new_window(
    name: str, study_path: str, fps: int | None = None, software_gl: bool = False
) -> dict[str, Any]:
    """Run `uxlab check-timing STUDY --glass` in a new `name` window; its result."""
    with tempfile.TemporaryDirectory(prefix="uxlab-glass-") as tmp:
        out = Path(tmp) / "check.json"
        argv = [sys.executable, "-m", "uxlab", "check-timing", str(Path(study_path).resolve()),
                "--glass", "--result-json", str(out)]  # fmt: skip
        if fps is not None:
            argv += ["--fps", str(fps)]
        process = open_window(name, argv, software_gl=software_gl)
        try:
            if not wait_for_file(out, process, RESULT_TIMEOUT_S):
                raise GlassRunError(f"the check in a new {name} window gave no result")
        finally:
            close_window(process)
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return result
