"""The report's sentences are made from the same facts as its numbers: the mixed-data banner
from who was analysed, the limits from the analysed sessions only, the fidelity paragraph
from the exclusions that happened, the individual spread with a tolerance."""

from __future__ import annotations

import numpy as np
import pandas as pd
from independent_tables import OBSERVERS, Study, simulate_study

from analysis.foreign_table import ColumnMap
from analysis.report import ReportOptions, analyse
from analysis.report.sessions_part import facts_summary
from analysis.report.summary import plain_summary
from analysis.report.truth_part import SessionKinds
from analysis.trial_table import load_trial_table


def test_the_banner_says_who_was_analysed_when_every_real_person_was_excluded():
    # --keep-simulated, and the only real participant failed the attention checks
    kinds = SessionKinds(simulated_in=29, real_in=1, simulated_kept=29, real_kept=0)
    banner = kinds.banner()
    assert "only the 29 simulated analysed" in banner
    assert "every figure below is from the 29 simulated participant(s) only" in banner
    assert "0 real" not in banner
    none = SessionKinds(simulated_in=2, real_in=1).banner()
    assert "every participant was left out" in none


def test_the_limits_name_only_the_analysed_sessions():
    facts = pd.DataFrame(
        {
            "analysed": ["yes", "no"],
            "runs": ["1", "3"],  # the excluded session was resumed twice
            "interrupted trials": [0, 2],
            "re-run at the end": [0, 2],
            "resizes": ["none", "80x24"],
            "timing warnings": ["none", "ran inside tmux"],
        }
    )
    assert facts_summary(facts) == []  # nothing about the session left out
    facts.loc[1, "analysed"] = "yes"
    said = " ".join(facts_summary(facts))
    assert "1 analysed session(s) were resumed (2 resume(s) in all)" in said
    assert "ran inside tmux" in said


def test_identical_people_are_said_to_be_identical_not_spread(tmp_path):
    one = simulate_study(Study("fixed", OBSERVERS["alike"], 1, 8), np.random.default_rng(4))
    same = pd.concat([one.assign(participant=f"p{i}") for i in range(4)], ignore_index=True)
    path = tmp_path / "same.csv"
    same.drop(columns="true_m_ms").to_csv(path, index=False)
    table = load_trial_table(path, ColumnMap(stimulus="ttft_ms", judgement="too_slow"))
    data = analyse(table, ReportOptions(judgement="too_slow", n_boot=40, progress=False))
    said = " ".join(plain_summary(data))
    assert "Every estimated individual 50% threshold is the same" in said
    assert "middle half" not in said  # not "between 851 ms and 851 ms"
    assert "outside every individual" not in said  # equal to the last digits is the same


def test_a_bracket_open_on_one_side_reads_below_or_above_not_between() -> None:
    """A person whose answers never went one way at any tested level has a switch past the
    tested range: `below 1.0 s`, never `between beyond the tested levels and 1.0 s`."""
    import math

    from analysis.report.summary_people import bracket_words

    assert bracket_words(200.0, 3000.0) == "between 200 ms and 3.0 s"
    assert bracket_words(math.nan, 1000.0) == "below 1.0 s"
    assert bracket_words(650.0, math.nan) == "above 650 ms"
