"""How often the report withholds an adaptive design's thresholds: separated answers and
random-intercept fits without a finite maximum in small adaptive studies.

Each simulated study has N people who differ (50% points log-normal around 800 ms, SD 0.3
ln ms; width W ln ms; guess = lapse = 0.02) answering "too slow?"; each person's levels are
chosen by a 1-up/2-down staircase or QUEST+ on 100-5000 ms (`uxlab.study.adaptive`, as
`benchmarks/adaptive_pooled_bias.py` runs them). The report's estimator on adaptive
designs (`analysis.small_sample_interval.adaptive_mixed_thresholds`: a logit with a random
intercept per participant, from 4 participants) is applied to each study, and the reason
it withholds the thresholds, if any (`withheld_reason`), is counted: the answers separate
pooled by latency, every person's own answers separate so the fit has no finite maximum,
no finite maximum otherwise, or no convergence. Prints the share withheld per design with
its binomial SE and, for the withheld studies, what the report printed before the check
(the same fit's 50% point with its jackknife-t interval): how often that interval held the
true population 50% point (800 ms: the spread is symmetric on ln ms) and its median width
(high / low); then the date and the load average.

    uv run python benchmarks/adaptive_separation.py [--studies 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time

import numpy as np
import pandas as pd

from analysis.ratings import fit_mixed_cells, person_level_cells
from analysis.small_sample_interval import (
    _mixed_leave_one_out,
    adaptive_mixed_thresholds,
    jackknife_t,
)
from benchmarks.support.adaptive_validation import HIGH_MS, LOW_MS, TrueObserver
from uxlab.study.adaptive import AdaptiveSpec, make_procedure

POP_MS, SD_LN = 800.0, 0.3


def simulate_study(
    method: str, people: int, trials: int, width: float, rng: np.random.Generator
) -> pd.DataFrame:
    """One study's trials: participant, x (ms), ok (1 = not too slow)."""
    rows = []
    for person in range(people):
        obs = TrueObserver(float(POP_MS * np.exp(rng.normal(0, SD_LN))), width)
        spec = AdaptiveSpec(method, LOW_MS, HIGH_MS, down=2, max_reversals=10**6)
        proc = make_procedure(spec, int(rng.integers(1 << 31)))
        for _ in range(trials):
            x = proc.next_level()
            yes = bool(rng.random() < obs.p(x))
            proc.update(x, yes)
            rows.append({"participant": f"p{person}", "x": float(x), "ok": float(not yes)})
    return pd.DataFrame(rows)


def unchecked_mid(df: pd.DataFrame) -> tuple[float, float, float]:
    """The 50% point and jackknife-t interval (ms) the report printed before the check:
    the same fit and interval, whatever the fit's state."""
    cells = person_level_cells(df.assign(_a=df["ok"]), "_a", "x", "participant")
    fit = fit_mixed_cells(*cells, 0, 0)
    est = np.log(fit.thresholds([0.5])["estimate"].to_numpy(float))
    with np.errstate(all="ignore"):
        low, high = jackknife_t(est, _mixed_leave_one_out(fit, *cells, [0.5]))
        return float(np.exp(est[0])), float(np.exp(low[0])), float(np.exp(high[0]))


def reason(why) -> str:
    """A short name for `withheld_reason`'s answer."""
    if why is None:
        return "given"
    if isinstance(why, str):
        return "no maximum" if "no finite maximum" in why else "not converged"
    return "within people" if why.people else "pooled"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", default="staircase,quest")
    ap.add_argument("--people", default="4,8")
    ap.add_argument("--trials", default="10,20,40")
    ap.add_argument("--widths", default="1.0,0.3")
    args = ap.parse_args()
    load, t0 = os.getloadavg()[0], time.perf_counter()
    start = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    kinds = ("pooled", "within people", "no maximum", "not converged")
    print(
        "| design | width (ln ms) | people | trials | withheld | "
        + " | ".join(kinds)
        + " | withheld, before: 50% CI covered 800 ms | its median high/low |"
    )
    print("|---|---:|---:|---:|---:|" + "---:|" * (len(kinds) + 2))
    for method in args.methods.split(","):
        for width in (float(w) for w in args.widths.split(",")):
            for people in (int(p) for p in args.people.split(",")):
                for trials in (int(t) for t in args.trials.split(",")):
                    rng = np.random.default_rng(args.seed)
                    counts = dict.fromkeys((*kinds, "given", "no fit"), 0)
                    covered, ratios = [], []
                    for _ in range(args.studies):
                        df = simulate_study(method, people, trials, width, rng)
                        try:
                            _, why = adaptive_mixed_thresholds(df, "ok", "x")
                        except ValueError:  # answers all on one side: nothing to fit
                            counts["no fit"] += 1
                            continue
                        counts[reason(why)] += 1
                        if why is not None:  # what the report printed before the check
                            _, low, high = unchecked_mid(df)
                            covered.append(bool(low <= POP_MS <= high))
                            ratios.append(high / low if np.isfinite(high / low) else np.inf)
                    fitted = args.studies - counts["no fit"]
                    share = sum(counts[k] for k in kinds) / max(fitted, 1)
                    se = np.sqrt(share * (1 - share) / max(fitted, 1))
                    before = (
                        f"{sum(covered)} / {len(covered)} | ×{np.median(ratios):.2f}"
                        if covered
                        else "– | –"
                    )
                    print(
                        f"| {method} | {width:g} | {people} | {trials} | {share:.1%} ± "
                        f"{se:.1%} | "
                        + " | ".join(str(counts[k]) for k in kinds)
                        + f" | {before} |",
                        flush=True,
                    )
    print(
        f"{args.studies} studies per row, seed {args.seed}; started {start}; load average "
        f"{load:.1f} before, {os.getloadavg()[0]:.1f} after; {time.perf_counter() - t0:.0f} s "
        "wall"
    )


if __name__ == "__main__":
    main()
