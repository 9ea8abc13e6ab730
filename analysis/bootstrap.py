"""Bootstrap confidence intervals: percentile and BCa (bias-corrected and accelerated).

BCa (Efron 1987) shifts the percentile points by a bias correction z0, the normal quantile
of the share of bootstrap estimates below the point estimate, and an acceleration ``a``
from the skewness of jackknife estimates (leave one trial, or one block, out)::

    alpha_j = Phi(z0 + (z0 + z_j) / (1 - a (z0 + z_j)))

Both work column-wise on ``[B, K]`` arrays of bootstrap estimates and ignore NaN rows
(bootstrap fits that failed; the caller reports how many).
"""

from __future__ import annotations

import numpy as np
from scipy import special


def percentile_interval(samples: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed percentile interval of each column of samples [B, K]."""
    samples = np.asarray(samples, dtype=float)
    low = np.nanquantile(samples, alpha / 2.0, axis=0)
    high = np.nanquantile(samples, 1.0 - alpha / 2.0, axis=0)
    return low, high


def jackknife_acceleration(jack: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """BCa acceleration from jackknife estimates jack [J, K] (weights = multiplicities)."""
    jack = np.asarray(jack, dtype=float)
    w = np.ones(jack.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    w = w[:, None] * np.isfinite(jack)
    jack = np.where(np.isfinite(jack), jack, 0.0)
    total = np.sum(w, axis=0)
    mean = np.sum(w * jack, axis=0) / np.maximum(total, 1e-300)
    d = mean - jack
    num = np.sum(w * d**3, axis=0)
    den = 6.0 * np.sum(w * d**2, axis=0) ** 1.5
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = np.where(den > 0, num / den, 0.0)
    return acc


def bca_interval(
    samples: np.ndarray,
    estimate: np.ndarray,
    acceleration: np.ndarray,
    alpha: float = 0.05,
) -> tuple[np.ndarray, np.ndarray]:
    """BCa interval of each column of samples [B, K] around estimate [K]."""
    samples = np.asarray(samples, dtype=float)
    estimate = np.asarray(estimate, dtype=float)
    low = np.full(samples.shape[1], np.nan)
    high = np.full(samples.shape[1], np.nan)
    for j in range(samples.shape[1]):
        col = samples[:, j]
        col = col[np.isfinite(col)]
        if col.size < 10 or not np.isfinite(estimate[j]):
            continue
        below = (np.sum(col < estimate[j]) + 0.5 * np.sum(col == estimate[j])) / col.size
        below = np.clip(below, 1.0 / (col.size + 1), col.size / (col.size + 1))
        z0 = special.ndtri(below)
        acc = float(acceleration[j])
        probs = []
        for tail in (alpha / 2.0, 1.0 - alpha / 2.0):
            zt = z0 + special.ndtri(tail)
            probs.append(special.ndtr(z0 + zt / (1.0 - acc * zt)))
        low[j], high[j] = np.quantile(col, probs)
    return low, high


def bootstrap_interval(
    samples: np.ndarray,
    estimate: np.ndarray,
    jack: np.ndarray | None,
    weights: np.ndarray | None,
    method: str,
    alpha: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The (1 - alpha) interval of each column of samples [B, K] by `method`: "percentile",
    or "bca" around estimate [K] with the acceleration of jackknife estimates jack [J, K]
    (weights = their multiplicities). No samples: NaN intervals."""
    if method == "percentile" or samples.shape[0] == 0:
        if samples.shape[0] == 0:
            nan = np.full(np.size(estimate), np.nan)
            return nan, nan
        return percentile_interval(samples, alpha)
    if method != "bca":
        raise ValueError(f"ci_method {method!r} is not known; use 'bca' or 'percentile'")
    if jack is None:
        raise ValueError("a BCa interval needs the jackknife estimates (jack)")
    return bca_interval(samples, estimate, jackknife_acceleration(jack, weights), alpha)


def widen_to_percentile(
    low: np.ndarray, high: np.ndarray, samples: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """The union of the interval [low, high] with the percentile interval of samples [B, K]
    (a second bootstrap, e.g. from a shallower model); no samples: [low, high] unchanged."""
    if samples.shape[0] == 0:
        return low, high
    s_low, s_high = percentile_interval(samples, alpha)
    return np.fmin(low, s_low), np.fmax(high, s_high)


def cluster_resample_weights(rng: np.random.Generator, n_boot: int, n_clusters: int) -> np.ndarray:
    """[n_boot, n_clusters] multiplicities of a cluster bootstrap: each replicate draws
    `n_clusters` clusters (participants) with replacement; entry [b, c] counts how often
    replicate b drew cluster c. A replicate's data are then the weighted sum of the
    clusters' own (counts, scores), so all replicates are formed at once."""
    draws = rng.integers(0, n_clusters, size=(n_boot, n_clusters))
    weights = np.zeros((n_boot, n_clusters))
    np.add.at(weights, (np.repeat(np.arange(n_boot), n_clusters), draws.ravel()), 1.0)
    return weights
