"""Exclusions: every rule removes what it says and logs the reason with counts."""

from __future__ import annotations

import pandas as pd
from analysis_fixtures import simulate_trial_table

from analysis.exclusions import (
    ExclusionRules,
    apply_exclusions,
    cell_counts,
    planned_trials_from_sessions,
)


def _table() -> pd.DataFrame:
    return simulate_trial_table(n_participants=6, reps=2, seed=5)


def test_default_rules_log_every_removed_trial():
    trials = _table()
    result = apply_exclusions(trials)
    log = result.log
    assert int(log["n_trials"].sum()) == len(trials) - len(result.kept)
    assert result.excluded_participants == ["P-005"]
    reason = log.loc[log["who"] == "P-005", "reason"].iloc[0]
    assert reason.startswith("attention checks 0% passed of")
    kept = result.kept
    assert (kept["practice"] == 0).all() and (kept["attention_check"] == 0).all()
    assert "P-005" not in set(kept["participant"])


def test_rules_are_configurable():
    trials = _table()
    lenient = ExclusionRules(
        drop_practice=False, min_attention_accuracy=0.0, drop_attention_trials=False
    )
    result = apply_exclusions(trials, lenient)
    assert len(result.kept) == len(trials)
    assert result.log.empty


def test_pilot_errors_and_incomplete_participants():
    trials = _table()
    trials.loc[trials["participant"] == "P-000", "pilot"] = 1
    trials.loc[3, "outcome"] = "error"
    # P-001 stopped after a third of the study
    p1 = trials.index[trials["participant"] == "P-001"]
    trials = trials.drop(p1[len(p1) // 3 :])
    result = apply_exclusions(trials)
    reasons = dict(zip(result.log["reason"], result.log["n_trials"], strict=True))
    assert reasons["pilot session"] == int((trials["participant"] == "P-000").sum())
    assert any(r.startswith("completed ") and "main trials" in r for r in reasons)
    assert set(result.excluded_participants) == {"P-001", "P-005"}
    assert "error" not in set(result.kept["outcome"])


def test_cell_counts_per_factor_combination():
    kept = apply_exclusions(_table()).kept
    cells = cell_counts(kept, ["ttft_ms", "indicator"])
    assert len(cells) == 12
    assert cells["n_trials"].sum() == len(kept)
    assert (cells["abandoned"] + cells["completed"] == cells["n_trials"]).all()
    assert (cells["n_participants"] == 5).all()


def test_completion_against_the_planned_list_from_sessions():
    trials = _table()
    per_person = trials.groupby("participant").size()
    sessions = pd.DataFrame(
        {"participant": per_person.index, "n_trials_planned": per_person.to_numpy()}
    )
    sessions.loc[sessions["participant"] == "P-002", "n_trials_planned"] *= 3  # stopped at 1/3
    planned = planned_trials_from_sessions(sessions)
    result = apply_exclusions(trials, ExclusionRules(), planned)
    assert "P-002" in result.excluded_participants
    reason = result.log.loc[result.log["who"] == "P-002", "reason"].iloc[0]
    n = per_person["P-002"]
    assert reason == f"completed {n} of {3 * n} planned trials (bar 50%)"
