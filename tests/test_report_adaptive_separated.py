"""On an adaptive design a person whose answers separate keeps their bias-reduced fit (a
point and an interval), not a bracket of the gap the procedure kept them in: there the gap
lies near the procedure's target, not the person's 50% point. A person who never switches
still gets a bracket open on one side."""

from __future__ import annotations

import numpy as np
import pytest
from independent_tables import OBSERVERS, Study, at_place, simulate_study
from report_grid import analyse_study

from analysis.report.psychometric_blocks import participant_table, psychometric_blocks
from analysis.separation import find_separation


@pytest.fixture(scope="module")
def staircase(tmp_path_factory):
    study = Study("staircase", at_place(OBSERVERS["steep"], "between levels"), 6, 48)
    trials = simulate_study(study, np.random.default_rng(11))
    trials.loc[trials.participant == "s05", "too_slow"] = 0  # never too slow
    data = analyse_study(trials, study, 40, 1, tmp_path_factory.mktemp("adaptive-separated"))
    return data, trials


def test_a_separated_person_on_a_staircase_gets_a_point_and_an_interval(staircase):
    data, trials = staircase
    assert data.psychometric.procedure is not None
    separated = [
        pid
        for pid, mine in trials.groupby("participant")
        if pid != "s05" and find_separation(mine["ttft_ms"], 1 - mine["too_slow"]) is not None
    ]
    assert separated  # steep people on a 1.26x ladder: some separate
    table = participant_table(data).set_index("participant")
    rows = data.thresholds
    for pid in separated:
        assert "separated" not in table.loc[pid, "flags"]
        row = rows[(rows.group == pid) & (rows.level == 0.5)].iloc[0]
        assert np.isfinite(row.estimate) and row.ci_low < row.estimate < row.ci_high
        assert np.isnan(row.bracket_low_ms) and np.isnan(row.bracket_high_ms)
    # the one who never switched keeps the bracket open on one side
    assert table.loc["s05", "flags"].startswith("no switch")
    assert "keeps this fit, which stays finite, not a bracket" in " ".join(
        str(getattr(b, "text", "")) + str(getattr(b, "caption", ""))
        for b in psychometric_blocks(data)
    )
