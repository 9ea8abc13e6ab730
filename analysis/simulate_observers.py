"""Simulated binary-judgement data with a known truth, for tests and benchmarks.

Pure numpy (no uxlab, no fitter code; pandas only to hand back a trial table): the truth
is written out here independently of `analysis.sigmoids`, so a parameterisation bug in the
fitter cannot cancel out.

An observer answers a yes/no question at stimulus x (ms) with probability::

    rising ("too slow?"):       P(yes) = guess + (1 - guess - lapse) * F(log x)
    falling ("acceptable?"):    P(yes) = 1 - [guess + (1 - guess - lapse) * F(log x)]

F has F(log threshold_ms) = 0.5 and climbs from 0.1 to 0.9 over ``width_log`` (natural log
units: the 90% point is exp(width_log) times the 10% point). Optional overdispersion
``eta`` draws each level's probability from a Beta with that mean and concentration
1/eta**2 - 1 (psignifit's beta-binomial model).
"""

from __future__ import annotations

import math

import numpy as np

_ERF = np.frompyfunc(math.erf, 1, 1)


def _std_cdf(z: np.ndarray, sigmoid: str) -> np.ndarray:
    z = np.asarray(z, dtype=float)
    if sigmoid == "logistic":
        return 1.0 / (1.0 + np.exp(-z))
    if sigmoid == "gumbel":
        return 1.0 - np.exp(-np.exp(z))
    if sigmoid == "normal":
        return 0.5 * (1.0 + _ERF(z / math.sqrt(2.0)).astype(float))
    raise ValueError(f"unknown sigmoid {sigmoid!r}")


def _std_ppf(p: float, sigmoid: str) -> float:
    if sigmoid == "logistic":
        return math.log(p / (1.0 - p))
    if sigmoid == "gumbel":
        return math.log(-math.log(1.0 - p))
    lo, hi = -10.0, 10.0  # bisection keeps this module free of scipy
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if 0.5 * (1.0 + math.erf(mid / math.sqrt(2.0))) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def true_core(x_ms, threshold_ms: float, width_log: float, sigmoid: str = "logistic"):
    """The observer's unscaled F at stimulus x_ms (rising in x)."""
    a = _std_ppf(0.5, sigmoid)
    c = _std_ppf(0.9, sigmoid) - _std_ppf(0.1, sigmoid)
    z = a + c * (np.log(np.asarray(x_ms, dtype=float)) - math.log(threshold_ms)) / width_log
    return _std_cdf(z, sigmoid)


def true_threshold_ms(
    level: float, threshold_ms: float, width_log: float, sigmoid: str = "logistic"
) -> float:
    """The stimulus (ms) where the observer's F equals `level`."""
    a = _std_ppf(0.5, sigmoid)
    c = _std_ppf(0.9, sigmoid) - _std_ppf(0.1, sigmoid)
    return threshold_ms * math.exp(width_log * (_std_ppf(level, sigmoid) - a) / c)


def p_yes(
    x_ms,
    threshold_ms: float,
    width_log: float,
    guess: float = 0.0,
    lapse: float = 0.0,
    sigmoid: str = "logistic",
    direction: str = "rising",
) -> np.ndarray:
    """Probability of a "yes" at each stimulus."""
    psi = guess + (1.0 - guess - lapse) * true_core(x_ms, threshold_ms, width_log, sigmoid)
    return psi if direction == "rising" else 1.0 - psi


def log_spaced_levels(threshold_ms: float, n_levels: int = 7, span: float = 16.0) -> np.ndarray:
    """n_levels stimuli evenly spaced in log ms, centred on threshold_ms, max/min = span."""
    half = math.log(span) / 2.0
    return np.exp(
        np.linspace(math.log(threshold_ms) - half, math.log(threshold_ms) + half, n_levels)
    )


def simulate_counts(
    levels_ms,
    n_per_level: int | np.ndarray,
    threshold_ms: float,
    width_log: float,
    *,
    guess: float = 0.0,
    lapse: float = 0.0,
    eta: float = 0.0,
    sigmoid: str = "logistic",
    direction: str = "rising",
    seed: int | np.random.Generator = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One dataset: (levels_ms, n_yes, n_total) per level."""
    rng = np.random.default_rng(seed)
    levels = np.asarray(levels_ms, dtype=float)
    n_total = np.broadcast_to(np.asarray(n_per_level, dtype=int), levels.shape).copy()
    p = p_yes(levels, threshold_ms, width_log, guess, lapse, sigmoid, direction)
    if eta > 0:
        conc = 1.0 / eta**2 - 1.0
        p = rng.beta(np.maximum(p * conc, 1e-9), np.maximum((1.0 - p) * conc, 1e-9))
    n_yes = rng.binomial(n_total, p)
    return levels, n_yes, n_total


def simulate_trials(
    levels_ms,
    n_per_level: int,
    threshold_ms: float,
    width_log: float,
    *,
    n_participants: int = 1,
    between_sd_log: float = 0.0,
    guess: float = 0.0,
    lapse: float = 0.0,
    sigmoid: str = "logistic",
    direction: str = "rising",
    stimulus: str = "ttft_ms",
    response: str = "q_yes",
    seed: int = 0,
):
    """A trial table as a pandas DataFrame (one row per trial, shuffled per participant).

    Each participant's threshold is threshold_ms * exp(N(0, between_sd_log)); the
    columns are participant, trial_index, the stimulus column, the response column (0/1)
    and true_threshold_ms (that participant's 50% point).
    """
    import pandas as pd  # only for the table; the simulation itself is numpy

    rng = np.random.default_rng(seed)
    levels = np.asarray(levels_ms, dtype=float)
    frames = []
    for pid in range(n_participants):
        own_ms = (
            threshold_ms * math.exp(rng.normal(0.0, between_sd_log))
            if between_sd_log
            else (threshold_ms)
        )
        x = rng.permutation(np.repeat(levels, n_per_level))
        p = p_yes(x, own_ms, width_log, guess, lapse, sigmoid, direction)
        frames.append(
            pd.DataFrame(
                {
                    "participant": f"p{pid:03d}",
                    "trial_index": np.arange(x.size),
                    stimulus: x,
                    response: (rng.random(x.size) < p).astype(int),
                    "true_threshold_ms": own_ms,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
