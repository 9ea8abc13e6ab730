"""`uxlab verify`: a study run through the session path (simulated participants) is rebuilt
from its file, the participant ids and the seeds; a changed recording, a changed study file
and a tampered trial seed are each named."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from helpers.studies import ATTENTION, CORPUS, END_QUESTION, TINY_STUDY

from uxlab.cli import main
from uxlab.simulate import simulate_cohort
from uxlab.store import Store, export_db
from uxlab.store.verify import verify_db
from uxlab.store.verify_report import format_report
from uxlab.study import load_study
from uxlab.study.design import Trial, design_trials
from uxlab.study.reproduce import rebuild_schedule, schedule_sha256, stimulus_files

REPO = Path(__file__).resolve().parents[1]
FILES = ["chat-one-liner.jsonl", "chat-clarifying.jsonl", "chat-fast-small-model.jsonl"]
GROUPS = """
[factors.jitter]
levels = [0.2, 0.8]
between = true
"""


def write_study(folder: Path) -> Path:
    """The tiny study with its own copy of the corpus (`corpus/`) and a between factor."""
    corpus = folder / "corpus"
    corpus.mkdir()
    for name in FILES:
        shutil.copy(CORPUS / name, corpus / name)
    text = TINY_STUDY.format(
        corpus="corpus",
        itl=2,
        levels="20, 60",
        repeats=2,
        practice=1,
        break_every=2,
        timeout="",
        attention=ATTENTION,
        extra_questions=END_QUESTION,
    )
    text = text.replace('itl = "constant:2"', 'itl = "lognormal:median=3,sigma=0.5"')
    text = text.replace("[design]", GROUPS + "\n[design]")
    path = folder / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def ran(tmp_path, monkeypatch):
    """Three simulated participants through the study, run from the study's folder."""
    monkeypatch.chdir(tmp_path)
    path = write_study(tmp_path)
    db = tmp_path / "results" / "tiny.sqlite"
    with Store.open(db, durable=False) as store:
        simulate_cohort(load_study(Path("study.toml")), store, 3, seed=1)
    return path, db


def n_trials(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    finally:
        conn.close()


def lines(report) -> list[str]:
    return [m.line() for m in report.mismatches]


def test_a_study_run_through_the_session_path_verifies(ran, tmp_path, capsys):
    path, db = ran
    report = verify_db(db)
    assert report.ok, lines(report)
    assert (report.n_sessions, report.n_files) == (3, 3)
    assert report.n_trials == report.n_schedules == n_trials(db) >= 18
    assert report.n_unchecked == 0
    assert main(["verify", "results/tiny.sqlite", "--study", "study.toml"]) == 0
    out = capsys.readouterr().out
    assert "OK: every trial list and schedule was rebuilt" in out
    assert "study.toml is the study file the database holds" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    # the stored hash is exported with every trial (contract 2) and is the played schedule's
    out_dir = export_db(db, tmp_path / "out")
    with open(out_dir["trials"], newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]).index("schedule_sha256") == list(rows[0]).index("seed") + 1
    study = load_study(path)
    conn = sqlite3.connect(db)
    (plan,) = conn.execute(
        "SELECT plan FROM sessions WHERE participant = ?", (rows[0]["participant"],)
    ).fetchone()
    conn.close()
    first = Trial.from_dict(json.loads(plan)[int(rows[0]["trial_index"])])
    assert rows[0]["schedule_sha256"] == schedule_sha256(
        study, first, rebuild_schedule(study, first)
    )
    assert all(len(r["schedule_sha256"]) == 64 for r in rows)


def test_a_changed_recording_is_named(ran, capsys):
    path, db = ran
    replay = path.parent / "corpus" / "chat-one-liner.jsonl"
    text = replay.read_text(encoding="utf-8")
    assert '"text": "Canberra"' in text
    replay.write_text(text.replace('"text": "Canberra"', '"text": "Sydney"'), encoding="utf-8")
    report = verify_db(db)
    assert not report.ok
    found = lines(report)
    assert found[0] == (
        "recording chat-one-liner changed since the study ran (corpus/chat-one-liner.jsonl)"
    )
    schedules = [m for m in report.mismatches if "schedule(s) differ" in m.what]
    assert schedules and all(m.participant and m.participant.startswith("SIM-") for m in schedules)
    assert all("recording chat-one-liner changed since" in m.what for m in schedules)
    # the other recordings' trials still match: only trials playing chat-one-liner are listed
    conn = sqlite3.connect(db)
    playing = conn.execute(
        "SELECT COUNT(*) FROM trials WHERE replay_id = 'chat-one-liner' AND attention = 0"
    ).fetchone()[0]
    conn.close()
    assert sum(int(m.what.split()[0]) for m in schedules) == playing
    assert main(["verify", str(db)]) == 1
    assert "recording chat-one-liner changed since the study ran" in capsys.readouterr().out


def test_a_broken_or_missing_recording_is_named_too(ran):
    path, db = ran
    (path.parent / "corpus" / "chat-clarifying.jsonl").write_text("not json\n", encoding="utf-8")
    (path.parent / "corpus" / "chat-fast-small-model.jsonl").unlink()
    found = lines(verify_db(db))
    assert "recording chat-clarifying changed since the study ran" in found[0]
    assert found[1].startswith("recording chat-fast-small-model is missing:")
    assert "does not load here" in found[2] and "chat-clarifying.jsonl" in found[2]


