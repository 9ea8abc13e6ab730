"""The stimulus's unit: taken from the declaration, the column's name or its typical value
(never its largest), always said with the reason, and an implausible result refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from independent_tables import OBSERVERS, Study, psychopy_frame, simulate_study

from analysis.foreign_table import ColumnMap
from analysis.report import ReportOptions, analyse
from analysis.trial_table import load_trial_table
from uxlab.cli import main

OPTIONS = ReportOptions(judgement="too_slow", n_boot=50, per_participant=False, progress=False)


def _trials(seed: int = 1, people: int = 6) -> pd.DataFrame:
    study = Study("fixed", OBSERVERS["differing"], people, 4)
    return simulate_study(study, np.random.default_rng(seed)).drop(columns="true_m_ms")


def _notes(data) -> str:
    return "\n".join(data.notes)


def test_one_long_level_does_not_make_a_seconds_column_ms(tmp_path):
    trials = _trials()
    trials["delay"] = trials["ttft_ms"] / 1000.0
    long = trials.iloc[:6].assign(delay=32.0, too_slow=1)  # a 32 s level, always too slow
    path = tmp_path / "lab.csv"
    pd.concat([trials, long]).drop(columns="ttft_ms").to_csv(path, index=False)
    table = load_trial_table(path, ColumnMap(stimulus="delay", judgement="too_slow"))
    assert table.trials["delay_ms"].max() == 32_000.0  # seconds, the 32 s level included
    data = analyse(table, OPTIONS)
    said = _notes(data)
    assert "'delay' read as seconds, converted to ms (its typical value, the median 1" in said
    assert "pass --stimulus-unit ms if it is not" in said
    mid = data.psychometric.population.set_index("level").loc[0.5, "estimate"]
    assert 500 < mid < 2000  # the population's 900 ms, not "1 ms"


def test_an_inter_token_latency_in_ms_stays_ms(tmp_path):
    frame = pd.DataFrame(
        {"participant": ["a"] * 4, "gap": [20.0, 40.0, 80.0, 160.0], "too_slow": [0, 0, 1, 1]}
    )
    path = tmp_path / "itl.csv"
    frame.to_csv(path, index=False)
    columns = ColumnMap(stimulus="gap", judgement="too_slow", measure="itl")
    table = load_trial_table(path, columns)
    assert table.trials["itl_ms"].tolist() == [20.0, 40.0, 80.0, 160.0]
    assert any(
        "read as ms (its typical value, the median 60, is 1 or more" in n for n in table.notes
    )


def test_levels_closer_than_a_millisecond_are_warned_about(tmp_path):
    frame = pd.DataFrame(
        {"participant": ["a"] * 3, "wait_ms": [0.2, 0.5, 0.9], "too_slow": [0, 1, 1]}
    )
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    table = load_trial_table(path, ColumnMap(stimulus="wait_ms", judgement="too_slow"))
    warning = next(n for n in table.notes if n.startswith("WARNING"))
    assert "only 0.3 ms apart" in warning and "--stimulus-unit s" in warning


@pytest.mark.slow
def test_seconds_named_as_ms_are_refused_not_reported_as_one_millisecond(tmp_path, capsys):
    trials = _trials(people=4)
    lab = psychopy_frame(trials.assign(ttft_ms=trials["ttft_ms"] / 1000.0), seconds=False)
    path = tmp_path / "psychopy.csv"
    lab.rename(columns={"delay_ms": "ttft_ms"}).to_csv(path, index=False)
    argv = ["report", str(path), "--judgement", "key_resp.keys", "--yes", "j"]
    assert main([*argv, "-o", str(tmp_path / "r"), "--n-boot", "20", "-q"]) == 1
    out = capsys.readouterr()
    # the stimulus is auto-detected: its instruction and thanks rows are dropped, counted
    assert "8 row(s) without a value in the stimulus column 'ttft_ms'" in out.out
    assert "'ttft_ms' taken as ms (its name ends _ms)" in out.out
    assert "part failed: psychometric thresholds" in out.err
    assert "--stimulus-unit s" in out.err and "ms  [" not in out.out
