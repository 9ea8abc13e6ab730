"""What keeps `uxlab serve` up and in its owner's hands: limits, timeouts, Host and Origin.

`GuardMiddleware` wraps the app (outermost) and, before any route runs:

- refuses a `Host` header that is not a loopback name (`localhost`, `127.0.0.1`, `[::1]`)
  or a configured one (`--allow-host`, the address bound), so a web page cannot reach the
  server through DNS rebinding (HTTP 421, JSON error);
- refuses a request whose `Origin` is not allowed by `--cors` (HTTP 403): a browser sends
  `Origin` on every cross-origin POST, including the "simple" text/plain ones it sends
  without a preflight, so no web page can advance a `--study` trial counter; SDKs, curl and
  server-side clients send no `Origin` and are not affected;
- reads the request body itself, up to `max_body_bytes` (HTTP 413 beyond, at once when the
  `Content-Length` says so) and within `body_timeout_s` (HTTP 408), then hands it on.

`guarded_h11_protocol(header_timeout_s)` is uvicorn's HTTP/1.1 protocol with a header
timeout: a connection that has not sent a complete request head within that time of
connecting (or of the first byte of its next request) is closed, so slow or idle
connections cannot pile up. It also limits the slow senders of each client address: a
connection still sending its request (head or body) `SLOW_AFTER_S` after it began is a slow
sender, and an address may hold at most `max_slow_per_client` of them; beyond that the
connection is closed. So one machine trickling request bodies cannot hold the connection
cap (slow bodies were closed only after `body_timeout_s`), while a benchmark opening
hundreds of connections at once from one machine, each sending its request at network
speed, is never counted. uvicorn itself closes idle keep-alive connections
(`timeout_keep_alive`) and answers 503 beyond `limit_concurrency` connections.
"""

from __future__ import annotations

import asyncio
import json
import resource
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_BODY_TIMEOUT_S = 30.0
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_MAX_SLOW_PER_CLIENT = 16
"""Connections one client address may keep slowly sending a request (see the docstring)."""
SLOW_AFTER_S = 1.0
"""A connection still sending its request this long after it began is a slow sender."""

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass
class GuardSettings:
    """The server's limits and who may call it."""

    allowed_hosts: set[str] = field(default_factory=lambda: set(LOOPBACK_HOSTS))
    """Host names accepted in the `Host` header (without port); "*" accepts any."""
    cors_origins: list[str] = field(default_factory=list)
    """Origins a browser page may call from ("*" for any); others are refused."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S


def host_name(value: str) -> str:
    """The host part of a `Host` header value (`[::1]:8000` -> `[::1]`), lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class GuardMiddleware:
    """ASGI middleware applying `GuardSettings` (see the module docstring)."""

    def __init__(self, app: Any, settings: GuardSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        s = self.settings
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host")
        any_host = "*" in s.allowed_hosts
        if host is not None and not any_host and host_name(host) not in s.allowed_hosts:
            await _refuse(
                send,
                421,
                f"Host {host[:80]!r} is not served here (allowed: "
                f"{', '.join(sorted(s.allowed_hosts))}; uxlab serve --allow-host NAME)",
            )
            return
        origin = headers.get("origin")
        if origin is not None and "*" not in s.cors_origins and origin not in s.cors_origins:
            await _refuse(
                send,
                403,
                f"requests from web pages at {origin[:80]!r} are refused (uxlab serve --cors "
                "ORIGIN lets a page call the server)",
            )
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > s.max_body_bytes:
            await _refuse(send, 413, _too_large(s.max_body_bytes))
            return
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(s.body_timeout_s):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    piece = message.get("body", b"")
                    size += len(piece)
                    if size > s.max_body_bytes:
                        await _refuse(send, 413, _too_large(s.max_body_bytes))
                        return
                    chunks.append(piece)
                    if not message.get("more_body"):
                        break
        except TimeoutError:
            await _refuse(send, 408, f"the request body took over {s.body_timeout_s:g} s")
            return
        body = b"".join(chunks)
        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # then: the client's disconnect, as before

        await self.app(scope, replay, send)


def _too_large(limit: int) -> str:
    return f"the request body is over {limit:,} bytes (uxlab serve --max-body-mb)"


async def _refuse(send: Send, status: int, message: str) -> None:
    """A JSON error in the OpenAI format (which Anthropic clients also read) and close."""
    kind = "invalid_request_error" if status != 403 else "permission_error"
    body = json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body.encode()})


def guarded_h11_protocol(
    header_timeout_s: float, max_slow_per_client: int = DEFAULT_MAX_SLOW_PER_CLIENT
) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol closing connections slower than this to send a head, and
    the slow senders of an address beyond `max_slow_per_client` (module docstring)."""
    slow_by_address: dict[str, int] = {}  # this server's slow senders, by client address

    class HeaderTimeoutH11Protocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None
        _slow_timer: asyncio.TimerHandle | None = None
        _counted_slow = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            peer = transport.get_extra_info("peername")
            self._address = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
            self._watch_head()
            self._watch_slow()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch_head()
            self._watch_slow()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_head_timer()
            self._not_slow()
            super().connection_lost(exc)

        def _watch_head(self) -> None:
            waiting = self.conn.their_state is h11.IDLE
            if waiting and self._head_timer is None and not self.transport.is_closing():
                self._head_timer = self.loop.call_later(header_timeout_s, self._head_too_slow)
            elif not waiting:
                self._stop_head_timer()

        def _stop_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_too_slow(self) -> None:
            self._head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        # -- slow senders of one address ---------------------------------------------------
        def _sending(self) -> bool:
            """Still sending its request: the head, or the body after it."""
            return self.conn.their_state in (h11.IDLE, h11.SEND_BODY)

        def _watch_slow(self) -> None:
            if not self._sending():
                self._not_slow()
            elif self._slow_timer is None and not self._counted_slow:
                self._slow_timer = self.loop.call_later(SLOW_AFTER_S, self._became_slow)

        def _became_slow(self) -> None:
            self._slow_timer = None
            if not self._sending() or self.transport.is_closing():
                return
            n = slow_by_address.get(self._address, 0) + 1
            if n > max_slow_per_client:  # this address holds enough slow connections
                self.transport.close()
                return
            slow_by_address[self._address] = n
            self._counted_slow = True

        def _not_slow(self) -> None:
            if self._slow_timer is not None:
                self._slow_timer.cancel()
                self._slow_timer = None
            if self._counted_slow:
                self._counted_slow = False
                n = slow_by_address.get(self._address, 1) - 1
                if n > 0:
                    slow_by_address[self._address] = n
                else:
                    slow_by_address.pop(self._address, None)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # Back to IDLE: the keep-alive timeout covers a silent connection; the head
            # timer (and the slow-sender timer) start again with the first byte of the next
            # request.
            self._stop_head_timer()
            self._not_slow()

    return HeaderTimeoutH11Protocol


def raise_open_files_limit() -> int:
    """Raise this process's soft open-files limit to the hard one; returns the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft
