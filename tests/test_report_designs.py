"""Another lab's adaptive table (no study.json): the levels that differ between people are
found, the pooled fit is not used for the population, and the lab can declare its design."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from independent_tables import OBSERVERS, Study, simulate_study

from analysis.design_detection import answer_driven_levels, person_dependent_levels
from analysis.foreign_table import ColumnMap
from analysis.report import ReportOptions, analyse
from analysis.trial_table import load_trial_table


def _table(tmp_path, design: str, people: int = 6, seed: int = 2):
    trials = simulate_study(
        Study(design, OBSERVERS["differing"], people, 40 if design != "fixed" else 4),
        np.random.default_rng(seed),
    )
    path = tmp_path / f"{design}.csv"
    trials.drop(columns="true_m_ms").to_csv(path, index=False)
    return load_trial_table(path, ColumnMap(stimulus="ttft_ms", judgement="too_slow"))


def _options(**kw) -> ReportOptions:
    return ReportOptions(judgement="too_slow", n_boot=40, **{"per_participant": False, **kw})


def test_a_fixed_design_is_not_taken_for_an_adaptive_one(tmp_path):
    table = _table(tmp_path, "fixed")
    assert person_dependent_levels(table.trials, "ttft_ms") is None
    # a few lost trials (unanswered, excluded) do not make it one either
    assert person_dependent_levels(table.trials.iloc[3:], "ttft_ms") is None


def test_a_staircase_table_is_found_and_its_biased_points_withheld(tmp_path):
    data = analyse(_table(tmp_path, "staircase"), _options())
    said = "\n".join(data.notes)
    assert "Design: the levels each person was tested at differ between people" in said
    assert "of the changes of level went the way the previous answer would send" in said
    assert "--procedure fixed|staircase|quest|interleaved" in said
    p = data.psychometric
    assert "random intercept per participant" in p.estimator
    pop = p.population.set_index("level")
    assert pop.loc[[0.25, 0.75], "estimate"].isna().all()  # withheld, with the reason
    rows = data.thresholds[(data.thresholds.group == "pooled") & (data.thresholds.level != 0.5)]
    assert rows["withheld"].str.contains("adaptive design").all()


def _alike_staircase(tmp_path, seed: int):
    """A 1-up/2-down table of 4 people alike: they reach the same levels."""
    trials = simulate_study(
        Study("staircase", OBSERVERS["alike"], 4, 48), np.random.default_rng(seed)
    )
    path = tmp_path / "alike-staircase.csv"
    trials.drop(columns="true_m_ms").to_csv(path, index=False)
    return load_trial_table(path, ColumnMap(stimulus="ttft_ms", judgement="too_slow"))


def test_a_staircase_of_people_alike_is_found_by_where_each_answer_sends_the_next_level(
    tmp_path,
):
    """People alike reach the same levels, so the levels alone do not tell (the pooled fit
    was used, and its 75% point covered 0.83-0.89 on such tables); the changes of level,
    down after every "too slow" and up after acceptable answers, do."""
    table = _alike_staircase(tmp_path, seed=1)
    assert person_dependent_levels(table.trials, "ttft_ms") is None
    data = analyse(table, _options())
    said = "\n".join(data.notes)
    assert "Design: 100% of the changes of level went the way the previous answer" in said
    assert "Cochran-Mantel-Haenszel" in said and "chose each person's levels" in said
    pop = data.psychometric.population.set_index("level")
    assert pop.loc[[0.25, 0.5, 0.75], "estimate"].isna().all()
    assert data.psychometric.estimator.startswith("adaptive design (")


def test_fixed_designs_in_any_order_are_not_taken_for_answer_led_ones():
    """In a fixed design the next level is drawn whatever the last answer was: 60 tables of
    4-20 people (alike, differing, steep) in their random order, and sorted by level."""
    rng = np.random.default_rng(11)
    for i in range(60):
        obs = OBSERVERS[("alike", "differing", "steep")[i % 3]]
        trials = simulate_study(Study("fixed", obs, (4, 8, 20)[i % 3], 8), rng)
        too_slow = trials["too_slow"].to_numpy()
        assert answer_driven_levels(trials, "ttft_ms", too_slow) is None
        by_level = trials.sort_values(["participant", "ttft_ms"], kind="stable")
        assert answer_driven_levels(by_level, "ttft_ms", by_level["too_slow"].to_numpy()) is None


def test_answer_led_levels_need_the_adaptive_direction_within_a_level():
    """Down after "too slow" and up after "acceptable" at the same level is the evidence;
    the opposite (up after "too slow") is not a procedure anyone runs, and moves from
    levels where only one answer was ever given say nothing."""
    x = [400, 500, 400, 500, 600, 500, 400, 500, 600, 500] * 3
    slow = [0, 1, 0, 0, 1, 1, 0, 0, 1, 1] * 3  # at 500: "too slow" -> down, else up
    trials = pd.DataFrame({"participant": "p1", "x": x})
    found = answer_driven_levels(trials, "x", np.array(slow))
    assert found is not None and found.by_moves and found.follows_answer == 1.0
    assert answer_driven_levels(trials, "x", 1 - np.array(slow)) is None  # the other way
    ones = (np.array(x) >= 500).astype(int)  # each level always gets the same answer
    assert answer_driven_levels(trials, "x", ones) is None


def test_the_median_persons_point_is_withheld_with_the_figures_measured(tmp_path):
    """The median of the per-person 50% points is withheld on every design with what was
    measured (a skewed spread biases it on fixed, staircase and QUEST+ tables alike): on a
    declared staircase, an undeclared adaptive table and QUEST+."""

    def median_rows(design: str, **kw) -> pd.DataFrame:
        data = analyse(_table(tmp_path, design), _options(per_participant=True, **kw))
        th = data.thresholds
        return th[th.estimand == "median-person"].set_index("level")

    for rows in (
        median_rows("staircase", procedure="staircase"),
        median_rows("staircase"),
        median_rows("quest", procedure="quest"),
    ):
        assert rows["estimate"].isna().all()
        assert rows.loc[0.5, "withheld"].startswith("held to the headline's goal")
        assert "right skew" in rows.loc[0.5, "withheld"]
        assert "staircase and QUEST+ tables" in rows.loc[0.5, "withheld"]


def test_declaring_the_design_overrides_the_detection(tmp_path):
    table = _table(tmp_path, "staircase")
    fixed = analyse(table, _options(procedure="fixed"))
    assert not any(n.startswith("Design:") for n in fixed.notes)
    assert fixed.psychometric.estimator.startswith("pooled fit")
    quest = analyse(_table(tmp_path, "quest"), _options(procedure="quest"))
    assert quest.psychometric.estimator.startswith("adaptive design (quest)")
    assert not any(n.startswith("Design:") for n in quest.notes)


def test_a_sidecar_study_json_declares_the_procedure(tmp_path):
    table = _table(tmp_path, "staircase")
    (tmp_path / "study.json").write_text(
        '{"factors": {"ttft_ms": {"procedure": "staircase"}}}', encoding="utf-8"
    )
    table = load_trial_table(
        tmp_path / "staircase.csv", ColumnMap(stimulus="ttft_ms", judgement="too_slow")
    )
    data = analyse(table, _options())
    assert data.psychometric.estimator.startswith("adaptive design (staircase)")
    assert not any(n.startswith("Design:") for n in data.notes)
    assert isinstance(data.thresholds, pd.DataFrame)


@pytest.mark.parametrize("design", ["staircase", "fixed"])
def test_what_the_sample_supports_names_the_adaptive_model_not_the_fixed_coverage(tmp_path, design):
    """On an adaptive design the population thresholds are withheld (or come from its own
    model): the first section says so, not what the fixed designs' interval covered."""
    from analysis.report.support_section import support_blocks

    data = analyse(_table(tmp_path, design), _options())
    text = " ".join(str(getattr(b, "text", "")) for b in support_blocks(data))
    adaptive = design != "fixed"
    assert ("the population thresholds are withheld on this adaptive design" in text) is adaptive
    assert ("(participant jackknife-t) covers the truth about" in text) is not adaptive
