"""End-of-study answers: stored as they are given, the first answer kept."""

from __future__ import annotations

from typing import Any

from uxlab.store.answers import normalise_responses
from uxlab.store.base import Database
from uxlab.store.records import END_INDEX, SessionRecord
from uxlab.store.trial_digest import end_answers_sha256, real


class EndAnswers:
    """`store.end_answers`: the answers to the end-of-study questions (`trial_index` -1)."""

    def __init__(self, db: Database):
        self.db = db
        self.conn = db.conn

    def answered(self, session: SessionRecord) -> set[str]:
        """The end-of-study questions this session has answered (stored before a crash)."""
        return {
            qid
            for (qid,) in self.conn.execute(
                "SELECT question_id FROM responses WHERE session_id = ? AND trial_index = ?",
                (session.id, END_INDEX),
            )
        }

    def commit(self, session: SessionRecord, responses: dict[str, Any]) -> None:
        """Store the answers to the end-of-study questions (one transaction). An answer
        already stored is kept: the first answer is the datum, as for a trial. The audit
        entry holds the SHA-256 of every end-of-study answer stored after it."""
        answers = {
            q: (value, real(rt))
            for q, (value, rt) in normalise_responses(
                session.study.end_questions, responses, "end questions"
            ).items()
        }
        with self.db.write_transaction():
            self.conn.executemany(
                "INSERT INTO responses VALUES (?,?,?,?,?) ON CONFLICT (session_id, trial_index, "
                "question_id) DO NOTHING",
                [(session.id, END_INDEX, q, v, rt) for q, (v, rt) in answers.items()],
            )
            stored = self.rows(session.id)
            detail = {"n": len(answers), "questions": sorted(q for q, _v, _rt in stored)}
            digest = end_answers_sha256(session.id, stored)
            self.db.append_audit("answers", session.id, digest, detail)

    def rows(self, session_id: str) -> list[tuple[str, str | None, float | None]]:
        """(question id, answer, rt_ms) of the session's stored end-of-study answers."""
        return [
            (q, v, rt)
            for q, v, rt in self.conn.execute(
                "SELECT question_id, value, rt_ms FROM responses WHERE session_id = ? "
                "AND trial_index = ? ORDER BY question_id",
                (session_id, END_INDEX),
            )
        ]
