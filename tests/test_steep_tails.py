"""A curve steeper than the level spacing: its 25% / 75% intervals reach the 50% point
(analysis.steep_tails), a graded curve's do not."""

from __future__ import annotations

import numpy as np

from analysis.psychometric import PsychometricFitter
from analysis.steep_tails import widen_steep_tails

LEVELS_MS = [200.0, 400.0, 650.0, 1000.0, 1500.0, 2500.0]


def _table(yes):
    fit = PsychometricFitter().fit(LEVELS_MS, yes, [10] * 6, n_boot=300, seed=1)
    return fit.thresholds_.set_index("level")


def test_separated_answers_stretch_the_25_and_75_intervals_to_the_middle():
    t = _table([0, 0, 0, 10, 10, 10])
    mid = t.loc[0.5, "estimate"]
    assert t.loc[0.25, "ci_high"] >= mid * (1 - 1e-9)
    assert t.loc[0.75, "ci_low"] <= mid * (1 + 1e-9)
    assert t.loc[0.25, "ci_low"] < t.loc[0.25, "estimate"]  # the outer end is untouched


def test_graded_answers_keep_their_own_25_and_75_intervals():
    fit = PsychometricFitter().fit(LEVELS_MS, [0, 1, 3, 7, 9, 10], [10] * 6, n_boot=0)
    low, high = np.log([300.0, 500.0, 900.0]), np.log([400.0, 700.0, 1100.0])
    got = widen_steep_tails(fit._result.layout, fit._result.theta, (0.25, 0.5, 0.75), low, high)
    np.testing.assert_array_equal(got[0], low)  # width 1.18 ln ms, far above the floor
    np.testing.assert_array_equal(got[1], high)
