"""The acceptable-rating threshold with participant effects: derivatives, recovery, coverage.

The simulated people are the demo's observers (`uxlab.simulate.observers.Observer`): each
rates on the latent-logistic Likert model around their own threshold. Two designs: every
person sees the same fixed levels, or a 1-up/1-down staircase on each person's own yes/no
answers places their trials (as an adaptive procedure does: where a person is tested
depends on that person). The truth is the population's point
(`rating_acceptable_ms`, marginal over people; at 0.5 also the median person's).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.psychometric import population_threshold
from analysis.ratings import (
    RATING_FIT,
    acceptable_binary,
    fit_mixed_acceptability,
    fit_mixed_cells,
    maximise_leave_one_out,
    maximise_mixed,
    mixed_loglik_derivs,
    person_level_cells,
)
from uxlab.simulate.observers import Cues, Observer, PopulationTruth, rating_acceptable_ms

TRUTH = PopulationTruth()
TRUE_MS = rating_acceptable_ms(TRUTH, 5, 4)
FIXED_MS = [100, 175, 300, 530, 920, 1600, 2800, 5000]
GRID_MS = np.geomspace(100, 5000, 25)


def simulate(n_people: int, seed: int, design: str, trials: int = 40) -> pd.DataFrame:
    """One study's trial table: participant, ttft_ms, q_speed (1-5) from drawn observers."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_people):
        person = Observer.draw(TRUTH, rng)
        step = 12  # the staircase starts mid-grid (~750 ms)
        for t in range(trials):
            x = FIXED_MS[t % len(FIXED_MS)] if design == "fixed" else GRID_MS[step]
            cues = Cues(float(x), 30.0, 0.3, float(x) + 3000.0)
            too_slow = rng.random() < person.p_too_slow(cues)
            rows.append(
                {"participant": f"P{i}", "ttft_ms": x, "q_speed": person.rating(cues, 5, rng)}
            )
            if design == "staircase":
                step = int(np.clip(step + (-2 if too_slow else 2), 0, len(GRID_MS) - 1))
    return pd.DataFrame(rows)


def test_gradient_and_hessian_match_finite_differences():
    df = simulate(6, seed=1, design="fixed", trials=16)
    df["_y"] = acceptable_binary(df["q_speed"], 4)
    person, u, k, n = person_level_cells(df, "_y", "ttft_ms", "participant")
    starts = np.flatnonzero(np.r_[True, person[1:] != person[:-1]])
    u = u - u.mean()
    w = np.array([[1.0, 2.0, 0.0, 1.0, 1.0, 3.0]])
    theta = np.array([[-0.4, -2.5, 0.8]])
    _, grad, hess = mixed_loglik_derivs(theta, starts, u, k, n, w)
    eps = 1e-5
    for j in range(3):
        d = np.zeros((1, 3))
        d[0, j] = eps
        lp, gp, _ = mixed_loglik_derivs(theta + d, starts, u, k, n, w)
        lm, gm, _ = mixed_loglik_derivs(theta - d, starts, u, k, n, w)
        assert grad[0, j] == pytest.approx((lp[0] - lm[0]) / (2 * eps), rel=1e-5, abs=1e-6)
        assert hess[0, :, j] == pytest.approx((gp[0] - gm[0]) / (2 * eps), rel=1e-4, abs=1e-5)


def test_leave_one_out_refits_from_the_full_fits_sums_equal_plain_refits():
    """The jackknife's refits start from the full fit's per-person sums (one evaluation
    fewer); they must take the same path as refits evaluated there."""
    df = simulate(9, seed=2, design="staircase", trials=30)
    df["_y"] = acceptable_binary(df["q_speed"], 4)
    person, u, k, n = person_level_cells(df, "_y", "ttft_ms", "participant")
    fit = fit_mixed_cells(person, u, k, n, 0, 0)
    starts = np.flatnonzero(np.r_[True, person[1:] != person[:-1]])
    uc = u - np.average(u, weights=n)
    centred = np.array([[fit.a + fit.b * np.average(u, weights=n), fit.b, fit.s]])
    want, want_ll, want_ok = maximise_mixed(
        np.repeat(centred, 9, 0), starts, uc, k, n, 1 - np.eye(9)
    )
    got, got_ll, got_ok = maximise_leave_one_out(centred, starts, uc, k, n)
    assert want_ok.all() and (got_ok == want_ok).all()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_ll, want_ll, rtol=1e-12)
    assert not np.allclose(got, centred)  # each refit moved off the full fit


