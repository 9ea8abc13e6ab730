"""The ASGI app of `uxlab serve`: routes, the token check, and answering one request."""

from __future__ import annotations

import asyncio
import functools
import hmac
import itertools
import os
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from uxlab.errors import UxlabError
from uxlab.live.request_body import BodyError, parse_request_body
from uxlab.live.request_limits import Limits, RequestParamError, request_limits
from uxlab.live.serve.config import ServeConfig, Served, ServeError
from uxlab.live.serve.messages import anthropic_message, error_response, openai_message
from uxlab.live.serve.pick import choose, corpus_picker, last_user_text
from uxlab.live.serve.playing import headers_ms, now_ms, sleep_until, stream_to_client
from uxlab.live.serve_guard import GuardMiddleware
from uxlab.live.sse_sink import SSESink
from uxlab.streams.recording import Recording


class _Error(Exception):
    def __init__(self, status: int, kind: str, message: str, param: str | None = None):
        self.status, self.kind, self.message, self.param = status, kind, message, param


_EXPOSED_HEADERS = [
    "x-uxlab-worker-pid",
    "x-uxlab-request-index",
    "x-uxlab-replay-id",
    "x-uxlab-seed",
    "x-uxlab-trial-index",
    "x-uxlab-condition",
    "x-uxlab-practice",
    "x-uxlab-attention-check",
    "x-uxlab-profile",
]
"""Response headers a browser page may read (CORS)."""


def build_app(config: ServeConfig) -> Starlette:
    """The ASGI app serving `config.recordings` on their shaped schedules."""
    if not config.recordings and config.upstream is None:
        raise ServeError("the corpus holds no playable recordings")
    server = _Server(config)
    app = Starlette(
        routes=[
            Route("/v1/models", server.models_route, methods=["GET"]),
            Route("/health", server.health_route, methods=["GET"]),
            Route("/v1/chat/completions", server.chat_route, methods=["POST"]),
            Route("/v1/messages", server.messages_route, methods=["POST"]),
        ]
    )
    if config.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=config.cors_origins,
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["*"],
            expose_headers=_EXPOSED_HEADERS,
        )
    guard = replace(config.guard, cors_origins=list(config.cors_origins))
    app.add_middleware(GuardMiddleware, settings=guard)  # outermost: runs before CORS
    app.state.served = config.served
    return app


