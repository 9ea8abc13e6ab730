"""What every fitter in `analysis` shares: its options, fitted state only after `fit`, one way
to read it, and (for the bootstrapped ones) one bootstrap driver.

A fitter is configured by its constructor, fitted by ``fit(...)`` (which returns the fitter),
and then read through its fitted attributes (names ending in ``_``), its methods, and:

- ``alpha``: 1 - the confidence level of every interval it gives (checked to lie in (0, 1));
- ``is_fitted``: whether ``fit`` has run;
- ``summary()``: a tidy DataFrame of the estimates, one row per parameter or threshold;
- ``print_summary(decimals=3)``: a header naming the model and fit, then that table.

Before ``fit`` every one of these but ``alpha`` and ``is_fitted``, and every method marked
`requires_fit`, raises a RuntimeError that says so. A subclass holds only its model: it
names the attribute `fit` sets (`_fitted_attribute`), marks its methods that read fitted
state `requires_fit`, and provides `_summary_table` and `_summary_header`; one whose
intervals come from a bootstrap derives from `BootstrapFitter`, which keeps the bootstrap's
options (``n_boot_``, ``seed_``, ``ci_method_``) and turns resampled estimates into intervals.
(The layout follows lifelines' ``BaseFitter``: options and ``alpha`` in the constructor, data
in ``fit``, the same ``summary``/``print_summary`` for every model.)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

import numpy as np
import pandas as pd
from scipy import stats

from analysis.bootstrap import bootstrap_interval

_P = ParamSpec("_P")
_R = TypeVar("_R")
_F = TypeVar("_F", bound="Fitter")


def requires_fit(method: Callable[Concatenate[_F, _P], _R]) -> Callable[Concatenate[_F, _P], _R]:
    """Decorate a fitter's method that reads fitted state: called before `fit`, it raises the
    base's RuntimeError ("<Class>: call fit(...) first") instead of an AttributeError."""

    @functools.wraps(method)
    def checked(self: _F, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        self._check_fitted()
        return method(self, *args, **kwargs)

    return checked


def check_alpha(alpha: float, owner: str) -> float:
    """`alpha` if it is a usable 1 - confidence level (strictly between 0 and 1), else a
    ValueError naming the fitter."""
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"{owner}: alpha={alpha} must be between 0 and 1 (0.05: 95% intervals)")
    return alpha


class Fitter:
    """Base of PsychometricFitter, MultiConditionFitter, OrdinalLatencyFitter and
    AbandonmentAFTFitter."""

    alpha: float
    _fitted_attribute = "result_"
    _print_width = 120

    @property
    def is_fitted(self) -> bool:
        """Whether `fit` has run (and its fitted attributes can be read)."""
        return hasattr(self, self._fitted_attribute)

    @property
    def confidence_level(self) -> str:
        """The intervals' confidence level as words: "95%" for alpha 0.05."""
        return f"{100 * (1 - self.alpha):g}%"

    def normal_quantile(self) -> float:
        """z with P(|Z| < z) = 1 - alpha: the half-width of a Wald interval in SEs."""
        return float(stats.norm.ppf(1 - self.alpha / 2))

    def _check_fitted(self) -> None:
        if not self.is_fitted:
            raise RuntimeError(f"{type(self).__name__}: call fit(...) first")

    @requires_fit
    def summary(self) -> pd.DataFrame:
        """The estimates as a tidy table (see the subclass for its rows and columns)."""
        return self._summary_table()

    @requires_fit
    def print_summary(self, decimals: int = 3) -> None:
        """Print the model, fit statistics and `summary()`, numbers to `decimals` places."""
        table = self._summary_table()
        with pd.option_context(
            "display.float_format",
            lambda v: f"{v:.{decimals}f}",
            "display.width",
            self._print_width,
        ):
            body = table.to_string(index=not isinstance(table.index, pd.RangeIndex))
            print("\n".join([*self._summary_header(decimals), body]))

    def _summary_table(self) -> pd.DataFrame:
        raise NotImplementedError

    def _summary_header(self, decimals: int) -> list[str]:
        return [f"<{type(self).__name__}>"]


class BootstrapFitter(Fitter):
    """A fitter whose intervals come from resampled refits: it keeps the bootstrap's options
    as fitted attributes (``n_boot_`` datasets, ``seed_``, ``ci_method_``: "percentile" or
    "bca") and turns resampled estimates into intervals the same way for every model."""

    n_boot_: int
    seed_: int
    ci_method_: str

    def _keep_bootstrap_options(self, n_boot: int, seed: int, ci_method: str) -> None:
        self.n_boot_, self.seed_, self.ci_method_ = n_boot, seed, ci_method

    def _interval(
        self,
        samples: np.ndarray,
        estimate: np.ndarray,
        jack: np.ndarray | None,
        jack_weights: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The (1 - alpha) `ci_method_` interval of each column of samples [B, K]
        (`analysis.bootstrap.bootstrap_interval`)."""
        return bootstrap_interval(
            samples, estimate, jack, jack_weights, self.ci_method_, self.alpha
        )

    def _bootstrap_description(self) -> str:
        """ "B = 1000, seed = 0, percentile 95% intervals": what the intervals rest on."""
        return (
            f"B = {self.n_boot_}, seed = {self.seed_}, {self.ci_method_} "
            f"{self.confidence_level} intervals"
        )
