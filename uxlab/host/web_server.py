"""`uxlab host` in the browser: a web page with a terminal (xterm.js) for each participant,
joined over a WebSocket to the study program in a pseudo-terminal on the host.

The participant's program is the one `uxlab host --ssh` runs (`uxlab.cli.remote_participant`,
the same flow as `uxlab run`) under Textual's ordinary Linux driver, so the frame cap is the
study's (`--fps`, 240 by default; the host sets it for each program and drops any
`TEXTUAL_FPS` of its own), the paint probe times each frame's flush as in a local terminal,
and the page draws each byte as it arrives (xterm.js renders at the display's refresh).

A participant opens ``BASE/#CODE`` (an invitation code from `uxlab invite`, in the fragment,
which browsers never send to a server or proxy), or in open enrolment
``BASE/?PARAM=PLATFORM_ID`` (`uxlab.host.enrolment`: only a salted hash is kept). The page
sends it in its first WebSocket message. One connection is one participant's program; a
second connection for the same participant hangs the first up. Closing the tab hangs the
program up (the clean quit of a closed terminal); reopening the link resumes.

WebSocket messages: binary from the host is terminal output; JSON text otherwise
(`hello`, `in`, `size`, `pong`, `paints` from the page; `ping`, `end`, `refused`,
`replaced` from the host). Paint marks (`uxlab.paint_marks`) are taken out of the output
and numbered; the page reports parse and paint times per number, and the host stores them
per chunk (`uxlab.store.browser_paints`) after mapping the page's clock to its own.

Security: no access log (and no address is logged or stored); codes are never logged;
a failed code waits (`FailureLimiter`), failures are answered one at a time host-wide. At
most `MAX_UNIDENTIFIED_PER_ADDRESS` connections of one address (`MAX_UNIDENTIFIED` in all)
may be open before they name a participant (waiting for their first message, or for the
answer to a failed link, and for `close_tail_s` after it, the time the server keeps a closed
socket whose client does not answer the close): beyond, the handshake itself is refused
(HTTP 403, the socket closed), so parallel guesses cannot hold the host's sockets. A
WebSocket whose `Origin` is not the host's own (`Host`) is refused before it is accepted,
so no other web page can open one in a participant's browser.

Capacity (`max_open`): only programs with recent input (a key within `IDLE_AFTER_S`) count;
when the count is reached, a new participant is turned away unless an idle program can be
hung up for them (its session paused: reopening the link resumes it), so invented links
left open (open enrolment admits any id) cannot keep genuine participants out.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from uxlab.host import BROWSER_VAR
from uxlab.host.limits import FailureLimiter, clamp_size
from uxlab.host.pty_program import PtyProgram
from uxlab.paint_marks import MarkRewriter, PaintMark
from uxlab.store import Store, StoreError
from uxlab.store.browser_paints import ChunkPaint, record_paints
from uxlab.store.errors import store_errors

STATIC = Path(__file__).with_name("static")
HELLO_TIMEOUT_S = 30.0
PING_FIRST_N = 10
"""Pings 100 ms apart at the start, then one every `PING_EVERY_S`."""
PING_EVERY_S = 2.0
PING_WINDOW = 15
"""The clock offset comes from the fastest of the last this many ping exchanges."""
MAX_MESSAGE_CHARS = 256 * 1024
MAX_UNIDENTIFIED_PER_ADDRESS = 8
"""Connections of one address open before they name a participant (module docstring)."""
MAX_UNIDENTIFIED = 64
"""The same, host-wide."""
CLOSE_TAIL_S = 10.0
"""How long the WebSocket server keeps a closed socket whose client does not answer the
close (uvicorn's wsproto close timeout): a refused link's count is held that long."""
IDLE_AFTER_S = 300.0
"""A program without a key from its page for this long no longer counts towards
`max_open`, and is hung up (paused) when a new participant needs its place."""

SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
    "connect-src 'self' ws: wss:; frame-ancestors 'none'",
}


@dataclass
class Enrolment:
    """Open enrolment: the query parameter with the platform's id, the salt, where to end."""

    param: str
    salt: bytes
    completion_url: str | None = None


@dataclass
class WebHostContext:
    """What every connection shares."""

    study_path: Path
    study_id: str
    db: Path | str
    """The SQLite file, or a PostgreSQL URL."""
    lookup: Callable[[str], str | None]
    """Invitation code -> participant id (None for an unknown code)."""
    fps: int
    enrolment: Enrolment | None = None
    max_open: int = 20
    """At most this many participants' programs at once; one more is asked to come back."""
    limiter: FailureLimiter = field(default_factory=FailureLimiter)
    log: Callable[[str], None] = print
    session_state: Callable[[str], str | None] = lambda participant: None
    """Participant -> the state of their latest session (for the completion redirect)."""
    running: dict[str, ParticipantConnection] = field(default_factory=dict)
    refusing: asyncio.Lock = field(default_factory=asyncio.Lock)
    unidentified: dict[str, int] = field(default_factory=dict)
    """Connections not (yet) naming a participant, by client address (in memory only)."""
    close_tail_s: float = CLOSE_TAIL_S
    clock: Callable[[], float] = time.monotonic
    """Seconds, for idle programs (injectable: tests need no waiting)."""
    idle_after_s: float = IDLE_AFTER_S
    paints: PaintWriter | None = None
    program_vars: tuple[str, ...] = ()
    """Host variables each participant's program gets besides the basic ones
    (`uxlab.host.pty_program.program_vars`: a live study's key variable, `PG*`)."""


def browser_family(user_agent: str) -> str:
    """The browser's family from its User-Agent header (nothing more is kept of it)."""
    ua = user_agent or ""
    for needle, family in (
        ("Edg/", "Edge"),
        ("OPR/", "Opera"),
        ("Firefox/", "Firefox"),
        ("HeadlessChrome/", "Chromium (headless)"),
        ("Chromium/", "Chromium"),
        ("Chrome/", "Chrome"),
        ("Safari/", "Safari"),
    ):
        if needle in ua:
            return family
    return "other"


class ClockMapping:
    """The page's clock on the host's: the fastest of the recent ping exchanges.

    An exchange sent at host time `h`, answered with page time `p` and received at host
    time `r` puts `p` at (h + r) / 2 on the host's clock, within +- (r - h) / 2 (the page
    answered somewhere inside the round trip). Of the last `PING_WINDOW` exchanges the one
    with the shortest round trip is used (recent ones only: clocks of two machines drift).
    """

    def __init__(self) -> None:
        self.samples: deque[tuple[float, float]] = deque(maxlen=PING_WINDOW)
        """(round trip ms, offset ms: host time - page time)."""

    def add(self, sent_ms: float, page_ms: float, received_ms: float) -> None:
        rtt = received_ms - sent_ms
        if rtt >= 0:
            self.samples.append((rtt, (sent_ms + received_ms) / 2.0 - page_ms))

    def best(self) -> tuple[float, float] | None:
        """(offset ms, uncertainty ms), or None before the first exchange."""
        if not self.samples:
            return None
        rtt, offset = min(self.samples)
        return offset, rtt / 2.0


class PaintWriter:
    """Stores painted chunks off the event loop: one thread, one store of its own (a SQLite
    file or a PostgreSQL database: the store's write transactions either way)."""

    def __init__(self, db: Path | str) -> None:
        self.db = db
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="uxlab-paints")
        self._store: Store | None = None

    def _write(self, paints: list[ChunkPaint]) -> int:
        if self._store is None:
            self._store = Store.open(self.db, busy_timeout_s=10.0)
        return record_paints(self._store, paints)

    async def write(self, paints: list[ChunkPaint]) -> int:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._write, paints)

    def close(self) -> None:
        def _close() -> None:
            if self._store is not None:
                self._store.close()

        self._pool.submit(_close)
        self._pool.shutdown(wait=True)


