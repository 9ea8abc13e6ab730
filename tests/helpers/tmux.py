"""A private tmux server for real-terminal tests: start a command in an 80x24 pane, read the
screen, send keys, close the pane (SIGHUP to the program) and wait for its process to end.

tmux is a test requirement (CI installs it): without it `need_tmux()` fails the test with
how to install it, unless `UXLAB_SKIP_TMUX=1` asks to skip real-terminal tests on purpose.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def need_tmux() -> None:
    """Fail (never skip silently) when tmux is missing, unless UXLAB_SKIP_TMUX=1."""
    if shutil.which("tmux") is not None:
        return
    if os.environ.get("UXLAB_SKIP_TMUX") == "1":
        pytest.skip("UXLAB_SKIP_TMUX=1: real-terminal tests skipped on request")
    pytest.fail(
        "tmux is not installed, and these tests drive the real terminal client in tmux: "
        "install it (e.g. apt-get install -y tmux), or set UXLAB_SKIP_TMUX=1 to skip them"
    )


class Tmux:
    """One private tmux server (its own socket) with one 80x24 session."""

    def __init__(self) -> None:
        self.socket = f"uxlab-test-{uuid.uuid4().hex[:8]}"

    def cmd(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True
        )
        return out.stdout

    def start(self, command: str, remain_on_exit: bool = True) -> None:
        """Start `command` in the 80x24 pane. With `remain_on_exit` the pane (and the server)
        stays after the program ends, set in the same tmux command as the session is made: a
        program that ends at once cannot take the server down before the option is set."""
        new_session = ["new-session", "-d", "-s", "run", "-x", "80", "-y", "24", command]
        if remain_on_exit:
            self.cmd("start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
                     *new_session)  # fmt: skip
        else:
            self.cmd(*new_session)

    def screen(self) -> str:
        return self.cmd("capture-pane", "-p", "-J", "-S", "-30", "-t", "run")

    def keys(self, *keys: str) -> None:
        self.cmd("send-keys", "-t", "run", *keys)

    def pane_pid(self) -> int:
        return int(self.cmd("display-message", "-p", "-t", "run", "#{pane_pid}").strip())

    def pane_dead(self) -> bool:
        return self.cmd("display-message", "-p", "-t", "run", "#{pane_dead}").strip() == "1"

    def close(self, how: str = "kill-pane") -> int:
        """Close the pane (`kill-pane`) or its window (`kill-window`) as a person closing the
        terminal would: tmux hangs up the pane's terminal (SIGHUP). Returns the program's pid."""
        pid = self.pane_pid()
        self.cmd(how, "-t", "run")
        return pid

    def kill_server(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], check=False)

    def fresh(self) -> None:
        """End this server and use a new one (a new socket: no wait for the old to go).

        Never start a second session on the socket of a server that is going away (its last
        session killed): the new client can reach the dying server and fail with exit 1."""
        self.kill_server()
        self.socket = f"uxlab-test-{uuid.uuid4().hex[:8]}"


def process_gone(pid: int) -> bool:
    """The process has ended (gone, or a zombie nobody has reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def wait_gone(pid: int, deadline_s: float = 30.0) -> None:
    """Wait until process `pid` has ended (a generous deadline turns a hang into a failure)."""
    give_up = time.monotonic() + deadline_s
    while not process_gone(pid):
        if time.monotonic() > give_up:
            raise AssertionError(f"process {pid} still running {deadline_s:g} s after the hang-up")
        time.sleep(0.05)


def uxlab_command(*args: str) -> str:
    """A shell command running `python -m uxlab ARGS` from the repository (exec'd: the pane's
    process is the program itself)."""
    env = f"cd {shlex.quote(str(REPO))} && PYTHONPATH={shlex.quote(str(REPO))} exec "
    return env + " ".join(shlex.quote(a) for a in [sys.executable, "-m", "uxlab", *args])


def flat(screen: str) -> str:
    """The screen's words on one line: the app wraps its own text (where, depends on the
    width of what precedes: a path, a pid), so a phrase is looked for across line breaks."""
    return " ".join(screen.split())


def ended_screen(tmux: Tmux, deadline_s: float = 60.0) -> str:
    """The pane's last screen once its program has ended: captured after the end is seen (a
    screen captured before, as `wait_screen(tmux, lambda _s: tmux.pane_dead())` returns it
    when the program ends between the capture and the check, misses what it printed last)."""
    wait_screen(tmux, lambda _screen: tmux.pane_dead(), deadline_s)
    return tmux.screen()


def wait_screen(tmux: Tmux, condition, deadline_s: float = 60.0) -> str:
    """Poll the screen until `condition(screen)` holds; returns that screen."""
    give_up = time.monotonic() + deadline_s
    while time.monotonic() < give_up:
        dead = tmux.pane_dead()  # before the screen: a program that ended shows its last one
        screen = tmux.screen()
        if condition(screen):
            return screen
        if dead:
            raise AssertionError(f"the program ended; the screen:\n{screen}")
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting; the screen:\n{tmux.screen()}")
