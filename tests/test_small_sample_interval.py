"""The participant jackknife-t interval for few participants (analysis.small_sample_interval)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.psychometric import population_threshold
from analysis.small_sample_interval import (
    POPULATION_SIGMOID,
    jackknife_t,
    mixed_threshold_counts,
    mixed_threshold_small_n,
    population_threshold_small_n,
)
from benchmarks.support.pooled_validation import PooledCell, simulate_pooled_study


def test_jackknife_t_of_a_mean_is_the_classical_t_interval():
    # leave-one-out means give the jackknife SE s / sqrt(n) exactly
    values = np.array([3.1, 4.7, 2.2, 5.9, 4.0])
    loo = np.array([np.delete(values, i).mean() for i in range(values.size)])
    low, high = jackknife_t(np.array([values.mean()]), loo[:, None])
    want = stats.t.interval(0.95, values.size - 1, values.mean(), stats.sem(values))
    assert np.allclose([low[0], high[0]], want)


def test_jackknife_t_needs_two_finite_leave_one_out_estimates():
    low, high = jackknife_t(np.array([1.0]), np.array([[np.nan], [2.0]]))
    assert np.isnan(low[0]) and np.isnan(high[0])


def test_four_people_get_a_wider_interval_than_the_percentile_bootstrap():
    # with 4 people the percentile bootstrap covered 0.87-0.91 (benchmarks/
    # small_sample_coverage.py); the jackknife-t interval is wider, around the same estimate
    df = simulate_pooled_study(PooledCell(4, "differing", "fixed"), np.random.default_rng(3))
    boot = population_threshold(df, "x", "y", "participant", 200, 0, sigmoid=POPULATION_SIGMOID)
    boot = boot.set_index("level")
    jack = population_threshold_small_n(df, "x", "y", "participant", 200, 0).set_index("level")
    assert np.allclose(boot["estimate"], jack["estimate"])
    assert (jack["ci_low"] < jack["estimate"]).all() and (jack["estimate"] < jack["ci_high"]).all()
    assert (jack["ci_high"] / jack["ci_low"] > boot["ci_high"] / boot["ci_low"]).all()


def test_everyone_separated_at_one_gap_gets_the_gap_as_interval():
    rows = [
        {"participant": p, "x": x, "y": int(x >= 1000.0)}
        for p in ("a", "b", "c", "d")
        for x in (200.0, 400.0, 650.0, 1000.0, 1500.0, 2500.0)
        for _ in range(10)
    ]
    table = population_threshold_small_n(pd.DataFrame(rows), "x", "y", "participant", 400, 1)
    # never narrower than one person's: the switch lies anywhere in the untested gap
    for row in table.itertuples():
        assert row.ci_low == pytest.approx(650.0) and row.ci_high == pytest.approx(1000.0)


def test_mixed_model_jackknife_on_a_staircase_study():
    df = simulate_pooled_study(PooledCell(6, "differing", "staircase"), np.random.default_rng(5))
    boot, jack = mixed_threshold_small_n(df.assign(ok=1.0 - df["y"]), "ok", "x", n_boot=50)
    assert np.allclose(boot["estimate"], jack["estimate"])
    assert np.isfinite(jack[["ci_low", "ci_high"]].to_numpy()).all()
    assert (jack["ci_low"] < jack["estimate"]).all() and (jack["estimate"] < jack["ci_high"]).all()


def test_mixed_model_from_counts_equals_the_trial_table_path():
    """The planner's path (counts per participant and level) gives the report's figures."""
    df = simulate_pooled_study(PooledCell(7, "differing", "staircase"), np.random.default_rng(8))
    df = df.assign(ok=1.0 - df["y"])
    _, jack = mixed_threshold_small_n(df, "ok", "x", n_boot=0)
    levels_ms = np.sort(df["x"].unique())
    people = sorted(df["participant"].unique())
    k, n = np.zeros((len(people) + 1, levels_ms.size)), np.zeros((len(people) + 1, levels_ms.size))
    for (person, x), part in df.groupby(["participant", "x"]):
        i, j = people.index(person) + (person > people[2]), np.searchsorted(levels_ms, x)
        k[i, j], n[i, j] = part["ok"].sum(), len(part)  # row 3: a participant without trials
    estimate, low, high = mixed_threshold_counts(levels_ms, k, n)
    np.testing.assert_array_equal(estimate, jack["estimate"])
    np.testing.assert_array_equal(low, jack["ci_low"])
    np.testing.assert_array_equal(high, jack["ci_high"])
    with pytest.raises(ValueError, match="both sides"):
        mixed_threshold_counts(levels_ms, n, n)
