"""`uxlab verify` checks the answers, not only the chain: each edit a reviewer must be able
to see (an answer flipped or replaced by text, a response time doubled, a trial or a whole
session deleted, the audit log's end removed after dropping its triggers, ...) is named with
its trial and field, exit 1; an untouched database verifies, and prints a chain head that
`--expect-head` checks later."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from helpers.studies import ATTENTION, CORPUS, END_QUESTION, TINY_STUDY

from uxlab.cli import main
from uxlab.simulate import simulate_cohort
from uxlab.store import Store
from uxlab.store.trial_digest import TrialRows, trial_digest
from uxlab.store.verify import verify_db
from uxlab.study import load_study

FILES = ["chat-one-liner.jsonl", "chat-clarifying.jsonl", "chat-fast-small-model.jsonl"]
END_RATING = """
[[questions]]
id = "overall"
type = "likert"
text = "Overall, how did the waits feel?"
scale = 5
labels = ["Very slow", "Very fast"]
when = "end"
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> tuple[Path, Path]:
    """Three simulated participants through the tiny study (an attention check, an end
    question), run from the study's folder."""
    folder = tmp_path_factory.mktemp("verify-answers")
    (folder / "corpus").mkdir()
    for name in FILES:
        shutil.copy(CORPUS / name, folder / "corpus" / name)
    text = TINY_STUDY.format(
        corpus="corpus", itl=2, levels="20, 60", repeats=2, practice=1, break_every=2,
        timeout="", attention=ATTENTION, extra_questions=END_QUESTION + END_RATING,
    )  # fmt: skip
    path = folder / "study.toml"
    path.write_text(text, encoding="utf-8")
    db = folder / "ran.sqlite"
    with Store.open(db, durable=False) as store:
        simulate_cohort(load_study(path), store, 3, seed=1)
    return path, db


@pytest.fixture
def copy(ran, tmp_path) -> tuple[Path, Path]:
    path, db = ran
    shutil.copy(db, tmp_path / "copy.sqlite")
    return path, tmp_path / "copy.sqlite"


def sql(db: Path, script: str) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(script).fetchall() if ";" not in script else []
        if ";" in script:
            conn.executescript(script)
        conn.commit()
        return rows
    finally:
        conn.close()


def first(db, what: str = "completed", question: str = "acceptable") -> tuple:
    """(participant, session id, trial index, answer, rt) of the first main trial with
    that outcome answering `question` (a SQLite file or a PostgreSQL URL)."""
    from helpers.postgres import query

    return query(
        db,
        "SELECT s.participant, t.session_id, t.trial_index, r.value, r.rt_ms FROM trials t "
        "JOIN sessions s USING (session_id) JOIN responses r ON r.session_id = t.session_id "
        f"AND r.trial_index = t.trial_index WHERE t.outcome = '{what}' AND r.question_id = "
        f"'{question}' AND t.practice = 0 AND t.attention = 0 ORDER BY s.created_at, "
        "t.trial_index LIMIT 1",
    )[0]  # fmt: skip


def mismatches(db: Path, path: Path, capsys, **kwargs) -> list[str]:
    """verify's mismatch lines; the CLI agrees (exit 1 and the same lines)."""
    report = verify_db(db, path, **kwargs)
    found = [m.line() for m in report.mismatches]
    args = ["verify", str(db), "--study", str(path)]
    if "expect_head" in kwargs:
        args += ["--expect-head", kwargs["expect_head"]]
    capsys.readouterr()
    assert main(args) == (1 if found else 0)
    out = " ".join(capsys.readouterr().out.split())
    assert all(line in out for line in found[:20])
    return found


def test_an_untouched_database_verifies_and_prints_its_chain_head(ran, capsys):
    path, db = ran
    assert mismatches(db, path, capsys) == []
    report = verify_db(db, path)
    assert report.n_digests == sql(db, "SELECT COUNT(*) FROM trials WHERE outcome != "
                                   "'interrupted'")[0][0] >= 15  # fmt: skip
    (head,) = sql(db, "SELECT chain FROM audit ORDER BY seq DESC LIMIT 1")[0]
    assert report.audit_head == head
    main(["verify", str(db), "--study", str(path)])
    out = capsys.readouterr().out
    assert f"\n  {head}\n" in out and "committed trial's outcome, timings, answers" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_the_digest_is_the_canonical_json_of_the_stored_rows():
    """The streamed digest is `sha256_json` of the payload it documents, and a part's
    change names that part only."""
    from uxlab.store.digests import sha256_json

    rows = TrialRows(
        "S-1", 3, "completed",
        {"t_abandon_ms": None, "shown_first_ms": 12.5, "shown_last_ms": 80.0,
         "scheduled_end_ms": 90.0, "e2e_ms": 91.0},
        {"ok": ("yes", 1840.25), "speed": ("4", 900.0)},
        [("S-1", 3, 0, 12.5, "chunk", '{"index":0}'), ("S-1", 3, 1, 80.0, "key", "{}")],
    )  # fmt: skip
    payload = {
        "session_id": "S-1", "trial_index": 3, "outcome": "completed",
        "timings": rows.timings, "responses": {q: list(a) for q, a in rows.answers.items()},
        "events": [list(e) for e in rows.events],
    }  # fmt: skip
    digest = trial_digest(rows)
    assert digest.sha256 == sha256_json(payload)
    from uxlab.store.trial_digest import changed_parts

    flipped = TrialRows(**{**rows.__dict__, "answers": {**rows.answers, "ok": ("no", 1840.25)}})
    assert changed_parts(digest.parts, trial_digest(flipped).parts) == ["q_ok"]
    slower = TrialRows(**{**rows.__dict__, "answers": {**rows.answers, "speed": ("4", 1800.0)}})
    assert changed_parts(digest.parts, trial_digest(slower).parts) == ["rt_speed_ms"]
    # the answer's digest is keyed by the events: without them "yes" and "no" cannot be tried
    assert "yes" not in str(digest.parts) and len(digest.parts["answers"]["ok"]) == 16


