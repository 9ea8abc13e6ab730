"""A yes/no question whose answers run against its words (a reversed key or column) is
said so beside the thresholds, which are then those of the other answer."""

from __future__ import annotations

import pytest
from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.report import ReportOptions, analyse
from analysis.report.answer_direction import expected_direction
from analysis.trial_table import load_trial_table


@pytest.mark.parametrize(
    "yes_means, direction",
    [
        ("acceptable", "falling"),
        ("fast enough", "falling"),
        ("too slow", "rising"),
        ("noticed a delay", "rising"),
        ("not acceptable", None),  # negated: no claim
        ("yes", None),
    ],
)
def test_what_a_yes_should_do_as_the_wait_grows(yes_means, direction):
    assert expected_direction(yes_means) == direction


@pytest.mark.parametrize("reversed_coding", [False, True])
def test_a_reversed_acceptable_column_is_said_so(tmp_path, reversed_coding):
    trials = simulate_trial_table(n_participants=5, reps=3, seed=2, failing_participant=False)
    if reversed_coding:  # the lab coded 1 as "not acceptable"
        trials["q_acceptable"] = 1 - trials["q_acceptable"]
    data = analyse(
        load_trial_table(write_export_folder(tmp_path / "e", trials)),
        ReportOptions(n_boot=20, per_participant=False),
    )
    said = [n for n in data.notes if "against what the question says" in n]
    assert bool(said) == reversed_coding
    if reversed_coding:
        assert said[0].startswith(
            "Psychometric thresholds: q_acceptable: 'acceptable' answers became more common "
            "as ttft_ms grew"
        )
