"""The psychometric function of log latency: one home for the maths of the simulated truth.

For a stimulus x in ms and u = ln x::

    F(u; m, w) = S(a + c * (u - m) / w),   a = S^-1(0.5),   c = S^-1(0.9) - S^-1(0.1)
    psi = guess + (1 - guess - lapse) * F

so F(m) = 0.5 and ``w`` (ln ms) is the distance from F = 0.1 to F = 0.9 (the
parameterisation of psignifit). S is a standard CDF: the logistic (a = 0, c = 2 ln 9, the
family every simulated observer and adaptive procedure uses), ``gumbel`` (a Weibull on
ms) or ``normal``.

Who uses it: uxlab's simulated observers, adaptive procedures, demo truth and planning,
and analysis's simulated observers for recovery tests. It imports neither ``uxlab`` nor
``analysis`` (import-linter contract "psychometric-function-alone"), so both may import
it. The fitter's own families (``analysis.sigmoids``: densities and derivatives for the
optimiser, on scipy's stable functions) are written separately on purpose: a recovery test
fits data drawn from this module, and a parameterisation bug shared by the simulation and
the fitter would cancel out there.

Scalars (Python floats) go through `math`, arrays through numpy, so an observer's
per-trial probability costs no array overhead.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

FAMILIES = ("logistic", "gumbel", "normal")
LOGISTIC_C = 2.0 * math.log(9.0)
"""c of the logistic: F = logistic(c * (u - m) / w) climbs from 0.1 to 0.9 over w."""
LOGISTIC_SD_PER_WIDTH = math.pi / math.sqrt(3.0) / LOGISTIC_C
"""A logistic F with width w has SD 0.413 w (the logistic's SD is pi / sqrt(3))."""

_ERF = np.frompyfunc(math.erf, 1, 1)


def logistic(z: Any) -> Any:
    """1 / (1 + exp(-z)): a float for a float, an array for an array."""
    if isinstance(z, float | int):
        return 1.0 / (1.0 + math.exp(-z))
    return 1.0 / (1.0 + np.exp(-np.asarray(z, dtype=float)))


def logit(p: float) -> float:
    """ln(p / (1 - p)), the inverse of `logistic` (0 < p < 1)."""
    return math.log(p / (1.0 - p))


def log_odds(u: Any, m_log: Any, width_log: Any) -> Any:
    """logit F of the logistic family at log stimulus u: c * (u - m) / w."""
    return LOGISTIC_C * (u - m_log) / width_log


def _standard_cdf(z: Any, family: str) -> Any:
    if family == "logistic":
        return logistic(z)
    z = np.asarray(z, dtype=float)
    if family == "gumbel":
        return 1.0 - np.exp(-np.exp(z))
    return 0.5 * (1.0 + np.asarray(_ERF(z / math.sqrt(2.0)), dtype=float))


def _standard_ppf(p: float, family: str) -> float:
    if family == "logistic":
        return logit(p)
    if family == "gumbel":
        return math.log(-math.log(1.0 - p))
    lo, hi = -10.0, 10.0  # bisection: no scipy in this module
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if 0.5 * (1.0 + math.erf(mid / math.sqrt(2.0))) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _a_c(family: str) -> tuple[float, float]:
    if family not in FAMILIES:
        raise ValueError(f"unknown sigmoid {family!r}; use one of {', '.join(FAMILIES)}")
    if family == "logistic":
        return 0.0, LOGISTIC_C  # in closed form: logit 0.5 = 0, logit 0.9 - logit 0.1 = 2 ln 9
    return _standard_ppf(0.5, family), _standard_ppf(0.9, family) - _standard_ppf(0.1, family)


def core(u: Any, m_log: Any, width_log: Any, family: str = "logistic") -> Any:
    """F(u; m, w): the lapse-free function of log stimulus u, rising from 0 to 1."""
    if family == "logistic":
        return logistic(log_odds(u, m_log, width_log))
    a, c = _a_c(family)
    return _standard_cdf(a + c * (u - m_log) / width_log, family)


def with_guess_lapse(f: Any, guess: float, lapse: float) -> Any:
    """psi = guess + (1 - guess - lapse) * F."""
    return guess + (1.0 - guess - lapse) * f


def psi(
    x_ms: Any, m_log: Any, width_log: Any, guess: float, lapse: float, family: str = "logistic"
) -> Any:
    """P(the rising response) at stimulus x_ms: guess + (1 - guess - lapse) * F(ln x)."""
    scalar = isinstance(x_ms, float | int)
    u = math.log(x_ms) if scalar else np.log(x_ms)
    if family != "logistic":
        return with_guess_lapse(core(u, m_log, width_log, family), guess, lapse)
    # the scale over 1 + exp(-z) in one division: the rounding the adaptive procedures'
    # posteriors (stored with every session) were computed with
    z = log_odds(u, m_log, width_log)
    return guess + (1.0 - guess - lapse) / (1.0 + (math.exp(-z) if scalar else np.exp(-z)))


def log_threshold(level: float, m_log: Any, width_log: Any, family: str = "logistic") -> Any:
    """The log stimulus u where F(u; m, w) equals `level` (0 < level < 1)."""
    a, c = _a_c(family)
    return m_log + width_log * (_standard_ppf(level, family) - a) / c


def threshold_ms(
    level: float, threshold_ms: float, width_log: float, family: str = "logistic"
) -> float:
    """The stimulus (ms) where F equals `level`, for F with 50% point `threshold_ms`."""
    a, c = _a_c(family)
    return threshold_ms * math.exp(width_log * (_standard_ppf(level, family) - a) / c)


def threshold_ms_at_psi(
    p: float, threshold_ms_: float, width_log: float, guess: float, lapse: float
) -> float:
    """The stimulus (ms) where the logistic psi (with guess and lapse) equals `p`."""
    return threshold_ms(
        (p - guess) / (1.0 - guess - lapse), threshold_ms_, width_log, family="logistic"
    )
