"""`uxlab host --ssh`: an SSH server giving each invited participant the terminal study flow.

A participant runs `ssh -p PORT CODE@HOST`; the user name is their invitation code
(`uxlab.store.invitations`), so no password is asked. An accepted connection that asks for a
terminal gets a pseudo-terminal of the client's type and size running
`python -m uxlab.cli.remote_participant` (the same flow as `uxlab run`), and the bytes are bridged
both ways; a window change resizes the pseudo-terminal (the program gets SIGWINCH). Closing
the connection hangs up the program (SIGHUP: a clean quit that keeps what is on screen);
connecting again with the same code resumes the session. A new connection with a code in use
hangs up the older one first.

Security: loopback by default; codes are never logged (asyncssh's own log is kept to
warnings, which name no user); a failed code waits (`FailureLimiter`), failed codes are
answered one at a time host-wide, and a connection is closed after a few; no address is
stored or logged; a connection offers no commands, sftp, or forwarding. The host key is
generated on first start beside the database (`DB.ssh_host_key`, mode 0600) and kept.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from uxlab.host.limits import FailureLimiter, clamp_size
from uxlab.host.pty_program import PtyProgram


def host_key_path(db: Path) -> Path:
    """Where the host key of the study database `db` is kept."""
    return db.with_name(db.name + ".ssh_host_key")


def load_or_create_host_key(db: Path) -> tuple[asyncssh.SSHKey, bool]:
    """The host key beside `db`, generated (Ed25519, mode 0600) when missing; (key, created)."""
    path = host_key_path(db)
    if path.exists():
        return asyncssh.read_private_key(str(path)), False
    key = asyncssh.generate_private_key("ssh-ed25519")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(key.export_private_key())
    return key, True


@dataclass
class HostContext:
    """What every connection shares: the study, its database, codes and the failure limiter."""

    study_path: Path
    study_id: str
    db: Path | str
    """The SQLite file, or a PostgreSQL URL."""
    lookup: Callable[[str], str | None]
    """Invitation code -> participant id (None for an unknown code)."""
    limiter: FailureLimiter = field(default_factory=FailureLimiter)
    log: Callable[[str], None] = print
    running: dict[str, ParticipantSession] = field(default_factory=dict)
    """Participant id -> the session that currently runs their program."""
    refusing: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while a failed code waits: failures are answered one at a time host-wide."""
    program_vars: tuple[str, ...] = ()
    """Host variables each participant's program gets besides the basic ones
    (`uxlab.host.pty_program.program_vars`: a live study's key variable, `PG*`)."""


