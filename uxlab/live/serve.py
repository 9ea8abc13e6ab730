"""`uxlab serve`: an OpenAI- and Anthropic-compatible HTTP server that plays a corpus.

Routes: `GET /v1/models`, `POST /v1/chat/completions` (streaming and not),
`POST /v1/messages` (streaming and not) and `GET /health` (200 while serving, no token
needed, not counted as a request: what benchmark clients such as guidellm probe first).
Each request gets one recording of the corpus, shaped with the server's profile and a
per-request seed, and played by the player into an `SSESink`, so a chat UI sees exactly the
shaped schedule. With `config.upstream` (an `uxlab.live.upstream.UpstreamProxy`), a checked
request is answered by a real model instead, re-timed onto the profile while it arrives, and
`/v1/models` lists the profiles.

Which recording: the one whose recorded prompt (last user message) equals the request's,
else the corpus in order, cycling (`request_index % len(corpus)`). Which seed:
`seed + request_index`, where `request_index` counts requests from 0 since start (every
POST to either endpoint). Time zero of a schedule is the moment the request body was read;
the response headers go out at the schedule's `headers_ms` (profile `--headers-ms`, else as
recorded, else at once); the stream's first event (the role prelude) at its own scheduled
time (`SSESink.apply_meta`). Non-streaming requests are answered at the schedule's end time
with the whole message (text, reasoning, tool calls, usage); a schedule that ends in an
error answers with an HTTP error then.

`max_tokens` (OpenAI also `max_completion_tokens`) ends the schedule after that many
output tokens with finish reason `length` (`uxlab.live.request_limits`); `n` other than 1
is refused with HTTP 400 in the API's error format.

Every request first passes `uxlab.live.serve_guard`: a loopback (or configured) `Host`,
no `Origin` other than the `--cors` ones, a body within the size and time limits; a body
that is not a well-formed request (`uxlab.live.request_body`) is a 400 in the API's format.

Response headers `x-uxlab-request-index`, `x-uxlab-replay-id` and `x-uxlab-seed` say what
was served, `x-uxlab-worker-pid` which process served it (`uxlab serve --workers N`); the
app keeps the last schedules it served (`app.state.served`).

Choosing and shaping a request's schedule (and cutting it at `max_tokens`, counting its
tokens for the SSE sink, building a non-streaming body) runs in a worker thread
(`ServeConfig.shape_off_loop`), so a long recording's shaping never holds the event loop
that hands every other stream its chunks; the request index is taken on the loop first.

`warm_up(config)` answers a few requests in memory before the server takes real ones (the
first request otherwise pays ~50-250 ms of first-use costs, e.g. importing anyio's asyncio
backend, and a chat UI under study would show its first trial with too long a TTFT).
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import itertools
import json
import os
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from uxlab.clock import VirtualClock
from uxlab.errors import UxlabError
from uxlab.live.request_body import BodyError, parse_request_body
from uxlab.live.request_limits import RequestParamError, cut_at_tokens, request_limits
from uxlab.live.serve_guard import GuardMiddleware, GuardSettings
from uxlab.live.sse_sink import SSESink
from uxlab.live.wire_formats import (
    anthropic_stop_reason,
    openai_finish_reason,
    token_counts,
    tool_calls,
)
from uxlab.player import PlaybackLog, Player
from uxlab.streams.recording import Recording

SERVED_KEPT = 1000

GIL_SWITCH_S = 0.0005
"""The server's interpreter switch interval (default 5 ms): while a thread shapes a
schedule, the event loop gets the interpreter back within 0.5 ms instead of 5
(`benchmarks/serve_shaping_off_loop.py`)."""


class ServeError(UxlabError):
    """A corpus or profile the server cannot play."""


@dataclass
class Served:
    """One answered request: its index, the seed, the wire and the schedule played."""

    request_index: int
    seed: int
    wire: str
    schedule: Recording
    t0_ms: float
    replay_id: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    log: PlaybackLog | None = None
    """The player's log once a stream is over (handed times; `cancelled_at_ms` when the
    client went away)."""


@dataclass
class Pick:
    """What one request gets: its schedule, the seed it was drawn with, and labels."""

    schedule: Recording
    seed: int
    replay_id: str
    labels: dict[str, str] = field(default_factory=dict)
    """Extra response headers (`x-uxlab-<name>`), e.g. the study trial and condition."""


Picker = Callable[[int, "str | None"], Pick]
"""(request index, last user message or None) -> Pick."""


@dataclass
class ServeConfig:
    """What the server plays and how: recordings, a shaping function, seed and token.

    `picker` replaces the default choice (prompt match, else cycle; seed + index), e.g. to
    play a study participant's trial list.
    """

    recordings: list[Recording]
    shape: Callable[[Recording, int], Recording]
    """(recording, seed) -> schedule; e.g. `lambda r, s: shape(r, profile, seed=s)`."""
    seed: int = 0
    token: str | None = None
    cors_origins: list[str] = field(default_factory=list)
    """Browser origins allowed to call the server directly (CORS), e.g. `["*"]`."""
    clock: Any = None
    shape_off_loop: bool = True
    """Choose and shape each request's schedule in a worker thread, not on the event loop
    (False: on the loop, as before; the benchmarks' A/B)."""
    request_index_start: int = 0
    request_index_step: int = 1
    """Request indices are start, start + step, ...: with `--workers N` worker k numbers
    its requests k, k + N, k + 2N, so indices (and seeds) are unique across workers."""
    picker: Picker | None = None
    on_served: Callable[[Served], None] | None = None
    """Called once per request as soon as its schedule is chosen (e.g. to log it)."""
    served: deque[Served] = field(default_factory=lambda: deque(maxlen=SERVED_KEPT))
    upstream: Any = None
    """An `uxlab.live.upstream.UpstreamProxy`: answer from a real model, re-timed."""
    guard: GuardSettings = field(default_factory=GuardSettings)
    """Allowed Host names, body size and time limits (`uxlab.live.serve_guard`); the
    allowed Origins are `cors_origins`."""


def corpus_picker(config: ServeConfig) -> Picker:
    """The default choice: prompt match, else recording `i mod n`; seed `seed + i`."""
    by_prompt: dict[str, Recording] = {}
    for rec in config.recordings:
        prompt = recorded_prompt(rec)
        if prompt is not None:
            by_prompt.setdefault(prompt, rec)

    def pick(request_index: int, prompt: str | None) -> Pick:
        source = by_prompt.get(prompt) if prompt is not None else None
        if source is None:
            source = config.recordings[request_index % len(config.recordings)]
        seed = config.seed + request_index
        return Pick(config.shape(source, seed), seed, source.id)

    return pick


def _choose(
    pick: Picker, request_index: int, prompt: str | None, max_tokens: int | None
) -> tuple[Pick, Recording]:
    """The pick for a request and its schedule, cut at `max_tokens` (no event loop needed:
    run in a worker thread, shaping a long recording holds no other stream up)."""
    chosen = pick(request_index, prompt)
    schedule = chosen.schedule
    if max_tokens is not None:
        schedule = cut_at_tokens(schedule, max_tokens)
    return chosen, schedule


def _now_ms() -> float:
    return time.perf_counter_ns() / 1e6


def recorded_prompt(rec: Recording) -> str | None:
    """The last user message a recording was made with (None when unknown)."""
    req = rec.header.request or {}
    if isinstance(req.get("prompt"), str):
        return req["prompt"]
    return last_user_text(req.get("messages") or [])


def last_user_text(messages: list[Any]) -> str | None:
    """The text of the last user message (string content or text parts joined)."""
    for m in reversed(messages):
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(
                p.get("text", "")
                for p in content
                if isinstance(p, dict) and p.get("type") in ("text", None)
            )
    return None


class _Error(Exception):
    def __init__(self, status: int, kind: str, message: str, param: str | None = None):
        self.status, self.kind, self.message, self.param = status, kind, message, param


def _error_response(
    wire: str,
    status: int,
    kind: str,
    message: str,
    headers: dict[str, str] | None = None,
    param: str | None = None,
) -> JSONResponse:
    if wire == "anthropic":
        body = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    return JSONResponse(body, status_code=status, headers=headers)


def build_app(config: ServeConfig) -> Starlette:
    """The ASGI app serving `config.recordings` on their shaped schedules."""
    if not config.recordings and config.upstream is None:
        raise ServeError("the corpus holds no playable recordings")
    counter = itertools.count(config.request_index_start, config.request_index_step)
    pick = config.picker or corpus_picker(config)
    models = sorted(
        {
            str(r.header.source.get("model"))
            for r in config.recordings
            if r.header.source.get("model")
        }
        | {"uxlab"}
    )
    clock_now = config.clock.now_ms if config.clock is not None else _now_ms

    def authorised(request: Request) -> bool:
        if config.token is None:
            return True
        given = request.headers.get("authorization", "")
        given = given[7:] if given.lower().startswith("bearer ") else ""
        given = given or request.headers.get("x-api-key", "")
        return hmac.compare_digest(given.encode(), config.token.encode())

    async def models_route(request: Request) -> Response:
        if not authorised(request):
            return _error_response("openai", 401, "invalid_api_key", "missing or wrong token")
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "uxlab"} for m in models]
        if config.upstream is not None:
            data = config.upstream.models()
        return JSONResponse({"object": "list", "data": data})

    async def health_route(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def chat_route(request: Request) -> Response:
        return await answer(request, "openai")

    async def messages_route(request: Request) -> Response:
        return await answer(request, "anthropic")

    async def answer(request: Request, wire: str) -> Response:
        try:
            if not authorised(request):
                kind = "authentication_error" if wire == "anthropic" else "invalid_api_key"
                raise _Error(401, kind, "missing or wrong bearer token (uxlab serve --token)")
            raw = await request.body()
            t0_ms = clock_now()  # the request is in: time zero of its schedule
            try:
                body = parse_request_body(raw, wire)
            except BodyError as exc:  # every malformed body is a 400, never a 500
                raise _Error(400, "invalid_request_error", str(exc), exc.param) from None
            try:
                limits = request_limits(body, wire)
            except RequestParamError as exc:
                raise _Error(400, "invalid_request_error", str(exc), exc.param) from None
        except _Error as exc:
            return _error_response(wire, exc.status, exc.kind, exc.message, param=exc.param)
        request_index = next(counter)  # taken on the loop: indices follow arrival order
        if config.upstream is not None:
            return await config.upstream.answer(
                request,
                body,
                wire,
                t0_ms,
                request_index,
                config.clock,
                _error_response,
                config.on_served,
            )
        prompt = last_user_text(body["messages"])
        try:
            if config.shape_off_loop:  # other streams' chunks keep their deadlines meanwhile
                chosen, schedule = await asyncio.to_thread(
                    _choose, pick, request_index, prompt, limits.max_tokens
                )
            else:
                chosen, schedule = _choose(pick, request_index, prompt, limits.max_tokens)
        except UxlabError as exc:  # e.g. a profile that cannot shape this recording
            return _error_response(wire, 500, "api_error", f"uxlab serve: {exc}")
        seed = chosen.seed
        served = Served(
            request_index, seed, wire, schedule, t0_ms, chosen.replay_id, dict(chosen.labels)
        )
        config.served.append(served)
        if config.on_served is not None:
            config.on_served(served)
        model = str(body.get("model") or schedule.header.source.get("model") or "uxlab")
        headers = {
            "x-uxlab-worker-pid": str(os.getpid()),
            "x-uxlab-request-index": str(request_index),
            "x-uxlab-replay-id": chosen.replay_id,
            "x-uxlab-seed": str(seed),
            **{f"x-uxlab-{k}": v for k, v in chosen.labels.items()},
        }
        prompt_tokens = max(1, len((prompt or "").split()))
        headers_ms = _headers_ms(schedule)
        player_clock = config.clock
        if body.get("stream"):
            make_sink = functools.partial(
                SSESink,
                wire,
                schedule,
                model,
                response_id=("chatcmpl-" if wire == "openai" else "msg_") + uuid.uuid4().hex[:24],
                created_s=int(time.time()),
                include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
                prompt_tokens=prompt_tokens,
            )  # counts tokens and tool calls over the whole schedule
            sink = await asyncio.to_thread(make_sink) if config.shape_off_loop else make_sink()
            await _sleep_until(player_clock, t0_ms + headers_ms)
            return StreamingResponse(
                _stream(schedule, sink, t0_ms, player_clock, served),
                media_type="text/event-stream",
                headers={**headers, "cache-control": "no-cache", "x-accel-buffering": "no"},
            )
        end_ms = schedule.end.t_ms if schedule.end is not None else None
        errors = schedule.errors
        if errors:
            err = errors[0]
            await _sleep_until(player_clock, t0_ms + (err.t_ms or 0.0))
            kind = str(err.error.get("type") or "api_error")
            status = 529 if kind == "overloaded_error" else 500
            message = str(err.error.get("message") or "injected error")
            return _error_response(wire, status, kind, message, headers)
        await _sleep_until(player_clock, t0_ms + (end_ms or 0.0))
        make = _openai_message if wire == "openai" else _anthropic_message
        if config.shape_off_loop:
            message = await asyncio.to_thread(make, schedule, model, prompt_tokens)
        else:
            message = make(schedule, model, prompt_tokens)
        return JSONResponse(message, headers=headers)

    app = Starlette(
        routes=[
            Route("/v1/models", models_route, methods=["GET"]),
            Route("/health", health_route, methods=["GET"]),
            Route("/v1/chat/completions", chat_route, methods=["POST"]),
            Route("/v1/messages", messages_route, methods=["POST"]),
        ]
    )
    if config.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=config.cors_origins,
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["*"],
            expose_headers=[
                "x-uxlab-worker-pid",
                "x-uxlab-request-index",
                "x-uxlab-replay-id",
                "x-uxlab-seed",
                "x-uxlab-trial-index",
                "x-uxlab-condition",
                "x-uxlab-practice",
                "x-uxlab-profile",
            ],
        )
    guard = replace(config.guard, cors_origins=list(config.cors_origins))
    app.add_middleware(GuardMiddleware, settings=guard)  # outermost: runs before CORS
    app.state.served = config.served
    return app


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
    start_ms = _now_ms()
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
        return WarmUp(statuses, body_pieces, _now_ms() - start_ms)

    return asyncio.run(answer_all())


