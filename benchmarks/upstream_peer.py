"""Peer check: `uxlab serve --upstream` in front of a server no one here wrote.

The upstream is the mock OpenAI server of guidellm (a benchmark tool from the package
index, Apache-2.0), run from a throwaway virtual environment that is never a project
dependency. The script starts it on a free 127.0.0.1 port (fast: TTFT 50 ms, 5 ms per
token), starts `uxlab serve --upstream http://127.0.0.1:PORT/v1 --upstream-api openai
--record DIR` on the profile below, and sends N streaming requests with the `openai` SDK,
first straight to the mock (the baseline: the client measuring a server's own timing) and
then through the proxy. Printed: whether each proxied answer equals the upstream's text as
received (the `received/` record), chunk for chunk and joined; the client-side TTFT and
gaps against the configured profile (and, as the baseline, the direct ones against the
mock's settings; one unmeasured request warms the mock first); the upstream lateness
the proxy logged; the load average.

    python benchmarks/upstream_peer.py [--requests 5] [--tokens 100] [--venv DIR]
        [--mock-ttft-ms 50] [--mock-itl-ms 5]

A mock slower than the profile (e.g. `--mock-itl-ms 60`) shows the schedule waiting: each
late event is an upstream violation, and the proxied gaps follow the upstream's.

Without guidellm in `--venv`, it prints the commands that make the environment and, with
`--setup`, runs them.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import openai
from loopback import free_port, pct, wait_until_serving

from uxlab.streams import read_replay

GUIDELLM = "guidellm==0.8.1"
MOCK_TTFT_MS, MOCK_ITL_MS = 50.0, 5.0
TTFT_MS, ITL_MS = 800.0, 40.0
SEED = 11


def guidellm_bin(venv: Path) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / "guidellm"


def ensure_venv(venv: Path, setup: bool) -> Path:
    """The guidellm command in `venv`; prints (and with `setup` runs) the commands if missing."""
    exe = guidellm_bin(venv)
    if exe.exists():
        return exe
    commands = [
        ["uv", "venv", str(venv)],
        ["uv", "pip", "install", "--python", str(venv), GUIDELLM],
    ]
    print(f"guidellm is not installed in {venv}; the throwaway environment is made by:")
    for cmd in commands:
        print("  " + shlex.join(cmd))
    if not setup:
        sys.exit("run those (or pass --setup), then run this again")
    for cmd in commands:
        subprocess.run(cmd, check=True)
    return exe


def wait_for(base: str, proc: subprocess.Popen, what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            httpx.get(base + "/models", timeout=1.0)
            return
        except httpx.TransportError:
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"{what} did not start (exit status {proc.poll()})")
            time.sleep(0.2)


def stream_once(client: openai.OpenAI, i: int, tokens: int) -> tuple[list[str], list[float]]:
    """One streamed answer: its non-empty content pieces and their arrival times (ms)."""
    t0 = time.perf_counter()
    stream = client.chat.completions.create(
        model="mockmodel",
        messages=[{"role": "user", "content": f"Tell me about item {i}."}],
        stream=True,
        max_tokens=tokens,
        stream_options={"include_usage": True},
    )
    pieces, t_ms = [], []
    for chunk in stream:
        now = (time.perf_counter() - t0) * 1000.0
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
            t_ms.append(now)
    return pieces, t_ms


def run_all(base: str, n: int, tokens: int) -> list[tuple[list[str], list[float]]]:
    client = openai.OpenAI(base_url=base, api_key="not-needed", max_retries=0)
    return [stream_once(client, i, tokens) for i in range(n)]


def timing(runs: list[tuple[list[str], list[float]]]) -> tuple[np.ndarray, np.ndarray]:
    ttfts = np.array([t[0] for _, t in runs if t])
    gaps = np.concatenate([np.diff(t) for _, t in runs if len(t) > 1])
    return ttfts, gaps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument(
        "--venv", type=Path, default=Path(tempfile.gettempdir()) / "uxlab-peer-guidellm"
    )
    parser.add_argument("--setup", action="store_true", help="make the venv if it is missing")
    parser.add_argument("--mock-ttft-ms", type=float, default=MOCK_TTFT_MS)
    parser.add_argument("--mock-itl-ms", type=float, default=MOCK_ITL_MS)
    args = parser.parse_args()
    exe = ensure_venv(args.venv, args.setup)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        records = Path(tmp) / "records"
        mock_port, proxy_port = free_port(), free_port()
        mock = subprocess.Popen(
            [str(exe), "mock-server", "--host", "127.0.0.1", "--port", str(mock_port),
             "--model", "mockmodel", "--ttft-ms", f"{args.mock_ttft_ms:g}", "--ttft-ms-std", "0",
             "--itl-ms", f"{args.mock_itl_ms:g}", "--itl-ms-std", "0",
             "--output-tokens", str(args.tokens), "--output-tokens-std", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        mock_base = f"http://127.0.0.1:{mock_port}/v1"
        proxy = subprocess.Popen(
            [sys.executable, "-m", "uxlab", "serve", "--quiet",
             "--upstream", mock_base, "--upstream-api", "openai",
             "--port", str(proxy_port), "--ttft", f"constant:{TTFT_MS:g}",
             "--itl", f"constant:{ITL_MS:g}", "--seed", str(SEED), "--record", str(records)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        proxy_base = f"http://127.0.0.1:{proxy_port}/v1"
        try:
            wait_for(mock_base, mock, "guidellm mock-server")
            wait_until_serving(proxy_base, proxy)
            run_all(mock_base, 1, args.tokens)  # the mock's first answer pays its start-up
            direct = run_all(mock_base, args.requests, args.tokens)
            proxied = run_all(proxy_base, args.requests, args.tokens)
        finally:
            for p in (proxy, mock):
                p.terminate()
                p.wait(timeout=10)
        served, received = {}, {}
        for path in (records / "served").glob("*.jsonl"):
            rec = read_replay(path)
            served[rec.header.extra["served"]["request_index"]] = rec
        for path in (records / "received").glob("*.jsonl"):
            received[path.stem] = read_replay(path)
    load_after = os.getloadavg()

    same_chunks = same_joined = 0
    violations: list[float] = []
    for i, (pieces, _) in enumerate(proxied):
        rec = served[i]
        up = received[rec.header.id.removesuffix(".served")]
        up_pieces = [c.text for c in up.chunks if c.channel == "content" and c.text]
        same_chunks += pieces == up_pieces
        same_joined += "".join(pieces) == "".join(up_pieces)
        violations += [s["violation_ms"] for s in rec.header.extra["served"]["shown"]]
    n = len(proxied)
    d_ttft, d_gaps = timing(direct)
    p_ttft, p_gaps = timing(proxied)
    late = np.array(violations) > 0
    print(
        f"guidellm mock-server ({GUIDELLM}: TTFT {args.mock_ttft_ms:g} ms, "
        f"ITL {args.mock_itl_ms:g} ms, "
        f"{args.tokens} tokens) <- uxlab serve --upstream (ttft=constant:{TTFT_MS:g} "
        f"itl=constant:{ITL_MS:g}); {n} requests each way with the openai SDK"
    )
    print(
        "  load average (1/5/15 min) before "
        + "/".join(f"{x:.1f}" for x in load_before)
        + ", after "
        + "/".join(f"{x:.1f}" for x in load_after)
    )
    print(f"  proxied text == upstream as received: chunk for chunk {same_chunks}/{n}, "
          f"joined {same_joined}/{n}")  # fmt: skip
    print("  client-side measured - configured (signed; min < 0 would be early):")
    rows = [
        (f"direct  TTFT - {args.mock_ttft_ms:g} ", d_ttft - args.mock_ttft_ms),
        (f"direct  gap  - {args.mock_itl_ms:g}  ", d_gaps - args.mock_itl_ms),
        (f"proxied TTFT - {TTFT_MS:g}", p_ttft - TTFT_MS),
        (f"proxied gap  - {ITL_MS:g} ", p_gaps - ITL_MS),
    ]
    for label, values in rows:
        print(f"    {label}: min {values.min():7.3f}  {pct(values, width=7)} (n={values.size})")
    print(
        f"  upstream late (schedule waited): {int(late.sum())} of {late.size} events"
        + (f", max {max(violations):.1f} ms" if late.any() else "")
    )
    return 0 if same_chunks == n else 1


if __name__ == "__main__":
    sys.exit(main())
