"""The estimand named: pooled psychometric figures say whether they are the population
curve's point or the median participant's, and `--estimand` picks which is `pooled`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.report import ReportOptions, analyse
from analysis.report.psychometric_part import median_person_thresholds
from analysis.report.thresholds_csv import thresholds_table
from analysis.trial_table import load_trial_table


def _data(tmp_path, estimand: str):
    trials = simulate_trial_table(n_participants=8, reps=2, seed=11, failing_participant=False)
    table = load_trial_table(write_export_folder(tmp_path / estimand, trials))
    return analyse(table, ReportOptions(n_boot=60, estimand=estimand))


@pytest.mark.slow
def test_both_estimands_are_written_and_named(tmp_path):
    pop = thresholds_table(_data(tmp_path, "population"))
    med = thresholds_table(_data(tmp_path, "median-person"))
    for t in (pop, med):
        psy = t[t.measure == "psychometric"]
        assert set(psy["estimand"]) >= {"population", "median-person", "this participant"}
        assert psy["estimand"].ne("").all()
    pooled_pop = pop[(pop.group == "pooled") & (pop.measure == "psychometric")]
    pooled_med = med[(med.group == "pooled") & (med.measure == "psychometric")]
    assert set(pooled_pop.loc[pooled_pop.condition == "all", "estimand"]) == {"population"}
    assert set(pooled_med.loc[pooled_med.condition == "all", "estimand"]) == {"median-person"}
    # the same two numbers, swapped between `pooled` and the other estimand's group
    a = pop[(pop.group == "median-person")].set_index("level")["estimate"]
    b = pooled_med[pooled_med.condition == "all"].set_index("level")["estimate"]
    pd.testing.assert_series_equal(a, b)


def test_median_person_is_the_median_of_per_person_points():
    class Fit:  # what median_person_thresholds reads of a fitted person
        def __init__(self, m):
            self.thresholds_ = pd.DataFrame(
                {"level": [0.25, 0.5, 0.75], "estimate": [m * 0.8, m, m * 1.2], "n_trials": 40}
            )

    fits = {str(i): Fit(m) for i, m in enumerate([500.0, 700.0, 800.0, 900.0, 3000.0])}
    table = median_person_thresholds(fits, 400, 0).set_index("level")
    assert table.loc[0.5, "estimate"] == 800.0  # the skewed 3,000 ms person does not pull it
    assert table.loc[0.5, "ci_low"] <= 800.0 <= table.loc[0.5, "ci_high"]
    assert np.isclose(table.loc[0.25, "estimate"], 640.0)


def test_censoring_sentence_follows_the_columns_the_table_has():
    from analysis.report.abandonment_part import censoring_sentence

    with_end = pd.DataFrame({"scheduled_end_ms": [900.0, np.nan], "shown_last_ms": [880.0, 1.0]})
    without = pd.DataFrame({"shown_last_ms": [880.0, 950.0]})
    assert "censored at its scheduled end (scheduled_end_ms)" in censoring_sentence(with_end)
    text = censoring_sentence(without)
    assert "no scheduled_end_ms" in text and "shown_last_ms" in text
    assert "scheduled end (" not in text


@pytest.mark.slow
def test_median_person_report_sets_the_population_beside_it_as_printed_by_default(tmp_path):
    """The median person's figures are withheld; beside them the report prints the
    population curve's points with the interval the default report gives them (not the
    trials-resampled one), compares no published figure with the withheld estimate as if
    data were short, and the console says why there is no figure."""
    from analysis.report.blocks import ci_range
    from analysis.report.console import summary_lines
    from analysis.report.psychometric_blocks import psychometric_blocks
    from analysis.report.references_part import reference_comparison
    from analysis.report.render import render_markdown

    data = _data(tmp_path, "median-person")
    table = thresholds_table(data)
    pop = table[(table.measure == "psychometric") & (table.group == "population")]
    mid = pop.set_index("level").loc[0.5]
    md = render_markdown(psychometric_blocks(data), "t")
    rows = [ln.replace("\\", "") for ln in md.splitlines() if ln.startswith("| 0.5 |")]
    assert (
        f"{mid.estimate:,.0f} [{ci_range(mid.ci_low, mid.ci_high, data.tested_range)}]" in rows[0]
    )
    assert "participant jackknife-t" in md and "percentile bootstrap of the median" not in md
    trial_level = data.psychometric.pooled.thresholds_.set_index("level").loc[0.5]
    assert f"{trial_level.ci_low:,.0f} to" not in rows[0]  # not the parametric bootstrap's
    verdicts = reference_comparison(data)
    ttft = verdicts[verdicts["compared_with"].str.startswith("psychometric ttft_ms")]
    assert not ttft["verdict"].str.startswith("not enough data").any()
    assert ttft["verdict"].str.contains("median participant's threshold is withheld").any()
    lines = summary_lines(data)
    at = next(i for i, x in enumerate(lines) if "psychometric" in x)
    assert "median participant's is withheld" in lines[at]
    assert "no estimate from these data" not in lines[at]
    # and the population curve's point, with the interval the report prints, below it
    assert f"{mid.estimate:8.0f} ms" in lines[at + 1] and "population curve's" in lines[at + 1]
    from analysis.report.summary import plain_summary
    from number_text import duration

    said = next(x for x in plain_summary(data) if "median participant's 50% threshold" in x)
    assert "missed the coverage and bias goals when measured" in said
    assert (
        f"the population curve's 50% threshold, another estimand, is {duration(mid.estimate)}"
        in said
    )
    assert len(said) < 400  # the whole reason is in the psychometric section


@pytest.mark.slow
def test_the_median_person_is_withheld_for_what_was_measured_even_where_answers_separate(
    tmp_path,
):
    """One person whose answers separate gave the median a bracket; the reason then named
    only the bracket, as if the median would be printed without it. The measured reason
    leads; the bracket follows."""
    trials = simulate_trial_table(n_participants=8, reps=2, seed=11, failing_participant=False)
    step = (trials["participant"] == "P-001") & (trials["attention_check"] == 0)
    trials.loc[step, "q_acceptable"] = (trials.loc[step, "ttft_ms"] < 1000).astype(int)
    trials.loc[step, "outcome"], trials.loc[step, "t_abandon_ms"] = "completed", np.nan
    table = load_trial_table(write_export_folder(tmp_path, trials))
    data = analyse(table, ReportOptions(n_boot=40, estimand="median-person"))
    assert "P-001" in data.psychometric.person_separation
    said = data.psychometric.median_withheld
    assert said.startswith("held to the headline's goal")
    assert "the median participant's switch lies only between" in said


@pytest.mark.slow
def test_median_person_below_the_population_minimum_claims_no_population_point(tmp_path):
    """With 3 people the pooled fit is these people's trials, with no interval: the column,
    the model sentence, the summary and the console say so, not 'the population curve'."""
    from analysis.report.console import summary_lines
    from analysis.report.psychometric_blocks import psychometric_blocks
    from analysis.report.render import render_markdown
    from analysis.report.summary import plain_summary

    trials = simulate_trial_table(n_participants=3, reps=2, seed=11, failing_participant=False)
    table = load_trial_table(write_export_folder(tmp_path, trials))
    data = analyse(table, ReportOptions(n_boot=40, estimand="median-person"))
    md = render_markdown(psychometric_blocks(data), "t")
    assert "these participants' pooled trials (no population interval below 4)" in md
    assert "population curve's point [95% CI" not in md
    assert "Beside them: the points of the pooled fit of these participants' trials" in md
    said = next(x for x in plain_summary(data) if "median participant's 50% threshold" in x)
    n = data.n_participants  # 2 or 3: the fixture may exclude one
    assert f"these {n} participants' pooled trials" in said and "population curve's" not in said
    line = next(x for x in summary_lines(data) if "psychometric" in x)
    assert "population curve's" not in line
