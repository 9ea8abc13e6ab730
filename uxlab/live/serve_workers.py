"""`uxlab serve --workers N`: N server processes sharing one port.

Each worker is a forked copy of the prepared server (corpus loaded, app warmed up, start-up
objects frozen out of the collector) with its own listening socket bound to the same
address with `SO_REUSEPORT`, so the kernel spreads new connections evenly over the workers
and each keeps time for its own streams on its own core. All sockets are bound and
listening before the first worker starts (a connection made after the banner waits in a
queue, never meets a refusal), and the parent only supervises:

- each worker runs in its own process group, so a terminal's Ctrl-C (SIGINT to the
  foreground group) reaches the parent alone, and the parent alone decides: its first
  SIGINT or SIGTERM asks every worker to stop as one `uxlab serve` would (SIGTERM: stop
  accepting, finish the open streams), a second one stops them at once (SIGINT after the
  SIGTERM: uvicorn's forced exit). Were the workers in the terminal's group, each would get
  the Ctrl-C itself as well as the parent's SIGTERM, and when the SIGTERM was handled first
  the SIGINT after it read as a second Ctrl-C and cut the open streams (seen on a loaded
  machine). Ctrl-Z likewise stops the parent only: the workers go on serving;
- a worker that exits on its own (a crash) stops the others, and the parent says which
  worker and how it ended; a worker that ended cleanly was asked to stop by someone else
  (a signal sent to its pid, or one that came before it left the terminal's group), so the
  others are stopped as by a first Ctrl-C, and a Ctrl-C the parent handles after that is
  still a first one (it must not cut the others' open streams);
- a worker whose parent dies (even by SIGKILL) is sent SIGTERM by the kernel
  (`PR_SET_PDEATHSIG`), so no worker outlives the server.

Worker k numbers its requests k, k + N, k + 2N, ... (`ServeConfig.request_index_start`
and `request_index_step`), so request indices and seeds are unique across workers.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

PR_SET_PDEATHSIG = 1
WAIT_POLL_S = 0.05
"""How often the parent looks for ended workers. A blocking wait would do in a process of one
thread; in one with more (a library's, a test runner's), the kernel may hand a Ctrl-C to
another thread, and Python runs its handler in the main thread only once the wait returns:
never, while every worker waits to be told to stop."""


def reuse_port_sockets(
    host: str, port: int, n: int, make: Callable[[str, int], socket.socket]
) -> list[socket.socket]:
    """`n` sockets bound to (host, port) with `SO_REUSEPORT` (port 0: any free one, the same
    for all). `make(host, port)` creates one unbound-but-configured socket and binds it;
    the option is set before binding through `make`'s own `reuse_port` flag."""
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            sock = make(host, port)
            port = sock.getsockname()[1]  # port 0: the rest join the port the first got
            socks.append(sock)
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks


