"""The browser host's web application (`uxlab.host.web_server` describes the whole):
the page and its scripts, the participants' WebSocket (origin, identification, capacity),
and hanging every program up."""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import suppress
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.responses import FileResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from uxlab.host.enrolment import enrolled_participant, valid_platform_id
from uxlab.host.web_server import (
    HELLO_TIMEOUT_S,
    MAX_UNIDENTIFIED,
    MAX_UNIDENTIFIED_PER_ADDRESS,
    SECURITY_HEADERS,
    STATIC,
    ParticipantConnection,
    WebHostContext,
)

_CODE_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def identify_participant(ctx: WebHostContext, hello: dict[str, Any]) -> str | None:
    """The participant a hello names (an invitation code, or a platform id), or None."""
    code = hello.get("code")
    if isinstance(code, str) and code:
        return ctx.lookup(code) if _CODE_RE.match(code) else None
    if ctx.enrolment is not None and isinstance(hello.get("query"), str):
        values = parse_qs(hello["query"].lstrip("?")).get(ctx.enrolment.param, [])
        if len(values) == 1 and valid_platform_id(values[0]):
            return enrolled_participant(ctx.enrolment.salt, values[0])
    return None


def make_app(ctx: WebHostContext) -> Starlette:
    """The host's web application: the page, its scripts, and the participants' socket."""

    async def page(request: Any) -> Response:
        return FileResponse(STATIC / "index.html", headers=SECURITY_HEADERS)

    def static(name: str, media: str) -> Route:
        async def serve(request: Any) -> Response:
            return FileResponse(STATIC / name, media_type=media, headers=SECURITY_HEADERS)

        return Route(f"/static/{name}", serve)

    async def socket(ws: WebSocket) -> None:
        if not _same_origin(ws.headers.get("origin"), ws.headers.get("host")):
            await ws.close(code=1008)  # before accepting: the handshake is refused (403)
            return
        address = ws.client.host if ws.client is not None else "?"
        pending = ctx.unidentified.get(address, 0)
        if pending >= MAX_UNIDENTIFIED_PER_ADDRESS or (
            sum(ctx.unidentified.values()) >= MAX_UNIDENTIFIED
        ):
            await ws.close(code=1013)  # before accepting: refused, the socket closed at once
            return
        ctx.unidentified[address] = pending + 1
        try:
            identified = await _hello(ws, ctx)
        finally:
            left = ctx.unidentified.get(address, 1) - 1
            if left > 0:
                ctx.unidentified[address] = left
            else:
                ctx.unidentified.pop(address, None)
        if identified is None:
            return
        participant, hello = identified
        if participant not in ctx.running and not await make_room(ctx):
            ctx.log(f"{participant}: turned away, {ctx.max_open} sessions are in use")
            with suppress(Exception):
                await ws.send_text(
                    json.dumps(
                        {
                            "t": "refused",
                            "message": "The study is full right now. Please open your link "
                            "again in a few minutes.",
                        }
                    )
                )
                await ws.close(code=1013)
            return
        older = ctx.running.get(participant)
        if older is not None:
            ctx.log(f"{participant}: a new tab replaces the open one")
            await older.replace()
        conn = ParticipantConnection(ws, ctx, participant)
        ctx.running[participant] = conn
        try:
            await conn.run(hello)
        finally:
            if ctx.running.get(participant) is conn:
                del ctx.running[participant]

    async def no_icon(request: Any) -> Response:
        return Response(status_code=204)

    return Starlette(
        routes=[
            Route("/", page),
            Route("/favicon.ico", no_icon),
            static("client.js", "text/javascript"),
            static("xterm.js", "text/javascript"),
            static("xterm.css", "text/css"),
            WebSocketRoute("/ws", socket),
        ]
    )


async def _hello(ws: WebSocket, ctx: WebHostContext) -> tuple[str, dict[str, Any]] | None:
    """Accept the socket and read its first message: (the participant it names, the
    message), or None once a link that names no one has been refused (after its wait, and
    the close tail: see the module docstring)."""
    await ws.accept()
    try:
        hello = json.loads(await asyncio.wait_for(ws.receive_text(), HELLO_TIMEOUT_S))
    except (TimeoutError, ValueError, WebSocketDisconnect, RuntimeError, KeyError):
        with suppress(Exception):
            await ws.close(code=1008)
        await asyncio.sleep(ctx.close_tail_s)
        return None
    participant = identify_participant(ctx, hello) if isinstance(hello, dict) else None
    if participant is not None:
        return participant, hello
    async with ctx.refusing:  # parallel guesses wait in line; valid links do not
        delay_s = ctx.limiter.failed()
        ctx.log(f"refused an unknown link (waiting {delay_s:g} s)")
        await asyncio.sleep(delay_s)
    with suppress(Exception):
        await ws.send_text(
            json.dumps(
                {
                    "t": "refused",
                    "message": "This link does not open a study. Check that you copied all of it.",
                }
            )
        )
        await ws.close(code=1008)
    await asyncio.sleep(ctx.close_tail_s)  # the server may keep the socket that long
    return None


def _same_origin(origin: str | None, host: str | None) -> bool:
    """Whether a WebSocket's `Origin` is the host's own page (no Origin: not a browser's
    page, allowed; a proxy must pass the `Host` the browser used)."""
    if origin is None:
        return True
    if host is None:
        return False
    netloc = origin.split("://", 1)[-1].split("/", 1)[0].lower()
    host = host.strip().lower()
    if _port(host) is None:  # a proxy passing the name without the port (nginx `$host`)
        return _hostname(netloc) == host
    return netloc == host


def _port(netloc: str) -> str | None:
    tail = netloc.rsplit("]", 1)[-1]
    return tail.rsplit(":", 1)[1] if ":" in tail else None


def _hostname(netloc: str) -> str:
    port = _port(netloc)
    return netloc if port is None else netloc[: -len(port) - 1]


async def make_room(ctx: WebHostContext) -> bool:
    """Whether one more program may start: fewer than `max_open` programs have had a key
    within `idle_after_s`, and, with `max_open` running, the idlest one is hung up (its
    session paused) to make room. False: the study is full of active participants."""
    running = list(ctx.running.values())
    active = [c for c in running if c.idle_s() < ctx.idle_after_s]
    if len(active) >= ctx.max_open:
        return False
    if len(running) >= ctx.max_open:
        idlest = max((c for c in running if c not in active), key=lambda c: c.idle_s())
        ctx.log(
            f"{idlest.participant}: hung up after {idlest.idle_s() / 60:.0f} min without a "
            "key, to make room (the link resumes the session)"
        )
        await idlest.idle_hang_up()
    return True


async def hang_up_all(ctx: WebHostContext) -> None:
    """Hang up every open program (the host is stopping)."""
    for conn in list(ctx.running.values()):
        if conn.program is not None:
            await conn.program.hang_up()
