"""`uxlab serve --upstream`: a real model's stream, re-timed onto a shaping profile.

Each chat request is forwarded to the upstream endpoint (OpenAI Chat or Anthropic
Messages, streaming) with the recorder's machinery (`stream_live`), and the answer is fed
into a `LiveSchedule` as it arrives: the client sees the upstream's text, unchanged, on the
profile's timing (TTFT, ITL, chunking, stalls, injected error). Where the upstream is slower
than the schedule, the schedule waits (`shown = max(due, arrival)`) and the lateness is kept
as that event's violation, as in live studies. Time zero is the moment the request body was
read, as in `uxlab serve`.

The key: from the environment (`--upstream-key-env`, default the API's usual variable),
else the client's own `Authorization: Bearer` / `x-api-key` header (unless the server has a
`--token`: then that header holds the server's token). It is never logged or stored.

Profiles per request: the model name may carry one after `@`: a named profile
(`gpt-x@fast`) or profile keys (`gpt-x@ttft=1500;itl=constant:60`), applied over the
server's profile; the suffix is removed before the request goes upstream. A request header
`x-uxlab-profile: fast` (or `ttft=1500;...`) does the same and wins over the suffix.

Upstream failures are passed on as the API would: an HTTP error status (429, 500, ...) with
its body and `retry-after` headers, a mid-stream error or a cut as an error event in the
stream; an unreachable upstream is HTTP 502.

With a record folder, every exchange writes the upstream stream as received
(`received/<id>.jsonl`, source kind `live`, arrival times, with its `.sse` capture) and the
stream as served (`served/<id>.served.jsonl`, `retime` set, with each event's due, arrival
and shown times), so `received/` alone is a corpus of the real traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from uxlab.clock import Clock, MonotonicClock
from uxlab.errors import UxlabError
from uxlab.live.clients import DEFAULT_KEY_ENV, Prompt, api_key_from_env
from uxlab.live.live_request import LiveResult, _warm_up, stream_live
from uxlab.live.live_schedule import LiveEndpoint, LiveSchedule, live_profile_problem
from uxlab.live.record import RecordOptions, save_result
from uxlab.live.sse_sink import SSESink
from uxlab.live.wire_formats import token_counts, tool_calls, tool_calls_by_chunk
from uxlab.shaping import Profile
from uxlab.shaping.profile import ProfileError
from uxlab.streams.recording import Chunk, End, ErrorEvent, Header, Meta, Recording
from uxlab.streams.replay_file import safe_filename, write_replay

UPSTREAM_APIS = ("openai", "anthropic")
PROFILE_SEP = "@"
"""Separates the upstream model name from a per-request profile in `model`."""
EXCHANGES_KEPT = 1000
PROFILE_HEADER = "x-uxlab-profile"
"""A request header naming the profile (as the model suffix would), e.g. `fast`."""
KEY_SEP = ";"
"""Separates profile keys in a model suffix (`ttft=1500;itl=constant:60`)."""
_CROSS_WIRE_PARAMS = ("max_tokens", "temperature", "top_p")
"""Parameters forwarded when the client's wire is not the upstream's."""
_NOT_PARAMS = ("model", "messages", "stream", "stream_options", "system")
RECEIVED_DIR = "received"
"""Under `--record DIR`: the upstream streams as received (a corpus as they are)."""
SERVED_DIR = "served"
"""Under `--record DIR`: the streams as served (re-timed, with due/arrival/shown times)."""


class UpstreamError(UxlabError):
    """A proxy set-up that cannot work (bad upstream API, profile or record folder)."""


def parse_profile_keys(text: str, where: str) -> dict[str, str]:
    """`ttft=1500;itl=constant:60` -> {"ttft": "1500", "itl": "constant:60"}."""
    table: dict[str, str] = {}
    for part in text.split(KEY_SEP):
        if not part.strip():
            continue
        name, eq, value = part.partition("=")
        if not eq or not name.strip():
            raise ProfileError(where, f"{part!r}: expected KEY=VALUE (e.g. ttft=1500)")
        table[name.strip()] = value.strip()
    return table


def overlay(base: Profile, keys: dict[str, str], where: str) -> Profile:
    """`base` with the profile keys (or factor names) in `keys` replaced."""
    table = base.to_table()
    table.update(keys)
    profile = Profile.from_table(table, where=where, base_dir=base.base_dir)
    problem = live_profile_problem(profile)
    if problem is not None:
        raise ProfileError(where, problem)
    return profile


def parse_named_profile(spec: str, base: Profile) -> tuple[str, Profile]:
    """`--named-profile NAME:KEY=VALUE;...` -> (NAME, profile over `base`)."""
    name, colon, keys = spec.partition(":")
    name = name.strip()
    if not colon or not name or "=" in name:
        raise UpstreamError(
            f"--named-profile {spec!r}: expected NAME:KEY=VALUE;... "
            "(e.g. fast:ttft=300;itl=constant:20)"
        )
    where = f"--named-profile {name}"
    return name, overlay(base, parse_profile_keys(keys, where), where)


@dataclass
class UpstreamConfig:
    """Where requests go and how their answers are timed and kept."""

    url: str
    """The upstream's base URL, e.g. `https://api.openai.com/v1`."""
    api: str = "openai"
    profile: Profile = field(default_factory=Profile)
    named: dict[str, Profile] = field(default_factory=dict)
    key_env: str | None = None
    """Variable holding the upstream key (default per API, e.g. OPENAI_API_KEY)."""
    record_dir: Path | None = None
    seed: int = 0
    options: RecordOptions = field(default_factory=RecordOptions)
    on_done: Callable[[Exchange], None] | None = None
    """Called once per exchange when it is over (e.g. to log schedule violations)."""

    def __post_init__(self) -> None:
        if self.api not in UPSTREAM_APIS:
            raise UpstreamError(
                f"--upstream-api {self.api!r}: use one of {', '.join(UPSTREAM_APIS)}"
            )
        problem = live_profile_problem(self.profile)
        if problem is not None:
            raise UpstreamError(
                "--upstream needs a sampled timing: give --ttft and --itl (e.g. --ttft 800 "
                f"--itl lognormal:median=30,sigma=0.5); {problem}"
            )


