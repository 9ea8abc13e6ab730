"""The validation grid's pooled cells: coverage and bias of the report's population thresholds.

A cell is a study: N participants x who they are x how the latencies were chosen.

* Observers (everyone: logistic in ln ms, width 1.0 ln ms F 0.1 -> 0.9, guess = lapse =
  0.02, "too slow?"): `alike` (everyone's 50% point at 800 ms), `differing` (ln 50% points
  normal around ln 800 ms, SD 0.3), `skewed` (the same SD, but a right-skewed spread: a
  standardised gamma of shape 2, skewness 1.4, so the median person and the population
  curve are apart).
* Designs (48 trials per person, 100-5000 ms): `fixed` (8 log-spaced levels x 6 trials, the
  design of studies/ttft-threshold.toml), `staircase` (1-up/2-down) and `quest` (QUEST+),
  run by `uxlab.study.adaptive` as a session would.
* The truth is the population curve's point (the report's default estimand): where the
  share of people whose F has crossed, averaged over the population, reaches 25 / 50 / 75%.
* Estimators, as the report picks them: on a fixed design the pooled fit
  (`analysis.psychometric.population_threshold`, percentile participant bootstrap with the
  pooled counts' parametric floor) and the participant jackknife-t
  (`analysis.small_sample_interval.population_threshold_small_n`); on an adaptive design
  the random-intercept logit (`analysis.ratings.fit_mixed_acceptability`) with its
  participant bootstrap and with the jackknife-t
  (`analysis.small_sample_interval.mixed_threshold_small_n`); or, with `adaptive =
  "psychometric-mixed"`, the random-intercept psychometric function with guess and lapse
  (`benchmarks.support.psychometric_mixed`) with the jackknife-t.

`run_pooled_cell` returns per level: coverage of each interval, relative bias of the
estimate and the median interval width (high / low); with `n_boot = 0` only the
jackknife-t interval is computed (the report's; the mixed model's bootstrap costs seconds
per study). benchmarks/validation_grid.py prints
the table; tests/test_validation_grid.py runs a small cell.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize

from benchmarks.support.adaptive_validation import HIGH_MS, LOW_MS, TrueObserver

POP_MS, WIDTH_LN, SD_LN = 800.0, 1.0, 0.3
LEVELS = (0.25, 0.5, 0.75)
FIXED_LEVELS_MS = tuple(float(v) for v in np.geomspace(100.0, 5000.0, 8))
FIXED_REPEATS = 6
ADAPTIVE_TRIALS = 48
OBSERVERS = ("alike", "differing", "skewed")
DESIGNS = ("fixed", "staircase", "quest")
# the adaptive designs' estimators: the random-intercept logit (analysis.ratings) and the
# random-intercept psychometric function with guess and lapse (support.psychometric_mixed)
ADAPTIVE_ESTIMATORS = ("logit-mixed", "psychometric-mixed")
GAMMA_SHAPE = 2.0
_LOGISTIC_SCALE = WIDTH_LN / (2 * math.log(9))


@dataclass(frozen=True)
class PooledCell:
    """One study design of the pooled grid."""

    people: int
    observers: str
    design: str


def person_offsets(observers: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """ln(50% point / 800 ms) of `size` people drawn from the observers' population."""
    if observers == "alike":
        return np.zeros(size)
    if observers == "differing":
        return SD_LN * rng.normal(size=size)
    if observers == "skewed":
        g = rng.gamma(GAMMA_SHAPE, size=size)
        return SD_LN * (g - GAMMA_SHAPE) / math.sqrt(GAMMA_SHAPE)
    raise ValueError(f"observers {observers!r}: use one of {', '.join(OBSERVERS)}")


def population_truth_ms(observers: str, levels: tuple[float, ...] = LEVELS) -> dict[float, float]:
    """Where the population curve (mean F over people, no guess / lapse) crosses each level
    (a fixed 40,000-person sample of the population; median person: 800 ms x e^median)."""
    m = math.log(POP_MS) + person_offsets(observers, 40_000, np.random.default_rng(2026))
    out = {}
    for level in levels:

        def share(u: float, level: float = level) -> float:
            return float(np.mean(1.0 / (1.0 + np.exp(-(u - m) / _LOGISTIC_SCALE)))) - level

        out[level] = float(np.exp(optimize.brentq(share, math.log(10), math.log(1e5))))
    return out


