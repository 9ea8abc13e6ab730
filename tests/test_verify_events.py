"""`uxlab verify` checks each trial's stored events and timings against its rebuilt schedule.

Databases are made by the real flow (simulated participants through the session path, a
chain study held for mid-chain questions); one stored value is then changed with sqlite3,
and verify must name the participant, the trial and the field, exit 1 and change nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from helpers.studies import tiny_study

from uxlab.cli import main
from uxlab.simulate import simulate_cohort, simulate_session
from uxlab.simulate.observers import PopulationTruth
from uxlab.store import Store
from uxlab.store.verify import verify_db
from uxlab.store.verify_report import format_report
from uxlab.study import load_study

REPO = Path(__file__).resolve().parents[1]
IMPATIENT = PopulationTruth(patience_scale_ms=400.0)
HELD = """
[chain]
ask_after_steps = [2, 4]

[[questions]]
id = "progress_ok"
type = "yesno"
text = "Is the assistant getting on well so far?"
when = "step"
"""


@pytest.fixture(scope="module")
def tiny_db(tmp_path_factory) -> tuple[Path, Path]:
    """Three impatient simulated participants of the tiny study, with a timeout short enough
    that trials at the slow level time out: some trials complete, some time out, some are
    given up (waiting, or mid-stream)."""
    folder = tmp_path_factory.mktemp("tiny")
    path = tiny_study(folder, levels="20, 400", itl=30, timeout_s=0.9)
    db = folder / "tiny.sqlite"
    with Store.open(db, durable=False) as store:
        simulate_cohort(load_study(path), store, 3, seed=1, truth=IMPATIENT)
    return path, db


@pytest.fixture(scope="module")
def held_db(tmp_path_factory) -> tuple[Path, Path]:
    """Two simulated participants of the agent-chain study, held after steps 2 and 4 for
    a mid-chain question, with a 6 s timeout (long chains time out mid-way)."""
    folder = tmp_path_factory.mktemp("held")
    text = (REPO / "studies" / "agent-chain.toml").read_text(encoding="utf-8")
    text = text.replace('chains = "../replays/chains"', f'chains = "{REPO / "replays" / "chains"}"')
    text = text.replace("timeout_s = 60", "timeout_s = 6").replace("repeats = 2", "repeats = 1")
    path = folder / "held.toml"
    path.write_text(text + HELD, encoding="utf-8")
    db = folder / "held.sqlite"
    with Store.open(db, durable=False) as store:
        simulate_cohort(load_study(path), store, 2, seed=3)
    return path, db


def copy_of(made: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    path, db = made
    copy = tmp_path / db.name
    shutil.copy(db, copy)
    return path, copy


def sql(db: Path, statement: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        with conn:
            return conn.execute(statement, params).fetchall()
    finally:
        conn.close()


def a_chunk(
    db: Path, outcome: str = "completed", at: int = 3, more: int = 2
) -> tuple[str, int, int, dict]:
    """(participant, trial index, seq, data) of chunk `at` of the first `outcome` trial
    with at least `more` chunks after it."""
    participant, idx, seq, data = sql(
        db,
        "SELECT s.participant, e.trial_index, e.seq, e.data FROM events e "
        "JOIN sessions s USING (session_id) JOIN trials t USING (session_id, trial_index) "
        "WHERE e.kind = 'chunk' AND t.outcome = ? AND json_extract(e.data, '$.index') = ? "
        "AND (SELECT COUNT(*) FROM events c WHERE c.session_id = e.session_id "
        "AND c.trial_index = e.trial_index AND c.kind = 'chunk') >= ? "
        "ORDER BY s.created_at, e.trial_index LIMIT 1",
        (outcome, at, at + 1 + more),
    )[0]
    return participant, idx, seq, json.loads(data)


def where(participant: str, idx: int) -> str:
    return (
        f"session_id = (SELECT session_id FROM sessions WHERE participant = '{participant}') "
        f"AND trial_index = {idx}"
    )


def only_line(db: Path, capsys, path: Path) -> str:
    """The one mismatch verify reports (and its CLI exit 1, the file left as it was), up to
    what the audit log adds to it: every edit here also changed the trial's committed digest."""
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    report = verify_db(db, path)
    lines = [m.line() for m in report.mismatches]
    assert len(lines) == 1, lines
    assert main(["verify", str(db), "--study", str(path)]) == 1
    assert lines[0] in " ".join(capsys.readouterr().out.split())
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    events, committed = lines[0].split("; changed since it was committed (audit entry ")
    assert committed.split("): ", 1)[1].startswith(("events", "shown_first_ms", "scheduled_end",
                                                    "t_abandon_ms")), committed  # fmt: skip
    return events