def test_recovers_the_observer_model_and_reads_its_own_curve():
    fit = fit_mixed_acceptability(
        simulate(120, seed=3, design="fixed"), "q_speed", "ttft_ms", 4, n_boot=0
    )
    # the observers: logit P(rating >= 4) = -cut - C (ln x - m) / w, m ~ N(ln 800, 0.25)
    slope = -2 * np.log(9) / TRUTH.width_log
    assert fit.b == pytest.approx(slope, rel=0.08)
    assert fit.s == pytest.approx(-slope * TRUTH.between_sd_log, abs=0.25)
    for level in (0.25, 0.5, 0.75):
        x = fit.threshold_ms(level)
        assert 1 - fit.population_share(x) == pytest.approx(level, abs=1e-6)
        assert x == pytest.approx(TRUE_MS[str(level)], rel=0.08)
    assert fit.threshold_ms(0.5) == pytest.approx(np.exp(-fit.a / fit.b))


@pytest.mark.slow
def test_pooled_fit_is_biased_when_the_design_follows_each_person():
    """150 people on a staircase: trials cluster around each person's own threshold, and
    the pooled psychometric fit without person effects misses the truth; the mixed fit
    does not (the staircase depends only on answers, so the likelihood can ignore it)."""
    df = simulate(150, seed=5, design="staircase")
    binary = df.assign(_y=acceptable_binary(df["q_speed"], 4))
    pooled = population_threshold(binary, "ttft_ms", "_y", "participant", 200, 0, **RATING_FIT)
    mixed = fit_mixed_acceptability(df, "q_speed", "ttft_ms", 4, n_boot=200).thresholds()
    true_ms = TRUE_MS["0.5"]
    p50 = pooled.set_index("level").loc[0.5]
    m50 = mixed.set_index("level").loc[0.5]
    assert not p50.ci_low <= true_ms <= p50.ci_high
    assert m50.ci_low <= true_ms <= m50.ci_high
    assert abs(np.log(m50.estimate / true_ms)) < abs(np.log(p50.estimate / true_ms)) / 2


@pytest.mark.slow
@pytest.mark.parametrize("design", ["fixed", "staircase"])
def test_the_interval_covers_the_truth_at_about_its_nominal_rate(design):
    """20 studies of 16 people each: the 95% interval should miss about once."""
    hits, errors = [], []
    for study in range(20):
        df = simulate(16, seed=1000 + study, design=design)
        row = (
            fit_mixed_acceptability(df, "q_speed", "ttft_ms", 4, n_boot=150, seed=study)
            .thresholds(levels=(0.5,))
            .iloc[0]
        )
        hits.append(row.ci_low <= TRUE_MS["0.5"] <= row.ci_high)
        errors.append(np.log(row.estimate / TRUE_MS["0.5"]))
    assert sum(hits) >= 17  # P(<= 16 of 20) = 1.6% at a true 95%
    assert abs(np.mean(errors)) < 2.5 * np.std(errors) / np.sqrt(len(errors)) + 0.02


def test_one_sided_ratings_are_refused_with_the_reason():
    df = pd.DataFrame({"participant": ["a", "b"] * 3, "ttft_ms": [100, 200, 400] * 2})
    df["q_speed"] = 5
    with pytest.raises(ValueError, match="q_speed: need ratings on both sides of 4"):
        fit_mixed_acceptability(df, "q_speed", "ttft_ms", 4, n_boot=10)
