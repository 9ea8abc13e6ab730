"""One participant's study program in a pseudo-terminal: spawn, bridge, resize, hang up.

`PtyProgram.start()` runs ``python -m uxlab.cli.remote_participant STUDY DB PARTICIPANT`` (the
same flow as `uxlab run`) on the slave side of a new pseudo-terminal, in a session of its
own; the program's output is handed to `on_output` as it arrives, its notes for the
researcher (one line each) to `on_note`. `hang_up()` is a SIGHUP (the clean quit of a closed
terminal), then a kill if the program has not exited after `HANG_UP_GRACE_S`.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import struct
import sys
import termios
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path

from uxlab.host import NOTES_FD_VAR
from uxlab.study.spec import Study

HANG_UP_GRACE_S = 30.0
"""How long a hung-up program may take to commit and exit before it is killed."""

KEPT_VARS = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "PYTHONPATH",
    "PYTHONHOME", "PYTHONUTF8", "PYTHONIOENCODING", "VIRTUAL_ENV", "NO_COLOR",
})  # fmt: skip
"""The host's variables every participant program gets: where Python and uxlab are, the
locale (with `LC_*`), the time zone and the temporary folder. Nothing else of the host's
environment (its API keys, tokens, cloud credentials, the researcher's terminal and login)
reaches a participant's program, except the variables the host names for its study
(`program_vars`)."""


def program_vars(study: Study, db: Path | str) -> tuple[str, ...]:
    """The host variables a study's program needs beyond `KEPT_VARS`: a live study's key
    variable, and libpq's `PG*` variables (password, TLS) for a PostgreSQL database."""
    names = list(study.kind.key_variables)
    if isinstance(db, str) and db.startswith(("postgresql://", "postgres://")):
        names += [k for k in os.environ if k.startswith("PG")]
    return tuple(names)


def program_env(passed: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment a participant's program starts with (before the host's own)."""
    return {
        k: v for k, v in os.environ.items() if k in KEPT_VARS or k.startswith("LC_") or k in passed
    }


class PtyProgram:
    """A participant's program on a pseudo-terminal (see the module docstring)."""

    def __init__(
        self,
        study: Path,
        db: Path | str,
        participant: str,
        *,
        term: str,
        size: tuple[int, int],
        env: Mapping[str, str],
        on_output: Callable[[bytes], None],
        on_note: Callable[[str], None],
        passed_vars: tuple[str, ...] = (),
    ) -> None:
        self.args = (str(study), str(db), participant)
        self.passed_vars = passed_vars
        """Host variables passed on besides `KEPT_VARS` (`program_vars`)."""
        self.term = term
        self.size = size
        self.extra_env = dict(env)
        self.on_output = on_output
        self.on_note = on_note
        self.master_fd: int | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self.ended = asyncio.Event()
        self.status: int | None = None
        self.hung_up = False

    async def run(self) -> int:
        """Spawn the program and bridge it until it exits; its exit status."""
        master, slave = os.openpty()
        os.set_blocking(master, False)  # a flood of keys never stalls the host
        self.master_fd = master
        self.resize(*self.size)
        notes_read, notes_write = os.pipe()
        env = program_env(self.passed_vars)
        env.update(self.extra_env)
        env["TERM"] = self.term
        env[NOTES_FD_VAR] = str(notes_write)
        try:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "uxlab.cli.remote_participant",
                *self.args,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                start_new_session=True,
                pass_fds=(notes_write,),
                env=env,
            )
        finally:
            os.close(slave)
            os.close(notes_write)
        if self.hung_up:  # hung up while it was starting
            with suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGHUP)
        loop = asyncio.get_running_loop()
        output_done = asyncio.Event()
        notes_done = asyncio.Event()
        notes_buf = bytearray()
        loop.add_reader(master, self._read_output, output_done)
        loop.add_reader(notes_read, self._read_notes, notes_read, notes_buf, notes_done)
        status = await self.proc.wait()
        with suppress(TimeoutError):  # the program's last bytes
            await asyncio.wait_for(
                asyncio.gather(output_done.wait(), notes_done.wait()), timeout=2.0
            )
        loop.remove_reader(master)
        loop.remove_reader(notes_read)
        os.close(master)
        os.close(notes_read)
        self.master_fd = None
        self.status = status
        self.ended.set()
        return status

    def _read_output(self, done: asyncio.Event) -> None:
        assert self.master_fd is not None
        try:
            data = os.read(self.master_fd, 65536)
        except BlockingIOError:
            return
        except OSError:  # EIO: every slave descriptor is closed (the program ended)
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self.master_fd)
            done.set()
            return
        self.on_output(data)

    def _read_notes(self, fd: int, buf: bytearray, done: asyncio.Event) -> None:
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        buf += data
        while b"\n" in buf or (not data and buf):
            line, _, rest = bytes(buf).partition(b"\n")
            buf[:] = rest
            self.on_note(line.decode("utf-8", "replace"))
        if not data:
            asyncio.get_running_loop().remove_reader(fd)
            done.set()

    def write(self, data: bytes) -> None:
        """Keys for the program (dropped while its input queue is full)."""
        if self.master_fd is not None:
            with suppress(OSError):
                os.write(self.master_fd, data)

    def resize(self, cols: int, rows: int) -> None:
        """Set the terminal size (the program gets SIGWINCH)."""
        self.size = (cols, rows)
        if self.master_fd is not None:
            fcntl.ioctl(self.master_fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            if self.proc is not None and self.proc.returncode is None:
                with suppress(ProcessLookupError):
                    os.kill(self.proc.pid, signal.SIGWINCH)

    async def hang_up(self) -> None:
        """SIGHUP the program (a clean quit) and wait until it has exited; kill it if it hangs."""
        self.hung_up = True
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGHUP)
        try:
            await asyncio.wait_for(self.ended.wait(), timeout=HANG_UP_GRACE_S)
        except TimeoutError:
            self.on_note("program did not exit after SIGHUP; killed")
            with suppress(ProcessLookupError):
                proc.kill()
            await self.ended.wait()
