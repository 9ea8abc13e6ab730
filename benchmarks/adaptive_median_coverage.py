"""How often the report's interval of the median adaptive estimate holds the truth.

The report's "Adaptive estimates" section gives, per track, the median of the sessions' own
procedure estimates (QUEST+'s posterior mean, a staircase's reversal mean) with a 95%
interval. Its truth is the median person's own point at the procedure's target P(too slow)
(guess and lapse included, as `analysis.report.truth_part` scores it). This runs uxlab's own
procedures (`uxlab.study.adaptive`) against the independent simulator's people
(`tests/independent_tables.py`: alike, differing, steeper than the grid's steps, or with a
skewed spread) and scores two intervals on the same studies:

- `bootstrap`: the percentile participant bootstrap the report printed until 2026-12-07;
- `sign`: the distribution-free interval of a median from the sign test, its ends
  interpolated between order statistics (Hettmansperger & Sheather 1986;
  `analysis.median_interval`), which the report prints since.

Usage:
    uv run python benchmarks/adaptive_median_coverage.py --studies 400 --people 4,8,20
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from independent_tables import OBSERVERS, LN9x2, Observers, p_too_slow

from analysis.median_interval import median_interval
from uxlab.study.adaptive import AdaptiveSpec, make_procedure

DESIGNS = {
    # as studies/ttft-quest.toml: 40 main trials on 25 levels from 100 ms to 5 s
    "quest": (AdaptiveSpec("quest", 100.0, 5000.0), 40),
    "staircase": (AdaptiveSpec("staircase", 100.0, 5000.0), 48),
    "interleaved": (AdaptiveSpec("interleaved", 100.0, 5000.0), 48),
}
CENTRE_MS = 800.0


def person_estimate(spec: AdaptiveSpec, trials: int, m_ms: float, obs: Observers, rng) -> float:
    """One session: the procedure's own estimate after `trials` answers of this person."""
    proc = make_procedure(spec, int(rng.integers(2**31)))
    for _ in range(trials):
        x = proc.next_level()
        proc.update(x, bool(rng.random() < p_too_slow(x, m_ms, obs)))
    return proc.estimate().threshold_ms


def truth_ms(obs: Observers, target: float) -> float:
    """The median person's point where P(too slow), guess and lapse included, is `target`."""
    m = obs.centre_ms * math.exp(float(np.median(obs.offsets(40_000, np.random.default_rng(7)))))
    core = (target - obs.guess) / (1.0 - obs.guess - obs.lapse)
    return m * math.exp(math.log(core / (1.0 - core)) * obs.w_ln / LN9x2)


def bootstrap_interval(est: np.ndarray, rng, n_boot: int = 1000) -> tuple[float, float]:
    boot = np.median(rng.choice(est, (n_boot, est.size)), axis=1)
    low, high = np.percentile(boot, [2.5, 97.5])
    return float(low), float(high)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=400)
    parser.add_argument("--people", default="4,8,20")
    parser.add_argument("--designs", default="quest,staircase")
    parser.add_argument("--observers", default="alike,differing,steep,skewed")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    print(
        f"adaptive median: coverage of the truth and log-scale bias, {args.studies} studies a "
        f"cell, seed {args.seed}; load average {os.getloadavg()[0]:.1f} at the start"
    )
    print("| design | observers | N | median bias | bootstrap: coverage | sign: coverage |")
    print("|---|---|---:|---:|---:|---:|")
    for design in args.designs.split(","):
        spec, trials = DESIGNS[design]
        target = make_procedure(spec).estimate().target
        for name in args.observers.split(","):
            obs = Observers(**{**OBSERVERS[name].__dict__, "centre_ms": CENTRE_MS})
            true = truth_ms(obs, target)
            for n in (int(v) for v in args.people.split(",")):
                rng = np.random.default_rng([args.seed, n, len(name), DESIGNS_ORDER[design]])
                hits = {"bootstrap": 0, "sign": 0}
                logs = []
                started = time.process_time()
                for _ in range(args.studies):
                    people = obs.centre_ms * np.exp(obs.offsets(n, rng))
                    est = np.array([person_estimate(spec, trials, m, obs, rng) for m in people])
                    logs.append(math.log(float(np.median(est)) / true))
                    for kind, (low, high) in (
                        ("bootstrap", bootstrap_interval(est, rng)),
                        ("sign", median_interval(est)),
                    ):
                        hits[kind] += bool(low <= true <= high)
                cover = {k: v / args.studies for k, v in hits.items()}
                print(
                    f"| {design} | {name} | {n} | {np.mean(logs):+.1%} | "
                    f"{cover['bootstrap']:.3f} | {cover['sign']:.3f} |  "
                    f"<!-- {time.process_time() - started:.0f} CPU-s -->",
                    flush=True,
                )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


DESIGNS_ORDER = {name: i for i, name in enumerate(DESIGNS)}

if __name__ == "__main__":
    raise SystemExit(main())
