"""`EngineFitter`: what the single and the multi-condition psychometric fitters share over
the `analysis.fitter` base: the model's options, the engine's fit kept as fitted attributes,
and thresholds with their bootstrap intervals."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.bootstrap import widen_to_percentile
from analysis.fitter import BootstrapFitter, check_alpha
from analysis.psychometric.ml_fit import (
    FitSpec,
    binomial_deviance,
    check_firth,
    deviance_p,
    threshold_logs,
)
from analysis.psychometric.resampling import FitResult
from analysis.sigmoids import get_sigmoid

DEFAULT_LEVELS = (0.25, 0.5, 0.75)


class EngineFitter(BootstrapFitter):
    """Options of a psychometric model (see `PsychometricFitter`) and the fitted state its
    engine run leaves: result_, loglik_, deviance_, deviance_p_, n_boot_failed_,
    n_boot_unconverged_, and the bootstrap's n_boot_, seed_, ci_method_."""

    result_: FitResult

    def __init__(
        self,
        sigmoid: str = "logistic",
        guess: float | None = None,
        lapse: float | None = None,
        likelihood: str = "binomial",
        direction: str = "auto",
        alpha: float = 0.05,
        levels: Sequence[float] = DEFAULT_LEVELS,
        *,
        bias_reduction: bool = False,
    ):
        get_sigmoid(sigmoid)
        if likelihood not in ("binomial", "beta-binomial"):
            raise ValueError(f"likelihood {likelihood!r}: use 'binomial' or 'beta-binomial'")
        if direction not in ("auto", "rising", "falling"):
            raise ValueError(f"direction {direction!r}: use 'auto', 'rising' or 'falling'")
        for name, value in (("guess", guess), ("lapse", lapse)):
            if value is not None and not 0.0 <= value < 0.5:
                raise ValueError(f"{name}={value}: a fixed {name} must be in [0, 0.5)")
        self.sigmoid = sigmoid
        self.guess = guess
        self.lapse = lapse
        self.likelihood = likelihood
        self.direction = direction
        self.alpha = check_alpha(alpha, type(self).__name__)
        self.levels = tuple(levels)
        self.bias_reduction = bias_reduction
        if bias_reduction:  # refused here, not at the first fit
            check_firth(FitSpec(sigmoid, guess, lapse, likelihood == "beta-binomial"))

    def _keep_engine_fit(self, result: FitResult, n_boot: int, seed: int, ci_method: str) -> None:
        """The engine's fit of result.k of result.n as fitted attributes."""
        self._keep_bootstrap_options(n_boot, seed, ci_method)
        self.result_ = result
        self.loglik_ = result.loglik
        psi = result.layout.psi(result.theta[None, :])
        self.deviance_ = float(binomial_deviance(psi, result.k, result.n)[0])
        self.deviance_p_ = deviance_p(result.boot_deviance, self.deviance_)
        self.n_boot_failed_ = result.n_boot_failed
        self.n_boot_unconverged_ = result.n_boot_unconverged

    def _threshold_logs_with_interval(
        self, levels: Sequence[float], condition: int = 0
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(estimate, ci_low, ci_high) of condition's thresholds at `levels`, in ln ms: the
        bootstrap's `ci_method_` interval widened to the sensitivity bootstrap's."""
        r = self.result_
        est = threshold_logs(r.layout, r.theta[None, :], levels, condition)[0]
        boot = threshold_logs(r.layout, r.boot_theta, levels, condition)
        jack = threshold_logs(r.layout, r.jack_theta, levels, condition)
        low, high = self._interval(boot, est, jack, r.jack_weights)
        sens = threshold_logs(r.layout, r.sens_theta, levels, condition)
        low, high = widen_to_percentile(low, high, sens, self.alpha)
        return est, low, high
