"""Read report.md back: every sentence that states a number says the number beside it.

The cases the issue names: 1, 2, 3 and 4 participants, identical people, and mixed real and
simulated data analysed together after the only real person was excluded. Each report is
written by `write_report` and read back against its own thresholds.csv and the data."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from analysis_fixtures import simulate_trial_table, write_export_folder
from independent_tables import OBSERVERS, Study, simulate_study

from analysis.exclusions import ExclusionRules
from analysis.foreign_table import ColumnMap
from analysis.report import ReportOptions, analyse, write_report
from analysis.report.support import MIN_POPULATION, OBSERVERS_COVERAGE
from analysis.trial_table import load_trial_table
from number_text import duration as ms

COLUMNS = ColumnMap(stimulus="ttft_ms", judgement="too_slow", factors=("itl_ms",))


def _report(tmp_path, trials: pd.DataFrame, **options):
    path = tmp_path / "trials.csv"
    trials.drop(columns="true_m_ms", errors="ignore").to_csv(path, index=False)
    data = analyse(
        load_trial_table(path, COLUMNS),
        ReportOptions(judgement="too_slow", n_boot=60, progress=False, **options),
    )
    paths = write_report(data, tmp_path / "out")
    md = paths["markdown"].read_text(encoding="utf-8")
    return data, md, pd.read_csv(paths["thresholds"], dtype={"group": str})


def _summary(md: str) -> str:
    return md.split("## Summary", 1)[1].split("\n## ", 1)[0]


def check_read_back(data, md: str, csv: pd.DataFrame) -> None:
    """The sentences about the sample, the headline, the ratios and the minimums."""
    n = data.n_participants
    summary = _summary(md)
    assert re.search(
        rf"\b{n} (?:simulated )?participants? (?:\(not (?:people|a person)\) )?gave "
        rf"{len(data.kept)} analysable trials",
        summary,
    )
    assert (f"With {n} participant(s) this report describes these people only" in summary) == (
        n < MIN_POPULATION
    )
    for said in re.findall(r"skipped with (\d+) participant", md):
        assert int(said) == n
    for said in re.findall(r"measured at N = (\d+) over people", md):  # the N at hand
        assert int(said) == max(k for k in OBSERVERS_COVERAGE if k <= n)
    pooled = csv[
        (csv.measure == "psychometric") & (csv.group == "pooled") & (csv.condition == "all")
    ]
    mid = pooled.set_index("level").loc[0.5]
    if np.isfinite(mid.estimate):
        assert f" is {ms(mid.estimate)} (" in summary
    if np.isfinite(mid.ci_low):
        assert f"95% CI {ms(mid.ci_low)} to {ms(mid.ci_high)}" in summary
    elif np.isfinite(mid.estimate) and n == 1:  # the person's own interval, said as such
        own = csv[(csv.estimand == "this participant") & (csv.level == 0.5)]
        own = own[(own.measure == "psychometric") & (own.condition == "all")].iloc[0]
        assert f"95% CI {ms(own.ci_low)} to {ms(own.ci_high)} from this participant's own" in (
            summary
        )
        assert own.estimate == mid.estimate  # one fit, one number
    elif np.isfinite(mid.estimate) and n < MIN_POPULATION:
        assert f"no interval with {n} participant(s)" in summary
    for r in csv[csv.measure == "psychometric_ratio"].itertuples():
        head = f"is ×{r.estimate:.2f} the one in"
        assert head in summary
        if np.isfinite(r.ci_low):
            assert f"95% CI ×{r.ci_low:.2f} to ×{r.ci_high:.2f}" in summary
    check_individual_spread(summary, csv)
    assert not re.search(r"\bnan\b", md, re.I)


def check_individual_spread(summary: str, csv: pd.DataFrame) -> None:
    """`the middle half of ... lie between A and B`: the quartiles of the people with an
    estimate, and said to be of those only when others are bracketed (no point to rank)."""
    found = re.search(
        r"the middle half of (participants|the (\d+) estimated) lie between "
        r"(.+?) and (.+?)(?:;|\.(?:\s|$))",  # then whether they differ, after a semicolon
        summary,
    )
    if not found:
        return
    people = csv[
        (csv.measure == "psychometric")
        & (csv.estimand == "this participant")
        & (csv.condition == "all")
        & (csv.level == 0.5)
    ]
    estimated = people.estimate.dropna()
    if people.bracket_low_ms.notna().any() or people.bracket_high_ms.notna().any():
        assert found.group(2) == str(len(estimated)), found.group(0)
    else:
        assert found.group(1) == "participants", found.group(0)
    q1, q3 = np.percentile(estimated, [25, 75])
    assert (found.group(3), found.group(4)) == (ms(q1), ms(q3))


def _people(n: int, seed: int = 1) -> pd.DataFrame:
    study = Study("fixed", OBSERVERS["differing"], n, 6, conditions=True)
    return simulate_study(study, np.random.default_rng(seed))


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_small_samples_read_back_true(tmp_path, n):
    data, md, csv = _report(tmp_path, _people(n))
    check_read_back(data, md, csv)
    summary = _summary(md)
    if n == 1:  # in the singular
        assert "these participants'" not in summary and "this participant's trials" in summary
    if n < MIN_POPULATION:  # the ratio and the conditions without a population interval
        assert f"for these {n} participant(s) (no interval" in summary
        assert "withheld (N = " in md
    else:
        assert "paired participant jackknife-t" in summary


def test_the_spread_of_people_is_of_those_estimated_when_others_are_bracketed(tmp_path):
    """Eight steep observers, three of whom switch between two tested levels (bracketed, no
    point): the middle half is the quartiles of the five estimated, and says so."""
    steep = simulate_study(Study("fixed", OBSERVERS["steep"], 8, 6), np.random.default_rng(7))
    data, md, csv = _report(tmp_path, steep)
    check_read_back(data, md, csv)
    summary = _summary(md)
    assert "3 of 8 participants' answers separate by latency" in summary
    assert "the middle half of the 5 estimated lie between" in summary


@pytest.mark.slow
def test_identical_people_read_back_true(tmp_path):
    one = _people(1, seed=6)
    same = pd.concat([one.assign(participant=f"p{i}") for i in range(4)], ignore_index=True)
    data, md, csv = _report(tmp_path, same)
    check_read_back(data, md, csv)
    summary = _summary(md)
    assert "middle half" not in summary and "outside every individual" not in summary
    people = csv[csv.estimand == "this participant"].dropna(subset=["estimate"])
    assert people["estimate"].nunique() <= 1  # the same answers, the same fit
    if len(people):
        assert "Every estimated individual 50% threshold is the same" in summary


@pytest.mark.slow
def test_mixed_data_with_the_real_person_excluded_reads_back_true(tmp_path):
    trials = simulate_trial_table(n_participants=5, reps=2, seed=2, failing_participant=True)
    trials.loc[trials.participant == "P-004", "simulated"] = 0  # the one who fails checks
    folder = write_export_folder(tmp_path / "e", trials)
    rules = ExclusionRules(keep_simulated=True)
    data = analyse(
        load_trial_table(folder),
        ReportOptions(n_boot=40, per_participant=False, rules=rules, progress=False),
    )
    md = write_report(data, tmp_path / "out")["markdown"].read_text(encoding="utf-8")
    kinds = data.truth.kinds
    assert kinds.real_kept == 0 and kinds.simulated_kept == data.n_participants > 0
    banner = md.split("\n## ", 1)[0]
    k = kinds.simulated_kept
    assert f"only the {k} simulated analysed" in banner
    assert f"every figure below is from the {k} simulated participant(s) only" in banner
    assert "0 real participant" not in md
    limits = md.split("What this sample can support", 1)[1].split("\n## ", 1)[0]
    assert "P-004" not in limits.split("Parts skipped")[-1]  # no resume / warning of theirs


def test_the_per_participant_caption_counts_the_flags_the_table_gives():
    """The caption names the flags the rows carry (it listed four kinds whatever the rows
    said, and none of the two most common: separated and steep)."""
    import pandas as pd

    from analysis.report.psychometric_blocks import flag_counts
    from analysis.report.psychometric_withheld import steep_flag

    steep = steep_flag((200.0, 1000.0)) + " (the point is the fit's place in the gap)"
    flags = pd.Series(
        [
            "separated: every answer on either side of the gap the same",
            "separated: every answer on either side of the gap the same",
            steep,
            "extrapolated: outside the levels this participant saw; " + steep,
        ]
    )
    assert flag_counts(flags) == (
        ": 2 separated (a bracket, no point), 2 steeper than the levels (the switch inside "
        "one gap), 1 extrapolated (outside the levels they saw)"
    )
    assert flag_counts(pd.Series([], dtype=str)) == ""
