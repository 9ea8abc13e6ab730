"""The upstream proxy: answers chat requests from a real model, re-timed onto a profile."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from uxlab.clock import Clock, MonotonicClock
from uxlab.errors import UxlabError
from uxlab.live.clients import api_key_from_env
from uxlab.live.live_request import LiveResult, stream_live, warm_up
from uxlab.live.live_schedule import LiveEndpoint, LiveSchedule
from uxlab.live.serve.config import Served
from uxlab.live.serve.messages import anthropic_message, openai_message
from uxlab.live.serve.playing import stream_to_client
from uxlab.live.sse_sink import SSESink
from uxlab.live.upstream.config import EXCHANGES_KEPT, Exchange, UpstreamConfig
from uxlab.live.upstream.profiles import PROFILE_HEADER, PROFILE_SEP, profile_for
from uxlab.live.upstream.saving import save_exchange
from uxlab.live.upstream.wire import http_failure, upstream_prompt
from uxlab.live.wire_formats import token_counts, tool_calls
from uxlab.shaping import Profile
from uxlab.streams.recording import Chunk, End, ErrorEvent, Event, Header, Meta, Recording


@dataclass
class _Call:
    """One request under way upstream: its exchange, the request's task and what the
    answer to the client needs."""

    exchange: Exchange
    task: asyncio.Future[LiveResult]
    served: Served
    clock: Clock
    requested: str
    """The model name as the client gave it (the answer repeats it)."""
    headers: dict[str, str]
    prompt_tokens: int


class _LiveSSESink(SSESink):
    """An SSE sink for a schedule still being learnt: tool calls and token counts are
    looked up when they are needed, not when the stream starts."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._prompt_tokens = kwargs.get("prompt_tokens", 0)

    def apply(self, index: int, chunk: Chunk) -> None:
        if chunk.channel == "tool":
            self.has_tools = True
        super().apply(index, chunk)

    def finish(self, end: End | None, error: ErrorEvent | None) -> None:
        self.has_tools = bool(tool_calls(self.schedule))
        self.input_tokens, self.output_tokens = token_counts(self.schedule, self._prompt_tokens)
        super().finish(end, error)


