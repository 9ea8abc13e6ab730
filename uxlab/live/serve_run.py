"""Running `uxlab serve`: the listening sockets, uvicorn's settings, the warm-up, and the
line logged per request, in one process or in `--workers N` forked ones.

`serve(config, listening)` returns only when the server stops. Everything a first request
would pay for (the warm-up's first-use costs, uvicorn's protocol classes, the listening
socket) is done before the banner, so a request sent as soon as it appears is neither
refused nor kept waiting.
"""

from __future__ import annotations

import functools
import gc
import os
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from uxlab.live.live_schedule import LiveSchedule
from uxlab.live.serve.config import GIL_SWITCH_S, ServeConfig, Served, ServeError
from uxlab.streams.recording import Recording

KEEP_ALIVE_S = 5.0
"""An idle keep-alive connection is closed after this time."""


@dataclass(frozen=True)
class Listening:
    """Where and how the server listens: the address, the port (0: any free one), the
    bearer token (for the banner), the worker processes and the connection limits."""

    host: str
    port: int
    token: str | None = None
    workers: int = 1
    max_connections: int = 256
    header_timeout_s: float = 10.0
    max_slow_per_client: int = 16
    quiet: bool = False


def serve(config: ServeConfig, listening: Listening, what: str) -> int:
    """Serve `config` (`what` it plays, for the banner) until stopped; the exit status."""
    from uxlab.live.serve.app import build_app
    from uxlab.live.serve_guard import raise_open_files_limit

    if not listening.quiet:
        config.on_served = functools.partial(log_request, many_workers=listening.workers > 1)
        if config.upstream is not None:
            config.upstream.config.on_done = log_exchange
    app = build_app(config)
    sys.setswitchinterval(GIL_SWITCH_S)  # the loop waits less on a shaping thread
    warm_up_config(config)
    gc.collect()
    gc.freeze()  # start-up objects out of the collector: no full collection mid-stream
    socks = listen(listening)
    raise_open_files_limit()  # many connections: refused by the cap, not by EMFILE
    server = _prepare(listening, config, app, socks)
    _banner(listening, what, socks[0].getsockname()[1])  # listening, uvicorn loaded: no race
    return server()


def log_request(served: Served, many_workers: bool) -> None:
    """One line on stderr per request: what was served, with which seed."""
    labels = "".join(f" {k}={v}" for k, v in served.labels.items())
    schedule = served.schedule  # a recording, or a live schedule (`--upstream`): both headed
    header = schedule.header if isinstance(schedule, Recording | LiveSchedule) else None
    cut = header.extra.get("served_max_tokens") if header is not None else None
    cut_note = f", cut at max_tokens {cut}" if cut is not None else ""
    worker = f" [pid {os.getpid()}]" if many_workers else ""
    print(
        f"request {served.request_index} ({served.wire}){worker}: {served.replay_id} "
        f"seed {served.seed}{labels}{cut_note}",
        file=sys.stderr,
        flush=True,
    )


def log_exchange(exchange: Any) -> None:
    """One line per proxied exchange (`uxlab.live.upstream.Exchange`): how it ended and
    how late the upstream was."""
    v = exchange.violations
    late = (
        f"upstream late for {v['violations_n']} event(s), max {v['violation_max_ms']:.0f} ms "
        "(the schedule waited)"
        if v["violations_n"]
        else "on schedule"
    )
    how = exchange.message or f"HTTP {exchange.status}"
    saved = f"; saved {', '.join(p.name for p in exchange.saved)}" if exchange.saved else ""
    print(
        f"request {exchange.request_index} done: {exchange.model} @{exchange.profile_name}: "
        f"{late}; {how}{saved}",
        file=sys.stderr,
        flush=True,
    )


def uvicorn_config(
    app: Any,
    max_connections: int,
    header_timeout_s: float,
    max_slow_per_client: int = 16,
) -> Any:
    """uvicorn's settings for `uxlab serve`: the connection cap (503 beyond it), the
    keep-alive timeout and the request-head timeout (`serve_guard.guarded_h11_protocol`)."""
    import uvicorn

    from uxlab.live.serve_guard import guarded_h11_protocol

    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",  # no WebSocket routes: nothing to import (wsproto took ~100 ms at start)
        loop="asyncio",  # the loop the timing was measured on, not whichever is installed
        http=guarded_h11_protocol(header_timeout_s, max_slow_per_client),
        limit_concurrency=max_connections,
        timeout_keep_alive=int(KEEP_ALIVE_S),
    )