def _die_with_parent(parent_pid: int) -> None:
    """Ask the kernel for SIGTERM when the parent dies (Linux); exit if it already has."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the parent's signal forwarding still works
        pass
    if os.getppid() != parent_pid:
        os._exit(0)


def _exit_note(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"killed by {signal.Signals(sig).name}"
    return f"exit status {os.WEXITSTATUS(status)}"


def run_workers(socks: list[socket.socket], serve_one: Callable[[int, socket.socket], None]) -> int:
    """Fork one worker per socket, run `serve_one(k, sock)` in worker k, supervise them.

    Returns 0 when the workers stopped because the parent was asked to stop (SIGTERM),
    130 when that was a Ctrl-C (SIGINT), as one `uxlab serve` ends, and 1 when a worker
    ended on its own (the others are stopped and the reason is printed).
    """
    parent_pid = os.getpid()
    pids: dict[int, int] = {}  # pid -> worker number
    stopping = {"signals": 0, "told": 0, "first": 0, "started": 0}  # signals to the parent
    # (the first one's number), workers told to stop, all workers forked

    def tell(sig: int) -> None:
        stopping["told"] += 1
        for pid in list(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def stop_signal(nth: int) -> int:
        # SIGTERM first (finish open streams), SIGINT after (uvicorn: stop at once)
        return signal.SIGTERM if nth == 1 else signal.SIGINT

    def forward(signum: int, frame: object) -> None:
        stopping["signals"] += 1
        stopping["first"] = stopping["first"] or signum
        if stopping["started"]:  # else told once every worker is forked (below)
            tell(stop_signal(stopping["signals"]))

    # The handler is in place before the first fork, so a stop signal that comes while the
    # workers start is never met by the default action; it is passed on once all of them
    # exist (Python runs a handler in the main thread, between forks too, whatever thread
    # the kernel gave the signal to: told then, a worker forked after would never hear it).
    # A worker puts back the handlers the parent had before, first thing, with the stop
    # signals blocked until then: one sent to it meanwhile (the parent's, once all exist)
    # waits for them instead of meeting the parent's handler, which would only note it.
    stops = {signal.SIGINT, signal.SIGTERM}
    previous = {s: signal.signal(s, forward) for s in stops}
    try:
        for k, sock in enumerate(socks):
            unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
            pid = os.fork()
            if pid:
                signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
                with contextlib.suppress(OSError):  # also here, so no signal to the group
                    os.setpgid(pid, pid)  # is sent before the worker has left it
                pids[pid] = k
            else:  # the worker
                code = 0
                try:
                    for s, handler in previous.items():
                        signal.signal(s, handler)
                    signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
                    os.setpgid(0, 0)  # out of the terminal's group: only the parent signals
                    _die_with_parent(parent_pid)
                    for other in socks:
                        if other is not sock:
                            other.close()
                    serve_one(k, sock)
                except KeyboardInterrupt:  # SIGINT before the worker's own handler: asked
                    pass
                except BaseException:
                    code = 1
                    import traceback

                    traceback.print_exc()
                finally:
                    sys.stderr.flush()
                    os._exit(code)
    except BaseException:  # a fork refused: the workers started so far stop, as asked
        tell(signal.SIGTERM)
        for s, handler in previous.items():
            signal.signal(s, handler)
        raise
    finally:
        for sock in socks:
            sock.close()  # the workers hold them now
    stopping["started"] = 1
    for nth in range(1, stopping["signals"] + 1):  # the stops that came while forking
        tell(stop_signal(nth))

    failed = 0
    try:
        while pids:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:  # none ended: a stop signal another thread took runs its handler
                time.sleep(WAIT_POLL_S)  # now, here (a blocking wait would never return)
                continue
            if pid not in pids:
                continue
            k = pids.pop(pid)
            if stopping["told"]:
                continue
            # The first worker to end before any stop: exit status 0 means it was asked
            # (`serve_worker` returns only then), e.g. by a signal sent to its pid; anything
            # else is a crash. Either way the rest finish their
            # streams (SIGTERM), without counting as the parent's first Ctrl-C.
            if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
                print(
                    f"uxlab serve: worker {k} (pid {pid}) ended ({_exit_note(status)}); "
                    f"stopping the other {len(pids)}",
                    file=sys.stderr,
                    flush=True,
                )
                failed = 1
            tell(signal.SIGTERM)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if not failed and stopping["first"] == signal.SIGINT:
        return 128 + signal.SIGINT  # the exit status of a Ctrl-C (`uxlab.cli`)
    return failed


def serve_worker(
    config: Any, k: int, n: int, sock: socket.socket, make_uvicorn_config: Callable[[Any], Any]
) -> None:
    """Worker k of n: the app numbering its requests k, k + n, ..., served by uvicorn on
    `sock` until SIGTERM (finish open streams) or SIGINT twice (stop at once)."""
    import uvicorn

    from uxlab.live.serve import build_app
    from uxlab.live.serve_cut_streams import cut_streams_said

    app = build_app(replace(config, request_index_start=k, request_index_step=n))
    server = uvicorn.Server(make_uvicorn_config(app))

    asked: list[int] = []

    def stop(signum: int, frame: object) -> None:
        # Before uvicorn's own handlers, and after: uvicorn raises the signals it caught
        # again once it has stopped, so every signal the worker got passes here.
        asked.append(signum)
        server.should_exit = True

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, stop)
    with sock, cut_streams_said(f"worker {k} (pid {os.getpid()}) "):
        server.run(sockets=[sock])
    if not asked:  # the parent reads a clean exit as "asked to stop"
        raise RuntimeError("the server stopped without being asked to (did it start?)")
