"""A participant whose answers never switch within the tested levels (every answer
acceptable, or none) gets a one-sided bracket, not the point where the fit stopped at the
edge of the levels: in the per-participant table, thresholds.csv, the summary and the
figures; and does not count as a person steeper than the levels."""

from __future__ import annotations

import numpy as np
import pytest
from independent_tables import OBSERVERS, Study, at_place, simulate_study
from report_grid import analyse_study

from analysis.report.psychometric_blocks import participant_table, psychometric_blocks
from analysis.report.summary import plain_summary
from analysis.separation import find_separation, no_switch


def test_no_switch_is_a_bracket_open_on_one_side():
    levels = [250.0, 400.0, 650.0, 1000.0]
    never = no_switch(levels * 2, [1] * 8)  # every answer acceptable
    assert never is not None and never.one_kind
    assert never.bracket_ms()[0] == 1000.0 and np.isnan(never.bracket_ms()[1])
    assert never.switch_words() == "the switch lies above 1,000 ms"
    always = no_switch(levels, [0, 0, 0, 0])
    assert always is not None and always.switch_words() == "the switch lies below 250 ms"
    assert no_switch(levels, [1, 1, 0, 0]) is None  # a switch: not this
    assert no_switch([], []) is None
    assert not find_separation(levels, [1, 1, 0, 0]).one_kind


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    study = Study("fixed", at_place(OBSERVERS["differing"], "between levels"), 8, 8)
    trials = simulate_study(study, np.random.default_rng(3))
    trials.loc[trials.participant == "s01", "too_slow"] = 0  # never too slow: above 4,000
    trials.loc[trials.participant == "s02", "too_slow"] = 1  # always: below 250
    data = analyse_study(trials, study, 40, 1, tmp_path_factory.mktemp("no-switch"))
    return data, trials


def test_the_person_gets_a_one_sided_bracket_everywhere(report):
    data, _ = report
    table = participant_table(data).set_index("participant")
    assert table.loc["s01", "50% threshold (ms)"] == "above 4,000 ms"
    assert table.loc["s02", "50% threshold (ms)"] == "below 250 ms"
    assert table.loc["s01", "flags"].startswith("no switch")
    rows = data.thresholds
    mine = rows[rows["group"].isin(["s01", "s02"]) & (rows["level"] == 0.5)].set_index("group")
    assert mine["estimate"].isna().all()  # not the edge the fit stopped at
    assert mine.loc["s01", "bracket_low_ms"] == 4000.0 and np.isnan(
        mine.loc["s01", "bracket_high_ms"]
    )
    assert mine.loc["s02", "bracket_high_ms"] == 250.0 and np.isnan(
        mine.loc["s02", "bracket_low_ms"]
    )
    assert mine.loc["s01", "withheld"].startswith("no switch: ")
    said = " ".join(plain_summary(data))
    assert "never switch within the tested levels" in said
    assert "above 4.0 s for 1; below 250 ms for 1" in said
    psychometric_blocks(data)  # the figures draw one-sided brackets without failing


def test_a_person_who_never_switches_is_not_counted_as_steep(report):
    data, trials = report
    steep = sum(
        find_separation(person["ttft_ms"], 1 - person["too_slow"]) is not None
        for _, person in trials.groupby("participant")
    )
    note = [n for n in data.notes if "participants' own answers separate" in n]
    if note:  # the count is of people who switched within a gap, not of s01 / s02
        assert note[0].split("(pooled): ")[1].startswith(f"{steep} of 8")
    else:
        assert steep < 1  # one in eight would have withheld the tails
