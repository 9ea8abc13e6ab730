"""Interrupted trials run again at the end of the session (`StudySession.requeue`).

A trial left in flight (the program was killed, or quit mid-stream) is stored as
`interrupted` on resume and, by default, queued again after every other trial: the same
planned condition, recording and seed under a new trial_index, so the design cell is still
complete, while the interrupted attempt stays stored and is marked in the export. Also:
the study-file switch, the once-per-reason cap, practice, and `uxlab verify` on re-runs.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from helpers.studies import tiny_study
from test_session import open_session, run_trial

from uxlab.store import StoreError, export_db
from uxlab.store.verify import verify_db
from uxlab.study import load_study
from uxlab.study.spec import StudyError


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


async def crash_mid_trial(tmp_path: Path, study_path: Path) -> int:
    """Run the practice and trial 1, then leave trial 2 in flight as a kill would."""
    ss = open_session(tmp_path, study_path=study_path)
    ss.accept_consent()
    ss.start_running()
    await run_trial(ss)
    await run_trial(ss)
    run = ss.begin(ss.next_trial())
    run.send()  # sent, never committed: the process "dies" here
    ss.store.close()
    return run.trial.index


async def finish(ss) -> None:
    ss.start_running()
    while ss.next_trial() is not None:
        await run_trial(ss)
    ss.finish()


async def test_an_interrupted_trial_is_run_again_at_the_end(tmp_path):
    study_path = tiny_study(tmp_path, levels="20, 40", attention=False)
    lost = await crash_mid_trial(tmp_path, study_path)

    again = open_session(tmp_path, study_path=study_path)
    n_planned = again.session.n_planned
    assert again.session.interrupted == [lost]
    assert len(again.trials) == n_planned + 1
    rerun = again.trials[-1]
    planned = again.trials[lost]
    assert (rerun.index, rerun.condition_id, rerun.replay_id, rerun.seed, rerun.levels) == (
        n_planned,
        planned.condition_id,
        planned.replay_id,
        planned.seed,
        planned.levels,
    )
    assert "shown again at the end" in again.resume_note()
    assert again.next_trial().index == lost + 1  # the rest of the list first
    # the note names the next trial as its header will, not the interrupted one as done
    header = again.progress(again.next_trial()).lower()
    assert f"continues with {header}." in again.resume_note() and "done" not in again.resume_note()
    assert again.progress(rerun) == f"Trial {again.n_main} of {again.n_main}"
    await finish(again)

    db = tmp_path / "results.sqlite"
    got = dict(rows(db, "SELECT trial_index, outcome FROM trials"))
    assert sorted(got) == list(range(n_planned + 1)), "every trial once, the re-run last"
    assert got[lost] == "interrupted" and got[n_planned] == "completed"
    cells = rows(
        db,
        f"SELECT condition_id, seed, replay_id FROM trials WHERE trial_index IN ({lost}, "
        f"{n_planned}) ORDER BY trial_index",
    )
    assert cells[0] == cells[1]
    assert rows(db, "SELECT trial_index, of_index, reason FROM requeued") == [
        (n_planned, lost, "interrupted")
    ]

    export_db(db, tmp_path / "export")
    trials = pd.read_csv(tmp_path / "export" / "trials.csv")
    assert list(trials.columns[-3:]) == ["rerun_of", "rerun_reason", "rerun_as"]
    by_index = trials.set_index("trial_index")
    assert by_index.loc[n_planned, "rerun_of"] == lost
    assert by_index.loc[lost, "rerun_as"] == n_planned
    assert set(by_index.loc[[lost, n_planned], "rerun_reason"]) == {"interrupted"}
    assert by_index.drop(index=[lost, n_planned])["rerun_reason"].isna().all()

    report = verify_db(db, study_path)
    assert report.mismatches == [], report.mismatches
    # the re-run's events are checked against the planned trial's schedule; the attempt
    # cut off stored none (a trial in flight is stored without events)
    assert report.n_event_trials == n_planned + 1


async def test_the_study_file_can_turn_re_runs_off(tmp_path):
    study_path = tiny_study(tmp_path, levels="20, 40", attention=False)
    with open(study_path, "a", encoding="utf-8") as f:
        f.write("\n[session]\nrerun_interrupted = false\n")
    assert load_study(study_path).session.rerun_interrupted is False
    lost = await crash_mid_trial(tmp_path, study_path)
    again = open_session(tmp_path, study_path=study_path)
    assert len(again.trials) == again.session.n_planned and again.session.reruns == {}
    assert "is skipped" in again.resume_note()
    await finish(again)
    db = tmp_path / "results.sqlite"
    assert dict(rows(db, "SELECT trial_index, outcome FROM trials"))[lost] == "interrupted"
    assert rows(db, "SELECT COUNT(*) FROM requeued") == [(0,)]
    export_db(db, tmp_path / "export")
    assert "rerun_of" not in pd.read_csv(tmp_path / "export" / "trials.csv").columns


def test_study_check_refuses_a_bad_session_switch(tmp_path):
    study_path = tiny_study(tmp_path)
    text = study_path.read_text(encoding="utf-8")
    study_path.write_text(text + '\n[session]\nrerun_interrupted = "yes"\n', encoding="utf-8")
    with pytest.raises(StudyError, match=r"\[session\]\.rerun_interrupted: 'yes' is not true"):
        load_study(study_path)
    study_path.write_text(text + "\n[session]\nrerun_interupted = false\n", encoding="utf-8")
    with pytest.raises(StudyError, match="did you mean 'rerun_interrupted'"):
        load_study(study_path)


async def test_a_re_run_is_not_run_again_for_the_same_reason(tmp_path):
    study_path = tiny_study(tmp_path, levels="20, 40", attention=False)
    await crash_mid_trial(tmp_path, study_path)
    again = open_session(tmp_path, study_path=study_path)
    n = len(again.trials)
    again.start_running()
    while again.next_trial() is not None and again.next_trial().index < n - 1:
        await run_trial(again)
    run = again.begin(again.next_trial())  # the re-run, interrupted too
    run.send()
    again.store.close()

    third = open_session(tmp_path, study_path=study_path)
    assert third.session.interrupted == [n - 1]
    assert len(third.trials) == n and third.next_trial() is None
    assert "is skipped" in third.resume_note()
    assert third.requeue_interrupted() == []  # asking again queues nothing either


async def test_requeue_for_another_reason_once_and_never_practice(tmp_path):
    ss = open_session(tmp_path, study={"levels": "20", "attention": False})
    ss.accept_consent()
    ss.start_running()
    practice, _ = await run_trial(ss)
    first, _ = await run_trial(ss)
    assert ss.requeue(practice.trial, "fidelity") is None
    rerun = ss.requeue(first.trial, "fidelity")
    assert rerun is not None and rerun.index == len(ss.trials) - 1
    assert ss.requeue(first.trial, "fidelity") is None  # the attempt is already queued
    with pytest.raises(StoreError, match="is not over"):
        ss.requeue(ss.next_trial(), "fidelity")  # never begun
    while ss.next_trial() is not None:
        last, _ = await run_trial(ss)
    assert last.trial.index == rerun.index
    assert ss.requeue(last.trial, "fidelity") is None  # once per planned trial and reason
    ss.finish()