async def asgi_post(
    app: Starlette, path: str, body: str, headers: list[tuple[bytes, bytes]] | None = None
) -> list[dict[str, Any]]:
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
    sent: list[dict[str, Any]] = []
    over = asyncio.Event()
    pending = [{"type": "http.request", "body": body.encode(), "more_body": False}]

    async def receive() -> dict[str, Any]:
        if pending:
            return pending.pop()
        await over.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            over.set()

    await app(scope, receive, send)
    return sent


def _headers_ms(schedule: Recording) -> float:
    """When the response headers go out: the schedule's `http.headers_ms`, capped at TTFT."""
    http = schedule.header.extra.get("http") or {}
    retime_profile = (schedule.header.retime or {}).get("profile") or {}
    value = retime_profile.get("headers_ms", http.get("headers_ms"))
    if not isinstance(value, int | float) or value < 0:
        return 0.0
    first = next((e.t_ms for e in schedule.events if e.t_ms is not None), None)
    return float(min(value, first)) if first is not None else float(value)


async def _sleep_until(clock: Any, t_ms: float) -> None:
    if clock is not None:
        await clock.sleep_until(t_ms)
        return
    delay_s = (t_ms - _now_ms()) / 1000
    if delay_s > 0:
        await asyncio.sleep(delay_s)


