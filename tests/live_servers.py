"""Test peers for the live recorder: fake vendor servers on loopback, well- and ill-behaved.

`FakeVendor` is a Starlette app that speaks the four streaming APIs (OpenAI Chat, OpenAI
Responses, Anthropic Messages, Gemini `alt=sse`) with canned texts and controlled gaps. The
requested *model name* picks the behaviour, so one server covers every case:

- any ordinary name: a normal stream ("Hello", " world", "!" with usage);
- `tools`: reasoning, content and a tool call (OpenAI / Anthropic);
- `status-401` (echoes the key back in the body, as some vendors do), `status-500`,
  `status-429` (with `retry-after-ms`), `flaky-429` (429 on the first attempt, then a stream);
- `midstream-error`: HTTP 200, then an `error` event (Anthropic `overloaded_error`);
- `cut`: the connection is dropped mid-stream;
- `truncated`: ends cleanly before the finish and terminator;
- `drip`: every byte sent on its own; `stall`: 2 s of silence mid-stream;
- `slow-headers`: 2 s before the response headers;
- `malformed`: an event whose data is not JSON; `not-utf8`: bytes that are not UTF-8;
- `paused`: a 200 ms pause before the third chunk;
- `usage-details`: the usage each API reports with a prompt cache and hidden reasoning
  (`DETAILED_USAGE`: cached input, cache writes, reasoning tokens in each API's own keys).

As the real OpenAI Chat API does, the usage chunk is sent only when the request asks for it
(`stream_options.include_usage`).

`serve_in_thread(app)` runs any ASGI app with uvicorn on a free 127.0.0.1 port.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

PIECES = ["Hello", " world", "!"]
GAP_S = 0.005

DETAILED_USAGE = {
    "openai": {
        "prompt_tokens": 1200,
        "completion_tokens": 300,
        "total_tokens": 1500,
        "prompt_tokens_details": {"cached_tokens": 1000},
        "completion_tokens_details": {"reasoning_tokens": 297},
    },
    "openai-responses": {
        "input_tokens": 1200,
        "input_tokens_details": {"cached_tokens": 1000},
        "output_tokens": 300,
        "output_tokens_details": {"reasoning_tokens": 297},
        "total_tokens": 1500,
    },
    "anthropic": {
        "input_tokens": 150,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 50,
        "output_tokens": 300,
    },
    "gemini": {
        "promptTokenCount": 1200,
        "cachedContentTokenCount": 1000,
        "candidatesTokenCount": 3,
        "thoughtsTokenCount": 297,
        "totalTokenCount": 1500,
    },
}
"""The usage of model `usage-details`, per API: 1,200 input tokens of which 1,000 cached
(Anthropic: 150 + 50 written to the cache), 300 output of which 297 reasoning (Anthropic
does not split its thinking out)."""


def _sse(data: Any, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def openai_events(model: str, include_usage: bool = True) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                "usage": None,
            }
        )

    out = [chunk({"role": "assistant", "content": ""})]
    if model == "tools":
        out.append(chunk({"reasoning_content": "Thinking."}))
    out += [chunk({"content": p}) for p in PIECES]
    if model == "tools":
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "f", "arguments": ""},
                        }
                    ]
                }
            )
        )
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 1}'}}]}))
    out.append(chunk({}, "tool_calls" if model == "tools" else "stop"))
    usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    if model == "usage-details":
        usage = DETAILED_USAGE["openai"]
    if include_usage:
        out.append(
            _sse(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    out.append(_sse("[DONE]"))
    return out


def anthropic_events(model: str) -> list[bytes]:
    out = [
        _sse(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": model,
                    "usage": (
                        {**DETAILED_USAGE["anthropic"], "output_tokens": 1}
                        if model == "usage-details"
                        else {"input_tokens": 5, "output_tokens": 1}
                    ),
                },
            },
            "message_start",
        )
    ]
    index = 0
    if model == "tools":
        out.append(
            _sse(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "thinking", "thinking": ""},
                },
                "content_block_start",
            )
        )
        out.append(
            _sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "Thinking."},
                },
                "content_block_delta",
            )
        )
        out.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        index = 1
    out.append(
        _sse(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        )
    )
    out.append(_sse({"type": "ping"}, "ping"))
    out += [
        _sse(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": p},
            },
            "content_block_delta",
        )
        for p in PIECES
    ]
    out.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    out.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 300 if model == "usage-details" else 3},
            },
            "message_delta",
        )
    )
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out


def responses_events(model: str) -> list[bytes]:
    out = [
        _sse(
            {
                "type": "response.created",
                "sequence_number": 0,
                "response": {"id": "resp_1", "status": "in_progress"},
            },
            "response.created",
        )
    ]
    out += [
        _sse(
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": p,
                "sequence_number": i + 1,
            },
            "response.output_text.delta",
        )
        for i, p in enumerate(PIECES)
    ]
    out.append(
        _sse(
            {
                "type": "response.completed",
                "sequence_number": 9,
                "response": {
                    "id": "resp_1",
                    "status": "completed",
                    "usage": (
                        DETAILED_USAGE["openai-responses"]
                        if model == "usage-details"
                        else {"input_tokens": 5, "output_tokens": 3}
                    ),
                },
            },
            "response.completed",
        )
    )
    return out


def gemini_events(model: str) -> list[bytes]:
    out = []
    for i, p in enumerate(PIECES):
        cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": p}]}, "index": 0}
        obj: dict[str, Any] = {"candidates": [cand], "modelVersion": model, "responseId": "r1"}
        if i == len(PIECES) - 1:
            cand["finishReason"] = "STOP"
            obj["usageMetadata"] = (
                DETAILED_USAGE["gemini"]
                if model == "usage-details"
                else {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8}
            )
        out.append(_sse(obj))
    return out


class FakeVendor:
    """The fake vendor server; `requests` keeps what each request carried (for assertions)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.attempts: dict[str, int] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.handle, methods=["POST"]),
                Route("/v1/messages", self.handle, methods=["POST"]),
                Route("/v1/responses", self.handle, methods=["POST"]),
                Route("/v1beta/models/{rest:path}", self.handle, methods=["POST"]),
            ]
        )

    async def handle(self, request: Request) -> Response:
        body = await request.json()
        path = request.url.path
        if path.startswith("/v1beta/"):
            api, model = "gemini", path.rsplit("/", 1)[1].split(":")[0]
        else:
            api = {
                "/v1/chat/completions": "openai",
                "/v1/messages": "anthropic",
                "/v1/responses": "openai-responses",
            }[path]
            model = body.get("model", "")
        key = (
            request.headers.get("authorization", "").removeprefix("Bearer ")
            or request.headers.get("x-api-key")
            or request.headers.get("x-goog-api-key")
            or ""
        )
        self.requests.append(
            {"api": api, "model": model, "key": key, "body": body, "headers": dict(request.headers)}
        )
        attempt = self.attempts[model] = self.attempts.get(model, 0) + 1
        if model == "slow-headers":
            await asyncio.sleep(2.0)
        if model == "status-401":
            return JSONResponse(
                {
                    "error": {
                        "type": "invalid_request_error",
                        "message": f"Incorrect API key provided: {key}.",
                    }
                },
                401,
            )
        if model == "status-500":
            return JSONResponse({"error": {"message": "The server had an error"}}, 500)
        if model == "status-429" or (model == "flaky-429" and attempt == 1):
            return JSONResponse(
                {"error": {"message": "Rate limit reached"}},
                429,
                headers={"retry-after-ms": "20", "retry-after": "1"},
            )
        if api == "openai":  # usage only when asked for, as the real API does
            asked = bool((body.get("stream_options") or {}).get("include_usage"))
            events = openai_events(model, include_usage=asked)
        else:
            events = {
                "anthropic": anthropic_events,
                "openai-responses": responses_events,
                "gemini": gemini_events,
            }[api](model)
        return StreamingResponse(
            self.stream(api, model, events, key), media_type="text/event-stream"
        )

    async def stream(
        self, api: str, model: str, events: list[bytes], key: str
    ) -> AsyncIterator[bytes]:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            for i, ev in enumerate(events):
                if model == "midstream-error" and i == 3:
                    err = {
                        "type": "error",
                        "error": {"type": "overloaded_error", "message": f"Overloaded (key {key})"},
                    }
                    yield _sse(err, "error" if api == "anthropic" else None)
                    return
                if model == "cut" and i == 3:
                    raise ConnectionResetError("fake vendor cuts the connection")
                if model == "truncated" and i == len(events) - 3:
                    return  # closes cleanly before the finish, usage and terminator
                if model == "malformed" and i == 2:
                    yield b"data: {not json\n\n"
                if model == "not-utf8" and i == 2:
                    yield b"data: \xff\xfe\n\n"
                if model == "stall" and i == 2:
                    await asyncio.sleep(2.0)
                if model == "paused" and i == 3:
                    await asyncio.sleep(0.2)
                if model == "drip":
                    for b in ev:
                        yield bytes([b])
                        await asyncio.sleep(0)
                else:
                    yield ev
                await asyncio.sleep(GAP_S)
        finally:
            self.in_flight -= 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Run `app` with uvicorn on 127.0.0.1 in a background thread; yield its base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