class UpstreamProxy:
    """Answers chat requests from the upstream, re-timed; hooked into `uxlab serve`."""

    def __init__(self, config: UpstreamConfig, server_token: str | None = None) -> None:
        self.config = config
        self.server_token = server_token
        self.exchanges: deque[Exchange] = deque(maxlen=EXCHANGES_KEPT)
        """The last exchanges (newest last)."""
        self._http: httpx.AsyncClient | None = None
        self._finishing: set[asyncio.Task[None]] = set()
        if config.record_dir is not None:
            config.record_dir.mkdir(parents=True, exist_ok=True)
        warm_up()  # httpx's first-connection imports, paid now rather than by request 0

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient()
        return self._http

    # -- choices -------------------------------------------------------------------------
    def profile_for(self, model: str, header: str | None = None) -> tuple[str, str, Profile]:
        """(upstream model, profile name, profile) for a requested model name; a
        `x-uxlab-profile` header (`header`) wins over the model's suffix."""
        return profile_for(model, header, self.config.profile, self.config.named)

    def key(self, request: Request) -> str | None:
        """The upstream key: the environment's, else the client's own (never kept)."""
        env_key = api_key_from_env(self.config.api, self.config.key_env)
        if env_key or self.server_token is not None:
            return env_key
        auth = request.headers.get("authorization", "")
        given = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        return given or request.headers.get("x-api-key") or None

    def models(self) -> list[dict[str, Any]]:
        """The `/v1/models` entries: one per profile, as `@NAME` suffixes to add."""
        profiles = {"default": self.config.profile, **self.config.named}
        return [
            {
                "id": f"{PROFILE_SEP}{name}" if name != "default" else "uxlab-upstream",
                "object": "model",
                "created": 0,
                "owned_by": "uxlab",
                "uxlab_profile": profile.describe(),
                "usage": "append to the upstream model name, e.g. MODEL@NAME"
                if name != "default"
                else "any upstream model name without a suffix uses this profile",
            }
            for name, profile in profiles.items()
        ]

    # -- one request ----------------------------------------------------------------------
    async def answer(
        self,
        request: Request,
        body: dict[str, Any],
        wire: str,
        t0_ms: float,
        request_index: int,
        clock: Clock | None,
        error_response: Callable[..., JSONResponse],
        on_served: Callable[[Any], None] | None = None,
    ) -> Response:
        """Forward `body` upstream and answer on the chosen profile's timing."""
        requested = str(body.get("model") or "")
        try:
            model, profile_name, profile = self.profile_for(
                requested, request.headers.get(PROFILE_HEADER)
            )
        except UxlabError as exc:
            return error_response(wire, 400, "invalid_request_error", str(exc), param="model")
        if not model:
            return error_response(
                wire, 400, "invalid_request_error", "model: name the upstream model", param="model"
            )
        clock = clock if clock is not None else MonotonicClock()
        seed = self.config.seed + request_index
        rid = f"upstream-{request_index:05d}"
        schedule = LiveSchedule(profile, seed, header=Header(id=rid))
        exchange = Exchange(request_index, wire, model, profile_name, profile, schedule, t0_ms)
        self.exchanges.append(exchange)
        endpoint = LiveEndpoint(self.config.api, self.config.url, model)
        task = asyncio.ensure_future(
            stream_live(
                schedule,
                endpoint,
                upstream_prompt(body, wire, self.config.api),
                t0_ms=t0_ms,
                clock=clock,
                client=self.http,
                options=self.config.options,
                key=self.key(request),
            )
        )
        served = Served(request_index, seed, wire, schedule, t0_ms, rid, {"profile": profile_name})
        exchange.served = served
        if on_served is not None:
            on_served(served)
        call = _Call(
            exchange,
            task,
            served,
            clock,
            requested,
            headers={
                "x-uxlab-request-index": str(request_index),
                "x-uxlab-replay-id": rid,
                "x-uxlab-seed": str(seed),
                "x-uxlab-profile": profile_name,
            },
            prompt_tokens=max(
                1,
                sum(
                    len(str(m.get("content", "")).split())
                    for m in body["messages"]
                    if isinstance(m, dict)
                ),
            ),
        )
        failed = await self._failed_before_first_event(call, error_response)
        if failed is not None:
            return failed
        if not body.get("stream"):
            return await self._answer_whole(call, error_response)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return await self._answer_stream(call, include_usage)

    async def _failed_before_first_event(
        self, call: _Call, error_response: Callable[..., JSONResponse]
    ) -> Response | None:
        """Wait for the schedule's first event or the request's end; the upstream's HTTP
        failure as this API's error response (None: the answer goes on)."""
        task, exchange, schedule = call.task, call.exchange, call.exchange.schedule
        first = asyncio.ensure_future(schedule.wait_event(0))
        try:
            racing: set[asyncio.Future[Any]] = {first, task}
            await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
            event = first.result() if first.done() else None
            first.cancel()
            if isinstance(event, ErrorEvent) or task.done():
                await asyncio.wait({task})
                failed = http_failure(
                    task, exchange, exchange.wire, call.headers, error_response, self.config.api
                )
                if failed is not None:
                    await self._finish(task, exchange)
                    return failed
        except asyncio.CancelledError:
            task.cancel()
            first.cancel()
            raise
        return None

    async def _answer_whole(
        self, call: _Call, error_response: Callable[..., JSONResponse]
    ) -> Response:
        """A non-streaming answer: the whole message (or its error) at the schedule's end."""
        task, exchange, schedule = call.task, call.exchange, call.exchange.schedule
        wire = exchange.wire
        closed = asyncio.ensure_future(schedule.wait_event(sys.maxsize))
        racing: set[asyncio.Future[Any]] = {task, closed}
        await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
        closed.cancel()
        await self._finish_now_or_later(task, exchange)
        rec = schedule.to_recording()
        end_ms = rec.end.t_ms if rec.end is not None and rec.end.t_ms is not None else 0.0
        await call.clock.sleep_until(exchange.t0_ms + end_ms)
        if rec.errors:
            err = rec.errors[0].error
            kind = str(err.get("type") or "api_error")
            status = 529 if kind == "overloaded_error" else 500
            message = str(err.get("message") or "upstream error")
            return error_response(wire, status, kind, message, call.headers)
        make = openai_message if wire == "openai" else anthropic_message
        return JSONResponse(make(rec, call.requested, call.prompt_tokens), headers=call.headers)

    async def _answer_stream(self, call: _Call, include_usage: bool) -> Response:
        """A streaming answer on the profile's timing; a client that goes away stops the
        upstream request too."""
        task, exchange, schedule = call.task, call.exchange, call.exchange.schedule
        wire, profile, t0_ms = exchange.wire, exchange.profile, exchange.t0_ms
        if profile.headers_ms is not None:
            first_ms = schedule.events[0].t_ms if schedule.events else None
            due = profile.headers_ms if first_ms is None else min(profile.headers_ms, first_ms)
            await call.clock.sleep_until(t0_ms + due)
        sink = _LiveSSESink(
            wire,
            schedule,
            call.requested,
            response_id=("chatcmpl-" if wire == "openai" else "msg_") + uuid.uuid4().hex[:24],
            created_s=int(time.time()),
            include_usage=include_usage,
            prompt_tokens=call.prompt_tokens,
        )
        pieces = stream_to_client(schedule, sink, t0_ms, call.clock, call.served)

        async def relay() -> Any:
            try:
                async for piece in pieces:
                    yield piece
            except BaseException:  # the client went away: stop the upstream request too
                exchange.cancelled = not task.done()
                task.cancel()
                with contextlib.suppress(BaseException):
                    await pieces.aclose()  # stops the player (its log is kept)
                self._finish_later(task, exchange)
                raise
            await self._finish_now_or_later(task, exchange)

        return StreamingResponse(
            relay(),
            media_type="text/event-stream",
            headers={**call.headers, "cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def _finish_now_or_later(
        self, task: asyncio.Future[LiveResult], exchange: Exchange
    ) -> None:
        """Record the exchange before the response ends when the upstream is done; when
        the profile's error cut the schedule first, the upstream answer is still recorded
        whole, but in the background (the client is not kept waiting for it)."""
        if task.done():
            await self._finish(task, exchange)
        else:
            self._finish_later(task, exchange)

    def _finish_later(self, task: asyncio.Future[LiveResult], exchange: Exchange) -> None:
        done = asyncio.ensure_future(self._finish(task, exchange))
        self._finishing.add(done)
        done.add_done_callback(self._finishing.discard)

    async def _finish(self, task: asyncio.Future[LiveResult], exchange: Exchange) -> None:
        """Wait for the upstream request, note how it ended, record it, tell `on_done`."""
        result: LiveResult | None = None
        with contextlib.suppress(asyncio.CancelledError):
            result = await task
        record = result.record if result is not None else None
        exchange.status = record.status if record is not None else None
        exchange.message = result.message if result is not None else "cancelled"
        if self.config.record_dir is not None:
            exchange.saved = save_exchange(self.config.record_dir, exchange, result)
        if self.config.on_done is not None:
            self.config.on_done(exchange)

    async def drain(self) -> None:
        """Wait for exchanges still being finished (recorded) after their streams."""
        while self._finishing:
            await asyncio.wait(set(self._finishing))

    async def aclose(self) -> None:
        await self.drain()
        if self._http is not None:
            await self._http.aclose()


def warm_up_recording() -> Recording:
    """A tiny timed answer for `uxlab serve`'s in-memory warm-up in upstream mode (the
    real warm-up would send its requests to the upstream)."""
    events: list[Event] = [
        Meta(1.0, {"kind": "role", "role": "assistant"}),
        Chunk(2.0, "warm", n_tokens=1),
        Chunk(3.0, "-up", n_tokens=1),
    ]
    return Recording(Header(id="warm-up"), events, End(4.0, "stop"))
