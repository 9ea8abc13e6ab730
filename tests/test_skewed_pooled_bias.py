"""benchmarks/skewed_pooled_bias.py in small: its three parts run and the family's part,
which needs no simulation, is what the long run reports."""

from __future__ import annotations

import numpy as np
from independent_tables import OBSERVERS, at_place

from benchmarks.skewed_pooled_bias import family_bias, main, sample_curve_bias


def test_the_normal_family_misses_a_skewed_population_curve_by_about_one_percent():
    skewed = family_bias(at_place(OBSERVERS["skewed"], "between levels"))
    alike_spread = family_bias(at_place(OBSERVERS["differing"], "between levels"))
    assert 0.005 < skewed[1] < 0.02  # the 50% point: high, with unlimited trials
    assert abs(alike_spread[1]) < 0.005  # a normal spread: its curve is all but a normal


def test_people_alike_sampled_have_the_population_curve():
    bias = sample_curve_bias(OBSERVERS["alike"], 4, 5, np.random.default_rng(0))
    assert np.allclose(bias, 0.0, atol=1e-6)


def test_a_small_run_prints_every_part(capsys):
    assert main(["--observers", "skewed", "--people", "4", "--studies", "3", "--draws", "10"]) == 0
    out = capsys.readouterr().out
    assert "the people sampled" in out and "the family" in out
    assert out.count("the report's point") == 2 and out.count("jackknife-corrected") == 2


def test_the_run_leaves_the_report_interval_as_it_was():
    import analysis.small_sample_interval as ssi

    before = ssi.jackknife_t
    main(["--observers", "alike", "--people", "4", "--studies", "1", "--draws", "2"])
    assert ssi.jackknife_t is before
