"""`uxlab export`: the trial table of README contract 2, rerunnable, leaving the data alone."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from helpers.studies import TRIAL_COLUMNS

from uxlab.cli import main
from uxlab.store import Store, StoreError, export_db
from uxlab.study import load_study

GOOD = Path(__file__).parent / "data" / "bad_studies" / "good.toml"


@pytest.fixture
def db(tmp_path):
    study = load_study(GOOD)
    path = tmp_path / "good.sqlite"
    with Store.open(path) as store:
        a = store.sessions.start_or_resume(
            study,
            "P-AAAAA",
            environment={"term": "xterm", "size": {"cols": 80, "rows": 24}},
            simulated=True,
        )
        b = store.sessions.start_or_resume(study, "P-BBBBB", pilot=True)
        for s in (a, b):
            store.sessions.set_state(s, "consented")
            store.sessions.set_state(s, "running")
        for t in a.trials[:8]:
            store.trials.begin(a, t.index)
            abandoned = t.index == 2
            store.trials.commit(
                a,
                t.index,
                "abandoned" if abandoned else "completed",
                {
                    "t_abandon_ms": 1234.5 if abandoned else None,
                    "shown_first_ms": 101.0,
                    "shown_last_ms": None if abandoned else 2000.0,
                    "scheduled_end_ms": 2000.0,
                },
                {}
                if abandoned
                else {
                    "acceptable": ("yes" if t.attention is None else "no", 900.0),
                    "speed": (4, 1100.0),
                },
                [
                    {"kind": "chunk", "t_ms": 101.0, "scheduled_ms": 100.0, "flushed_ms": 101.0},
                    {"kind": "key", "t_ms": 1500.0, "key": "enter"},
                ],
            )
        store.end_answers.commit(a, {"comments": ('felt, "fine"\nmostly', 3000.0)})
        store.trials.begin(b, 0)  # in flight when its process died
    return path


def snapshot(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        skip = ('INSERT INTO "audit"', "INSERT INTO \"sqlite_sequence\" VALUES('audit'")
        return [line for line in conn.iterdump() if not line.startswith(skip)]
    finally:
        conn.close()


def test_export_writes_the_contract_columns_and_loads_in_pandas(db, tmp_path):
    out = tmp_path / "out"
    written = export_db(db, out)
    assert sorted(written) == ["events", "runs", "sessions", "study", "trials"]
    trials = pd.read_csv(out / "trials.csv")
    assert list(trials.columns) == TRIAL_COLUMNS
    assert len(trials) == 9 and written.rows["trials"] == 9
    a = trials[trials.participant == "P-AAAAA"].set_index("trial_index")
    assert a.loc[2, "outcome"] == "abandoned" and a.loc[2, "t_abandon_ms"] == 1234.5
    assert a.loc[0, "t_abandon_ms"] != a.loc[0, "t_abandon_ms"]  # NaN: empty unless abandoned
    assert set(a.q_acceptable.dropna()) <= {0, 1}  # yes/no as 1/0
    checks = a[a.attention_check == 1]
    assert len(checks) == 1 and checks.attention_ok.tolist() == [1]
    assert a.attention_ok[a.attention_check == 0].isna().all()
    assert (a.simulated == 1).all() and (a.pilot == 0).all()
    assert a.loc[0, "ttft_ms"] == float(a.loc[0, "condition_id"].split("=")[1])
    b = trials[trials.participant == "P-BBBBB"]
    assert b.outcome.tolist() == ["interrupted"] and b.pilot.tolist() == [1]
    assert a.loc[0:1, "practice"].tolist() == [1, 1] and a.loc[0, "block"] == 0

    events = pd.read_csv(out / "events.csv")
    assert list(events.columns) == ["session_id", "trial_index", "t_ms", "kind", "data"]
    assert len(events) == 16
    assert json.loads(events.data[0]) == {"flushed_ms": 101.0, "scheduled_ms": 100.0}

    sessions = pd.read_csv(out / "sessions.csv").set_index("participant")
    assert sessions.loc["P-AAAAA", "q_comments"] == 'felt, "fine"\nmostly'
    assert sessions.loc["P-AAAAA", "env_size_cols"] == 80
    assert sessions.loc["P-AAAAA", "n_trials_done"] == 8
    assert sessions.loc["P-BBBBB", "state"] == "running"
    assert {"resumed_count", "pilot", "simulated", "n_trials_planned"} <= set(sessions.columns)

    study = json.loads((out / "study.json").read_text())
    assert study["study"]["id"] == "good"
    q = {x["id"]: x for x in study["questions"]}
    assert q["speed"]["acceptable_at"] == 4 and q["speed"]["scale"] == 5
    assert q["acceptable"]["yes_means"] == "acceptable"
    assert [f["name"] for f in study["factors"]] == ["ttft_ms"]


def test_export_is_rerunnable_and_changes_nothing_but_the_audit(db, tmp_path):
    before = snapshot(db)
    export_db(db, tmp_path / "one")
    export_db(db, tmp_path / "two")
    assert snapshot(db) == before
    for name in ("trials.csv", "events.csv", "sessions.csv", "study.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    with Store.open(db) as store:
        exports = [e for e in store.audit.entries() if e["action"] == "export"]
        assert len(exports) == 2 and store.audit.is_intact()
        assert "trials" in json.loads(exports[0]["detail"])["files"]


def test_parquet_has_the_same_columns(db, tmp_path):
    export_db(db, tmp_path / "pq", fmt="parquet")
    trials = pd.read_parquet(tmp_path / "pq" / "trials.parquet")
    assert list(trials.columns) == TRIAL_COLUMNS and len(trials) == 9


def test_export_errors(tmp_path):
    with pytest.raises(StoreError, match="no such database"):
        export_db(tmp_path / "missing.sqlite", tmp_path / "o")
    Store.open(tmp_path / "empty.sqlite").close()
    with pytest.raises(StoreError, match="no study registered yet"):
        export_db(tmp_path / "empty.sqlite", tmp_path / "o")
    with pytest.raises(StoreError, match="use csv or parquet"):
        export_db(tmp_path / "empty.sqlite", tmp_path / "o", fmt="xlsx")


def test_cli_export(db, tmp_path, capsys):
    assert main(["export", str(db), "-o", str(tmp_path / "cli")]) == 0
    out = capsys.readouterr().out
    assert "2 session(s), 9 trial(s), 16 event(s)" in out
    assert (tmp_path / "cli" / "trials.csv").exists()
    assert main(["export", str(tmp_path / "nope.sqlite")]) == 2
    assert "no such database" in capsys.readouterr().err


def test_concurrent_exports_into_one_folder_each_write_whole_files(db, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    export_db(db, tmp_path / "alone")
    shared = tmp_path / "shared"
    with ThreadPoolExecutor(4) as pool:  # each export renames its own temporary files
        list(pool.map(lambda _: export_db(db, shared), range(8)))
    for name in ("trials.csv", "events.csv", "sessions.csv", "study.json"):
        assert (shared / name).read_bytes() == (tmp_path / "alone" / name).read_bytes()
    assert not [p.name for p in shared.iterdir() if p.name.endswith(".tmp")]


def test_a_failed_export_leaves_no_temporary_file(db, tmp_path):
    out = tmp_path / "out"
    (out / "trials.csv").mkdir(parents=True)  # the final rename cannot replace a folder
    with pytest.raises(OSError):
        export_db(db, out)
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
