"""Sigmoid cores F of a psychometric function, parameterised by threshold and width.

Every core is a standard CDF ``S`` re-scaled so that its two parameters mean the same thing
for all families (as in psignifit)::

    F(u; m, w) = S(a + c * (u - m) / w),   a = S^-1(0.5),   c = S^-1(0.9) - S^-1(0.1)

so ``F(m) = 0.5`` and ``w`` is the distance from ``F = 0.1`` to ``F = 0.9``. ``u`` is the
stimulus on a log scale (natural log of milliseconds in this package), so ``w`` is a log
ratio: ``exp(w)`` is how many times longer the 90% point is than the 10% point.

Families: ``logistic``, ``gumbel`` (S(z) = 1 - exp(-exp(z)); on log stimulus this is the
Weibull) and ``normal`` (cumulative Gaussian).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from scipy import special

WIDTH_LOW, WIDTH_HIGH = 0.1, 0.9  # the width w spans F = 0.1 .. 0.9


@dataclass(frozen=True)
class Sigmoid:
    """A standard CDF with its density and inverse, plus the constants a and c above."""

    name: str

    def cdf(self, z: np.ndarray) -> np.ndarray:
        if self.name == "logistic":
            return cast(np.ndarray, special.expit(z))
        if self.name == "gumbel":
            return cast(np.ndarray, -np.expm1(-np.exp(np.minimum(z, 700.0))))
        return cast(np.ndarray, special.ndtr(z))

    def pdf(self, z: np.ndarray) -> np.ndarray:
        if self.name == "logistic":
            p = special.expit(z)
            return cast(np.ndarray, p * (1.0 - p))
        if self.name == "gumbel":
            ez = np.exp(np.minimum(z, 700.0))
            return cast(np.ndarray, ez * np.exp(-ez))
        return cast(np.ndarray, np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi))

    def pdf_derivative(self, z: np.ndarray) -> np.ndarray:
        """d pdf / dz."""
        if self.name == "logistic":
            p = special.expit(z)
            return cast(np.ndarray, p * (1.0 - p) * (1.0 - 2.0 * p))
        if self.name == "gumbel":
            ez = np.exp(np.minimum(z, 700.0))
            return cast(np.ndarray, ez * np.exp(-ez) * (1.0 - ez))
        return cast(np.ndarray, -z * np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi))

    def ppf(self, p: np.ndarray | float) -> np.ndarray:
        p = np.asarray(p, dtype=float)
        if self.name == "logistic":
            return cast(np.ndarray, special.logit(p))
        if self.name == "gumbel":
            return cast(np.ndarray, np.log(-np.log1p(-p)))
        return cast(np.ndarray, special.ndtri(p))

    @property
    def a(self) -> float:
        return float(self.ppf(0.5))

    @property
    def c(self) -> float:
        return float(self.ppf(WIDTH_HIGH) - self.ppf(WIDTH_LOW))

    def z(self, u: np.ndarray, m: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The standard-scale argument of S for log stimulus u."""
        return cast(np.ndarray, self.a + self.c * (u - m) / w)

    def core(self, u: np.ndarray, m: np.ndarray, w: np.ndarray) -> np.ndarray:
        """F(u; m, w), the unscaled sigmoid, rising from 0 to 1 in u."""
        return self.cdf(self.z(u, m, w))

    def inverse(self, level: float | np.ndarray, m: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The log stimulus u where F(u; m, w) equals `level` (0 < level < 1)."""
        return m + w * (self.ppf(level) - self.a) / self.c


SIGMOID_NAMES = ("logistic", "gumbel", "normal")


def get_sigmoid(name: str) -> Sigmoid:
    """The sigmoid family called `name` (one of SIGMOID_NAMES)."""
    if name not in SIGMOID_NAMES:
        raise ValueError(f"sigmoid {name!r} is not known; use one of {', '.join(SIGMOID_NAMES)}")
    return Sigmoid(name)
