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
