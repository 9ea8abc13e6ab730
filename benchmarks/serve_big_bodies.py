"""How much memory `uxlab serve` takes when clients send huge request bodies.

Starts `uxlab serve` on a one-recording corpus and sends K requests at once, each with a
B MB body: half announced by `Content-Length`, half streamed in chunks without a length.
Printed: the HTTP statuses, the server's peak resident memory (`VmHWM` from /proc, Linux)
before and after, and the time the K requests took.

Usage:
    uv run python benchmarks/serve_big_bodies.py                # 8 bodies of 200 MB
    uv run python benchmarks/serve_big_bodies.py --bodies 4 --mb 50
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx

from uxlab.streams import Chunk, End, Header, Recording, write_replay

PIECE = b" " * (1 << 20)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bodies", type=int, default=8)
    ap.add_argument("--mb", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rec = Recording(
            Header(id="one", source={"kind": "synthetic", "model": "m"}),
            events=[Chunk(10.0, "hi", "content", n_tokens=1)],
            end=End(20.0, "stop", None),
        )
        write_replay(rec, Path(tmp))
        cmd = [sys.executable, "-m", "uxlab", "serve", tmp, "--port", "0", "--quiet"]
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        try:
            base = re.search(r"(http://127\.0\.0\.1:\d+)", proc.stderr.readline()).group(1)
            before = peak_rss_mb(proc.pid)
            statuses: Counter[str] = Counter()

            def send(k: int) -> None:
                url = base + "/v1/chat/completions"
                try:
                    if k % 2:
                        body: bytes | Iterator[bytes] = PIECE * args.mb
                    else:
                        body = (PIECE for _ in range(args.mb))
                    r = httpx.post(url, content=body, timeout=120)
                    statuses[str(r.status_code)] += 1
                except httpx.HTTPError as exc:
                    statuses[type(exc).__name__] += 1

            started = time.perf_counter()
            threads = [threading.Thread(target=send, args=(k,)) for k in range(args.bodies)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            took = time.perf_counter() - started
            after = peak_rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print(
        f"{args.bodies} bodies of {args.mb} MB at once to uxlab serve (limit 4 MB); "
        f"load average {os.getloadavg()[0]:.1f}; {time.strftime('%Y-%m-%d')}"
    )
    print(f"  statuses: {dict(statuses)}; {took:.1f} s")
    print(f"  server peak resident memory: {before:.0f} MB before, {after:.0f} MB after")


if __name__ == "__main__":
    main()
