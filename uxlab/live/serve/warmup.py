"""`warm_up`: answer a few requests in memory before serving, so request 0 pays no
first-use costs; `asgi_post` drives an app with ASGI messages as an HTTP server would."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import MutableMapping
from dataclasses import dataclass, replace
from typing import Any

from starlette.applications import Starlette

from uxlab.clock import VirtualClock
from uxlab.live.serve.app import build_app
from uxlab.live.serve.config import ServeConfig
from uxlab.live.serve.playing import now_ms

WARM_UP_REQUESTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("/v1/chat/completions", {"stream": True, "stream_options": {"include_usage": True}}),
    ("/v1/chat/completions", {"stream": False}),
    ("/v1/chat/completions", {"stream": True, "max_tokens": 2}),
    ("/v1/messages", {"stream": True}),
    ("/v1/messages", {"stream": False, "max_tokens": 2}),
)
"""Path and body extras of the requests `warm_up` answers: both wires, streaming and not,
with usage and with a token cap, so every formatter and branch a request can take has run."""


@dataclass
class WarmUp:
    """What `warm_up` did: each request's HTTP status, the body pieces sent, the time taken."""

    statuses: list[int]
    body_pieces: int
    took_ms: float


def warm_up(config: ServeConfig) -> WarmUp:
    """Answer `WARM_UP_REQUESTS` in memory through the real app before serving.

    Runs a twin of the app (same recordings, shaping, picker, token and CORS) on a
    virtual clock, so no schedule is waited for, and drives it with ASGI messages as the
    HTTP server would: the whole path a request takes (routing, body reading, choosing
    and shaping a schedule, the player, the SSE and JSON formatters, the streaming
    response and its task group) runs once and pays its first-use costs (imports, caches)
    here. The real app's request counter, `served` and `on_served` are not touched, so
    request 0 is still the first real request. Call it outside a running event loop.
    """
    start_ms = now_ms()
    twin = replace(
        config,
        clock=VirtualClock(start_ms=start_ms),
        on_served=None,
        served=deque(maxlen=len(WARM_UP_REQUESTS)),
    )
    app = build_app(twin)
    headers = [(b"content-type", b"application/json")]
    if config.token is not None:
        headers.append((b"authorization", b"Bearer " + config.token.encode()))

    async def answer_all() -> WarmUp:
        statuses, body_pieces = [], 0
        for path, extra in WARM_UP_REQUESTS:
            body = {"model": "uxlab", "messages": [{"role": "user", "content": "warm-up"}]}
            sent = await asgi_post(app, path, json.dumps({**body, **extra}), headers)
            statuses += [m["status"] for m in sent if m["type"] == "http.response.start"]
            body_pieces += sum(1 for m in sent if m.get("body"))
        return WarmUp(statuses, body_pieces, now_ms() - start_ms)

    return asyncio.run(answer_all())


async def asgi_post(
    app: Starlette, path: str, body: str, headers: list[tuple[bytes, bytes]] | None = None
) -> list[MutableMapping[str, Any]]:
    """POST `body` to `app` in memory as uvicorn would; the ASGI messages it sent back.

    The client stays connected until the response is complete.
    """
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers or [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
    }
    sent: list[MutableMapping[str, Any]] = []
    over = asyncio.Event()
    pending = [{"type": "http.request", "body": body.encode(), "more_body": False}]

    async def receive() -> dict[str, Any]:
        if pending:
            return pending.pop()
        await over.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            over.set()

    await app(scope, receive, send)
    return sent
