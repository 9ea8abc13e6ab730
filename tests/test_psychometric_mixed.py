"""The random-intercept psychometric model (benchmarks.support.psychometric_mixed): its quadrature
matches brute-force integration, its gradient the likelihood's slope, and it recovers the
population on one simulated staircase study."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, optimize, special, stats

from benchmarks.support.pooled_validation import (
    PooledCell,
    population_truth_ms,
    simulate_pooled_study,
)
from benchmarks.support.psychometric_mixed import (
    _person_terms,
    fit_psychometric_mixed,
    marginal_loglik,
    mixed_psychometric_thresholds,
    person_cells,
)

THETA = np.array([math.log(800.0), math.log(1.2), math.log(0.4), 0.03, 0.05])


def _tiny_cells():
    df = pd.DataFrame(
        {
            "participant": ["a"] * 5 + ["b"] * 4,
            "x": [300, 300, 600, 900, 1800, 500, 800, 800, 2500],
            "y": [0, 1, 0, 1, 1, 0, 0, 1, 1],
        }
    )
    return person_cells(df, "x", "y", "participant")


def test_quadrature_matches_brute_force_integration():
    cells = _tiny_cells()
    m, ln_w, ln_sd, guess, lapse = THETA
    c = 2.0 * math.log(9.0)  # logistic, F 0.1 -> 0.9 over w

    def person_ll(i: int) -> float:
        rows = cells.person == i
        u, k, n = cells.u[rows], cells.k[rows], cells.n[rows]

        def integrand(b: float) -> float:
            p = guess + (1 - guess - lapse) * special.expit(c * (u - m - b) / math.exp(ln_w))
            return math.exp(np.sum(k * np.log(p) + (n - k) * np.log1p(-p))) * stats.norm.pdf(
                b, 0.0, math.exp(ln_sd)
            )

        return math.log(integrate.quad(integrand, -8.0, 8.0, epsabs=0, epsrel=1e-12)[0])

    brute = person_ll(0) + person_ll(1)
    assert marginal_loglik(THETA, cells) == pytest.approx(brute, abs=1e-4)  # 16 nodes
    assert marginal_loglik(THETA, cells, nodes=60) == pytest.approx(brute, abs=1e-8)


def test_gradient_is_the_likelihoods_slope():
    cells = _tiny_cells()
    numeric = optimize.approx_fprime(THETA, lambda t: marginal_loglik(t, cells), 1e-7)
    analytic = _person_terms(THETA, cells, "logistic", 16)[1].sum(axis=0)
    assert analytic == pytest.approx(numeric, rel=1e-4, abs=1e-5)


def test_recovers_a_staircase_study_of_people_who_differ():
    # one fixed-seed study: 12 people (ln 50% points SD 0.3 around 800 ms), 1-up/2-down
    # staircases of 48 trials; tolerant bounds (the benchmark measures bias and coverage)
    df = simulate_pooled_study(PooledCell(12, "differing", "staircase"), np.random.default_rng(7))
    tables = mixed_psychometric_thresholds(df, "x", "y", "participant", rising=True)
    truth = population_truth_ms("differing")
    pop = tables["population"].set_index("level")
    median = tables["median-person"].set_index("level")
    for level, ms in truth.items():
        assert pop.loc[level, "estimate"] == pytest.approx(ms, rel=0.25)
        assert pop.loc[level, "ci_low"] < pop.loc[level, "estimate"] < pop.loc[level, "ci_high"]
        assert pop.loc[level, "ci_high"] / pop.loc[level, "ci_low"] > 1.05  # never collapsed
    assert pop.loc[0.5, "estimate"] == pytest.approx(median.loc[0.5, "estimate"], rel=0.02)
    # people differing spread the population curve: its 25-75% span is wider
    assert (pop.loc[0.75, "estimate"] / pop.loc[0.25, "estimate"]) > (
        median.loc[0.75, "estimate"] / median.loc[0.25, "estimate"]
    )
    assert set(pop["n_participants"]) == {12} and set(pop["n_trials"]) == {12 * 48}


def test_a_falling_question_is_fitted_to_its_no_answers():
    df = simulate_pooled_study(PooledCell(6, "differing", "staircase"), np.random.default_rng(3))
    rising = fit_psychometric_mixed(person_cells(df, "x", "y", "participant"))
    falling = fit_psychometric_mixed(
        person_cells(df.assign(ok=1.0 - df["y"]), "x", "ok", "participant", rising=False)
    )
    levels = (0.25, 0.5, 0.75)
    for estimand in ("population", "median-person"):
        assert falling.thresholds_log(levels, estimand) == pytest.approx(
            rising.thresholds_log(levels, estimand), abs=1e-6
        )