def ended_note(status: int, closed_after_finishing: bool) -> str:
    """The host's line when a participant's program ends. A program hung up because the page
    was closed after its session was completed (a thank-you screen still open) says so,
    instead of the status of the hang-up (-1: SIGHUP), which reads like a failure."""
    if closed_after_finishing:
        return "program ended: participant closed the page after finishing"
    return f"program ended (status {status})"


def _now_ms() -> float:
    return time.perf_counter_ns() / 1e6  # CLOCK_MONOTONIC: the players' clock too


class ParticipantConnection:
    """One WebSocket: a participant's program, its output, keys, pings and paint reports."""

    def __init__(self, ws: WebSocket, ctx: WebHostContext, participant: str) -> None:
        self.ws = ws
        self.ctx = ctx
        self.participant = participant
        self.program: PtyProgram | None = None
        self.outbox: asyncio.Queue[bytes | str | None] = asyncio.Queue()
        self.rewriter = MarkRewriter()
        self.marks: dict[int, PaintMark] = {}
        self.clock = ClockMapping()
        self.replaced = False
        self.writes: set[asyncio.Future[None]] = set()
        self.last_input_s = ctx.clock()
        """When the page last sent a key (or connected)."""

    def idle_s(self) -> float:
        """Seconds since the page last sent a key."""
        return self.ctx.clock() - self.last_input_s

    def _output(self, data: bytes) -> None:
        out, found = self.rewriter.feed(data)
        for number, mark in found:
            self.marks[number] = mark
        if out:
            self.outbox.put_nowait(out)

    def _note(self, line: str) -> None:
        self.ctx.log(f"{self.participant}: {line}")

    async def run(self, hello: dict[str, Any]) -> None:
        cols, rows = _size(hello)
        hz = hello.get("hz")
        browser = {
            "family": browser_family(self.ws.headers.get("user-agent", "")),
            "display_hz": round(float(hz), 1)
            if isinstance(hz, int | float) and 1 <= hz <= 1000
            else None,
        }
        self.ctx.log(
            f"{self.participant}: connected ({browser['family']}, "
            f"{browser['display_hz'] or '?'} Hz, {cols}x{rows})"
        )
        self.program = PtyProgram(
            self.ctx.study_path,
            self.ctx.db,
            self.participant,
            term="xterm-256color",
            size=(cols, rows),
            env={"UXLAB_FPS": str(self.ctx.fps), BROWSER_VAR: json.dumps(browser)},
            on_output=self._output,
            on_note=self._note,
            passed_vars=self.ctx.program_vars,
        )
        sender = asyncio.ensure_future(self._send_loop())
        pinger = asyncio.ensure_future(self._ping_loop())
        receiver = asyncio.ensure_future(self._receive_loop())
        program = asyncio.ensure_future(self.program.run())
        done, _ = await asyncio.wait({receiver, program}, return_when=asyncio.FIRST_COMPLETED)
        closed = program not in done
        if closed:  # the tab was closed (or replaced): hang the program up
            await self.program.hang_up()
        status = await program
        after_finishing = (
            closed and status != 0 and self.ctx.session_state(self.participant) == "completed"
        )
        self._note(ended_note(status, after_finishing))
        pinger.cancel()
        if not self.replaced:
            self.outbox.put_nowait(self._end_message(status))
        self.outbox.put_nowait(None)
        with suppress(Exception):
            await asyncio.wait_for(sender, timeout=5.0)
        receiver.cancel()
        if self.writes:
            await asyncio.gather(*self.writes, return_exceptions=True)
        with suppress(Exception):
            await self.ws.close()

    def _end_message(self, status: int) -> str:
        messages = {
            0: "The study is finished. Thank you for taking part; you may close this tab.",
            3: "Your answers so far are stored. Open your link again to continue.",
        }
        message = messages.get(status, "The study stopped. Open your link again to continue.")
        redirect = None
        enrolment = self.ctx.enrolment
        if (
            enrolment is not None
            and enrolment.completion_url
            and self.ctx.session_state(self.participant) == "completed"
        ):
            redirect = enrolment.completion_url
        return json.dumps({"t": "end", "status": status, "message": message, "redirect": redirect})

    async def _send_loop(self) -> None:
        while True:
            item = await self.outbox.get()
            if item is None:
                return
            try:
                if isinstance(item, bytes):
                    await self.ws.send_bytes(item)
                else:
                    await self.ws.send_text(item)
            except Exception:  # the tab is gone: drain until the end
                continue

    async def _ping_loop(self) -> None:
        n = 0
        while True:
            sent = _now_ms()
            self.outbox.put_nowait(json.dumps({"t": "ping", "h": sent}))
            n += 1
            await asyncio.sleep(0.1 if n < PING_FIRST_N else PING_EVERY_S)

    async def _receive_loop(self) -> None:
        while True:
            try:
                text = await self.ws.receive_text()
            except (WebSocketDisconnect, RuntimeError, KeyError):
                return
            received = _now_ms()
            if len(text) > MAX_MESSAGE_CHARS:
                continue
            try:
                msg = json.loads(text)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            kind = msg.get("t")
            if kind == "in" and isinstance(msg.get("d"), str) and self.program is not None:
                self.last_input_s = self.ctx.clock()
                self.program.write(msg["d"].encode("utf-8", "replace"))
            elif kind == "size" and self.program is not None:
                self.program.resize(*_size(msg))
            elif kind == "pong":
                h, p = msg.get("h"), msg.get("p")
                if isinstance(h, int | float) and isinstance(p, int | float):
                    self.clock.add(float(h), float(p), received)
            elif kind == "paints" and isinstance(msg.get("m"), list):
                self._store_paints(msg["m"])

    def _store_paints(self, reports: list[Any]) -> None:
        mapping = self.clock.best()
        if mapping is None or self.ctx.paints is None:
            return
        offset, uncertainty = mapping
        paints: list[ChunkPaint] = []
        for report in reports[:10_000]:
            if not (isinstance(report, list) and len(report) == 3):
                continue
            number, parsed, painted = report
            if not all(isinstance(v, int | float) for v in report):
                continue
            mark = self.marks.pop(int(number), None)  # each mark once, and only this page's
            if mark is None or painted < parsed:
                continue
            painted_ms = painted + offset - mark.t0_ms
            for chunk in range(mark.first_chunk, mark.last_chunk + 1):
                paints.append(
                    ChunkPaint(
                        mark.session_id,
                        mark.trial_index,
                        chunk,
                        painted_ms,
                        uncertainty,
                        painted - parsed,
                    )
                )
        if paints:  # written off this loop: keys behind a paint report never wait for SQLite
            task = asyncio.ensure_future(self._write_paints(self.ctx.paints, paints))
            self.writes.add(task)
            task.add_done_callback(self.writes.discard)

    async def _write_paints(self, writer: PaintWriter, paints: list[ChunkPaint]) -> None:
        errors: tuple[type[BaseException], ...] = (*store_errors(), StoreError)
        try:
            await writer.write(paints)
        except errors as exc:
            self._note(f"painted times not stored ({exc})")

    async def idle_hang_up(self) -> None:
        """Hang up a program idle for too long, to make room: the page is told why."""
        self.replaced = True  # its own end message below, not the program's
        self.outbox.put_nowait(
            json.dumps(
                {
                    "t": "replaced",
                    "message": "This study page was closed after a long time without a key. "
                    "Open your link again to continue where you stopped.",
                }
            )
        )
        if self.program is not None:
            await self.program.hang_up()

    async def replace(self) -> None:
        """Another tab opened the same link: tell this one and hang its program up."""
        self.replaced = True
        self.outbox.put_nowait(
            json.dumps(
                {"t": "replaced", "message": "The study was opened in another tab or window."}
            )
        )
        if self.program is not None:
            await self.program.hang_up()


def _size(msg: dict[str, Any]) -> tuple[int, int]:
    cols, rows = msg.get("cols"), msg.get("rows")
    if not isinstance(cols, int | float) or isinstance(cols, bool):
        cols = 100
    if not isinstance(rows, int | float) or isinstance(rows, bool):
        rows = 30
    return clamp_size(cols, rows, min_cols=20, min_rows=8)