def test_a_flipped_answer_is_named(copy, capsys):
    path, db = copy
    participant, sid, idx, value, _rt = first(db)
    flipped = "no" if value == "yes" else "yes"
    sql(db, f"UPDATE responses SET value = '{flipped}' WHERE session_id = '{sid}' AND "
        f"trial_index = {idx} AND question_id = 'acceptable';")  # fmt: skip
    (line,) = mismatches(db, path, capsys)
    assert line.startswith(f"{participant} trial {idx}: changed since it was committed (audit")
    assert line.endswith("): q_acceptable")


def test_an_answer_replaced_by_text_is_named_twice_over(copy, capsys):
    path, db = copy
    participant, sid, idx, _value, _rt = first(db)
    sql(db, f"UPDATE responses SET value = 'maybe' WHERE session_id = '{sid}' AND "
        f"trial_index = {idx} AND question_id = 'acceptable';")  # fmt: skip
    (line,) = mismatches(db, path, capsys)
    assert line.startswith(f"{participant} trial {idx}: changed since it was committed")
    assert "): q_acceptable; q_acceptable: stored 'maybe' is not an answer its yesno" in line


def test_a_doubled_response_time_is_named(copy, capsys):
    path, db = copy
    participant, sid, idx, _value, _rt = first(db)
    sql(db, f"UPDATE responses SET rt_ms = rt_ms * 2 WHERE session_id = '{sid}' AND "
        f"trial_index = {idx} AND question_id = 'acceptable';")  # fmt: skip
    (line,) = mismatches(db, path, capsys)
    assert line.startswith(f"{participant} trial {idx}: ")
    assert line.endswith("): rt_acceptable_ms")


def test_a_changed_outcome_or_a_removed_answer_is_named(copy, capsys):
    path, db = copy
    participant, sid, idx, _value, _rt = first(db)
    sql(db, f"UPDATE trials SET outcome = 'error' WHERE session_id = '{sid}' AND "
        f"trial_index = {idx}; DELETE FROM responses WHERE session_id = '{sid}' AND "
        f"trial_index = {idx} AND question_id = 'speed';")  # fmt: skip
    found = mismatches(db, path, capsys)
    mine = [line for line in found if line.startswith(f"{participant} trial {idx}: ")]
    assert len(mine) == 1 and "outcome, q_speed (removed), rt_speed_ms (removed)" in mine[0]


def test_a_deleted_trial_with_its_answers_and_events_is_named(copy, capsys):
    path, db = copy
    participant, sid, idx, _value, _rt = first(db)
    sql(db, "".join(f"DELETE FROM {t} WHERE session_id = '{sid}' AND trial_index = {idx};"
                    for t in ("events", "responses", "trials")))  # fmt: skip
    found = mismatches(db, path, capsys)
    assert (
        f"{participant} trial {idx}: committed (audit entry" in found[-1]
        and found[-1].endswith("but not in the database: the trial, its answers and its "
                               "events were deleted")
    ), found  # fmt: skip


def test_a_deleted_session_is_named_and_a_withdrawn_one_is_not(copy, capsys):
    path, db = copy
    sessions = sql(db, "SELECT participant, session_id FROM sessions ORDER BY created_at")
    with Store.open(db) as store:
        store.withdrawal.withdraw(sessions[0][0])  # a withdrawal: the log names the session
    assert mismatches(db, path, capsys) == []
    sql(db, "PRAGMA foreign_keys = ON; DELETE FROM sessions WHERE session_id = "
        f"'{sessions[1][1]}';")  # fmt: skip
    assert sql(db, f"SELECT COUNT(*) FROM trials WHERE session_id = '{sessions[1][1]}'") == [(0,)]
    (line,) = mismatches(db, path, capsys)
    assert line.startswith(f"session {sessions[1][1]}: created (audit entry ")
    assert "but it is not in the database and no withdrawal names it: deleted" in line


