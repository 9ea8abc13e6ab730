"""The rating truth (the demo's and the report's) is the population's point, checked by Monte
Carlo over observers."""

from __future__ import annotations

import numpy as np
import pytest

from uxlab.simulate.observers import Cues, Observer, PopulationTruth, rating_acceptable_ms


@pytest.mark.parametrize("level", [0.25, 0.5, 0.75])
def test_rating_truth_is_where_the_populations_ratings_cross_the_level(level):
    """Draw 6,000 people, each rating once at the claimed threshold: the share below
    "acceptable" (4 of 5) is the level (binomial SE 0.6 points)."""
    truth = PopulationTruth()
    x_ms = rating_acceptable_ms(truth, 5, 4)[str(level)]
    rng = np.random.default_rng(7)
    cues = Cues(x_ms, 30.0, 0.3, x_ms + 3000.0)
    below = [Observer.draw(truth, rng).rating(cues, 5, rng) < 4 for _ in range(6000)]
    assert np.mean(below) == pytest.approx(level, abs=0.02)


def test_the_population_curve_is_flatter_than_the_median_persons():
    """Conditional and marginal agree at 50% only: the median person (threshold_ms exactly)
    is more decided at 25% / 75% than the population that mixes everyone."""
    spread = rating_acceptable_ms(PopulationTruth(), 5, 4)
    alone = rating_acceptable_ms(PopulationTruth(between_sd_log=0.0), 5, 4)
    assert spread["0.5"] == pytest.approx(alone["0.5"], rel=1e-6)
    assert spread["0.25"] < alone["0.25"] and spread["0.75"] > alone["0.75"]


def test_the_comparison_says_how_the_rating_truth_is_defined():
    """The demo prints the report's comparison (`analysis.report.truth_part`): a rating row
    says what its truth is."""
    from types import SimpleNamespace

    import pandas as pd

    from analysis.report.truth_part import SessionKinds, StoredTruth, TruthPart, comparison_text

    row = {"measure": "rating", "group": "pooled", "level": 0.5, "condition": "all"}
    row.update(estimate=540.0, ci_low=480.0, ci_high=600.0, estimand="population")
    data = SimpleNamespace(
        truth=TruthPart(SessionKinds(simulated_in=8, simulated_kept=8), StoredTruth({}, {}, {})),
        thresholds=pd.DataFrame([{**row, "true_value": 555.9}]),
        psychometric=None,
        adaptive=None,
    )
    text = comparison_text(data)
    assert "rating acceptable 50%" in text and "556" in text and "yes" in text
    assert "marginal over participants" in text and "median participant" in text
