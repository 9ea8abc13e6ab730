"""Loading the trial table: folders, CSVs, SQLite, and errors naming file, row and column."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest
from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.trial_table import TrialTableError, load_trial_table


@pytest.fixture(scope="module")
def trials() -> pd.DataFrame:
    return simulate_trial_table(n_participants=3, reps=1, seed=1)


def test_export_folder_loads_with_study_json(tmp_path, trials):
    folder = write_export_folder(tmp_path / "export", trials)
    table = load_trial_table(folder)
    assert len(table.trials) == len(trials)
    assert table.factors == ["ttft_ms", "indicator"]
    assert table.questions["quality"].acceptable_at == 3
    assert table.questions["acceptable"].yes_means == "acceptable"
    assert table.question_for("q_quality").scale_size == 5
    assert table.sessions is not None and len(table.sessions) == 3
    # ids stay text: a hash of zeros is not the number 0
    assert table.trials["study_sha256"].iloc[0] == "0" * 64


def test_csv_without_study_json_infers_factors(tmp_path, trials):
    path = tmp_path / "other_lab.csv"
    trials.to_csv(path, index=False)
    table = load_trial_table(path)
    assert "ttft_ms" in table.factors and "indicator" in table.factors
    assert not any(f.startswith(("q_", "rt_")) for f in table.factors)
    assert table.study == {}


def test_measurement_columns_are_not_taken_for_factors(tmp_path, trials):
    """Chain, live and schedule-hash columns are measurements, even when numeric or empty."""
    frame = trials.assign(
        schedule_sha256=np.nan,
        e2e_ms=1000.0,
        abandon_step=np.nan,
        paused_ms=0.0,
        violations_n=0,
        violation_max_ms=0.0,
        violation_sum_ms=0.0,
    )
    path = tmp_path / "with_extras.csv"
    frame.to_csv(path, index=False)
    table = load_trial_table(path)
    assert "ttft_ms" in table.factors
    assert not set(table.factors) & {
        "schedule_sha256",
        "e2e_ms",
        "abandon_step",
        "paused_ms",
        "violations_n",
        "violation_max_ms",
        "violation_sum_ms",
    }


def _write(tmp_path, frame: pd.DataFrame):
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    return path


def test_bad_outcome_names_row_and_column(tmp_path, trials):
    bad = trials.copy()
    bad.loc[4, "outcome"] = "gave_up"
    with pytest.raises(TrialTableError) as err:
        load_trial_table(_write(tmp_path, bad))
    msg = str(err.value)
    assert "t.csv row 5 column 'outcome'" in msg
    assert "'gave_up' is not one of completed, abandoned" in msg


def test_abandoned_without_time_is_refused(tmp_path, trials):
    bad = trials.copy()
    row = int(bad.index[bad["outcome"] == "abandoned"][0])
    bad.loc[row, "t_abandon_ms"] = None
    with pytest.raises(TrialTableError, match=rf"row {row + 1} column 't_abandon_ms': empty"):
        load_trial_table(_write(tmp_path, bad))


def test_negative_time_and_non_number(tmp_path, trials):
    bad = trials.copy()
    bad.loc[2, "scheduled_end_ms"] = -3
    with pytest.raises(TrialTableError, match=r"row 3 column .scheduled_end_ms.: -3\.0 is neg"):
        load_trial_table(_write(tmp_path, bad))
    bad = trials.astype({"shown_first_ms": object}).copy()
    bad.loc[0, "shown_first_ms"] = "soon"
    with pytest.raises(TrialTableError, match="row 1 column 'shown_first_ms': 'soon' is not"):
        load_trial_table(_write(tmp_path, bad))


def test_missing_participant_and_bad_flag(tmp_path, trials):
    with pytest.raises(TrialTableError, match="column 'participant': missing column"):
        load_trial_table(_write(tmp_path, trials.drop(columns=["participant"])))
    bad = trials.astype({"practice": object}).copy()
    bad.loc[1, "practice"] = "maybe"
    with pytest.raises(TrialTableError, match="row 2 column 'practice': 'maybe' is not 0/1"):
        load_trial_table(_write(tmp_path, bad))


def test_empty_file_and_missing_path(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(TrialTableError, match=r"empty\.csv: empty file"):
        load_trial_table(empty)
    with pytest.raises(TrialTableError, match="no such file"):
        load_trial_table(tmp_path / "nope.csv")
    with pytest.raises(TrialTableError, match=r"no trials\.csv"):
        load_trial_table(tmp_path)


def test_sqlite_with_exported_trials_table(tmp_path, trials):
    db = tmp_path / "other_lab.sqlite"
    with sqlite3.connect(db) as con:
        trials.to_sql("trials", con, index=False)
    table = load_trial_table(db)
    assert len(table.trials) == len(trials)
    assert table.source == db and len(table.source_sha256) == 64


def test_sqlite_without_trials_table(tmp_path):
    db = tmp_path / "x.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE other (a)")
    with pytest.raises(TrialTableError, match="no 'trials' table"):
        load_trial_table(db)


def test_bad_study_json_names_line(tmp_path, trials):
    folder = write_export_folder(tmp_path / "export", trials)
    (folder / "study.json").write_text('{\n  "id": "x",\n  oops\n}')
    with pytest.raises(TrialTableError, match=r"study.json row 3: not valid JSON"):
        load_trial_table(folder)