def test_an_untouched_database_passes_with_every_outcome_checked(tiny_db, capsys):
    path, db = tiny_db
    outcomes = dict(sql(db, "SELECT outcome, COUNT(*) FROM trials GROUP BY outcome"))
    assert {"completed", "timed_out", "abandoned"} <= set(outcomes), outcomes
    (n_chunks,) = sql(db, "SELECT COUNT(*) FROM events WHERE kind = 'chunk'")[0]
    report = verify_db(db, path)
    assert report.ok, [m.line() for m in report.mismatches]
    assert report.n_event_trials == sum(outcomes.values()) and report.n_event_live == 0
    assert report.n_chunk_events == n_chunks > 0
    assert main(["verify", str(db), "--study", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"the events and timings of {report.n_event_trials} trial(s) ({n_chunks} chunk" in out
    assert "every stored chunk event and timing agrees with its schedule" in out


@pytest.mark.parametrize("outcome", ["completed", "timed_out", "abandoned"])
def test_a_changed_scheduled_time_is_named(tiny_db, tmp_path, capsys, outcome):
    path, db = copy_of(tiny_db, tmp_path)
    participant, idx, seq, data = a_chunk(db, outcome, at=1, more=0)
    sql(db, "UPDATE events SET data = json_set(data, '$.scheduled_ms', ?) WHERE "
        f"{where(participant, idx)} AND seq = ?", (data["scheduled_ms"] + 25.0, seq))  # fmt: skip
    was, now = round(data["scheduled_ms"], 3), round(data["scheduled_ms"] + 25.0, 3)
    assert only_line(db, capsys, path) == (
        f"{participant} trial {idx}: events: chunk 1 scheduled_ms: stored {now}, rebuilt {was}"
    )


def test_a_dropped_chunk_event_is_named(tiny_db, tmp_path, capsys):
    path, db = copy_of(tiny_db, tmp_path)
    participant, idx, seq, _data = a_chunk(db)
    sql(db, f"DELETE FROM events WHERE {where(participant, idx)} AND seq = ?", (seq,))
    line = only_line(db, capsys, path)
    assert line.startswith(
        f"{participant} trial {idx}: events: chunk 3 missing (no chunk event claims it; "
    )


def test_a_duplicated_chunk_event_is_named(tiny_db, tmp_path, capsys):
    path, db = copy_of(tiny_db, tmp_path)
    participant, idx, seq, _data = a_chunk(db)
    (last,) = sql(db, f"SELECT MAX(seq) FROM events WHERE {where(participant, idx)}")[0]
    sql(db, "INSERT INTO events SELECT session_id, trial_index, ? + 1, t_ms, kind, data "
        f"FROM events WHERE {where(participant, idx)} AND seq = ?", (last, seq))  # fmt: skip
    assert only_line(db, capsys, path) == (
        f"{participant} trial {idx}: events: chunk 3 shown twice (2 chunk events claim it) "
        "(and 1 more)"
    )  # n_chunks no longer agrees with the chunk events either: counted, not listed


def test_the_last_chunk_of_a_completed_trial_missing_is_named(tiny_db, tmp_path, capsys):
    path, db = copy_of(tiny_db, tmp_path)
    participant, idx, _seq, _data = a_chunk(db)
    (n,) = sql(
        db, f"SELECT COUNT(*) FROM events WHERE {where(participant, idx)} AND kind = 'chunk'"
    )[0]
    sql(db, f"DELETE FROM events WHERE {where(participant, idx)} AND kind = 'chunk' "
        "AND json_extract(data, '$.index') = ?", (n - 1,))  # fmt: skip
    line = only_line(db, capsys, path)
    assert line.startswith(
        f"{participant} trial {idx}: events: chunks: stored {n - 1}, rebuilt {n} (a completed "
        "trial shows every chunk due before it ended) (and "
    )  # the shown_last_ms and n_chunks that no longer agree are counted, not listed


def test_a_chunk_beyond_the_schedule_is_named(tiny_db, tmp_path, capsys):
    path, db = copy_of(tiny_db, tmp_path)
    participant, idx, seq, data = a_chunk(db)
    (n,) = sql(
        db, f"SELECT COUNT(*) FROM events WHERE {where(participant, idx)} AND kind = 'chunk'"
    )[0]
    (last,) = sql(db, f"SELECT MAX(seq) FROM events WHERE {where(participant, idx)}")[0]
    invented = json.dumps({**data, "index": n, "n_chars": 0})  # invisible: timings still agree
    sql(db, "INSERT INTO events SELECT session_id, trial_index, ?, t_ms, 'chunk', ? FROM events "
        f"WHERE {where(participant, idx)} AND seq = ?", (last + 1, invented, seq))  # fmt: skip
    assert only_line(db, capsys, path) == (
        f"{participant} trial {idx}: events: chunk {n}: stored, but the schedule shows {n} chunk(s)"
    )


def test_an_abandoned_trial_may_stop_early_but_not_diverge(tiny_db, tmp_path, capsys):
    path, db = copy_of(tiny_db, tmp_path)
    n_chunks = "(SELECT COUNT(*) FROM events e WHERE e.session_id = t.session_id AND " \
        "e.trial_index = t.trial_index AND e.kind = 'chunk')"  # fmt: skip
    participant, idx, t_abandon, n, replay_id = sql(
        db, f"SELECT s.participant, t.trial_index, t.t_abandon_ms, {n_chunks}, t.replay_id "
        "FROM trials t JOIN sessions s USING (session_id) WHERE t.outcome = 'abandoned' "
        f"AND {n_chunks} > 0 ORDER BY s.created_at, t.trial_index LIMIT 1")[0]  # fmt: skip
    whole = sql(db, f"SELECT {n_chunks} FROM trials t WHERE outcome = 'completed' AND "
                "replay_id = ? AND attention = 0", (replay_id,))  # fmt: skip
    assert whole and all(n < w for (w,) in whole)  # given up mid-stream: stopped early
    assert verify_db(db, path).ok
    sql(db, f"UPDATE trials SET t_abandon_ms = t_abandon_ms + 100 WHERE {where(participant, idx)}")
    assert only_line(db, capsys, path) == (
        f"{participant} trial {idx}: events: t_abandon_ms: stored {round(t_abandon + 100, 3)}, "
        f"abandon event at {round(t_abandon, 3)}"
    )


@pytest.mark.parametrize(
    ("column", "source"),
    [("shown_first_ms", "from the chunk events"), ("scheduled_end_ms", "rebuilt")],
)
def test_a_changed_timing_is_named(tiny_db, tmp_path, capsys, column, source):
    path, db = copy_of(tiny_db, tmp_path)
    participant, idx, _seq, _data = a_chunk(db)
    (value,) = sql(db, f"SELECT {column} FROM trials WHERE {where(participant, idx)}")[0]
    sql(db, f"UPDATE trials SET {column} = {column} + 7 WHERE {where(participant, idx)}")
    assert only_line(db, capsys, path) == (
        f"{participant} trial {idx}: events: {column}: stored {round(value + 7, 3)}, "
        f"{source} {round(value, 3)}"
    )


def test_a_changed_chunk_size_is_named_and_each_trial_gets_one_line(tiny_db, tmp_path):
    path, db = copy_of(tiny_db, tmp_path)
    participant, idx, _seq, data = a_chunk(db)
    sql(db, "UPDATE events SET data = json_set(data, '$.n_chars', json_extract(data, "
        "'$.n_chars') + 1) WHERE kind = 'chunk' AND json_extract(data, '$.index') = 3")  # fmt: skip
    report = verify_db(db, path)
    first = [m.line().split("; ")[0] for m in report.mismatches if m.participant == participant]
    want = data["n_chars"]
    assert (
        f"{participant} trial {idx}: events: chunk 3 n_chars: stored {want + 1}, rebuilt {want}"
        in first
    )
    assert all("; changed since it was committed (" in m.line() for m in report.mismatches)
    assert len({(m.participant, m.trial_index) for m in report.mismatches}) == len(
        report.mismatches
    )
    assert "MISMATCH(ES)" in format_report(report)


def test_a_held_chain_verifies_and_a_changed_hold_is_named(held_db, tmp_path, capsys):
    path, db = copy_of(held_db, tmp_path)
    kinds = dict(sql(db, "SELECT kind, COUNT(*) FROM events GROUP BY kind"))
    assert kinds.get("hold", 0) > 0 and kinds.get("timeout", 0) > 0, kinds
    report = verify_db(db, path)
    assert report.ok, [m.line() for m in report.mismatches]
    assert report.n_chunk_events == kinds["chunk"]
    participant, idx, seq, data = sql(
        db, "SELECT s.participant, e.trial_index, e.seq, e.data FROM events e JOIN sessions s "
        "USING (session_id) WHERE e.kind = 'hold' AND json_extract(e.data, '$.offset_ms') "
        "IS NOT NULL ORDER BY s.created_at, e.trial_index LIMIT 1")[0]  # fmt: skip
    hold = json.loads(data)
    sql(db, "UPDATE events SET data = json_set(data, '$.offset_ms', ?) WHERE "
        f"{where(participant, idx)} AND seq = ?", (hold["offset_ms"] + 40, seq))  # fmt: skip
    line = only_line(db, capsys, path)
    assert line.startswith(
        f"{participant} trial {idx}: events: hold after step {hold['step']} offset_ms: stored "
        f"{round(hold['offset_ms'] + 40, 3)}, rebuilt {round(hold['offset_ms'], 3)}"
    )  # the chunks after it, now shifted by the wrong offset, are counted after it


def test_a_value_edited_to_a_text_is_named_not_a_traceback(tiny_db, tmp_path, capsys):
    path, db = copy_of(tiny_db, tmp_path)
    participant, idx, seq, data = a_chunk(db)
    sql(db, "UPDATE events SET data = json_set(data, '$.scheduled_ms', 'soon', '$.n_chars', "
        f"'many') WHERE {where(participant, idx)} AND seq = ?", (seq,))  # fmt: skip
    assert only_line(db, capsys, path) == (
        f"{participant} trial {idx}: events: chunk 3 scheduled_ms: stored 'soon', rebuilt "
        f"{round(data['scheduled_ms'], 3)} (and 2 more)"
    )  # n_chars, and n_chunks: a chunk whose size is not a number is not counted as shown


def test_a_trial_in_flight_is_said_to_have_stored_nothing_yet(tmp_path):
    path = tiny_study(tmp_path)
    db = tmp_path / "cut.sqlite"
    with Store.open(db) as store:
        asyncio.run(simulate_session(load_study(path), store, 1, stop_after=3))  # as if killed
    report = verify_db(db, path)
    assert report.ok and (report.n_trials, report.n_event_trials, report.n_in_flight) == (4, 3, 1)
    assert "(1 trial(s) in flight: no events stored yet)" in " ".join(format_report(report).split())