def listen_socket(host: str, port: int, reuse_port: bool = False) -> socket.socket:
    """A TCP socket bound to (host, port) whose connections send each write at once.

    Created with `IPPROTO_TCP` (asyncio sets `TCP_NODELAY` on accepted connections only
    for such sockets) and with `TCP_NODELAY` itself, which accepted connections inherit:
    without it Nagle's algorithm holds a chunk written less than one delayed ACK (~40 ms)
    after the response headers or the previous chunk, so a short TTFT or a fast stream
    arrives up to 40 ms late. `reuse_port`: `SO_REUSEPORT`, for `--workers` (each worker
    listens on its own socket on the same port).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def warm_up_config(config: ServeConfig) -> None:
    """Pay the first request's costs before anyone can send one; in upstream mode on a
    stand-in answer (a warm-up must not reach the upstream)."""
    from uxlab.live.serve.warmup import warm_up

    if config.upstream is None:
        warm_up(config)
    else:
        from uxlab.live.upstream import warm_up_recording

        warm_up(replace(config, upstream=None, recordings=[warm_up_recording()]))


def listen(listening: Listening) -> list[socket.socket]:
    """The bound sockets: one, or one per worker sharing the port (SO_REUSEPORT)."""
    host, port = listening.host, listening.port
    try:
        if listening.workers > 1:
            from uxlab.live.serve_workers import reuse_port_sockets

            return reuse_port_sockets(
                host, port, listening.workers, lambda h, p: listen_socket(h, p, reuse_port=True)
            )
        return [listen_socket(host, port)]
    except OSError as exc:
        raise ServeError(
            f"--port {port}: cannot listen on {host} ({exc.strerror}); pick another port"
        ) from None


def _banner(listening: Listening, what: str, port: int) -> None:
    host, workers = listening.host, listening.workers
    print(
        f"serving {what} on http://{host}:{port}/v1"
        f"{' (token required)' if listening.token else ''}"
        f"{f' with {workers} worker processes' if workers > 1 else ''}. Ctrl-C stops.",
        file=sys.stderr,
        flush=True,
    )
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"warning: binding {host} exposes the server beyond this machine; requests "
            "must name it (or an --allow-host NAME) in their Host header",
            file=sys.stderr,
        )


class _StopAsked(Exception):
    """SIGTERM to a server not (or no longer) under uvicorn's own handlers."""


def _stop_asked(signum: int, frame: object) -> None:
    raise _StopAsked


def _prepare(
    listening: Listening, config: ServeConfig, app: Any, socks: list[socket.socket]
) -> Callable[[], int]:
    """Listen and load uvicorn's protocol classes now, so that a request sent as soon as the
    banner appears is neither refused (not yet listening) nor kept waiting by start-up
    imports; returns what serves until stopped (here, or in one forked worker per socket)."""
    import uvicorn

    from uxlab.live.serve_cut_streams import cut_streams_said

    make_config = functools.partial(
        uvicorn_config,
        max_connections=listening.max_connections,
        header_timeout_s=listening.header_timeout_s,
        max_slow_per_client=listening.max_slow_per_client,
    )
    for s in socks:
        s.listen(128)
    uvicorn_settings = make_config(app)
    uvicorn_settings.load()  # the workers fork from here with it imported
    uvicorn_settings.get_loop_factory()  # imports the loop module
    if listening.workers > 1:
        from uxlab.live.serve_workers import run_workers, serve_worker

        workers = listening.workers
        return lambda: run_workers(
            socks, lambda k, s: serve_worker(config, k, workers, s, make_config)
        )

    def serve_here() -> int:
        # uvicorn raises the signal that stopped it again once stopped: SIGINT ends as a
        # Ctrl-C (130), SIGTERM, a request to stop, as done (0) rather than killed (143)
        previous = signal.signal(signal.SIGTERM, _stop_asked)
        try:
            with socks[0], cut_streams_said(""):
                uvicorn.Server(uvicorn_settings).run(sockets=[socks[0]])
        except _StopAsked:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
        return 0

    return serve_here