def simulate_pooled_study(cell: PooledCell, rng: np.random.Generator) -> pd.DataFrame:
    """One study's trials: participant, x (ms), y (1 = too slow)."""
    from uxlab.study.adaptive import AdaptiveSpec, make_procedure

    offsets = person_offsets(cell.observers, cell.people, rng)
    frames = []
    for person, off in enumerate(offsets):
        obs = TrueObserver(POP_MS * math.exp(off), WIDTH_LN)
        if cell.design == "fixed":
            x = np.repeat(FIXED_LEVELS_MS, FIXED_REPEATS)
            p = np.array([obs.p(v) for v in FIXED_LEVELS_MS]).repeat(FIXED_REPEATS)
            y = (rng.random(x.size) < p).astype(float)
        else:
            spec = AdaptiveSpec(cell.design, LOW_MS, HIGH_MS, down=2, max_reversals=10**6)
            proc = make_procedure(spec, int(rng.integers(1 << 31)))
            x, y = np.empty(ADAPTIVE_TRIALS), np.empty(ADAPTIVE_TRIALS)
            for t in range(ADAPTIVE_TRIALS):
                x[t] = proc.next_level()
                y[t] = float(rng.random() < obs.p(x[t]))
                proc.update(x[t], bool(y[t]))
        frames.append(pd.DataFrame({"participant": f"p{person:03d}", "x": x, "y": y}))
    return pd.concat(frames, ignore_index=True)


def fit_pooled_study(
    df: pd.DataFrame, design: str, n_boot: int, seed: int, adaptive: str = ADAPTIVE_ESTIMATORS[0]
) -> dict[str, pd.DataFrame]:
    """{interval name: table with level, estimate, ci_low, ci_high} for one study; the
    first table's estimate is the one scored for bias."""
    from analysis.small_sample_interval import (
        POPULATION_SIGMOID,
        mixed_threshold_small_n,
        population_threshold_small_n,
    )

    if design != "fixed" and adaptive == "psychometric-mixed":
        from benchmarks.support.psychometric_mixed import mixed_psychometric_thresholds

        tables = mixed_psychometric_thresholds(df, "x", "y", "participant", rising=True)
        return {"jackknife-t": tables["population"]}
    if design == "fixed":
        from analysis.psychometric import population_threshold

        # the same pooled estimate as the report's, resampled the other way
        boot = population_threshold(
            df, "x", "y", "participant", n_boot, seed, sigmoid=POPULATION_SIGMOID
        )
        jack = population_threshold_small_n(df, "x", "y", "participant", n_boot, seed)
    else:
        acceptable = df.assign(ok=1.0 - df["y"])
        boot, jack = mixed_threshold_small_n(acceptable, "ok", "x", "participant", n_boot, seed)
    return {"bootstrap": boot, "jackknife-t": jack}


def run_pooled_cell(
    cell: PooledCell,
    n_studies: int,
    n_boot: int,
    seed: int,
    adaptive: str = ADAPTIVE_ESTIMATORS[0],
) -> list[dict[str, object]]:
    """One row per level: cell, level, truth, relative bias, coverage and median width
    ratio of each interval, seconds per study."""
    truth = population_truth_ms(cell.observers)
    rng = np.random.default_rng([seed, cell.people, OBSERVERS.index(cell.observers)])
    est: dict[float, list[float]] = {level: [] for level in LEVELS}
    hits: dict[str, dict[float, list[bool]]] = {}
    ratio: dict[str, dict[float, list[float]]] = {}
    t0 = time.perf_counter()
    for s in range(n_studies):
        df = simulate_pooled_study(cell, rng)
        fits = fit_pooled_study(df, cell.design, n_boot, seed + s, adaptive)
        for i, (name, table) in enumerate(fits.items()):
            for r in table.itertuples():
                level = float(r.level)
                ok = bool(np.isfinite(r.ci_low) and np.isfinite(r.ci_high))
                hits.setdefault(name, {}).setdefault(level, []).append(
                    ok and r.ci_low <= truth[level] <= r.ci_high
                )
                ratio.setdefault(name, {}).setdefault(level, []).append(
                    r.ci_high / r.ci_low if ok else math.nan
                )
                if i == 0:
                    est[level].append(r.estimate)
    seconds = (time.perf_counter() - t0) / n_studies
    rows = []
    for level in LEVELS:
        e = np.array(est[level], dtype=float)
        row = {
            "people": cell.people,
            "observers": cell.observers,
            "design": cell.design,
            "level": level,
            "truth_ms": truth[level],
            "rel_bias": float(np.nanmean(e) / truth[level] - 1.0),
            "failed": float(np.mean(~np.isfinite(e))),
            "studies": n_studies,
            "s_per_study": seconds,
        }
        for name in hits:  # NaN: no interval of that kind was computed (B = 0)
            widths = np.array(ratio[name][level], dtype=float)
            some = bool(np.isfinite(widths).any())
            row[f"coverage {name}"] = float(np.mean(hits[name][level])) if some else math.nan
            row[f"ratio {name}"] = float(np.nanmedian(widths)) if some else math.nan
        rows.append(row)
    return rows