class CodeAuthServer(asyncssh.SSHServer):
    """Accepts a connection whose user name is a valid invitation code; nothing else."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx
        self.conn: asyncssh.SSHServerConnection | None = None
        self.failures = 0

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self.conn = conn

    async def begin_auth(self, username: str) -> bool:
        participant = self.ctx.lookup(username)
        if participant is not None:
            assert self.conn is not None
            self.conn.set_extra_info(participant=participant)
            return False  # the code is the credential: no further authentication
        self.failures += 1
        async with self.ctx.refusing:  # parallel guesses wait in line; valid codes do not
            delay_s = self.ctx.limiter.failed()
            self.ctx.log(f"refused an unknown invitation code (waiting {delay_s:g} s)")
            await asyncio.sleep(delay_s)
        if self.failures >= self.ctx.limiter.per_connection and self.conn is not None:
            self.conn.close()
        return True  # no method is offered, so authentication fails

    def session_requested(self) -> ParticipantSession:
        return ParticipantSession(self.ctx)

    def password_auth_supported(self) -> bool:
        return False

    def kbdint_auth_supported(self) -> bool:
        return False

    def public_key_auth_supported(self) -> bool:
        return False


class ParticipantSession(asyncssh.SSHServerSession[bytes]):
    """One SSH channel: a pseudo-terminal running the participant's study program."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx
        self.chan: asyncssh.SSHServerChannel[bytes] | None = None
        self.participant = ""
        self.term = "xterm-256color"
        self.size = (80, 24)
        self.has_pty = False
        self.program: PtyProgram | None = None
        self.hung_up = False
        self.ended = asyncio.Event()
        self.tasks: set[asyncio.Future[None]] = set()

    def connection_made(self, chan: asyncssh.SSHServerChannel[bytes]) -> None:
        self.chan = chan
        self.participant = chan.get_extra_info("participant")

    def pty_requested(
        self, term_type: str, term_size: tuple[int, int, int, int], term_modes: Mapping[int, int]
    ) -> bool:
        self.has_pty = True
        self.term = term_type or self.term
        if term_size[0] > 0 and term_size[1] > 0:
            self.size = clamp_size(term_size[0], term_size[1])  # as the browser host does
        return True

    def shell_requested(self) -> bool:
        return True

    def exec_requested(self, command: str) -> bool:
        return False  # a participant gets the study, nothing else

    def subsystem_requested(self, subsystem: str) -> bool:
        return False

    def session_started(self) -> None:
        self._keep(asyncio.ensure_future(self._run()))

    async def _run(self) -> None:
        assert self.chan is not None
        if not self.has_pty:
            self.chan.write(b"This study needs a terminal: connect with `ssh -t`.\r\n")
            self.chan.exit(1)
            return
        older = self.ctx.running.get(self.participant)
        if older is not None:  # the same code again: the older connection is hung up first
            self.ctx.log(f"{self.participant}: a new connection replaces the open one")
            if older.chan is not None:
                older.chan.close()
            await older.hang_up()
        self.ctx.running[self.participant] = self
        status = await self._spawn_and_bridge()
        if self.ctx.running.get(self.participant) is self:
            del self.ctx.running[self.participant]
        self.ctx.log(f"{self.participant}: program ended (status {status})")
        with suppress(OSError, asyncssh.Error):
            self.chan.exit(status if status >= 0 else 1)

    async def _spawn_and_bridge(self) -> int:
        env = {"SSH_CONNECTION": "uxlab-host"}  # the session's environment says `ssh`; no address
        if os.environ.get("UXLAB_FPS"):  # the researcher's frame cap, if they set one
            env["UXLAB_FPS"] = os.environ["UXLAB_FPS"]
        self.program = PtyProgram(
            self.ctx.study_path,
            self.ctx.db,
            self.participant,
            term=self.term,
            size=self.size,
            env=env,
            on_output=self._forward_output,
            on_note=lambda line: self.ctx.log(f"{self.participant}: {line}"),
            passed_vars=self.ctx.program_vars,
        )
        self.program.hung_up = self.hung_up  # the connection closed while this one waited
        self.ctx.log(f"{self.participant}: connected ({self.term} {self.size[0]}x{self.size[1]})")
        status = await self.program.run()
        self.ended.set()
        return status

    def _forward_output(self, data: bytes) -> None:
        if self.chan is not None and not self.chan.is_closing():
            self.chan.write(data)

    def data_received(self, data: bytes, datatype: object) -> None:
        if self.program is not None:
            self.program.write(data)

    def terminal_size_changed(self, width: int, height: int, pixwidth: int, pixheight: int) -> None:
        if width > 0 and height > 0:
            self.size = clamp_size(width, height)
            if self.program is not None:
                self.program.resize(*self.size)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._keep(asyncio.ensure_future(self.hang_up()))

    def _keep(self, task: asyncio.Future[None]) -> None:
        self.tasks.add(task)  # a reference until done, so the task is not collected early
        task.add_done_callback(self.tasks.discard)

    async def hang_up(self) -> None:
        """SIGHUP the program (a clean quit) and wait until it has exited; kill it if it hangs."""
        self.hung_up = True
        if self.program is not None:
            await self.program.hang_up()


async def start_ssh_host(
    ctx: HostContext, bind: str, port: int, host_key: asyncssh.SSHKey
) -> asyncssh.SSHAcceptor:
    """Listen on `bind:port` (port 0: any free port) and return the acceptor."""
    logging.getLogger("asyncssh").setLevel(logging.WARNING)  # INFO lines name the user: a code
    return await asyncssh.create_server(
        lambda: CodeAuthServer(ctx),
        bind,
        port,
        server_host_keys=[host_key],
        encoding=None,
        agent_forwarding=False,  # a participant gets the study's terminal and nothing else:
        x11_forwarding=False,  # no agent, X11 or port forwarding (SSHServer refuses the
        allow_scp=False,  # last by default), no commands, no subsystems (sftp)
        login_timeout=60,
        keepalive_interval=30,
    )
