"""What every fitter in `analysis` shares: fitted state only after `fit`, and one way to read it.

A fitter is configured by its constructor, fitted by ``fit(...)`` (which returns the fitter),
and then read through its fitted attributes (names ending in ``_``), its methods, and:

- ``summary()``: a tidy DataFrame of the estimates, one row per parameter or threshold;
- ``print_summary(decimals=3)``: a header naming the model and fit, then that table.

Before ``fit`` every one of these raises a RuntimeError that says so.
"""

from __future__ import annotations

import pandas as pd


class Fitter:
    """Base of PsychometricFitter, MultiConditionFitter, OrdinalLatencyFitter and
    AbandonmentAFTFitter. A subclass names the attribute `fit` sets (`_fitted_attribute`) and
    provides `_summary_table` and `_summary_header`."""

    _fitted_attribute = "result_"
    _print_width = 120

    def _check_fitted(self) -> None:
        if not hasattr(self, self._fitted_attribute):
            raise RuntimeError(f"{type(self).__name__}: call fit(...) first")

    def summary(self) -> pd.DataFrame:
        """The estimates as a tidy table (see the subclass for its rows and columns)."""
        self._check_fitted()
        return self._summary_table()

    def print_summary(self, decimals: int = 3) -> None:
        """Print the model, fit statistics and `summary()`, numbers to `decimals` places."""
        self._check_fitted()
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
