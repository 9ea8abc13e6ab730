"""Firth's bias reduction in the psychometric engine: the penalised fit is the one an
independent implementation finds, batched rows and bootstrap refits get it too, and it
refuses the models its penalty is not derived for."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from analysis.batch_mle import maximise, refit
from analysis.psychometric import FitSpec, PsychometricFitter, build_layout

# a staircase-like person: most trials near one point of the curve, few far from it
LEVELS_MS = np.array([400.0, 504.0, 635.0, 800.0, 1008.0, 1270.0])
N_TOTAL = np.array([2.0, 5.0, 12.0, 14.0, 8.0, 3.0])
N_YES = np.array([0.0, 1.0, 3.0, 6.0, 5.0, 3.0])


def independent_firth_threshold_ms(x_ms, k, n) -> float:
    """Firth's estimate by brute force: maximise log L + 1/2 log det(X'WX) over the
    canonical logistic model's intercept and slope (Nelder-Mead), the 50% point -a/b."""
    u = np.log(x_ms) - np.log(x_ms).mean()
    design = np.column_stack([np.ones_like(u), u])

    def minus_penalised(beta: np.ndarray) -> float:
        p = 1.0 / (1.0 + np.exp(-(design @ beta)))
        loglik = np.sum(k * np.log(p) + (n - k) * np.log1p(-p))
        info = design.T @ (design * (n * p * (1.0 - p))[:, None])
        return -(loglik + 0.5 * np.linalg.slogdet(info)[1])

    fit = optimize.minimize(
        minus_penalised, [0.0, 3.0], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12}
    )
    a, b = fit.x
    return math.exp(np.log(x_ms).mean() - a / b)


def _fitter(**kwargs) -> PsychometricFitter:
    return PsychometricFitter(guess=0.0, lapse=0.0, direction="rising", **kwargs)


def test_the_bias_reduced_fit_is_firths_estimate():
    fit = _fitter(bias_reduction=True).fit(LEVELS_MS, N_YES, N_TOTAL, n_boot=0)
    expected = independent_firth_threshold_ms(LEVELS_MS, N_YES, N_TOTAL)
    assert fit.threshold(0.5) == pytest.approx(expected, rel=1e-5)
    plain = _fitter().fit(LEVELS_MS, N_YES, N_TOTAL, n_boot=0)
    assert fit.params_["w"] > plain.params_["w"]  # shrunk towards a shallower curve
    assert fit.threshold(0.5) != pytest.approx(plain.threshold(0.5), rel=1e-3)


def test_batched_rows_each_reach_their_own_penalised_fit():
    """Rows converge after different numbers of re-weightings; each must stop at its own."""
    spec = FitSpec("logistic", 0.0, 0.0, False, firth=True)
    u = np.log(LEVELS_MS)
    layout = build_layout(spec, u, np.zeros(u.size, dtype=int), 1)
    other = np.array([0.0, 0.0, 2.0, 9.0, 8.0, 3.0])
    k = np.stack([N_YES, other])
    start = np.tile([math.log(800.0), 0.0], (2, 1))
    theta, _, converged = maximise(layout, start, k, N_TOTAL)
    assert converged.all()
    for row, counts in zip(theta, k, strict=True):
        expected = independent_firth_threshold_ms(LEVELS_MS, counts, N_TOTAL)
        assert math.exp(row[0]) == pytest.approx(expected, rel=1e-5)


def test_every_bootstrap_refit_is_bias_reduced_too():
    """The fit's layout carries the penalty, and the bootstrap's entry point (`refit`, which
    fits repeated draws once) gives each draw its own penalised fit."""
    fit = _fitter(bias_reduction=True).fit(LEVELS_MS, N_YES, N_TOTAL, n_boot=20, seed=1)
    layout = fit.result_.layout
    assert layout.firth
    draws = np.array([[0.0, 2.0, 4.0, 7.0, 6.0, 2.0], N_YES, [1.0, 0.0, 5.0, 5.0, 8.0, 3.0], N_YES])
    theta, _, converged = refit(layout, fit.result_.theta, draws, N_TOTAL)
    assert converged.all()
    for row, counts in zip(theta, draws, strict=True):
        expected = independent_firth_threshold_ms(LEVELS_MS, counts, N_TOTAL)
        assert math.exp(row[0]) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"guess": None, "lapse": 0.0},
        {"guess": 0.0, "lapse": 0.02},
        {"guess": 0.0, "lapse": 0.0, "sigmoid": "gumbel"},
        {"guess": 0.0, "lapse": 0.0, "likelihood": "beta-binomial"},
    ],
)
def test_bias_reduction_refuses_models_its_penalty_is_not_for(kwargs):
    with pytest.raises(ValueError, match="guess=0, lapse=0"):
        PsychometricFitter(bias_reduction=True, **kwargs)


def test_a_multi_condition_fit_refuses_bias_reduction():
    """The penalty is one canonical logistic model's: a joint fit of several conditions
    says so rather than fit without it."""
    import pandas as pd

    from analysis.psychometric import MultiConditionFitter

    rows = [
        (x, itl, int(k < n_yes))
        for itl, counts in ((20, N_YES), (60, N_YES[::-1]))
        for x, n_yes, n in zip(LEVELS_MS, counts, N_TOTAL, strict=True)
        for k in range(int(n))
    ]
    df = pd.DataFrame(rows, columns=["ttft_ms", "itl_ms", "q"])
    fitter = MultiConditionFitter(guess=0.0, lapse=0.0, bias_reduction=True)
    with pytest.raises(ValueError, match="needs one condition"):
        fitter.fit(df, "ttft_ms", "q", "itl_ms", n_boot=0)
