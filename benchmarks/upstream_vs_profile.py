"""Timing check: an SDK-like client through `uxlab serve --upstream` gets the profile.

Starts two `uxlab serve` processes on free 127.0.0.1 ports: the *upstream* plays a corpus
fast (TTFT 20 ms, 1 ms gaps), the *proxy* is `uxlab serve --upstream` onto it with a known
profile and `--record`. N streams are recorded through the proxy with the live recorder
(sequentially: request i has seed SEED+i). Printed, per chunk and per gap:
|recorded - served| (client arrival vs the proxy's schedule as served, from its
`served/` record), the client-side TTFT and gaps against the configured profile, the
share of events the upstream delivered late (schedule violations), and whether the text
arrived unchanged. Target (as `record_vs_serve.py`): p99 < 2 ms per chunk and per gap.

    python benchmarks/upstream_vs_profile.py [--streams 10] [--chunks 100]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import numpy as np
from loopback import free_port, pct, wait_until_serving

from uxlab.live.clients import Prompt
from uxlab.live.record import record_stream
from uxlab.streams import Chunk, End, Header, Recording, load_corpus, read_replay, write_replay

TTFT_MS = 300.0
ITL = "lognormal:median=20,sigma=0.5"
SEED = 7


def corpus(folder: Path, n_chunks: int) -> str:
    chunks = [Chunk(t_ms=100.0 + i, text=f" w{i}", n_tokens=1) for i in range(n_chunks)]
    rec = Recording(
        Header(id="bench", source={"kind": "synthetic", "model": "bench"}),
        events=list(chunks),
        end=End(t_ms=chunks[-1].t_ms + 1, finish_reason="stop"),
    )
    write_replay(rec, folder)
    return rec.text


async def record_all(base: str, n_streams: int) -> list[Recording]:
    out = []
    async with httpx.AsyncClient() as client:
        for i in range(n_streams):
            prompt = Prompt([{"role": "user", "content": "go"}])
            result = await record_stream(client, "openai", base, "bench", prompt, None, f"r{i}")
            if not result.ok:
                sys.exit(f"stream {i}: {result.message}")
            out.append(result.recording)
    return out


def serve(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "uxlab", "serve", "--quiet", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--chunks", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder, records = Path(tmp) / "corpus", Path(tmp) / "records"
        folder.mkdir()
        text = corpus(folder, args.chunks)
        up_port, proxy_port = free_port(), free_port()
        up = serve(str(folder), "--port", str(up_port), "--ttft", "20", "--itl", "constant:1")
        proxy = serve(
            "--upstream", f"http://127.0.0.1:{up_port}/v1", "--port", str(proxy_port),
            "--ttft", f"constant:{TTFT_MS:g}", "--itl", ITL, "--seed", str(SEED),
            "--record", str(records),
        )  # fmt: skip
        try:
            wait_until_serving(f"http://127.0.0.1:{up_port}/v1", up)
            base = f"http://127.0.0.1:{proxy_port}/v1"
            wait_until_serving(base, proxy)
            recorded = asyncio.run(record_all(base, args.streams))
        finally:
            for p in (proxy, up):
                p.terminate()
                p.wait(timeout=10)
        served = {}
        for path in (records / "served").glob("*.jsonl"):
            rec = read_replay(path)
            served[rec.header.extra["served"]["request_index"]] = rec
        received = load_corpus(records / "received").recordings
    diffs, gap_diffs, ttfts, gaps, late = [], [], [], [], []
    unchanged = all(r.text == text for r in recorded)
    for i, rec in enumerate(recorded):
        sched = served[i]
        got = np.array([c.t_ms for c in rec.chunks])
        want = np.array([c.t_ms for c in sched.chunks])
        if len(got) != len(want):
            sys.exit(f"stream {i}: recorded {len(got)} chunks, served {len(want)}")
        diffs.append(np.abs(got - want))
        gap_diffs.append(np.abs(np.diff(got) - np.diff(want)))
        ttfts.append(got[0])
        gaps.append(np.diff(got))
        shown = sched.header.extra["served"]["shown"]
        late.append(np.array([s["violation_ms"] > 0 for s in shown]))
    d, g = np.concatenate(diffs), np.concatenate(gap_diffs)
    all_gaps, lateness = np.concatenate(gaps), np.concatenate(late)
    print(
        f"client through serve --upstream ({len(recorded)} streams, {d.size} chunks; upstream "
        f"{len(received)} recorded), profile "
        f"ttft=constant:{TTFT_MS:g} itl={ITL}"
    )
    print(f"  text unchanged: {unchanged}")
    print(f"  |recorded - served| per chunk: {pct(d, width=6)}")
    print(f"  |recorded - served| per gap:   {pct(g, width=6)}")
    print(f"  client TTFT (from its send):   {pct(ttfts, width=6)} (configured {TTFT_MS:g})")
    print(
        f"  client gaps: median {np.median(all_gaps):.2f} ms (configured median 20), "
        f"p90/p10 {np.percentile(all_gaps, 90) / np.percentile(all_gaps, 10):.2f} "
        f"(lognormal sigma 0.5: {np.exp(0.5 * 2 * 1.2816):.2f})"
    )
    print(f"  client TTFT per request: {' '.join(f'{t:.0f}' for t in ttfts)} ms")
    print(f"  events the upstream delivered late: {lateness.mean():.1%}")
    ok = np.percentile(d, 99) < 2.0 and np.percentile(g, 99) < 2.0
    print(f"  p99 per chunk and per gap {'meet' if ok else 'MISS'} the 2 ms target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
