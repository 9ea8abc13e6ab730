"""What the loopback benchmarks share: a free port, waiting for a served app, percentiles.

Imported by the scripts next to it (`python benchmarks/<script>.py` puts this folder on
`sys.path`); it starts nothing by itself.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Sequence

import httpx
import numpy as np


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(base: str, server: subprocess.Popen, timeout_s: float = 30.0) -> None:
    """Poll `GET {base}/models` until the server answers; exit if it died or never did."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            httpx.get(base + "/models", timeout=1.0)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline or server.poll() is not None:
                sys.exit("uxlab serve did not start")
            time.sleep(0.1)


def pct(values: Sequence[float] | np.ndarray, width: int = 7) -> str:
    """`p50 ...  p99 ...  max ... ms` of the values (`(none)` when there are none)."""
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return "(none)"
    p50, p99 = np.percentile(a, 50), np.percentile(a, 99)
    return f"p50 {p50:{width}.3f}  p99 {p99:{width}.3f}  max {a.max():{width}.3f} ms"
