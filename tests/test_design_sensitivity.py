"""The verdicts' power: how far from the true threshold a figure must lie for a study of the
data's own design and size to exclude it 80% of the time (`uxlab.plan.sensitivity`)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from uxlab.plan.sensitivity import (
    design_sensitivity,
    exclusion_share,
    sensitivity_from,
    spread_draws,
)
from uxlab.plan.table_design import SimulatedStudies, simulate_studies
from uxlab.simulate.observers import PopulationTruth

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from design_power_check import known_design, trial_table


def test_a_figure_counts_as_excluded_on_either_side_only_outside_the_interval():
    studies = SimulatedStudies(
        truth_ms=np.array([100.0, 100.0, 100.0, 100.0]),
        ci_low_ms=np.array([80.0, 50.0, 90.0, np.nan]),  # the last study's fit failed
        ci_high_ms=np.array([125.0, 200.0, 111.0, np.nan]),
    )
    share = exclusion_share(studies, np.array([1.0, 1.2, 1.3, 2.5]))
    # x1.2: above 111 (study 3), below 90 only for study 3 (83 < 90): 1/4 each side
    assert share.tolist() == [0.0, 0.25, 0.5, 0.75]
    assert sensitivity_from(studies, power=0.5) == pytest.approx(1.25, rel=0.01)
    assert sensitivity_from(studies, power=0.8) == np.inf  # a failed fit never excludes


def test_with_the_truth_known_the_distance_found_is_excluded_four_times_in_five():
    """The distance found on one set of simulated studies is excluded by 80% of another set
    drawn from the same truth: the share and the search are the design's real power (with
    the truth fitted to a table instead, it is optimistic below 20 people: the benchmark)."""
    design = known_design(PopulationTruth(), 8)
    found = sensitivity_from(simulate_studies(design, 8, sims=400, n_boot=0, seed=1))
    again = simulate_studies(design, 8, sims=400, n_boot=0, seed=2)
    assert 1.2 < found < 2.0
    assert exclusion_share(again, np.array([found]))[0] == pytest.approx(0.8, abs=0.05)


def test_the_report_simulates_the_tables_own_design():
    """`design_sensitivity` fits a truth to the table and simulates its own size: fewer
    people, a larger distance."""
    truth = PopulationTruth()
    few = design_sensitivity(trial_table(truth, 4, seed=3), "ttft_ms", "q_acceptable")
    many = design_sensitivity(trial_table(truth, 16, seed=3), "ttft_ms", "q_acceptable")
    assert 1.0 < many < few < 10.0


def test_the_spread_between_people_is_drawn_wider_the_fewer_people_tell_of_it():
    """A variance from N people, drawn as estimate x (N - 1) / chi-square(N - 1): right-skewed,
    its median above the estimate, tighter with more people; the rest of the truth kept."""
    point = PopulationTruth(between_sd_log=0.2)
    few = np.array([t.between_sd_log for t in spread_draws(point, 4, 2000, seed=1)])
    many = np.array([t.between_sd_log for t in spread_draws(point, 40, 2000, seed=1)])
    assert np.median(few) > np.median(many) > 0.2
    assert np.quantile(few, 0.9) / np.quantile(few, 0.1) > 2 * (
        np.quantile(many, 0.9) / np.quantile(many, 0.1)
    )
    assert {t.threshold_ms for t in spread_draws(point, 4, 10, seed=1)} == {point.threshold_ms}
    none = spread_draws(PopulationTruth(between_sd_log=0.0), 8, 10, seed=1)
    assert all(t.between_sd_log == 0.0 for t in none)