class _Server:
    """The routes of one app and the state they share (request counter, picker, clock)."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.counter = itertools.count(config.request_index_start, config.request_index_step)
        self.pick = config.picker or corpus_picker(config)
        self.models = sorted(
            {
                str(r.header.source.get("model"))
                for r in config.recordings
                if r.header.source.get("model")
            }
            | {"uxlab"}
        )
        self.clock_now = config.clock.now_ms if config.clock is not None else now_ms

    def authorised(self, request: Request) -> bool:
        token = self.config.token
        if token is None:
            return True
        given = request.headers.get("authorization", "")
        given = given[7:] if given.lower().startswith("bearer ") else ""
        given = given or request.headers.get("x-api-key", "")
        return hmac.compare_digest(given.encode(), token.encode())

    async def models_route(self, request: Request) -> Response:
        if not self.authorised(request):
            return error_response("openai", 401, "invalid_api_key", "missing or wrong token")
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "uxlab"} for m in self.models
        ]
        if self.config.upstream is not None:
            data = self.config.upstream.models()
        return JSONResponse({"object": "list", "data": data})

    async def health_route(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def chat_route(self, request: Request) -> Response:
        return await self.answer(request, "openai")

    async def messages_route(self, request: Request) -> Response:
        return await self.answer(request, "anthropic")

    async def _read(self, request: Request, wire: str) -> tuple[dict[str, Any], Limits, float]:
        """The checked request: its body, its limits and time zero (when the body was in)."""
        if not self.authorised(request):
            kind = "authentication_error" if wire == "anthropic" else "invalid_api_key"
            raise _Error(401, kind, "missing or wrong bearer token (uxlab serve --token)")
        raw = await request.body()
        t0_ms = self.clock_now()  # the request is in: time zero of its schedule
        try:
            body = parse_request_body(raw, wire)
        except BodyError as exc:  # every malformed body is a 400, never a 500
            raise _Error(400, "invalid_request_error", str(exc), exc.param) from None
        try:
            limits = request_limits(body, wire)
        except RequestParamError as exc:
            raise _Error(400, "invalid_request_error", str(exc), exc.param) from None
        return body, limits, t0_ms

    async def answer(self, request: Request, wire: str) -> Response:
        """One chat request: checked, given its schedule, answered streaming or whole."""
        config = self.config
        try:
            body, limits, t0_ms = await self._read(request, wire)
        except _Error as exc:
            return error_response(wire, exc.status, exc.kind, exc.message, param=exc.param)
        request_index = next(self.counter)  # taken on the loop: indices follow arrival order
        if config.upstream is not None:
            answered: Response = await config.upstream.answer(
                request,
                body,
                wire,
                t0_ms,
                request_index,
                config.clock,
                error_response,
                config.on_served,
            )
            return answered
        prompt = last_user_text(body["messages"])
        try:
            if config.shape_off_loop:  # other streams' chunks keep their deadlines meanwhile
                chosen, schedule = await asyncio.to_thread(
                    choose, self.pick, request_index, prompt, limits.max_tokens
                )
            else:
                chosen, schedule = choose(self.pick, request_index, prompt, limits.max_tokens)
        except UxlabError as exc:  # e.g. a profile that cannot shape this recording
            return error_response(wire, 500, "api_error", f"uxlab serve: {exc}")
        served = Served(
            request_index,
            chosen.seed,
            wire,
            schedule,
            t0_ms,
            chosen.replay_id,
            dict(chosen.labels),
        )
        config.served.append(served)
        if config.on_served is not None:
            config.on_served(served)
        reply = _Reply(
            served,
            schedule,
            model=str(body.get("model") or schedule.header.source.get("model") or "uxlab"),
            prompt_tokens=max(1, len((prompt or "").split())),
            headers={
                "x-uxlab-worker-pid": str(os.getpid()),
                "x-uxlab-request-index": str(request_index),
                "x-uxlab-replay-id": chosen.replay_id,
                "x-uxlab-seed": str(chosen.seed),
                **{f"x-uxlab-{k}": v for k, v in chosen.labels.items()},
            },
        )
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await self._stream(reply, include_usage)
        return await self._whole(reply)

    async def _stream(self, reply: _Reply, include_usage: bool) -> Response:
        """The schedule as an SSE stream, its headers sent at the schedule's `headers_ms`."""
        served, wire, clock = reply.served, reply.served.wire, self.config.clock
        schedule = reply.schedule
        make_sink = functools.partial(
            SSESink,
            wire,
            schedule,
            reply.model,
            response_id=("chatcmpl-" if wire == "openai" else "msg_") + uuid.uuid4().hex[:24],
            created_s=int(time.time()),
            include_usage=include_usage,
            prompt_tokens=reply.prompt_tokens,
        )  # counts tokens and tool calls over the whole schedule
        sink = await asyncio.to_thread(make_sink) if self.config.shape_off_loop else make_sink()
        await sleep_until(clock, served.t0_ms + headers_ms(schedule))
        return StreamingResponse(
            stream_to_client(schedule, sink, served.t0_ms, clock, served),
            media_type="text/event-stream",
            headers={**reply.headers, "cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def _whole(self, reply: _Reply) -> Response:
        """The whole message at the schedule's end, or its first error at that error's time."""
        served, wire, clock = reply.served, reply.served.wire, self.config.clock
        schedule, t0_ms = reply.schedule, served.t0_ms
        if schedule.errors:
            err = schedule.errors[0]
            await sleep_until(clock, t0_ms + (err.t_ms or 0.0))
            kind = str(err.error.get("type") or "api_error")
            status = 529 if kind == "overloaded_error" else 500
            message = str(err.error.get("message") or "injected error")
            return error_response(wire, status, kind, message, reply.headers)
        end_ms = schedule.end.t_ms if schedule.end is not None else None
        await sleep_until(clock, t0_ms + (end_ms or 0.0))
        make = openai_message if wire == "openai" else anthropic_message
        if self.config.shape_off_loop:
            whole = await asyncio.to_thread(make, schedule, reply.model, reply.prompt_tokens)
        else:
            whole = make(schedule, reply.model, reply.prompt_tokens)
        return JSONResponse(whole, headers=reply.headers)


@dataclass
class _Reply:
    """What answering a chosen schedule needs: the request's record and the recording."""

    served: Served
    schedule: Recording
    """The chosen recording, shaped (`served.schedule`, as a recording)."""
    model: str
    prompt_tokens: int
    headers: dict[str, str]
