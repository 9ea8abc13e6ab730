"""How many trials each procedure needs to land within ±15% of the true threshold in 90% of runs.

Simulated observers (thresholds log-uniform in 300..2000 ms, widths 1.0/1.6/2.2 ln ms,
guess = lapse = 0.02) answer "too slow?" on a 100..5000 ms range. For each method and
trial budget the share of observers whose estimate is within ±15% of their truth (at the
method's target: 50% for QUEST+, interleaved and constant stimuli, 29.3% / 20.6% for the
1-up/2-down and 1-up/3-down staircases) is printed, then the smallest budget reaching 90%.

    python benchmarks/adaptive_validation.py [--observers 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

from benchmarks.support.adaptive_validation import (
    METHODS,
    draw_observers,
    shares_within,
    trials_needed,
)

BUDGETS = [10, 20, 30, 40, 60, 80, 100, 130, 160, 200, 250, 300]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--observers", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset")
    args = ap.parse_args()
    observers = draw_observers(args.observers, args.seed)
    print(f"{args.observers} simulated observers, seed {args.seed}; share within ±15% of truth")
    print("method            " + "".join(f"{b:>6}" for b in BUDGETS) + "   needed (90%)   s")
    for method in args.methods.split(","):
        t0 = time.perf_counter()
        shares = shares_within(method, BUDGETS, observers, args.seed)
        need = trials_needed(shares)
        cells = "".join(f"{shares[b]:6.2f}" for b in BUDGETS)
        need_text = f"{need}" if need is not None else f">{BUDGETS[-1]}"
        print(f"{method:<18}{cells}   {need_text:>12}   {time.perf_counter() - t0:4.0f}")


if __name__ == "__main__":
    main()
