"""Answers checked against their question: a yes/no column with a stray value, a rating off
its scale or not a whole number are errors naming their rows (with or without study.json),
never a silent "1-1 scale" or dropped thresholds; `uxlab export` names the row of a stored
Likert answer that is not a whole number (exit 2, not an internal error)."""

from __future__ import annotations

import csv
import shutil
import sqlite3
from pathlib import Path

import pytest

from uxlab.cli import main
from uxlab.simulate import simulate_cohort
from uxlab.store import Store
from uxlab.study import load_study

HERE = Path(__file__).parent
GOOD = HERE / "data" / "bad_studies" / "good.toml"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """Four simulated participants of the good study, exported (trials.csv, study.json)."""
    folder = tmp_path_factory.mktemp("answer-scale")
    db = folder / "good.sqlite"
    with Store.open(db, durable=False) as store:
        simulate_cohort(load_study(GOOD), store, 4, seed=2)
    assert main(["export", str(db), "-o", str(folder / "export")]) == 0
    return folder


def edited(exported: Path, tmp_path: Path, column: str, values: list[str], study_json: bool):
    """A copy of trials.csv with the first main trials' `column` set to `values`; returns
    its path and the 1-based data rows edited."""
    with open(exported / "export" / "trials.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    changed = []
    for n, row in enumerate(rows, start=1):
        if len(changed) < len(values) and row["practice"] == "0" and row[column] != "":
            row[column] = values[len(changed)]
            changed.append(n)
    out = tmp_path / "table"
    out.mkdir()
    with open(out / "trials.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    if study_json:
        shutil.copy(exported / "export" / "study.json", out / "study.json")
    return out / "trials.csv", changed


def report(table: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    status = main(["report", str(table), "-o", str(table.parent / "rep"), "--n-boot", "0", "-q"])
    return status, " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize("stray", ["2", "-1", "0.5"])
def test_a_yes_no_column_with_a_stray_value_is_an_error_naming_its_rows(
    exported, tmp_path, capsys, stray
):
    table, rows = edited(exported, tmp_path, "q_acceptable", [stray, stray], study_json=False)
    status, err = report(table, capsys)
    assert status == 2 and "Traceback" not in err
    assert f"row {rows[0]} column 'q_acceptable': 2 of " in err
    assert f"answers are not 0/1 (e.g. '{stray}', rows {rows[0]}, {rows[1]})" in err
    assert not (table.parent / "rep" / "thresholds.csv").exists()


@pytest.mark.parametrize("bad", ["0", "-3", "3.5"])
def test_a_rating_off_its_scale_is_an_error_without_study_json(exported, tmp_path, capsys, bad):
    table, rows = edited(exported, tmp_path, "q_speed", [bad], study_json=False)
    status, err = report(table, capsys)
    assert status == 2, err
    assert f"row {rows[0]} column 'q_speed': '{bad}' is not a rating on the scale 1 up" in err


@pytest.mark.parametrize("bad", ["6", "0", "3.5"])
def test_a_rating_off_the_scale_study_json_states_is_an_error(exported, tmp_path, capsys, bad):
    table, rows = edited(exported, tmp_path, "q_speed", [bad], study_json=True)
    status, err = report(table, capsys)
    assert status == 2, err
    assert f"row {rows[0]} column 'q_speed': {bad} is not a rating on the scale 1..5" in err


def test_a_scale_taken_from_the_data_is_said(exported, tmp_path, capsys):
    table, _rows = edited(exported, tmp_path, "q_speed", ["6"], study_json=False)
    status, _err = report(table, capsys)
    assert status == 0
    text = (table.parent / "rep" / "report.md").read_text(encoding="utf-8")
    assert "q_speed: no study.json gives its scale, so it is taken as 1-6" in text


def test_export_names_the_row_of_a_likert_answer_that_is_not_a_whole_number(
    exported, tmp_path, capsys
):
    db = tmp_path / "edited.sqlite"
    shutil.copy(exported / "good.sqlite", db)
    conn = sqlite3.connect(db)
    sid, idx = conn.execute(
        "SELECT session_id, trial_index FROM responses WHERE question_id = 'speed' "
        "ORDER BY session_id, trial_index LIMIT 1"
    ).fetchone()
    conn.execute(
        "UPDATE responses SET value = '3.5' WHERE session_id = ? AND trial_index = ? "
        "AND question_id = 'speed'",
        (sid, idx),
    )
    conn.commit()
    conn.close()
    capsys.readouterr()
    assert main(["export", str(db), "-o", str(tmp_path / "out")]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"responses row (session {sid}, trial {idx}, question speed): stored '3.5' is not" in err
    assert "likert answer (q_speed); nothing was exported" in err
    assert not (tmp_path / "out").exists()
