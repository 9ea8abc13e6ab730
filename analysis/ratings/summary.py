"""Rating summaries per condition: MOS with its interval, SOS, %GoB and %PoW
(see `analysis.ratings`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from analysis.bootstrap import cluster_resample_weights


def scale_midpoint(scale_size: int) -> float:
    """(n + 1) / 2: 3 on a 5-point scale."""
    return (scale_size + 1) / 2


def participant_bootstrap_mean(
    ratings: np.ndarray,
    participants: np.ndarray,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[float, float]:
    """Percentile interval of the mean rating, resampling participants with all their ratings.

    Every replicate is a mean of observed ratings, so the interval lies within the range of
    the ratings (and the scale). NaN with fewer than 2 participants or no resamples.
    """
    keys, inv = np.unique(np.asarray(participants).astype(str), return_inverse=True)
    if keys.size < 2 or n_boot < 1:
        return float("nan"), float("nan")
    sums = np.bincount(inv, weights=np.asarray(ratings, dtype=float), minlength=keys.size)
    counts = np.bincount(inv, minlength=keys.size).astype(float)
    weights = cluster_resample_weights(np.random.default_rng(seed), n_boot, keys.size)
    means = (weights @ sums) / (weights @ counts)
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def participant_jackknife_mean(
    ratings: np.ndarray, participants: np.ndarray, scale_size: int, alpha: float = 0.05
) -> tuple[float, float]:
    """The mean rating -/+ t on N - 1 df x its leave-one-participant-out jackknife SE (the
    report's interval for every figure over participants), cut to the scale 1..scale_size
    (the population's mean rating lies on it). NaN with fewer than 2 participants."""
    keys, inv = np.unique(np.asarray(participants).astype(str), return_inverse=True)
    if keys.size < 2:
        return float("nan"), float("nan")
    r = np.asarray(ratings, dtype=float)
    sums = np.bincount(inv, weights=r, minlength=keys.size)
    counts = np.bincount(inv, minlength=keys.size).astype(float)
    loo = (sums.sum() - sums) / (counts.sum() - counts)
    n = keys.size
    se = np.sqrt((n - 1) / n * np.sum((loo - loo.mean()) ** 2))
    half = stats.t.ppf(1 - alpha / 2, n - 1) * se
    mean = sums.sum() / counts.sum()
    return float(max(mean - half, 1.0)), float(min(mean + half, float(scale_size)))


def rating_summary(
    trials: pd.DataFrame,
    rating: str,
    by: list[str],
    scale_size: int,
    alpha: float = 0.05,
    interval: str = "t",
    n_boot: int = 1000,
    seed: int = 0,
    min_participants: int = 2,
) -> pd.DataFrame:
    """Per condition: n, MOS, its CI, SOS, %GoB, %PoW (ratings on 1..scale_size).

    `interval`: "t" (a t-interval over the ratings), "participants"
    (`participant_bootstrap_mean`) or "jackknife" (`participant_jackknife_mean`); the last
    two NaN below `min_participants` in a condition.
    """
    df = trials.dropna(subset=[rating])
    mid = scale_midpoint(scale_size)
    groups = df.groupby(by) if by else [((), df)]
    rows = []
    for i, (key, part) in enumerate(groups):
        key = key if isinstance(key, tuple) else (key,)
        r = part[rating].to_numpy(dtype=float)
        n = len(r)
        mos = r.mean()
        sos = r.std(ddof=1) if n > 1 else np.nan
        if interval in ("participants", "jackknife"):
            low, high = float("nan"), float("nan")
            if part["participant"].nunique() >= min_participants and interval == "jackknife":
                low, high = participant_jackknife_mean(
                    r, part["participant"].to_numpy(), scale_size, alpha
                )
            elif part["participant"].nunique() >= min_participants:
                low, high = participant_bootstrap_mean(
                    r, part["participant"].to_numpy(), n_boot, seed + i, alpha
                )
        else:
            half = stats.t.ppf(1 - alpha / 2, n - 1) * sos / np.sqrt(n) if n > 1 else np.nan
            low, high = mos - half, mos + half
        row = dict(zip(by, key, strict=True))
        row.update(
            {
                "n": n,
                "n_participants": part["participant"].nunique(),
                "mos": mos,
                "ci_low": low,
                "ci_high": high,
                "sos": sos,
                "pct_gob": 100 * np.mean(r > mid),
                "pct_pow": 100 * np.mean(r < mid),
            }
        )
        rows.append(row)
    return pd.DataFrame(rows)