def test_the_audit_logs_end_removed_after_dropping_its_triggers_is_seen(copy, capsys):
    path, db = copy
    (participant,) = sql(db, "SELECT participant FROM sessions ORDER BY created_at DESC "
                         "LIMIT 1")[0]  # fmt: skip
    (last_trial,) = sql(db, "SELECT seq FROM audit WHERE action = 'trial' ORDER BY seq DESC "
                        "LIMIT 1")[0]  # fmt: skip
    sql(db, f"DROP TRIGGER audit_no_delete; DELETE FROM audit WHERE seq >= {last_trial};")
    found = mismatches(db, path, capsys)
    assert found[0].startswith("the audit table no longer refuses changes (trigger "
                               "audit_no_delete removed)")  # fmt: skip
    assert any(line.startswith(f"{participant} trial ") and "committed (completed), but the "
               "audit log has no entry for it" in line for line in found), found  # fmt: skip
    assert f"{participant}: stored as completed, but the audit log has no `finish` entry" in (
        " ".join(found)
    )


def test_an_edited_attention_result_end_answer_or_pilot_flag_is_named(copy, capsys):
    path, db = copy
    participant, sid, idx = sql(db, "SELECT s.participant, t.session_id, t.trial_index FROM "
                                "trials t JOIN sessions s USING (session_id) WHERE "
                                "t.attention_ok = 0 OR t.attention_ok = 1 LIMIT 1")[0]  # fmt: skip
    sql(
        db,
        f"UPDATE trials SET attention_ok = 1 - attention_ok WHERE session_id = '{sid}' "
        f"AND trial_index = {idx}; UPDATE responses SET value = CASE value WHEN '5' THEN '4' "
        f"ELSE '5' END WHERE trial_index = -1 AND session_id = '{sid}' AND question_id = "
        f"'overall'; UPDATE sessions SET pilot = 1 WHERE session_id = '{sid}';",
    )
    found = " | ".join(mismatches(db, path, capsys))
    assert f"{participant} trial {idx}: attention_ok: stored " in found
    assert f"{participant}: end-of-study answers changed since stored (audit entry " in found
    assert "): overall" in found
    assert f"{participant}: pilot: stored True, created as False" in found


def test_expect_head_accepts_the_head_or_an_earlier_one_and_refuses_a_rewritten_log(copy, capsys):
    path, db = copy
    head = verify_db(db, path).audit_head
    assert mismatches(db, path, capsys, expect_head=head) == []
    with Store.open(db) as store:  # the log grows: an export's entry
        store.audit.record_export("0" * 64, {"n": 1})
    report = verify_db(db, path, expect_head=head[:12])
    assert report.ok and any(
        "log leads to it unchanged, and 1 entry was added since" in n for n in report.notes
    )
    # the whole log rewritten consistently (triggers dropped, every chain value recomputed)
    from uxlab.store.audit import chain_value

    conn = sqlite3.connect(db)
    conn.executescript("DROP TRIGGER audit_no_update;")
    prev = ""
    for seq, at, action, subject, sha, detail in conn.execute(
        "SELECT seq, at, action, subject, sha256, detail FROM audit ORDER BY seq"
    ).fetchall():
        at = at.replace("2", "3", 1) if seq == 2 else at
        prev = chain_value(prev, at, action, subject, sha, detail)
        conn.execute("UPDATE audit SET at = ?, chain = ? WHERE seq = ?", (at, prev, seq))
    conn.execute(
        "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit "
        "BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END;"
    )
    conn.commit()
    conn.close()
    assert mismatches(db, path, capsys) == []  # consistent in itself: only the anchor tells
    (line,) = mismatches(db, path, capsys, expect_head=head)
    assert line.startswith("the audit log does not lead to the expected head ")
    capsys.readouterr()
    assert main(["verify", str(db), "--expect-head", "not-hex"]) == 2
    assert "give the audit chain head" in capsys.readouterr().err


def test_on_postgresql_a_flipped_answer_and_dropped_triggers_are_named(ran, postgres_db, capsys):
    """The same checks through the PostgreSQL backend (its own trigger catalogue)."""
    from helpers.postgres import query

    path, _db = ran
    with Store.open(postgres_db) as store:
        simulate_cohort(load_study(path), store, 2, seed=3)
    assert mismatches(postgres_db, path, capsys) == []
    participant, sid, idx, value, _rt = first(postgres_db)
    flipped = "no" if value == "yes" else "yes"
    query(postgres_db, "UPDATE responses SET value = ? WHERE session_id = ? AND trial_index = ? "
          "AND question_id = 'acceptable'", (flipped, sid, idx))  # fmt: skip
    query(postgres_db, "DROP TRIGGER audit_no_delete ON audit")
    found = mismatches(postgres_db, path, capsys)
    assert found[0].startswith("the audit table no longer refuses changes (trigger "
                               "audit_no_delete removed)")  # fmt: skip
    assert found[1].startswith(f"{participant} trial {idx}: changed since it was committed")
    assert found[1].endswith("): q_acceptable") and len(found) == 2
