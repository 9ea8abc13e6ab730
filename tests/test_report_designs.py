"""Another lab's adaptive table (no study.json): the levels that differ between people are
found, the pooled fit is not used for the population, and the lab can declare its design."""

from __future__ import annotations

import numpy as np
import pandas as pd
from independent_tables import OBSERVERS, Study, simulate_study

from analysis.design_detection import person_dependent_levels
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
    return ReportOptions(judgement="too_slow", n_boot=40, per_participant=False, **kw)


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
