"""Ratings: MOS/SOS/%GoB/%PoW by hand, ordinal slope recovery, the acceptable-rating threshold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from analysis_fixtures import CUTS, Truth, simulate_trial_table

from analysis.exclusions import apply_exclusions
from analysis.ratings import (
    OrdinalLatencyFitter,
    acceptability_threshold,
    acceptable_binary,
    rating_summary,
)


@pytest.fixture(scope="module")
def kept() -> pd.DataFrame:
    return apply_exclusions(simulate_trial_table(n_participants=30, reps=4, seed=2)).kept


def test_mos_sos_gob_pow_by_hand():
    trials = pd.DataFrame(
        {
            "participant": list("abcdef"),
            "ttft_ms": [200, 200, 200, 2000, 2000, 2000],
            "q_quality": [5, 4, 3, 1, 2, np.nan],
        }
    )
    table = rating_summary(trials, "q_quality", ["ttft_ms"], scale_size=5).set_index("ttft_ms")
    fast, slow = table.loc[200], table.loc[2000]
    assert fast["n"] == 3 and fast["mos"] == 4.0 and fast["sos"] == 1.0
    assert fast["pct_gob"] == pytest.approx(200 / 3) and fast["pct_pow"] == 0
    # t-interval with 2 degrees of freedom: 4 +- 4.303 / sqrt(3)
    assert fast["ci_high"] - fast["mos"] == pytest.approx(4.302653 / np.sqrt(3), rel=1e-5)
    assert slow["n"] == 2 and slow["pct_pow"] == 100 and slow["pct_gob"] == 0


def test_ordinal_slope_recovered(kept):
    fit = OrdinalLatencyFitter().fit(kept, "q_quality", "ttft_ms")
    truth = -Truth().rating_slope_per_doubling
    # a participant random effect attenuates a marginal slope a little; allow for it
    assert fit.slope_ci_[0] < truth * 0.93 and truth < fit.slope_ci_[1]
    assert fit.slope_ci_[1] < 0
    assert fit.n_clusters_ == 29
    assert np.all(np.diff(fit.cutpoints_) > 0)
    probs = fit.predict_proba(np.array([200.0, 6400.0]))
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    assert probs[0] @ fit.levels_ > probs[1] @ fit.levels_


def test_acceptable_rating_threshold_from_the_engine(kept):
    truth = Truth()
    # P(rating >= 3) = 0.5 where the latent crosses the second cut point (for u_p = 0)
    true_ms = 1000 * 2 ** (-CUTS[1] / truth.rating_slope_per_doubling)
    fitter = acceptability_threshold(kept, "q_quality", "ttft_ms", 3, n_boot=300, seed=0)
    assert fitter.direction_ == "falling"
    estimate = fitter.threshold(0.5)
    assert estimate == pytest.approx(true_ms, rel=0.25)
    ordinal = OrdinalLatencyFitter().fit(kept, "q_quality", "ttft_ms")
    assert ordinal.latency_at_half(3) == pytest.approx(estimate, rel=0.25)


def test_acceptable_binary_keeps_unrated_missing():
    out = acceptable_binary(pd.Series([1, 3, 5, np.nan]), 3)
    assert out.iloc[:3].tolist() == [0.0, 1.0, 1.0] and np.isnan(out.iloc[3])