async def _stream(
    schedule: Recording, sink: SSESink, t0_ms: float, clock: Any, served: Served
) -> AsyncIterator[bytes]:
    player = Player(schedule, sink, clock=clock) if clock is not None else Player(schedule, sink)
    task = asyncio.create_task(player.play(t0_ms=t0_ms))
    try:
        while True:
            piece = await sink.queue.get()
            if piece is None:
                break
            yield piece
        served.log = await task
    finally:
        if not task.done():  # the client went away: stop playing, keep the log
            player.cancel()
            served.log = player.log
            task.cancel()


def _text(schedule: Recording, channel: str) -> str:
    return "".join(c.text for c in schedule.chunks if c.channel == channel)


def _openai_message(schedule: Recording, model: str, prompt_tokens: int) -> dict[str, Any]:
    inp, out = token_counts(schedule, prompt_tokens)
    calls = tool_calls(schedule)
    content = "".join(
        c.text for c in schedule.chunks if c.channel == "content" and not c.extra.get("refusal")
    )
    refusal = "".join(c.text for c in schedule.chunks if c.extra.get("refusal"))
    # As the API does: content is null when the answer is only tool calls (or a refusal).
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content or (None if calls or refusal else ""),
    }
    if refusal:
        message["refusal"] = refusal
    reasoning = _text(schedule, "reasoning")
    if reasoning:
        message["reasoning_content"] = reasoning
        message["reasoning"] = reasoning  # current vLLM's and OpenRouter's name for it
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["args"]},
            }
            for c in calls
        ]
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "uxlab",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": openai_finish_reason(schedule.end, bool(calls)),
            }
        ],
        "usage": {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out},
    }


def _anthropic_message(schedule: Recording, model: str, prompt_tokens: int) -> dict[str, Any]:
    inp, out = token_counts(schedule, prompt_tokens)
    blocks: list[dict[str, Any]] = []
    reasoning = _text(schedule, "reasoning")
    if reasoning:
        blocks.append({"type": "thinking", "thinking": reasoning, "signature": ""})
    text = _text(schedule, "content")
    calls = tool_calls(schedule)
    if text or not (blocks or calls):  # an empty answer is one empty text block
        blocks.append({"type": "text", "text": text})
    for c in calls:
        try:
            args = json.loads(c["args"]) if c["args"] else {}
        except json.JSONDecodeError:
            args = {"_raw": c["args"]}
        blocks.append({"type": "tool_use", "id": c["id"], "name": c["name"], "input": args})
    return {
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": anthropic_stop_reason(schedule.end, bool(calls)),
        "stop_sequence": None,
        "usage": {"input_tokens": inp, "output_tokens": out},
    }
