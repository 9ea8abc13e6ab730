"""The three AFT families' standardised errors of log time (minimum-Gumbel for Weibull,
normal, logistic): log density, log survival, score and quantile; and where lifelines' AFT
fits start, from them.

lifelines starts an AFT regression at the matching univariate model's fit (its issue 664),
which it makes with a general optimiser over automatic derivatives, and then climbs to the
regression's maximum with automatic derivatives too: almost all of each AFT fit's time in a
report. Both maxima are those of a location-scale likelihood on log time, which BFGS finds
with the exact gradient (`score_g`) in a few milliseconds: the univariate one (the null
model lifelines keeps for its likelihood-ratio test) and the regression's, on the very
covariates lifelines optimises over (each divided by its standard deviation). lifelines
then starts at the regression's maximum: it checks it, takes its log-likelihood, its
Hessian and everything it reports, as it would from its own start, and its estimates agree
with lifelines' own path to optimiser precision. Where the data separate a factor there is
no maximum: lifelines goes on from where the fast fit stopped on the ridge (or from the
univariate fit when it stopped elsewhere), and the report says the factor has no bound
(`survival.AbandonmentAFTFitter.separated_`), as before. Anything unusual (weights, delayed
entry, a covariate on the shape, a start that does not converge) takes lifelines' own path.
"""

from __future__ import annotations

import functools
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import optimize, stats

PARAMETERS = {
    "weibull": ("lambda_", "rho_"),
    "lognormal": ("mu_", "sigma_"),
    "loglogistic": ("alpha_", "beta_"),
}
"""lifelines' (location, shape) parameter names of each family's AFT model."""


def z_for_share(family: str, share: float) -> float:
    """z_q with S0(z_q) = 1 - share, for the standardised error of each family."""
    if family == "weibull":
        return float(np.log(-np.log1p(-share)))
    if family == "loglogistic":
        return float(np.log(share / (1 - share)))
    return float(stats.norm.ppf(share))


def log_f0(family: str, z: np.ndarray) -> np.ndarray:
    """Log density of the standardised error."""
    if family == "weibull":
        return cast(np.ndarray, z - np.exp(z))
    if family == "loglogistic":
        return cast(np.ndarray, z - 2.0 * np.logaddexp(0.0, z))
    return cast(np.ndarray, stats.norm.logpdf(z))


def log_s0(family: str, z: np.ndarray) -> np.ndarray:
    """Log survival function of the standardised error."""
    if family == "weibull":
        return cast(np.ndarray, -np.exp(z))
    if family == "loglogistic":
        return cast(np.ndarray, -np.logaddexp(0.0, z))
    return cast(np.ndarray, stats.norm.logsf(z))


def score_g(family: str, z: np.ndarray, event: np.ndarray) -> np.ndarray:
    """d loglik / d z per trial: f0'/f0 for events, -h0 for censored trials."""
    if family == "weibull":
        ez = np.exp(z)
        return cast(np.ndarray, np.where(event == 1, 1.0 - ez, -ez))
    if family == "loglogistic":
        lam = stats.logistic.cdf(z)
        return cast(np.ndarray, np.where(event == 1, 1.0 - 2.0 * lam, -lam))
    hazard = np.exp(stats.norm.logpdf(z) - stats.norm.logsf(z))
    return np.where(event == 1, -z, -hazard)


def intercept_only_fit(
    family: str, duration: np.ndarray, event: np.ndarray
) -> tuple[float, float, float] | None:
    """(mu, log sigma, log-likelihood) of log T = mu + sigma * eps, right-censored, at its
    maximum; the log-likelihood is of the durations (lifelines' `log_likelihood_`). None when
    the optimiser does not converge to finite values."""
    y = np.log(duration)
    start = np.array([y.mean(), np.log(max(float(y.std()), 0.1))])
    found = regression_fit(family, duration, event, np.ones((len(y), 1)), start)
    if found is None:
        return None
    params, log_likelihood = found
    return float(params[0]), float(params[1]), log_likelihood


