"""Adaptive designs: the pooled psychometric thresholds come from a model with participant
effects (or are withheld with the reason), and the report says which estimator it used."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from helpers.shared import built_once

from analysis.report import ReportOptions, analyse
from analysis.trial_table import load_trial_table
from uxlab.simulate import simulate_cohort
from uxlab.store import Store
from uxlab.store.export import export_db
from uxlab.study import load_study

QUEST = Path(__file__).resolve().parents[1] / "studies" / "ttft-quest.toml"


def _quest_export(tmp: Path) -> Path:
    with Store.open(tmp / "q.sqlite") as store:
        simulate_cohort(load_study(QUEST), store, 9, seed=3)
    export_db(tmp / "q.sqlite", tmp / "export")
    return tmp / "export"


@pytest.fixture(scope="module")
def quest_table(tmp_path_factory):
    return load_trial_table(built_once(tmp_path_factory, "quest-estimator", _quest_export))


@pytest.mark.slow
def test_quest_study_uses_the_participant_effects_model(quest_table):
    data = analyse(quest_table, ReportOptions(n_boot=60, per_participant=False))
    part = data.psychometric
    assert "adaptive design (quest)" in part.estimator
    assert "random intercept per participant" in part.estimator
    pop = part.population.set_index("level")
    assert np.all(np.isfinite(pop["estimate"]))
    assert pop.loc[0.25, "estimate"] < pop.loc[0.5, "estimate"] < pop.loc[0.75, "estimate"]
    assert any("random intercept" in note for note in data.notes)


@pytest.mark.slow
def test_quest_study_below_the_minimum_withholds_25_and_75(quest_table):
    few = quest_table.trials["participant"].isin(
        sorted(quest_table.trials.participant.unique())[:3]
    )
    table = replace(quest_table, trials=quest_table.trials[few])
    data = analyse(table, ReportOptions(n_boot=40, per_participant=False))
    pop = data.psychometric.population.set_index("level")
    assert np.isnan(pop.loc[0.25, "estimate"]) and np.isnan(pop.loc[0.75, "estimate"])
    assert np.isfinite(pop.loc[0.5, "estimate"])
    assert "withheld" in data.psychometric.estimator


def test_staircase_levels_measured_biased_are_withheld_with_the_bias_said():
    import pandas as pd

    from analysis.report.data import PsychometricPart
    from analysis.report.psychometric_part import _withhold_measured_bias

    table = pd.DataFrame(
        {"level": [0.25, 0.5, 0.75], "estimate": [500.0, 800.0, 1200.0], "ci_low": 1.0}
    ).assign(ci_high=2000.0)
    fresh = table.copy()
    part = PsychometricPart("q", "too slow", None, table, estimator="adaptive design (staircase)")
    _withhold_measured_bias(part, "staircase")
    pop = part.population.set_index("level")
    assert np.isnan(pop.loc[0.75, "estimate"]) and pop.loc[0.5, "estimate"] == 800.0
    assert pop.loc[0.25, "estimate"] == 500.0
    assert "bias was 50% +2% to +13%, 75% +8% to +56% (benchmarks/validation_grid.py)" in (
        part.estimator
    )
    assert "the 75% point is withheld" in part.estimator
    quest = PsychometricPart("q", "too slow", None, fresh, estimator="x")
    _withhold_measured_bias(quest, "quest")
    assert quest.estimator == "x" and quest.population["estimate"].notna().all()
