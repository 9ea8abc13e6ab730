"""Playing a schedule to a client: when its headers go out, waiting on the server's clock,
and the player feeding an SSE sink whose pieces the response streams."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from typing import Any

from uxlab.clock import MonotonicClock, default_wait
from uxlab.live.serve.config import Served
from uxlab.live.sse_sink import SSESink
from uxlab.player import Player, Schedule
from uxlab.streams.recording import Recording

SERVE_WAIT = "timer"
"""How each served stream waits for a chunk's deadline: the asyncio timer alone, no spinning
(`uxlab.clock.MonotonicClock`): a server playing many streams has no core to spare for a
1 ms spin per chunk (docs/performance.md compares the waits). ``UXLAB_CLOCK_WAIT``
overrides it."""


def serve_clock() -> MonotonicClock:
    """The real clock a served stream is played on (see `SERVE_WAIT`)."""
    return MonotonicClock(wait=default_wait(SERVE_WAIT))


def now_ms() -> float:
    """The server's real clock (ms, perf_counter), when no clock is injected."""
    return time.perf_counter_ns() / 1e6


def headers_ms(schedule: Recording) -> float:
    """When the response headers go out: the schedule's `http.headers_ms`, capped at TTFT."""
    http = schedule.header.extra.get("http") or {}
    retime_profile = (schedule.header.retime or {}).get("profile") or {}
    value = retime_profile.get("headers_ms", http.get("headers_ms"))
    if not isinstance(value, int | float) or value < 0:
        return 0.0
    first = next((e.t_ms for e in schedule.events if e.t_ms is not None), None)
    return float(min(value, first)) if first is not None else float(value)


async def sleep_until(clock: Any, t_ms: float) -> None:
    """Wait until `t_ms` on `clock` (None: the real clock)."""
    if clock is not None:
        await clock.sleep_until(t_ms)
        return
    delay_s = (t_ms - now_ms()) / 1000
    if delay_s > 0:
        await asyncio.sleep(delay_s)


async def stream_to_client(
    schedule: Schedule, sink: SSESink, t0_ms: float, clock: Any, served: Served
) -> AsyncGenerator[bytes, None]:
    """Play `schedule` into `sink` and yield its SSE pieces; `served.log` gets the log
    (a partial one when the client goes away)."""
    player = Player(schedule, sink, clock=clock if clock is not None else serve_clock())
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
