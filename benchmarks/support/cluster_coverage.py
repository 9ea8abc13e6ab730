"""How often the participant-resampled interval of the pooled threshold covers the truth.

The percentile cluster bootstrap (`analysis.psychometric.population_threshold`) resamples
participants; with few of them its interval is too narrow: the resamples can only recombine
the few people there are. This module measures by how much, with the project's observers
(`uxlab.simulate.observers.Observer`, the population of `PopulationTruth`) on the design of
`studies/ttft-threshold.toml` (its TTFT levels, `repeats x blocks` main trials per level):
`coverage_table(ns, n_datasets)` simulates `n_datasets` independent studies of each size N
(different people every time), fits each and counts how often the interval holds the
population's pooled threshold (`pooled_thresholds_ms`: the 25 / 50 / 75% points of the
curve pooled over people). `benchmarks/cluster_bootstrap_coverage.py` prints the table.
The report no longer uses this interval for the population thresholds: it uses the
participant jackknife-t (`analysis.small_sample_interval`), measured against it by
`benchmarks/small_sample_coverage.py`; the MOS interval (`mos_coverage_table`) is still a
participant bootstrap.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from uxlab.simulate.observers import Cues, Observer, PopulationTruth, pooled_thresholds_ms

LEVELS = (0.25, 0.5, 0.75)


@dataclass(frozen=True)
class Design:
    """Fixed TTFT levels (ms) and main trials per level and participant."""

    levels_ms: tuple[float, ...]
    trials_per_level: int


def study_design(study_file: Path) -> Design:
    """The TTFT levels and main trials per level of a fixed-level study file."""
    from uxlab.study import load_study

    study = load_study(study_file)
    factor = next(f for f in study.factors if f.name == "ttft_ms")
    per_level = int(study.design.repeats) * int(study.design.blocks)
    return Design(tuple(float(v) for v in factor.levels), per_level)


def simulate_study(
    design: Design, n_people: int, rng: np.random.Generator, truth: PopulationTruth
) -> pd.DataFrame:
    """One study's yes/no answers ("acceptable?", 1 = yes): participant, ttft_ms, y."""
    rows = []
    for p in range(n_people):
        observer = Observer.draw(truth, rng)
        for level in design.levels_ms:
            p_slow = observer.p_too_slow(Cues(level, None, 0.0, level))
            slow = rng.random(design.trials_per_level) < p_slow
            rows.extend((f"P{p:03d}", level, int(not s)) for s in slow)
    return pd.DataFrame(rows, columns=["participant", "ttft_ms", "y"])


def coverage_table(
    ns: tuple[int, ...],
    n_datasets: int,
    design: Design,
    n_boot: int = 1000,
    seed: int = 0,
    truth: PopulationTruth | None = None,
) -> pd.DataFrame:
    """Per N and level: coverage of the 95% interval, median width (high / low), share of
    degenerate intervals (a bound equal to the estimate, or a span under 1%), seconds."""
    from analysis.psychometric import population_threshold
    from analysis.report.support import estimate_flags  # the report's own rule

    truth = truth or PopulationTruth()
    true_ms = pooled_thresholds_ms(
        truth.threshold_ms, truth.width_log, truth.between_sd_log, LEVELS
    )
    rows = []
    for n in ns:
        rng = np.random.default_rng([seed, n])
        hits = {lv: [] for lv in LEVELS}
        ratios = {lv: [] for lv in LEVELS}
        degenerate = {lv: [] for lv in LEVELS}
        started = time.process_time()
        for d in range(n_datasets):
            df = simulate_study(design, n, rng, truth)
            fit = population_threshold(df, "ttft_ms", "y", "participant", n_boot, seed + d)
            for r in fit.itertuples():
                level = float(r.level)
                ok = bool(np.isfinite(r.ci_low) and np.isfinite(r.ci_high))
                hits[level].append(ok and r.ci_low <= true_ms[str(level)] <= r.ci_high)
                ratios[level].append(r.ci_high / r.ci_low if ok else math.nan)
                degenerate[level].append(
                    ok and bool(estimate_flags(r.estimate, r.ci_low, r.ci_high).degenerate)
                )
        cpu_s = time.process_time() - started
        for level in LEVELS:
            cover = float(np.mean(hits[level]))
            rows.append(
                {
                    "n_participants": n,
                    "level": level,
                    "datasets": n_datasets,
                    "coverage": cover,
                    "mc_se": math.sqrt(max(cover * (1 - cover), 1e-12) / n_datasets),
                    "median_width_ratio": float(np.nanmedian(ratios[level])),
                    "share_degenerate": float(np.mean(degenerate[level])),
                    "cpu_s": cpu_s,
                }
            )
    return pd.DataFrame(rows)