def regression_fit(
    family: str, duration: np.ndarray, event: np.ndarray, x: np.ndarray, start: np.ndarray
) -> tuple[np.ndarray, float] | None:
    """([beta..., log sigma], log-likelihood) of log T = x @ beta + sigma * eps,
    right-censored, at its maximum (BFGS with the exact gradient from `start`); the
    log-likelihood is of the durations (lifelines' `log_likelihood_`). None when the
    optimiser does not converge to finite values (a factor the data separate has none), or
    stops where the log-likelihood still climbs (a gradient of 1e-3 or more)."""
    y = np.log(duration)
    n_events = float(event.sum())

    def negative(p: np.ndarray) -> tuple[float, np.ndarray]:
        beta, log_sigma = p[:-1], p[-1]
        sigma = np.exp(log_sigma)
        z = (y - x @ beta) / sigma
        ll = np.where(event == 1, log_f0(family, z) - log_sigma - y, log_s0(family, z)).sum()
        g = score_g(family, z, event)
        grad = np.r_[-(g @ x) / sigma, -(g * z).sum() - n_events]
        return -float(ll), -grad

    with np.errstate(all="ignore"):
        found = optimize.minimize(negative, start, jac=True, method="BFGS")
    # status 2: the line search lost precision, at the maximum when the gradient is ~0
    at_maximum = found.success or (found.status == 2 and np.abs(found.jac).max() < 1e-3)
    if not at_maximum or not np.all(np.isfinite(found.x)) or not np.isfinite(found.fun):
        return None
    return found.x, -float(found.fun)


def columns_of(xs: pd.DataFrame, param: str) -> list[str]:
    """The covariates of `param` in lifelines' design `xs` (columns: param, covariate)."""
    return list(xs[param].columns)


def _shape_value(family: str, log_sigma: float) -> float:
    """lifelines' shape parameter for log sigma: log sigma itself (log-normal), log rho =
    -log sigma (Weibull), log beta = -log sigma (log-logistic)."""
    return log_sigma if family == "lognormal" else -log_sigma


@functools.cache
def quick_start(cls: Any, family: str) -> Any:
    """`cls` (a lifelines AFT fitter of `family`) starting from the regression's maximum
    (`regression_fit`), or from `intercept_only_fit` where that has none (made once per
    class: every report's fits share it)."""
    location, shape = PARAMETERS[family]

    def create_initial_point(
        self: Any, Ts: Any, E: Any, entries: Any, weights: Any, Xs: pd.DataFrame
    ) -> Any:
        plain = entries is None or not np.any(entries)
        plain = plain and (weights is None or bool(np.all(np.asarray(weights) == 1.0)))
        duration, event = np.asarray(Ts[0], float), np.asarray(E, int)
        fit = intercept_only_fit(family, duration, event) if plain else None
        if fit is None:  # weights, delayed entry, no maximum found: lifelines' own way
            return cls._create_initial_point(self, Ts, E, entries, weights, Xs)
        mu, log_sigma, log_likelihood = fit
        self._ll_null_ = log_likelihood  # as lifelines keeps it (its summary's test)
        # lifelines' own values: log lambda and log rho = -log sigma (Weibull), log alpha
        # and log beta (log-logistic); for the log-normal mu it takes log(mu) when mu > 0
        # ("suboptimal, but that's okay"), which the regression then corrects.
        mu_value = np.log(mu) if family == "lognormal" and mu > 0 else mu
        values = {location: mu_value, shape: _shape_value(family, log_sigma)}
        constant = (Xs.std(0) < 1e-8).idxmax()
        point = {}
        columns = Xs.columns
        for param, covs in columns.groupby(columns.get_level_values(0)).items():
            point[param] = np.zeros(covs.shape)
            if constant in covs:
                point[param][covs.tolist().index(constant)] = values[param]
        if columns_of(Xs, shape) == [constant[1]] and constant[0] == location:
            x = Xs[location].to_numpy(dtype=float)  # as lifelines scaled them
            start = np.zeros(x.shape[1] + 1)  # the univariate fit, covariates at 0
            start[columns_of(Xs, location).index(constant[1])] = mu
            start[-1] = log_sigma
            found = regression_fit(family, duration, event, x, start)
            if found is not None:  # else: from the univariate fit, as lifelines would
                point[location] = found[0][:-1]
                point[shape] = np.array([_shape_value(family, float(found[0][-1]))])
        return point

    return type(cls.__name__, (cls,), {"_create_initial_point": create_initial_point})
