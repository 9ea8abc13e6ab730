"""Abandonment survival: censoring rules, KM times, AFT recovery and cluster-robust errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from analysis_fixtures import Truth, simulate_trial_table

from analysis.exclusions import apply_exclusions
from analysis.survival import (
    AbandonmentAFTFitter,
    kaplan_meier,
    km_time_to_share,
    survival_data,
)

FACTORS = ["ttft_ms", "indicator"]


@pytest.fixture(scope="module")
def sdata() -> pd.DataFrame:
    kept = apply_exclusions(simulate_trial_table(n_participants=30, reps=6, seed=1)).kept
    return survival_data(kept, FACTORS)


def test_event_at_give_up_censored_at_scheduled_end_or_timeout():
    trials = pd.DataFrame(
        {
            "participant": ["a", "a", "b", "b", "b"],
            "outcome": ["abandoned", "completed", "timed_out", "error", "interrupted"],
            "t_abandon_ms": [1500.0, np.nan, np.nan, np.nan, np.nan],
            "shown_last_ms": [np.nan, 4010.0, 9000.0, np.nan, np.nan],
            "scheduled_end_ms": [4000.0, 4000.0, 20000.0, 3000.0, 3000.0],
            "ttft_ms": [800, 800, 800, 800, 800],
        }
    )
    s = survival_data(trials, ["ttft_ms"])
    # A timed-out trial was watched until the timeout, not until its (later) scheduled end:
    # without the study's timeout, the last chunk seen is the censoring time.
    assert s["duration_ms"].tolist() == [1500.0, 4000.0, 9000.0]
    assert s["event"].tolist() == [1, 0, 0]  # error/interrupted trials say nothing of patience
    with_timeout = survival_data(trials, ["ttft_ms"], timeout_ms=10_000.0)
    assert with_timeout["duration_ms"].tolist() == [1500.0, 4000.0, 10000.0]


def test_true_time_ratio_is_inside_its_ci(sdata):
    fit = AbandonmentAFTFitter().fit(sdata, FACTORS)
    tr = fit.time_ratios_.set_index("factor")
    truth = Truth().time_ratio
    assert tr.loc["indicator", "ci_low"] < truth < tr.loc["indicator", "ci_high"]
    assert tr.loc["indicator", "per"] == "per unit"
    # TTFT has no effect on patience in the simulation: its ratio per doubling covers 1
    assert tr.loc["ttft_ms", "ci_low"] < 1 < tr.loc["ttft_ms", "ci_high"]
    assert tr.loc["ttft_ms", "per"] == "per doubling"
    assert fit.family_ in ("weibull", "lognormal", "loglogistic")
    assert fit.aic_["AIC"].iloc[0] == fit.aic_["AIC"].min()
    assert fit.n_clusters_ == 29
    # participants share a frailty: clustered errors are wider than the model-based ones
    assert fit.cov_[1, 1] > 1.2 * fit.cov_model_[1, 1]


@pytest.mark.slow
def test_singleton_clusters_match_lifelines_sandwich(sdata):
    from lifelines import WeibullAFTFitter

    # lifelines' own sandwich loops over rows in autograd: a subset keeps the test quick
    sdata = sdata[sdata["participant"].isin(sorted(sdata["participant"].unique())[:5])]
    fit = AbandonmentAFTFitter(families=("weibull",)).fit(sdata, FACTORS)
    design = pd.DataFrame(
        {
            "log2_ttft_ms": np.log2(sdata["ttft_ms"]),
            "indicator": sdata["indicator"],
            "duration_s": sdata["duration_ms"] / 1000,
            "event": sdata["event"],
        }
    )
    ref = WeibullAFTFitter().fit(design, "duration_s", "event", robust=True)
    # Our scores, one cluster per trial, give Huber's sandwich as lifelines computes it.
    h_inv, scores = fit.cov_model_, fit.scores_
    own = h_inv @ (scores.T @ scores) @ h_inv
    ref_se = ref.standard_errors_.loc["lambda_"].reindex(["log2_ttft_ms", "indicator"])
    np.testing.assert_allclose(np.sqrt(np.diag(own))[:2], ref_se.to_numpy(), rtol=1e-3)
    # scores vanish at the maximum
    assert np.abs(scores.sum(axis=0)).max() < 0.5


def test_time_to_share_ordered_and_extrapolation_probability(sdata):
    fit = AbandonmentAFTFitter().fit(sdata, FACTORS)
    t10, lo10, hi10 = fit.time_to_share({"ttft_ms": 800, "indicator": 0}, 0.1)
    t50, _, _ = fit.time_to_share({"ttft_ms": 800, "indicator": 0}, 0.5)
    t50_ind, _, _ = fit.time_to_share({"ttft_ms": 800, "indicator": 1}, 0.5)
    assert lo10 < t10 < hi10 < t50
    assert t50_ind / t50 == pytest.approx(fit.time_ratios_.time_ratio.iloc[1], rel=1e-6)
    levels = pd.DataFrame({"ttft_ms": [800.0], "indicator": [0.0]})
    assert fit.abandon_probability(levels, np.array([t50]))[0] == pytest.approx(0.5, abs=1e-6)
    draws = fit.abandon_probability(levels, np.array([t50]), n_draws=400, seed=3)
    assert draws.shape == (400, 1) and 0.4 < draws.mean() < 0.6


def test_kaplan_meier_time_to_share(sdata):
    fits = kaplan_meier(sdata, ["indicator"])
    assert list(fits) == ["indicator=0", "indicator=1"]
    est0, lo0, hi0 = km_time_to_share(fits["indicator=0"], 0.1)
    est1, _, _ = km_time_to_share(fits["indicator=1"], 0.1)
    assert lo0 <= est0 <= hi0
    assert est1 > est0  # the indicator makes people wait longer
    sf = fits["indicator=0"].survival_function_.iloc[:, 0]
    assert sf.loc[est0] <= 0.9 < sf[sf.index < est0].min()


def test_too_few_abandonments_is_an_error(sdata):
    calm = sdata.assign(event=0)
    with pytest.raises(ValueError, match="fewer than 3 abandonments"):
        AbandonmentAFTFitter().fit(calm, FACTORS)


def test_a_separated_fit_says_it_has_no_interval_without_a_warning():
    """Two people who gave up only at the longest wait: the model's own variance is not
    usable; the time ratio's interval is non-finite, and no RuntimeWarning escapes."""
    import warnings

    from analysis.survival import AbandonmentAFTFitter

    rows = [
        {
            "participant": p,
            "ttft_ms": level,
            "event": int(level == 4000),
            "duration_ms": 1800.0 + 50 * r if level == 4000 else level + 600.0,
        }
        for p in ("a", "b")
        for level in (250, 500, 1000, 2000, 4000)
        for r in range(2)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        ratios = AbandonmentAFTFitter().fit(pd.DataFrame(rows), ["ttft_ms"]).time_ratios_
    low, high = ratios.loc[0, "ci_low"], ratios.loc[0, "ci_high"]
    assert not (low > 0 and high < np.inf)
    fit = AbandonmentAFTFitter().fit(pd.DataFrame(rows), ["ttft_ms"])
    # said as such: the factor is named, the model's own covariance kept (not a sandwich
    # whose finiteness depends on where the optimiser stopped on the ridge)
    assert fit.separated_ == ["ttft_ms"] and not fit.clustered_


def test_an_identified_fit_is_not_called_separated(sdata):
    fit = AbandonmentAFTFitter().fit(sdata, FACTORS)
    assert fit.separated_ == [] and fit.clustered_


@pytest.mark.parametrize("family", ["weibull", "lognormal", "loglogistic"])
def test_the_quick_start_reaches_lifelines_own_fit(sdata, family, monkeypatch):
    """lifelines started at `aft_families.regression_fit`'s maximum ends where its own
    path (its univariate fitter's start, its own climb, run here to a tight tolerance) ends,
    no lower, with the same variance matrix and null log-likelihood."""
    import warnings

    import lifelines

    from analysis import aft_families
    from analysis.aft_families import quick_start

    starts = []
    fast = aft_families.regression_fit

    def spy(*args):
        found = fast(*args)
        starts.append((args[3].shape[1], found is not None))
        return found

    monkeypatch.setattr(aft_families, "regression_fit", spy)

    cls = getattr(
        lifelines,
        {"weibull": "Weibull", "lognormal": "LogNormal"}.get(family, "LogLogistic") + "AFTFitter",
    )
    design = pd.DataFrame(
        {
            "log2_ttft_ms": np.log2(sdata["ttft_ms"]),
            "indicator": sdata["indicator"],
            "duration_s": sdata["duration_ms"] / 1000,
            "event": sdata["event"],
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tight = {"ftol": 1e-14, "maxiter": 1000} if family == "loglogistic" else {"gtol": 1e-8}
        own = cls().fit(design, "duration_s", "event", fit_options=tight)
        quick = quick_start(cls, family)().fit(design, "duration_s", "event")
    assert starts == [(1, True), (3, True)]  # the null model, then the regression's maximum
    assert quick.log_likelihood_ >= own.log_likelihood_ - 1e-9
    np.testing.assert_allclose(quick.params_, own.params_, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(quick.variance_matrix_, own.variance_matrix_, rtol=1e-3, atol=1e-8)
    # the null model's log-likelihood (lifelines keeps it from the start) gives the same test
    lr_quick, lr_own = quick.log_likelihood_ratio_test(), own.log_likelihood_ratio_test()
    assert lr_quick.test_statistic == pytest.approx(lr_own.test_statistic, abs=1e-5)