def test_a_changed_study_file_is_reported(ran, capsys):
    path, db = ran
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("ttft_ms = [20, 60]", "ttft_ms = [20, 70]"), encoding="utf-8")
    report = verify_db(db, path)
    assert len(report.mismatches) == 1
    what = report.mismatches[0].what
    assert what.startswith(f"{path} changed since the study ran: its SHA-256 is ")
    line = text.splitlines().index("ttft_ms = [20, 60]") + 1
    assert f"1 line(s) differ, the first at line {line}" in what
    assert report.n_schedules == n_trials(db)  # the stored text was still checked in full
    assert main(["verify", str(db), "--study", str(path)]) == 1
    assert "changed since the study ran" in capsys.readouterr().out
    # without --study, the stored text is checked and the changed file is only noted
    quiet = verify_db(db)
    assert quiet.ok and any("study.toml has changed since" in n for n in quiet.notes)


def test_a_tampered_trial_seed_is_named(ran):
    _path, db = ran
    conn = sqlite3.connect(db)
    participant, seed = conn.execute(
        "SELECT s.participant, t.seed FROM trials t JOIN sessions s USING (session_id) "
        "WHERE t.trial_index = 3"
    ).fetchone()
    conn.execute(
        "UPDATE trials SET seed = seed + 1 WHERE trial_index = 3 AND session_id = "
        "(SELECT session_id FROM sessions WHERE participant = ?)",
        (participant,),
    )
    conn.commit()
    conn.close()
    report = verify_db(db)
    assert lines(report) == [f"{participant} trial 3: seed: stored {seed + 1}, rebuilt {seed}"]
    assert "1 MISMATCH(ES)" in format_report(report)


def test_a_tampered_plan_or_schedule_hash_is_named(ran):
    _path, db = ran
    conn = sqlite3.connect(db)
    sid, participant, plan = conn.execute(
        "SELECT session_id, participant, plan FROM sessions ORDER BY created_at LIMIT 1"
    ).fetchone()
    trials = json.loads(plan)
    was = trials[2]["replay_id"]
    trials[2]["replay_id"] = now = (
        "chat-clarifying" if was != "chat-clarifying" else "chat-one-liner"
    )
    conn.execute("UPDATE sessions SET plan = ? WHERE session_id = ?", (json.dumps(trials), sid))
    conn.execute(
        "UPDATE trials SET schedule_sha256 = ? WHERE session_id = ? AND trial_index = 5",
        ("0" * 64, sid),
    )
    conn.commit()
    conn.close()
    assert lines(verify_db(db)) == [
        f"{participant}: the stored trial list does not match its own SHA-256 (edited afterwards)",
        f"{participant}: trial list differs from the one re-derived from the study file and "
        f"seed 7: trial 2 replay_id: stored {now!r}, rebuilt {was!r}",
        f"{participant}: 1 schedule(s) differ (trial 5): rebuilt from the study, recording, "
        "levels and seed, it is not the one played",
    ]


def test_without_a_location_verify_asks_for_the_study_file(tmp_path, monkeypatch):
    folder = tmp_path / "study"
    folder.mkdir()
    path = write_study(folder)
    monkeypatch.chdir(tmp_path / "study" / "corpus")  # the study file is outside this folder
    db = tmp_path / "x.sqlite"
    with Store.open(db, durable=False) as store:
        simulate_cohort(load_study(path), store, 1, seed=2)
    report = verify_db(db)
    assert "pass --study FILE" in lines(report)[0]
    assert verify_db(db, path).ok


def test_live_schedules_are_fingerprinted_by_profile_seed_and_source():
    study = load_study(REPO / "studies" / "live-openai.toml")
    trial = next(t for t in design_trials(study, "P-LIVE1") if t.attention is None)
    first = schedule_sha256(study, trial, rebuild_schedule(study, trial))
    assert schedule_sha256(study, trial, rebuild_schedule(study, trial)) == first
    trial = dataclasses.replace(trial, seed=trial.seed + 1)
    assert schedule_sha256(study, trial, rebuild_schedule(study, trial)) != first
    assert stimulus_files(study) == []


def test_a_trial_stored_without_its_schedule_sha256_is_counted_not_rebuilt(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_study(tmp_path)
    study = load_study(Path("study.toml"))
    db = tmp_path / "nosha.sqlite"
    with Store.open(db) as store:
        store.groups.allocate(study, "P-NOSHA")
        session = store.sessions.start_or_resume(study, "P-NOSHA")
        store.trials.begin(session, 0)  # no schedule_sha256 given
    report = verify_db(db, path)
    assert report.ok and (report.n_trials, report.n_schedules, report.n_unchecked) == (1, 0, 1)
    said = " ".join(format_report(report).split())  # as read, whatever the line breaks
    assert "1 trial(s) without a stored schedule SHA-256 not rebuilt" in said
    out = export_db(db, tmp_path / "out")
    with open(out["trials"], newline="") as fh:
        assert [r["schedule_sha256"] for r in csv.DictReader(fh)] == [""]
