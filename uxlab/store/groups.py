"""Between-participant groups: allocated once, balanced over the slots groups hold now."""

from __future__ import annotations

from uxlab.store.base import Database
from uxlab.store.digests import sha256_json
from uxlab.store.ids import check_participant_id
from uxlab.store.records import LIVE_STATES
from uxlab.store.schema import StoreError
from uxlab.store.studies import Studies
from uxlab.study.spec import Condition, Study


class Groups:
    """`store.groups`: each participant's between-participant group, and how full each is."""

    def __init__(self, db: Database, studies: Studies):
        self.db = db
        self.conn = db.conn
        self.studies = studies

    def allocate(self, study: Study, participant: str) -> Condition | None:
        """The participant's between-participant group, allocated once from a counter.

        A group counts its completed sessions plus live ones (`LIVE_STATES`) seen within the
        study's `stale_after_min` (and just-allocated participants without a session yet);
        stale, interrupted and withdrawn participants give their slot back. A session is
        "seen" (`sessions.last_seen_s`) when it starts or resumes, changes state, or begins
        or commits a trial, so a participant taking part keeps the slot. The emptiest group below
        `group_cap` wins, ties broken by a persistent round-robin counter. Raises StoreError
        when every group is full.
        """
        groups = study.groups
        if not groups:
            return None
        check_participant_id(participant)
        with self.db.write_transaction():
            self.studies.add(study)
            self.db.ensure_participant(participant)
            (current,) = self.conn.execute(
                "SELECT group_id FROM participants WHERE participant = ?", (participant,)
            ).fetchone()
            if current is not None:
                return next(g for g in groups if g.id == current)
            counts = self.counts(study)
            cap = study.counterbalance.group_cap
            open_groups = [g for g in groups if cap is None or counts[g.id] < cap]
            if not open_groups:
                raise StoreError(
                    f"{self.db.path}: every group of study {study.id!r} is full "
                    f"({cap} per group: {counts}); raise [counterbalance].group_cap"
                )
            turn = self.db.next_count(f"group:{study.id}")
            fewest = min(counts[g.id] for g in open_groups)
            ring = groups[turn % len(groups) :] + groups[: turn % len(groups)]
            chosen = next(g for g in ring if g in open_groups and counts[g.id] == fewest)
            self.conn.execute(
                "UPDATE participants SET group_id = ? WHERE participant = ?",
                (chosen.id, participant),
            )
            self.db.append_audit(
                "allocate", None, sha256_json(chosen.id), {"group": chosen.id, "counts": counts}
            )
            return chosen

    def counts(self, study: Study) -> dict[str, int]:
        """How many slots each group holds now (completed + live + freshly allocated)."""
        stale_s = self.db.clock() - study.counterbalance.stale_after_min * 60.0
        counts = {g.id: 0 for g in study.groups}
        live_states = ", ".join("?" * len(LIVE_STATES))
        rows = self.conn.execute(
            f"""
            SELECT p.group_id,
                   SUM(CASE WHEN s.state = 'completed' THEN 1 ELSE 0 END) AS done,
                   SUM(CASE WHEN s.state IN ({live_states}) AND s.last_seen_s >= ?
                            THEN 1 ELSE 0 END) AS live,
                   COUNT(s.session_id) AS n_sessions,
                   p.created_s
            FROM participants p
            LEFT JOIN sessions s ON s.participant = p.participant
                 AND s.study_sha256 IN (SELECT sha256 FROM studies WHERE study_id = ?)
            WHERE p.group_id IS NOT NULL
            GROUP BY p.participant, p.group_id, p.created_s
            """,
            (*LIVE_STATES, stale_s, study.id),
        ).fetchall()
        for group_id, done, live, n_sessions, created_s in rows:
            holds = (done or 0) > 0 or (live or 0) > 0 or (n_sessions == 0 and created_s >= stale_s)
            if holds and group_id in counts:
                counts[group_id] += 1
        return counts
