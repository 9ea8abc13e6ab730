"""How fast `uxlab inspect` is on a big corpus: parse time and metric time, measured apart.

Builds N synthetic replay files of C chunks each in memory (canonical text, lognormal gaps,
a few stalls), then times the three stages `uxlab inspect` runs:

1. parse: `parse_replay` on every file's text (JSON decoding and validation of every line);
2. collect: `StreamArrays.from_recordings` (one pass over the parsed events into flat arrays);
3. metrics: `describe_many` + `summarize` (vectorised numpy over the flat arrays).

Usage:
    uv run python benchmarks/inspect_speed.py                 # 10,000 x 500 (needs ~3 GB)
    uv run python benchmarks/inspect_speed.py --n 1000 --chunks 200 --repeat 3

Prints each stage's time, its rate per chunk, and the metric stage's share; the goal is a
metric stage well under 10 s for 10,000 x 500 chunks.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from uxlab.streams.metrics import StreamArrays, describe_many, summarize
from uxlab.streams.replay_file import parse_replay, paused_gc

HEADER = (
    '{{"type": "header", "format": "uxlab.replay/1", "id": "bench-{i:05d}", '
    '"source": {{"kind": "synthetic", "origin": "benchmarks/inspect_speed.py"}}, '
    '"request": {{}}, "clock": {{"t0": "request_sent", "unit": "ms"}}, '
    '"text_source": "synthetic", "retime": null}}'
)
CHUNK = '{{"type": "chunk", "t_ms": {t!r}, "channel": "content", "text": "{text}", "n_tokens": 1}}'
END = '{{"type": "end", "t_ms": {t!r}, "finish_reason": "stop", "usage": null}}'
WORDS = (" the", " stream", " of", " tokens", ",", " and", " a", " stall", ".", " Hello")


def corpus_texts(n: int, chunks: int, seed: int = 0) -> list[str]:
    """`n` canonical replay files of `chunks` chunks each, as text (deterministic)."""
    rng = np.random.default_rng(seed)
    texts = []
    for i in range(n):
        gaps_ms = rng.lognormal(np.log(25.0), 0.4, chunks)
        gaps_ms[rng.random(chunks) < 0.002] += 1500.0  # rare stalls
        gaps_ms[0] = rng.uniform(200.0, 3000.0)  # TTFT
        t_ms = np.round(np.cumsum(gaps_ms), 3).tolist()
        words = rng.integers(0, len(WORDS), chunks).tolist()
        lines = [HEADER.format(i=i)]
        lines.extend(CHUNK.format(t=t, text=WORDS[w]) for t, w in zip(t_ms, words, strict=True))
        lines.append(END.format(t=round(t_ms[-1] + 5.0, 3)))
        texts.append("\n".join(lines) + "\n")
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="recordings (default 10000)")
    parser.add_argument("--chunks", type=int, default=500, help="chunks each (default 500)")
    parser.add_argument("--repeat", type=int, default=1, help="repeat the metric stage")
    args = parser.parse_args(argv)
    total = args.n * args.chunks
    print(f"inspect speed: {args.n:,} recordings x {args.chunks} chunks = {total:,} chunks")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")

    texts = corpus_texts(args.n, args.chunks)
    mb = sum(len(t) for t in texts) / 1e6
    t0 = time.perf_counter()
    with paused_gc():  # as load_corpus does
        recs = [parse_replay(text, f"bench-{i:05d}.jsonl") for i, text in enumerate(texts)]
    parse_s = time.perf_counter() - t0
    del texts

    collect_s, metric_s = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        arrays = StreamArrays.from_recordings(recs)
        t1 = time.perf_counter()
        table = describe_many(arrays)
        summary = summarize(arrays, table)
        t2 = time.perf_counter()
        collect_s.append(t1 - t0)
        metric_s.append(t2 - t1)
    collect, metric = min(collect_s), min(metric_s)

    def line(name: str, seconds: float) -> str:
        return f"  {name:<28} {seconds:7.2f} s   {seconds / total * 1e6:6.2f} us/chunk"

    print(f"  input: {mb:,.0f} MB of JSON lines")
    print(line("parse (JSON + validation)", parse_s))
    print(line("collect arrays", collect))
    print(line("metrics (describe + summary)", metric))
    print(line("inspect total", parse_s + collect + metric))
    print(f"  metric stage (collect + metrics): {collect + metric:.2f} s, target < 10 s")
    print(f"  parse share of the total: {parse_s / (parse_s + collect + metric):.0%}")
    print(
        f"  check: {len(table):,} rows, {summary['n_gaps']:,} pooled gaps, "
        f"pooled ITL p50 {summary['itl_ms']['p50']:.1f} ms, p99 {summary['itl_ms']['p99']:.1f} ms, "
        f"{summary['stalls']['over_1000']} stalls over 1 s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
