"""SSH host tests: `uxlab host --ssh 0` as a real process, and a participant's terminal made of
the asyncssh client (a PTY request over loopback) and pyte (the screen the bytes paint).

`HostProcess` starts the host, reads the port and host key fingerprint from its first lines
and keeps every later line (to check what it logs); `stop()` sends Ctrl+C (SIGINT).
`SshTerminal` connects with an invitation code, reads the screen, sends keys, resizes and
disconnects. Waits poll with generous deadlines: a hang becomes a failure, not a timing claim.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path

import asyncssh
import pyte

from helpers.host_process import CollectedHost

REPO = Path(__file__).resolve().parents[2]
KEYS = {"Enter": b"\r", "Escape": b"\x1b", "C-q": b"\x11"}


class HostProcess(CollectedHost):
    """`python -m uxlab host STUDY --db DB --ssh 0` with its output collected line by line."""

    def __init__(self, study: Path, db: Path | str, cwd: Path = REPO) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        super().__init__([str(study), "--db", str(db), "--ssh", "0"], cwd, env)
        first = self.wait_line("over SSH on", deadline_s=60)
        self.port = int(re.search(r":(\d+);", first).group(1))
        self.fingerprint = re.search(r"host key (SHA256:\S+)", first).group(1)


class SshTerminal:
    """A participant's terminal: an SSH session with a PTY, painted into a pyte screen."""

    def __init__(self, cols: int = 80, rows: int = 24) -> None:
        self.screen_model = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen_model)
        self.conn: asyncssh.SSHClientConnection | None = None
        self.proc: asyncssh.SSHClientProcess | None = None
        self.closed = asyncio.Event()
        self._reader: asyncio.Task | None = None

    async def connect(self, port: int, code: str, term: str = "xterm-256color") -> None:
        size = (self.screen_model.columns, self.screen_model.lines)
        self.conn = await asyncssh.connect(
            "127.0.0.1", port, username=code, known_hosts=None, client_keys=None
        )
        self.proc = await self.conn.create_process(term_type=term, term_size=size, encoding=None)
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.proc is not None
        while True:
            data = await self.proc.stdout.read(65536)
            if not data:
                break
            self.stream.feed(data)
        self.closed.set()

    def screen(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen_model.display)

    def keys(self, *keys: str) -> None:
        assert self.proc is not None
        for key in keys:
            self.proc.stdin.write(KEYS.get(key, key.encode()))

    def resize(self, cols: int, rows: int) -> None:
        assert self.proc is not None
        self.screen_model.resize(rows, cols)
        self.proc.change_terminal_size(cols, rows)

    async def wait_screen(self, condition, deadline_s: float = 60.0) -> str:
        give_up = time.monotonic() + deadline_s
        while time.monotonic() < give_up:
            screen = self.screen()
            if condition(screen):
                return screen
            if self.closed.is_set():
                raise AssertionError(f"the connection ended; the screen:\n{screen}")
            await asyncio.sleep(0.05)
        raise AssertionError(f"timed out waiting; the screen:\n{self.screen()}")

    async def close(self) -> None:
        """Disconnect as a participant closing the window would (the host hangs up)."""
        if self.conn is not None:
            self.conn.close()
            await self.conn.wait_closed()
        if self._reader is not None:
            self._reader.cancel()
