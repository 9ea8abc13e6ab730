"""Simulated binary-judgement data with a known truth, for tests and benchmarks.

Pure numpy (no uxlab, no fitter code; pandas only to hand back a trial table): the truth
is `psychometric_function`, the module uxlab's observers use, written independently of the
fitter's `analysis.sigmoids`, so a parameterisation bug in the fitter cannot cancel out.

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

import psychometric_function as pf


def true_core(x_ms, threshold_ms: float, width_log: float, sigmoid: str = "logistic"):
    """The observer's unscaled F at stimulus x_ms (rising in x)."""
    u = np.log(np.asarray(x_ms, dtype=float))
    return np.asarray(pf.core(u, math.log(threshold_ms), width_log, sigmoid), dtype=float)


def true_threshold_ms(
    level: float, threshold_ms: float, width_log: float, sigmoid: str = "logistic"
) -> float:
    """The stimulus (ms) where the observer's F equals `level`."""
    return pf.threshold_ms(level, threshold_ms, width_log, sigmoid)


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
    psi = pf.with_guess_lapse(true_core(x_ms, threshold_ms, width_log, sigmoid), guess, lapse)
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
