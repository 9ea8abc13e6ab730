"""What slow clients do to `uxlab serve`'s other requests, with and without its guards.

Starts a server process on a small corpus (TTFT 100 ms), twice: with plain uvicorn settings
(no request-head timeout, no connection cap: as before the guards) and as `uxlab serve`
itself (`--header-timeout-s 2`, the default cap of 256 connections). Each time it measures
the first content chunk of M streaming requests (recorded − scheduled TTFT) on a quiet
server, then opens S slow connections that send an unfinished request head and then one
byte per second each (slowloris), waits 4 s, counts how many of them the server has closed,
and measures M requests again (their HTTP statuses and TTFT errors).

With `--bodies`, the slow connections send a whole request head and then their body one
byte per second instead (a slow POST), and the two servers are `uxlab serve` without the
per-address allowance of slow senders (`--max-slow-per-client` set past S: as before it
existed) and with its default (16).

Usage:
    uv run python benchmarks/serve_slow_clients.py                  # S = 2,000, M = 30
    uv run python benchmarks/serve_slow_clients.py --slow 5000 --requests 50
    uv run python benchmarks/serve_slow_clients.py --bodies --slow 300 --requests 22

Other work on the machine stretches every figure: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from uxlab.streams import Chunk, End, Header, Recording, write_replay

TTFT_MS = 100.0
PLAIN = """
import sys, uvicorn
from uxlab.live.serve_run import listen_socket
from uxlab.live.serve import ServeConfig, build_app
from uxlab.shaping import Profile, shape
from uxlab.streams import load_corpus
profile = Profile.from_table({"ttft": "constant:100", "itl": "constant:5"})
config = ServeConfig(load_corpus(sys.argv[1]).recordings, lambda r, s: shape(r, profile, seed=s))
sock = listen_socket("127.0.0.1", 0)
sock.listen(1024)
print(f"serving on http://127.0.0.1:{sock.getsockname()[1]}/v1", file=sys.stderr, flush=True)
uvicorn.Server(uvicorn.Config(build_app(config), log_level="critical", lifespan="off")).run(
    sockets=[sock]
)
"""


def corpus(folder: Path) -> None:
    words = [f" word{i}" for i in range(20)]
    rec = Recording(
        Header(id="bench", source={"kind": "synthetic", "model": "m"}),
        events=[Chunk(10.0 + i, w, "content", n_tokens=1) for i, w in enumerate(words)],
        end=End(40.0, "stop", None),
    )
    write_replay(rec, folder)


NO_ALLOWANCE = "no allowance"


def start(mode: str, folder: Path) -> tuple[subprocess.Popen, str]:
    if mode == "plain uvicorn":
        cmd = [sys.executable, "-c", PLAIN, str(folder)]
    else:
        cmd = [sys.executable, "-m", "uxlab", "serve", str(folder), "--port", "0", "--quiet"]
        cmd += ["--ttft", "constant:100", "--itl", "constant:5", "--header-timeout-s", "2"]
        if mode == NO_ALLOWANCE:
            cmd += ["--max-slow-per-client", "1000000"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    banner = proc.stderr.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)", banner)
    if match is None:
        proc.kill()
        raise SystemExit(f"{mode}: the server did not start: {banner}")
    return proc, match.group(1)


def ttft_errors(port: str, n: int) -> tuple[list[float], dict[int, int]]:
    """TTFT error (ms) of each 200 answer, and the count of each status."""
    errors: list[float] = []
    statuses: dict[int, int] = {}
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    for _ in range(n):
        with httpx.Client(timeout=60) as client:
            sent = time.perf_counter()
            try:
                with client.stream("POST", url, json=body) as r:
                    statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                    if r.status_code != 200:
                        continue
                    for line in r.iter_lines():
                        if not line.startswith("data: {"):
                            continue
                        choices = json.loads(line[6:]).get("choices") or [{}]
                        if choices[0].get("delta", {}).get("content"):
                            errors.append((time.perf_counter() - sent) * 1000.0 - TTFT_MS)
                            break
            except httpx.HTTPError:
                statuses[0] = statuses.get(0, 0) + 1
    return errors, statuses


class Slowloris:
    """S connections sending an unfinished request head (or, `bodies`, a whole head and the
    first byte of a long body), then one byte a second each."""

    def __init__(self, port: str, n: int, bodies: bool = False) -> None:
        self.socks: list[socket.socket] = []
        self.closed_by_server = 0
        head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if bodies:
            head += b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
        for _ in range(n):
            try:
                s = socket.create_connection(("127.0.0.1", int(port)))
                s.sendall(head)
            except OSError:
                self.closed_by_server += 1
                continue
            if bodies:  # one after another, each counted before the next (all at once,
                time.sleep(0.005)  # past the cap, every head would be answered 503 at once)
            s.setblocking(False)
            self.socks.append(s)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._trickle, daemon=True)
        self.thread.start()

    def _trickle(self) -> None:
        while not self.stop.wait(1.0):
            alive = []
            for s in self.socks:
                try:
                    if s.recv(1) == b"":
                        raise ConnectionResetError
                except BlockingIOError:
                    pass
                except OSError:
                    self.closed_by_server += 1
                    s.close()
                    continue
                try:
                    s.send(b"X")
                    alive.append(s)
                except OSError:
                    self.closed_by_server += 1
                    s.close()
            self.socks = alive

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def describe(errors: list[float]) -> str:
    if not errors:
        return "no 200 answers"
    ranked = sorted(errors)
    p95 = ranked[max(0, round(0.95 * len(ranked)) - 1)]
    return f"p50 {statistics.median(ranked):7.1f}  p95 {p95:7.1f}  max {ranked[-1]:7.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--slow", type=int, default=2000, help="slow connections (default 2000)")
    ap.add_argument("--requests", type=int, default=30, help="requests measured (default 30)")
    ap.add_argument("--bodies", action="store_true", help="slow request bodies, not heads")
    args = ap.parse_args()
    kind = "slow-body" if args.bodies else "slow-head"
    print(
        f"{args.slow:,} {kind} connections, {args.requests} requests each way, TTFT "
        f"{TTFT_MS:g} ms, load average {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M')}"
    )
    print("TTFT error of the other requests, ms (recorded - scheduled):")
    with tempfile.TemporaryDirectory() as tmp:
        corpus(Path(tmp))
        modes = (NO_ALLOWANCE, "uxlab serve") if args.bodies else ("plain uvicorn", "uxlab serve")
        for mode in modes:
            proc, port = start(mode, Path(tmp))
            try:
                quiet, _ = ttft_errors(port, args.requests)
                slow = Slowloris(port, args.slow, args.bodies)
                time.sleep(4.0)
                errors, statuses = ttft_errors(port, args.requests)
                closed = slow.closed_by_server
                slow.close()
            finally:
                proc.terminate()
                proc.wait(timeout=10)
            print(f"  {mode:14} quiet:     {describe(quiet)}")
            print(
                f"  {'':14} slow open: {describe(errors)}   statuses {statuses}; "
                f"{closed:,} of {args.slow:,} slow connections closed by the server"
            )


if __name__ == "__main__":
    main()
