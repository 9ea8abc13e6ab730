"""Shaping speed and statistics: how long shape() takes and how well schedules match profiles.

Run: python benchmarks/shaping_stats.py [--reps 200]

Speed: shape() on a 2,000-token recording, per profile, p50/p95 in ms (after a warm-up).
Statistics: gaps pooled over many schedules (one per seed) against the requested
distribution: KS p-value, realised/requested median ratio, and lag-1 correlation of the
normal scores against the requested rho.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special, stats

from uxlab.shaping import Profile, shape
from uxlab.streams import Chunk, End, Header, Recording


def recording(n_tokens: int = 2000) -> Recording:
    rng = np.random.default_rng(0)
    times = 400 + np.concatenate([[0], np.cumsum(rng.lognormal(np.log(25), 0.4, n_tokens - 1))])
    chunks = [Chunk(t_ms=float(t), text=f" word{i}", n_tokens=1) for i, t in enumerate(times)]
    return Recording(Header(id="bench"), chunks, End(t_ms=float(times[-1]) + 5))


SPEED = {
    "recorded": {},
    "lognormal": {"ttft": 800, "itl": "lognormal:median=30,sigma=0.5"},
    "lognormal rho=0.5": {"ttft": 800, "itl": "lognormal:median=30,sigma=0.5", "rho": 0.5},
    "rechunk uniform:1,4": {"itl": "gamma:mean=30,cv=0.5", "chunk": "uniform:1,4"},
    "everything": {
        "ttft": "lognormal:median=800,sigma=0.3", "itl": "gamma:mean=30,cv=0.5", "rho": 0.3,
        "chunk": "uniform:1,4", "stalls": "poisson:rate_per_s=0.2,ms=800", "error_at": 1500,
    },
}  # fmt: skip

STATS = [
    "uniform:mean=30,j=10",
    "normal:mean=30,sd=10",
    "lognormal:median=30,sigma=0.5",
    "gamma:mean=30,cv=0.5",
    "pareto:median=30,alpha=2.5",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    rec = recording()

    print(f"shape() on a {len(rec.chunks)}-token recording, {args.reps} runs each (ms)")
    for name, table in SPEED.items():
        profile = Profile.from_table(table)
        shape(rec, profile, seed=0)  # warm-up
        took = []
        for seed in range(args.reps):
            t0 = time.perf_counter()
            shape(rec, profile, seed=seed)
            took.append((time.perf_counter() - t0) * 1000)
        p50, p95 = np.percentile(took, [50, 95])
        print(f"  {name:<22} p50 {p50:6.2f}  p95 {p95:6.2f}")

    short = recording(201)
    n = max(args.reps, 50)
    print(f"\nGaps pooled over {n} schedules of 200 gaps (every 10th gap for KS)")
    print(f"  {'itl':<32} {'rho':>4} {'KS p':>7} {'p50 ratio':>9} {'rho got':>8}")
    for spec in STATS:
        for rho in (0.0, 0.6):
            profile = Profile.from_table({"ttft": 500, "itl": spec, "rho": rho})
            ref = profile.itl.scipy()
            gaps = [np.diff(shape(short, profile, seed=s).chunk_times_ms()) for s in range(n)]
            pooled = np.concatenate(gaps)
            ks = stats.kstest(np.concatenate([g[::10] for g in gaps]), ref.cdf).pvalue
            ratio = np.median(pooled) / profile.itl.median()
            scores = [special.ndtri(np.clip(ref.cdf(g), 1e-12, 1 - 1e-12)) for g in gaps]
            lag1 = np.mean([np.corrcoef(z[:-1], z[1:])[0, 1] for z in scores])
            print(f"  {spec:<32} {rho:4.1f} {ks:7.3f} {ratio:9.3f} {lag1:8.3f}")


if __name__ == "__main__":
    main()
