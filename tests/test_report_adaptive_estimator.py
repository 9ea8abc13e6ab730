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
    with Store.open(tmp / "q.sqlite", durable=False) as store:
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
    assert pop["estimate"].isna().all()  # withheld, with what was measured on QUEST+
    assert "0.55-0.85 with people steeper than the procedure's steps" in part.estimator
    assert any("random intercept" in note for note in data.notes)


@pytest.mark.slow
def test_quest_study_below_the_minimum_withholds_its_pooled_points(quest_table):
    """With 2-3 people the pooled 50% point was printed: the pooled fit of all trials, the
    one the same table calls biased on an adaptive design (it mixes people the procedure
    tested at their own levels), and the summary named it the random-intercept model's."""
    few = quest_table.trials["participant"].isin(
        sorted(quest_table.trials.participant.unique())[:3]
    )
    table = replace(quest_table, trials=quest_table.trials[few])
    data = analyse(table, ReportOptions(n_boot=40, per_participant=False))
    pop = data.psychometric.population.set_index("level")
    assert pop["estimate"].isna().all()
    assert "no pooled thresholds with 3 participants" in data.psychometric.estimator
    from analysis.report.summary import plain_summary

    said = " ".join(plain_summary(data))
    assert "the population's 50% threshold is withheld: no pooled thresholds with 3" in said
    assert "random intercept" not in said


@pytest.mark.slow
def test_one_participant_on_quest_gets_their_own_fit_as_the_pooled_one(quest_table):
    one = quest_table.trials["participant"] == sorted(quest_table.trials.participant.unique())[0]
    data = analyse(replace(quest_table, trials=quest_table.trials[one]), ReportOptions(n_boot=40))
    part = data.psychometric
    (person,) = part.per_participant.values()
    assert person is part.pooled  # one fit, one number
    pop = part.population.set_index("level")
    assert pop.loc[0.5, "estimate"] == person.thresholds_.set_index("level").loc[0.5, "estimate"]
    assert np.isnan(pop.loc[0.25, "estimate"]) and np.isnan(pop.loc[0.75, "estimate"])
    from analysis.report.summary import plain_summary

    said = " ".join(plain_summary(data))
    assert "the 50% threshold of this participant's trials is" in said
    assert "random intercept" not in said
    # the first section says whose these figures are: this person's own fit (it said "from
    # the model for adaptive designs", which needs 4 participants)
    from analysis.report.support_section import support_blocks

    text = " ".join(str(getattr(b, "text", "")) for b in support_blocks(data))
    assert "the pooled figures are that participant's own fit" in text
    assert "from the model for adaptive designs" not in text


def test_adaptive_levels_that_missed_the_goal_are_withheld_with_the_figures():
    import pandas as pd

    from analysis.report.data import PsychometricPart
    from analysis.report.psychometric_adaptive import DETECTED, withhold_measured_bias

    table = pd.DataFrame(
        {"level": [0.25, 0.5, 0.75], "estimate": [500.0, 800.0, 1200.0], "ci_low": 1.0}
    ).assign(ci_high=2000.0)

    def withheld(procedure: str) -> tuple[list[float], str]:
        part = PsychometricPart("q", "too slow", None, table.copy(), estimator="e")
        withhold_measured_bias(part, procedure)
        pop = part.population.set_index("level")
        return [lv for lv in pop.index if np.isnan(pop.loc[lv, "estimate"])], part.estimator

    levels, said = withheld("staircase")
    assert levels == [0.25, 0.5, 0.75]
    assert "50% point was biased +2% to +13%" in said and "covered 0.70-0.97" in said
    assert said.endswith("so the 25% / 50% / 75% points are withheld")
    levels, said = withheld("quest")
    assert levels == [0.25, 0.5, 0.75] and "covered 0.90-0.98 with people of" in said
    assert withheld("interleaved")[0] == [0.25, 0.5, 0.75]
    levels, said = withheld(DETECTED)
    assert levels == [0.25, 0.5, 0.75] and "not declared" in said
    assert withheld("some lab's own procedure")[0] == [0.25, 0.5, 0.75]  # as if detected


@pytest.mark.slow
def test_under_median_person_the_withheld_point_names_the_sessions_own_median(quest_table):
    """The median of per-person fits is withheld; when the sessions carry their own adaptive
    estimates, the reason says where their median is (a different point: the procedure's
    target)."""
    data = analyse(quest_table, ReportOptions(n_boot=40, estimand="median-person"))
    said = data.psychometric.median_withheld
    assert said.startswith("held to the headline's goal")
    assert said.endswith("is in 'Adaptive estimates'")
    assert data.adaptive is not None  # and the section is there
    # beside the withheld median: no figure of the pooled fit, said why, and the console
    # line says the median is withheld, not that the data hold no estimate
    from analysis.report.console import summary_lines
    from analysis.report.psychometric_blocks import psychometric_blocks
    from analysis.report.render import render_markdown

    md = render_markdown(psychometric_blocks(data), "t")
    row = next(ln for ln in md.splitlines() if ln.startswith("| 0.5 |"))
    assert "biased here: it mixes people tested at their own levels" in row
    assert "participant jackknife-t" not in md.split("Model:")[1].split("\n")[0]
    line = next(x for x in summary_lines(data) if "psychometric" in x)
    assert "the median participant's is withheld: see the report" in line


@pytest.mark.slow
def test_the_console_says_a_pooled_point_is_withheld_on_an_adaptive_design(quest_table):
    from analysis.report.console import summary_lines

    data = analyse(quest_table, ReportOptions(n_boot=40, per_participant=False))
    line = next(x for x in summary_lines(data) if "psychometric" in x)
    assert "withheld on this adaptive design (quest)" in line
    assert "no estimate from these data" not in line
    # nor do the published figures read as if the sample were too small
    from analysis.report.references_part import reference_comparison

    verdicts = reference_comparison(data)
    ttft = verdicts[verdicts["compared_with"].str.startswith("psychometric ttft_ms")]
    assert not ttft["verdict"].str.startswith("not enough data").any()
    assert (
        ttft["verdict"].str.contains("withheld on this adaptive design (quest)", regex=False).any()
    )


@pytest.mark.slow
def test_an_adaptive_design_gets_no_test_of_people_differing(quest_table, tmp_path):
    """The test of one curve for all rejected people alike in 8-40% of adaptive studies:
    the summary says so instead of a p."""
    from analysis.report import write_report

    few = quest_table.trials["participant"].isin(
        sorted(quest_table.trials.participant.unique())[:4]
    )
    data = analyse(replace(quest_table, trials=quest_table.trials[few]), ReportOptions(n_boot=40))
    assert np.isnan(data.psychometric.people_differ_p)
    md = write_report(data, tmp_path / "r")["markdown"].read_text(encoding="utf-8")
    summary = md[md.index("## Summary") : md.index("## The study")]
    assert "not tested on adaptive designs" in summary and "likelihood-ratio p" not in summary