@dataclass
class Exchange:
    """One proxied request: what was asked, the profile, the schedule and how it ended."""

    request_index: int
    wire: str
    model: str
    """The upstream model (suffix removed)."""
    profile_name: str
    profile: Profile
    schedule: LiveSchedule
    t0_ms: float
    status: int | None = None
    """The upstream's HTTP status (None: no response)."""
    message: str | None = None
    """What went wrong upstream, if anything (the recorder's one-line message)."""
    cancelled: bool = False
    """The client went away before the end."""
    saved: list[Path] = field(default_factory=list)
    served: Any = None
    """The server's `Served` entry; its `log` is the player's (handed times) once over."""

    @property
    def violations(self) -> dict[str, float | int]:
        return self.schedule.violations()


class _LiveSSESink(SSESink):
    """An SSE sink for a schedule still being learnt: tool calls and token counts are
    looked up when they are needed, not when the stream starts."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._prompt_tokens = kwargs.get("prompt_tokens", 0)

    def apply(self, index: int, chunk: Chunk) -> None:
        if chunk.channel == "tool" and index not in self.tools:
            self.tools = tool_calls_by_chunk(self.schedule)
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
        _warm_up()  # httpx's first-connection imports, paid now rather than by request 0

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient()
        return self._http

    # -- choices -------------------------------------------------------------------------
    def profile_for(self, model: str, header: str | None = None) -> tuple[str, str, Profile]:
        """(upstream model, profile name, profile) for a requested model name; a
        `x-uxlab-profile` header (`header`) wins over the model's suffix."""
        name, _, suffix = model.partition(PROFILE_SEP)
        suffix = (header or "").strip() or suffix
        if not suffix or suffix == "default":
            return name, "default", self.config.profile
        if suffix in self.config.named:
            return name, suffix, self.config.named[suffix]
        where = f"{PROFILE_HEADER} {header!r}" if header else f"model {model!r}"
        if "=" not in suffix:
            known = ", ".join(sorted(self.config.named)) or "none; give KEY=VALUE pairs"
            raise ProfileError(where, f"no profile named {suffix!r} (known: {known})")
        return name, suffix, overlay(self.config.profile, parse_profile_keys(suffix, where), where)

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
        from uxlab.live.serve import Served, _anthropic_message, _openai_message, _stream

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
                self._prompt(body, wire),
                t0_ms=t0_ms,
                clock=clock,
                client=self.http,
                options=self.config.options,
                key=self.key(request),
            )
        )
        served = Served(request_index, seed, wire, schedule, t0_ms, rid, {"profile": profile_name})  # type: ignore[arg-type]
        headers = {
            "x-uxlab-request-index": str(request_index),
            "x-uxlab-replay-id": rid,
            "x-uxlab-seed": str(seed),
            "x-uxlab-profile": profile_name,
        }
        exchange.served = served
        if on_served is not None:
            on_served(served)
        first = asyncio.ensure_future(schedule.wait_event(0))
        try:
            await asyncio.wait({first, task}, return_when=asyncio.FIRST_COMPLETED)
            event = first.result() if first.done() else None
            first.cancel()
            if isinstance(event, ErrorEvent) or task.done():
                await asyncio.wait({task})
                failed = self._http_failure(task, exchange, wire, headers, error_response)
                if failed is not None:
                    await self._finish(task, exchange)
                    return failed
        except asyncio.CancelledError:
            task.cancel()
            first.cancel()
            raise
        prompt_tokens = max(
            1,
            sum(
                len(str(m.get("content", "")).split())
                for m in body["messages"]
                if isinstance(m, dict)
            ),
        )
        if not body.get("stream"):
            closed = asyncio.ensure_future(schedule.wait_event(sys.maxsize))
            await asyncio.wait({task, closed}, return_when=asyncio.FIRST_COMPLETED)
            closed.cancel()
            await self._finish_now_or_later(task, exchange)
            rec = schedule.to_recording()
            end_ms = rec.end.t_ms if rec.end is not None and rec.end.t_ms is not None else 0.0
            await clock.sleep_until(t0_ms + end_ms)
            if rec.errors:
                err = rec.errors[0].error
                kind = str(err.get("type") or "api_error")
                status = 529 if kind == "overloaded_error" else 500
                message = str(err.get("message") or "upstream error")
                return error_response(wire, status, kind, message, headers)
            make = _openai_message if wire == "openai" else _anthropic_message
            return JSONResponse(make(rec, requested, prompt_tokens), headers=headers)
        if profile.headers_ms is not None:
            first_ms = schedule.events[0].t_ms if schedule.events else None
            due = profile.headers_ms if first_ms is None else min(profile.headers_ms, first_ms)
            await clock.sleep_until(t0_ms + due)
        sink = _LiveSSESink(
            wire,
            schedule,  # type: ignore[arg-type]
            requested,
            response_id=("chatcmpl-" if wire == "openai" else "msg_") + uuid.uuid4().hex[:24],
            created_s=int(time.time()),
            include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
            prompt_tokens=prompt_tokens,
        )
        pieces = _stream(schedule, sink, t0_ms, clock, served)  # type: ignore[arg-type]

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
            headers={**headers, "cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    def _prompt(self, body: dict[str, Any], wire: str) -> Prompt:
        """The client's request as a `Prompt` for the upstream API (stream forced on)."""
        messages = [m for m in body["messages"] if isinstance(m, dict)]
        system = body.get("system") if isinstance(body.get("system"), str) else None
        params = {k: v for k, v in body.items() if k not in _NOT_PARAMS}
        if wire != self.config.api:
            params = {k: v for k, v in params.items() if k in _CROSS_WIRE_PARAMS}
            if self.config.api == "anthropic":  # system messages go in `system`
                texts = [str(m.get("content")) for m in messages if m.get("role") == "system"]
                messages = [m for m in messages if m.get("role") != "system"]
                system = "\n\n".join(texts) or system
        elif self.config.api == "anthropic" and "system" in body and system is None:
            params["system"] = body["system"]  # a list of blocks: passed as it is
        return Prompt(messages=messages, system=system, where="serve --upstream", params=params)

    def _http_failure(
        self,
        task: asyncio.Future[LiveResult],
        exchange: Exchange,
        wire: str,
        headers: dict[str, str],
        error_response: Callable[..., JSONResponse],
    ) -> Response | None:
        """The upstream's HTTP error (or no connection) as this API's error response."""
        if task.cancelled() or task.exception() is not None:
            return None
        result = task.result()
        record = result.record
        if record is None:
            return None
        status = record.status
        if status is not None and status < 400:
            return None  # a stream that failed later: its error goes out in the stream
        err = record.recording.errors[-1].error if record.recording.errors else {}
        extra = dict(headers)
        if status is None:  # no connection, or no response headers in time
            message = f"uxlab serve: the upstream did not answer ({record.message})"
            return error_response(wire, 502, "api_error", message, extra)
        retry = err.get("retry_after_s")
        if retry is not None:
            extra["retry-after"] = str(max(1, round(float(retry))))
        body = err.get("body")
        if isinstance(body, dict) and wire == self.config.api:  # the upstream's own words
            return JSONResponse(body, status_code=status, headers=extra)
        kind = "rate_limit_error" if status == 429 else "api_error"
        return error_response(wire, status, kind, str(err.get("message") or ""), extra)

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
            exchange.saved = self._save(exchange, result)
        if self.config.on_done is not None:
            self.config.on_done(exchange)

    def _save(self, exchange: Exchange, result: LiveResult | None) -> list[Path]:
        """Write the upstream stream as received and the stream as served."""
        outdir = self.config.record_dir
        assert outdir is not None
        received_dir, served_dir = outdir / RECEIVED_DIR, outdir / SERVED_DIR
        rid = _free_id(
            received_dir,
            served_dir,
            f"upstream-{time.strftime('%Y%m%d-%H%M%S')}-{exchange.request_index:05d}",
        )
        saved: list[Path] = []
        record = result.record if result is not None else None
        source: dict[str, Any] = {"kind": "live", "model": exchange.model}
        if record is not None:
            record.recording.header.id = rid
            source = dict(record.recording.header.source)
            saved.append(save_result(record, received_dir))
        served = exchange.schedule.to_recording()
        served.header.id = f"{rid}.served"
        served.header.source = source
        assert served.header.retime is not None
        served.header.retime["from"] = rid if record is not None else None
        served.header.retime["profile_name"] = exchange.profile_name
        served.header.extra = {
            "served": {
                "request_index": exchange.request_index,
                "wire": exchange.wire,
                "request_sent_ms": result.request_sent_ms if result is not None else None,
                "upstream_status": exchange.status,
                "upstream_message": exchange.message,
                "client_cancelled": exchange.cancelled,
                "cut_by_profile": exchange.schedule.cut_by_profile,
                **exchange.violations,
                "shown": [dataclasses.asdict(s) for s in exchange.schedule.shown],
            }
        }
        if record is None:
            served.header.extra["served"]["note"] = (
                "the upstream stream was not kept: the request was cancelled before it ended"
            )
        served_dir.mkdir(parents=True, exist_ok=True)
        path = served_dir / f"{safe_filename(served.header.id)}.jsonl"
        saved.append(write_replay(served, path))
        return saved

    async def drain(self) -> None:
        """Wait for exchanges still being finished (recorded) after their streams."""
        while self._finishing:
            await asyncio.wait(set(self._finishing))

    async def aclose(self) -> None:
        await self.drain()
        if self._http is not None:
            await self._http.aclose()


def _free_id(received_dir: Path, served_dir: Path, base: str) -> str:
    """`base`, or `base-2`, `base-3`...: an id no file in either folder has yet."""
    base = safe_filename(base)
    rid, n = base, 1
    while any(
        p.exists()
        for p in (
            received_dir / f"{rid}.jsonl",
            received_dir / f"{rid}.sse",
            served_dir / f"{rid}.served.jsonl",
        )
    ):
        n += 1
        rid = f"{base}-{n}"
    return rid


def warm_up_recording() -> Recording:
    """A tiny timed answer for `uxlab serve`'s in-memory warm-up in upstream mode (the
    real warm-up would send its requests to the upstream)."""
    events = [
        Meta(1.0, {"kind": "role", "role": "assistant"}),
        Chunk(2.0, "warm", n_tokens=1),
        Chunk(3.0, "-up", n_tokens=1),
    ]
    return Recording(Header(id="warm-up"), events, End(4.0, "stop"))


def default_key_env(api: str) -> str:
    """The variable a key is read from when `--upstream-key-env` is not given."""
    return DEFAULT_KEY_ENV[api]