def true_mos(level_ms: float, truth: PopulationTruth, scale: int = 5) -> float:
    """The population's mean rating at a TTFT level: each person's expected rating
    1 + sum_k P(latent > cut_k), latent = -logit F_i + Logistic(0, 1) (as `Observer.rating`),
    averaged over people's ln thresholds (Gauss-Hermite, 61 nodes)."""
    from psychometric_function import log_odds, logistic
    from uxlab.simulate.observers import likert_cuts

    nodes, weights = np.polynomial.hermite_e.hermegauss(61)
    weights = weights / weights.sum()
    m_log = math.log(truth.threshold_ms) + truth.between_sd_log * nodes
    logit_f = log_odds(math.log(level_ms), m_log, truth.width_log)
    cuts = likert_cuts(truth, scale)
    above = logistic(-(cuts[None, :] + logit_f[:, None]))  # P(latent > cut)
    return float(weights @ (1.0 + above.sum(axis=1)))


def mos_coverage_table(
    ns: tuple[int, ...],
    n_datasets: int,
    design: Design,
    n_boot: int = 1000,
    seed: int = 0,
    truth: PopulationTruth | None = None,
) -> pd.DataFrame:
    """Per N: how often the MOS interval holds the population's mean rating, for the
    t-interval over ratings, the participant bootstrap and the participant jackknife-t (the
    report's; `analysis.ratings.rating_summary`), averaged over the design's levels; and how
    often each leaves 1-5."""
    from analysis.ratings import rating_summary

    truth = truth or PopulationTruth()
    true_by_level = {lv: true_mos(lv, truth) for lv in design.levels_ms}
    rows = []
    for n in ns:
        rng = np.random.default_rng([seed, n, 1])
        hits = {"t": [], "participants": [], "jackknife": []}
        outside = {"t": [], "participants": [], "jackknife": []}
        for d in range(n_datasets):
            records = []
            for p in range(n):
                observer = Observer.draw(truth, rng)
                for level in design.levels_ms:
                    cues = Cues(level, None, 0.0, level)
                    for _ in range(design.trials_per_level):
                        records.append((f"P{p:03d}", level, observer.rating(cues, 5, rng)))
            df = pd.DataFrame(records, columns=["participant", "ttft_ms", "q"])
            for method in hits:
                table = rating_summary(
                    df, "q", ["ttft_ms"], 5, interval=method, n_boot=n_boot, seed=seed + d
                )
                for r in table.itertuples():
                    true = true_by_level[float(r.ttft_ms)]
                    ok = bool(np.isfinite(r.ci_low))
                    hits[method].append(ok and r.ci_low <= true <= r.ci_high)
                    outside[method].append(ok and (r.ci_low < 1 or r.ci_high > 5))
        for method in hits:
            cover = float(np.mean(hits[method]))
            rows.append(
                {
                    "n_participants": n,
                    "interval": method,
                    "coverage": cover,
                    "mc_se": math.sqrt(max(cover * (1 - cover), 1e-12) / len(hits[method])),
                    "share_off_scale": float(np.mean(outside[method])),
                }
            )
    return pd.DataFrame(rows)
