"""A curve steeper than the level spacing: its intervals span the gap between the tested
levels where it switches (analysis.steep_tails), a graded curve's do not."""

from __future__ import annotations

import numpy as np

from analysis.psychometric import PsychometricFitter
from analysis.steep_tails import widen_steep_tails

LEVELS_MS = [200.0, 400.0, 650.0, 1000.0, 1500.0, 2500.0]


def _table(yes):
    fit = PsychometricFitter().fit(LEVELS_MS, yes, [10] * 6, n_boot=300, seed=1)
    return fit.thresholds_.set_index("level")


def test_separated_answers_stretch_every_interval_over_the_gap():
    t = _table([0, 0, 0, 10, 10, 10])
    mid = t.loc[0.5, "estimate"]
    assert t.loc[0.25, "ci_high"] >= mid * (1 - 1e-9)
    assert t.loc[0.75, "ci_low"] <= mid * (1 + 1e-9)
    assert t.loc[0.25, "ci_low"] < t.loc[0.25, "estimate"]
    for level in (0.25, 0.5, 0.75):  # every interval spans the untested gap 650-1,000 ms
        assert t.loc[level, "ci_low"] <= 650 * (1 + 1e-9)
        assert t.loc[level, "ci_high"] >= 1000 * (1 - 1e-9)


def test_graded_answers_keep_their_own_25_and_75_intervals():
    fit = PsychometricFitter().fit(LEVELS_MS, [0, 1, 3, 7, 9, 10], [10] * 6, n_boot=0)
    low, high = np.log([300.0, 500.0, 900.0]), np.log([400.0, 700.0, 1100.0])
    got = widen_steep_tails(fit.result_.layout, fit.result_.theta, low, high)
    np.testing.assert_array_equal(got[0], low)  # width 1.18 ln ms, far above the floor
    np.testing.assert_array_equal(got[1], high)
