"""The test of whether participants' curves differ (`analysis.psychometric.people_differ`)
and the summary sentence it makes."""

from __future__ import annotations

import numpy as np
from analysis_fixtures import Truth, simulate_trial_table, write_export_folder
from independent_tables import OBSERVERS, fixed_trials

from analysis.psychometric.people_differ import one_curve_for_all_p
from analysis.report import ReportOptions, analyse, write_report
from analysis.report.psychometric_part import fit_participant
from analysis.trial_table import load_trial_table


def _people(points_ms: list[float], seed: int = 1) -> tuple[list, object]:
    """Each person's fit and the fit of everyone's trials together, fixed design."""
    rng = np.random.default_rng(seed)
    trials = [fixed_trials(m, OBSERVERS["alike"], rng, 8) for m in points_ms]
    each = [fit_participant(x, y, n_boot=0, seed=0) for x, y in trials]
    together = fit_participant(
        np.concatenate([x for x, _ in trials]),
        np.concatenate([y for _, y in trials]),
        n_boot=0,
        seed=0,
    )
    return each, together


def test_the_same_answers_from_everyone_are_one_curve():
    x, y = fixed_trials(800.0, OBSERVERS["alike"], np.random.default_rng(2), 8)
    each = [fit_participant(x, y, n_boot=0, seed=0) for _ in range(3)]
    together = fit_participant(np.tile(x, 3), np.tile(y, 3), n_boot=0, seed=0)
    assert one_curve_for_all_p(each, together) > 0.99


def test_people_far_apart_are_found_to_differ():
    each, together = _people([300.0, 3000.0, 300.0, 3000.0])
    assert one_curve_for_all_p(each, together) < 0.001


def test_one_person_has_no_test():
    each, together = _people([800.0])
    assert np.isnan(one_curve_for_all_p(each, together))


def _summary(tmp_path, sd_log: float) -> str:
    trials = simulate_trial_table(
        n_participants=6,
        reps=4,
        seed=3,
        truth=Truth(threshold_sd_log=sd_log),
        failing_participant=False,
    )
    data = analyse(
        load_trial_table(write_export_folder(tmp_path / "e", trials)), ReportOptions(n_boot=40)
    )
    md = write_report(data, tmp_path / "r")["markdown"].read_text(encoding="utf-8")
    return md[md.index("## Summary") : md.index("## The study")]


def test_the_summary_does_not_say_people_alike_vary(tmp_path):
    """Six people alike: their estimates spread (it said "Individual thresholds vary"), and
    the summary says the spread is their trials' noise."""
    summary = _summary(tmp_path, 0.0)
    assert "Individual thresholds vary" not in summary
    assert "Individual estimates spread" in summary
    assert "these data do not show that participants differ" in summary


def test_the_summary_says_people_far_apart_differ(tmp_path):
    summary = _summary(tmp_path, 1.0)
    assert "Individual thresholds differ" in summary
    assert "they differ more than their own trials' noise allows" in summary
