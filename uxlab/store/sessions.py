"""Sessions: start, resume (with the lease), re-runs queued at the end, states."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable
from typing import Any

from uxlab.store import lease
from uxlab.store.base import Database
from uxlab.store.digests import sha256_json
from uxlab.store.ids import check_participant_id
from uxlab.store.records import END_INDEX, TRANSITIONS, SessionRecord, UnfinishedSession
from uxlab.store.schema import StoreError
from uxlab.store.studies import Studies
from uxlab.store.trial_digest import session_digest
from uxlab.store.withdrawal import Withdrawal
from uxlab.study.design import Trial, design_trials
from uxlab.study.progress import TrialCounter, TrialCounts
from uxlab.study.spec import Study


class Sessions:
    """`store.sessions`: starting, resuming and moving sessions along; re-runs at the end;
    what a session keeps besides its trials (session events, the adaptive state)."""

    def __init__(self, db: Database, studies: Studies, withdrawal: Withdrawal):
        self.db = db
        self.conn = db.conn
        self.studies = studies
        self.withdrawal = withdrawal
        self.new_id: Callable[[], str] = lambda: "S-" + uuid.uuid4().hex[:12]
        """Makes each new session's id (random; a test may make them repeatable)."""

    def start_or_resume(
        self,
        study: Study,
        participant: str,
        seed: int | None = None,
        environment: dict[str, Any] | None = None,
        pilot: bool = False,
        simulated: bool = False,
    ) -> SessionRecord:
        """Start the participant's session, or resume their unfinished one.

        A new session gets the trial list from `design_trials` (stored with it). Resuming
        marks any trial in flight `interrupted`, keeps the stored trial list, counts the
        resume, and returns `next_index` after the last trial begun. A participant who
        completed the study is refused (StoreError), as is resuming with a changed study file.
        """
        check_participant_id(participant)
        environment = dict(environment or {})
        seed = study.seed if seed is None else int(seed)
        now_s, now = self.db.clock(), self.db.now_iso()
        with self.db.write_transaction():
            self.studies.add(study)
            number = self.db.ensure_participant(participant)
            row = self._latest_session(study, participant)
            if row:
                self._take_lease(study, participant, row[0], now_s, now)
                return self._resume(study, participant, number, row, now, now_s, environment)
            group_id, group = self._allocated_group(study, participant)
            trials = design_trials(study, participant, number, seed, group)
            session_id = self._create_session(
                study,
                participant,
                seed,
                trials,
                group_id,
                pilot,
                simulated,
                environment,
                now,
                now_s,
            )
            self._take_lease(study, participant, session_id, now_s, now)
        return SessionRecord(
            id=session_id,
            participant=participant,
            participant_number=number,
            study=study,
            seed=seed,
            trials=trials,
            next_index=0,
            state="created",
            group=group_id,
            pilot=pilot,
            simulated=simulated,
            n_planned=len(trials),
        )

    def _latest_session(self, study: Study, participant: str) -> tuple[Any, ...] | None:
        """The participant's latest session of this study (the row `_resume` reads), or
        None; refuses (StoreError) a participant who completed the study."""
        row: tuple[Any, ...] | None = self.conn.execute(
            """
            SELECT s.session_id, s.state, s.study_sha256, s.plan, s.seed, s.resumed_count,
                   s.group_id, s.pilot, s.simulated
            FROM sessions s JOIN studies st ON st.sha256 = s.study_sha256
            WHERE s.participant = ? AND st.study_id = ?
            ORDER BY s.created_at DESC, s.rowid DESC LIMIT 1
            """,
            (participant, study.id),
        ).fetchone()
        if row and row[1] == "completed":
            raise StoreError(
                f"{self.db.path}: participant {participant} already completed study "
                f"{study.id!r} (session {row[0]}); use a new participant id"
            )
        return row

    def _allocated_group(self, study: Study, participant: str) -> tuple[Any, Any]:
        """(group id, group) allocated to the participant; (None, None) in a study without
        between-participant factors. Refuses (StoreError) when none was allocated."""
        (group_id,) = self.conn.execute(
            "SELECT group_id FROM participants WHERE participant = ?", (participant,)
        ).fetchone()
        group = None
        if study.groups:
            if group_id is None:
                raise StoreError(
                    f"study {study.id!r} has between-participant factors: call "
                    "store.groups.allocate(study, participant) before starting the session"
                )
            group = next(g for g in study.groups if g.id == group_id)
        return group_id, group

    def _create_session(
        self,
        study: Study,
        participant: str,
        seed: int,
        trials: list[Trial],
        group_id: str | None,
        pilot: bool,
        simulated: bool,
        environment: dict[str, Any],
        now: str,
        now_s: float,
    ) -> str:
        """Insert a new session with its trial list, audit it and open its first run;
        returns its id. Runs inside the caller's write transaction."""
        plan = [t.to_dict() for t in trials]
        plan_sha = sha256_json(plan)
        session_id = self.new_id()
        self.conn.execute(
            "INSERT INTO sessions (session_id, participant, study_sha256, seed, state, pilot,"
            " simulated, environment, plan, plan_sha256, group_id, resumed_count, created_at,"
            " updated_at, last_seen_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,0,?,?,?)",
            (
                session_id,
                participant,
                study.sha256,
                seed,
                "created",
                int(pilot),
                int(simulated),
                json.dumps(environment, sort_keys=True),
                json.dumps(plan),
                plan_sha,
                group_id,
                now,
                now,
                now_s,
            ),
        )
        self.db.append_audit(
            "create",
            session_id,
            plan_sha,
            {
                "study_sha256": study.sha256,
                "seed": seed,
                "n_trials": len(trials),
                "pilot": pilot,
                "simulated": simulated,
            },
        )
        self._add_run(session_id, 0, 0, environment, now)
        return session_id

    def _take_lease(
        self, study: Study, participant: str, session_id: str, now_s: float, now: str
    ) -> None:
        """Hold the session for this process (raises while another live process holds it)."""
        stale_s = study.counterbalance.stale_after_min * 60.0
        lease.take(self.conn, self.db.path, session_id, participant, now_s, now, stale_s)
        self.db.leases.add(session_id)

    def _add_run(
        self, session_id: str, run: int, next_index: int, environment: dict[str, Any], now: str
    ) -> None:
        """Keep this start's or resume's environment (and its timing warnings)."""
        self.conn.execute(
            "INSERT INTO session_runs (session_id, run, kind, started_at, next_index, "
            "environment) VALUES (?,?,?,?,?,?)",
            (
                session_id,
                run,
                "resume" if run else "start",
                now,
                next_index,
                json.dumps(environment, sort_keys=True),
            ),
        )

    def _resume(
        self,
        study: Study,
        participant: str,
        number: int,
        row: tuple[Any, ...],
        now: str,
        now_s: float,
        environment: dict[str, Any],
    ) -> SessionRecord:
        session_id, state, sha, plan_json, seed, resumed_count, group_id, pilot, simulated = row
        if sha != study.sha256:
            raise StoreError(
                f"{self.db.path}: session {session_id} ran study file {sha[:12]}…, but this "
                f"file is {study.sha256[:12]}…; resume with the original file (the database "
                "holds its text) or use a new participant id"
            )
        in_flight = [
            r[0]
            for r in self.conn.execute(
                "SELECT trial_index FROM trials WHERE session_id = ? AND outcome = 'running' "
                "ORDER BY trial_index",
                (session_id,),
            )
        ]
        self.conn.execute(
            "UPDATE trials SET outcome = 'interrupted', committed_at = ? "
            "WHERE session_id = ? AND outcome = 'running'",
            (now, session_id),
        )
        (last,) = self.conn.execute(
            "SELECT MAX(trial_index) FROM trials WHERE session_id = ? AND trial_index >= 0",
            (session_id,),
        ).fetchone()
        resumed_count += 1
        self.conn.execute(
            "UPDATE sessions SET state = 'interrupted', resumed_count = ?, updated_at = ?, "
            "last_seen_s = ? WHERE session_id = ?",
            (resumed_count, now, now_s, session_id),
        )
        next_index = 0 if last is None else last + 1
        self.db.append_audit(
            "resume",
            session_id,
            sha256_json(in_flight),
            {"interrupted": in_flight, "next_index": next_index, "previous_state": state},
        )
        self._add_run(session_id, resumed_count, next_index, environment, now)
        trials = [Trial.from_dict(d) for d in json.loads(plan_json)]
        n_planned = len(trials)
        reruns = self._reruns(session_id)
        trials += [self._rerun_trial(trials, i, session_id) for i in sorted(reruns)]
        return SessionRecord(
            id=session_id,
            participant=participant,
            participant_number=number,
            study=study,
            seed=seed,
            trials=trials,
            next_index=next_index,
            state="interrupted",
            resumed=True,
            resumed_count=resumed_count,
            interrupted=in_flight,
            group=group_id,
            pilot=bool(pilot),
            simulated=bool(simulated),
            reruns=reruns,
            n_planned=n_planned,
        )

    # --- re-runs at the end -------------------------------------------------------------------

    def _reruns(self, session_id: str) -> dict[int, tuple[int, str]]:
        return {
            idx: (of, reason)
            for idx, of, reason in self.conn.execute(
                "SELECT trial_index, of_index, reason FROM requeued WHERE session_id = ?",
                (session_id,),
            )
        }

    def _rerun_trial(self, planned: list[Trial], trial_index: int, session_id: str) -> Trial:
        (root,) = self.conn.execute(
            "SELECT root_index FROM requeued WHERE session_id = ? AND trial_index = ?",
            (session_id, trial_index),
        ).fetchone()
        rerun: Trial = dataclasses.replace(planned[root], index=trial_index, break_before=False)
        return rerun

    def requeue_trial(
        self, session: SessionRecord, of_index: int, reason: str, max_per_reason: int = 1
    ) -> Trial | None:
        """Queue trial `of_index` again at the end of the session's list; returns the re-run.

        The re-run plays the same planned trial (condition, recording, seed) under a new
        `trial_index` after every other trial; the attempt `of_index` stays stored as it is
        and `requeued` says which re-run replaces it and why (`reason`, e.g. `interrupted`).
        None (nothing queued) for a practice trial, an attempt already queued again, or a
        planned trial already re-run `max_per_reason` times for this reason. The attempt
        must be over (committed or `interrupted`): StoreError otherwise.
        """
        if not 0 <= of_index < len(session.trials):
            raise StoreError(f"session {session.id}: no trial {of_index} to queue again")
        trial = session.trials[of_index]
        if trial.practice:
            return None
        n_planned = session.n_planned if session.n_planned is not None else len(session.trials)
        now = self.db.now_iso()
        with self.db.write_transaction():
            row = self.conn.execute(
                "SELECT committed_at FROM trials WHERE session_id = ? AND trial_index = ?",
                (session.id, of_index),
            ).fetchone()
            if row is None or row[0] is None:
                raise StoreError(
                    f"session {session.id}: trial {of_index} is not over (only a committed or "
                    "interrupted trial can be queued again)"
                )
            queued = self.conn.execute(
                "SELECT root_index FROM requeued WHERE session_id = ? AND trial_index = ?",
                (session.id, of_index),
            ).fetchone()
            root = queued[0] if queued else of_index
            if root >= n_planned:
                raise StoreError(f"session {session.id}: trial {of_index} has no planned trial")
            (already,) = self.conn.execute(
                "SELECT COUNT(*) FROM requeued WHERE session_id = ? AND of_index = ?",
                (session.id, of_index),
            ).fetchone()
            (n_same,) = self.conn.execute(
                "SELECT COUNT(*) FROM requeued WHERE session_id = ? AND root_index = ? "
                "AND reason = ?",
                (session.id, root, reason),
            ).fetchone()
            if already or n_same >= max_per_reason:
                return None
            index = len(session.trials)
            self.conn.execute(
                "INSERT INTO requeued (session_id, trial_index, of_index, root_index, reason, "
                "queued_at) VALUES (?,?,?,?,?,?)",
                (session.id, index, of_index, root, reason, now),
            )
            detail = {"trial_index": index, "of_index": of_index, "reason": reason}
            self.db.append_audit("requeue", session.id, sha256_json(detail), detail)
        plan = session.trials[:n_planned]
        rerun = dataclasses.replace(plan[root], index=index, break_before=False)
        session.trials.append(rerun)
        session.reruns[index] = (of_index, reason)
        return rerun

    def requeued_attempts(self, session: SessionRecord) -> dict[int, tuple[int, str]]:
        """Attempts queued again: their trial_index -> (the re-run's index, why)."""
        return {of: (idx, why) for idx, (of, why) in session.reruns.items()}

    def interrupted_trials(self, session: SessionRecord) -> list[int]:
        """Indexes of the session's trials stored as `interrupted`, in order."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT trial_index FROM trials WHERE session_id = ? AND outcome = 'interrupted' "
                "ORDER BY trial_index",
                (session.id,),
            )
        ]

    def unfinished(self, study: Study) -> list[UnfinishedSession]:
        """This study file's unfinished sessions, the most recently active first.

        Each can be resumed unless its `in_use` names the live process holding it now (on
        this host, or on another host active within the study's `stale_after_min`): resuming
        that one would be refused. Not listed: completed or withdrawn sessions, simulated
        ones, and sessions of another version of the study file (they cannot be resumed
        with this one).
        """
        rows = self.conn.execute(
            """
            SELECT s.session_id, s.participant, s.state, s.plan, s.updated_at, s.last_seen_s,
                   s.pilot
            FROM sessions s
            WHERE s.study_sha256 = ? AND s.simulated = 0
              AND s.state IN ('created', 'consented', 'running', 'interrupted')
            ORDER BY s.last_seen_s DESC, s.rowid DESC
            """,
            (study.sha256,),
        ).fetchall()
        stale_s = study.counterbalance.stale_after_min * 60.0
        in_use = lease.holders(self.conn, [r[0] for r in rows], self.db.clock(), stale_s)
        out = []
        for sid, participant, state, plan, updated_at, last_seen_s, pilot in rows:
            counts = self._trial_counts(sid, plan, study.session.rerun_interrupted)
            out.append(
                UnfinishedSession(
                    session_id=sid,
                    participant=participant,
                    state=state,
                    n_done=counts.main_done,
                    n_trials=counts.main_total,
                    updated_at=updated_at,
                    last_seen_s=last_seen_s,
                    pilot=bool(pilot),
                    in_use=in_use.get(sid),
                    counts=counts,
                )
            )
        return out

    def _trial_counts(self, session_id: str, plan: str, rerun_cut_off: bool) -> TrialCounts:
        """The session's progress as its participant will see it on resuming
        (`uxlab.study.progress`): a trial cut off counts as it will after the resume."""
        planned = [Trial.from_dict(d) for d in json.loads(plan)]
        reruns = self._reruns(session_id)
        trials = planned + [self._rerun_trial(planned, i, session_id) for i in sorted(reruns)]
        over, cut_off = set(), set()
        for index, outcome, committed_at in self.conn.execute(
            "SELECT trial_index, outcome, committed_at FROM trials WHERE session_id = ? "
            "AND trial_index >= 0",
            (session_id,),
        ):
            if outcome in ("running", "interrupted"):
                cut_off.add(index)
            elif committed_at is not None:
                over.add(index)
        counter = TrialCounter(trials, reruns, len(planned))
        return counter.counts(over, cut_off, rerun_cut_off)

    def last_run_environment(self, study: Study, participant: str) -> dict[str, Any] | None:
        """The environment kept by the latest start or resume of the participant's session
        of this study file (its timing warnings, and whether they were shown), or None."""
        row = self.conn.execute(
            "SELECT r.environment FROM session_runs r JOIN sessions s "
            "ON s.session_id = r.session_id WHERE s.participant = ? AND s.study_sha256 = ? "
            "ORDER BY s.created_at DESC, r.run DESC LIMIT 1",
            (participant, study.sha256),
        ).fetchone()
        if row is None:
            return None
        environment: dict[str, Any] = json.loads(row[0])
        return environment

    def unfinished_of_other_versions(self, study: Study) -> int:
        """How many unfinished sessions of this study id ran another version of its file."""
        (n,) = self.conn.execute(
            "SELECT COUNT(*) FROM sessions s JOIN studies st ON st.sha256 = s.study_sha256 "
            "WHERE st.study_id = ? AND s.study_sha256 != ? AND s.simulated = 0 "
            "AND s.state IN ('created', 'consented', 'running', 'interrupted')",
            (study.id, study.sha256),
        ).fetchone()
        return int(n)

    def set_state(self, session: SessionRecord, state: str, by: str | None = None) -> None:
        """Move the session along `created → consented → running → completed`.

        `interrupted` is set by a resume, or by a quit (a pause: `by` names what quit, `key`
        or a signal such as `SIGHUP`, kept in a `pause` audit entry); `withdrawn` deletes the
        participant's data (`Withdrawal.withdraw`).
        """
        allowed = TRANSITIONS.get(session.state, ())
        if state not in allowed:
            raise StoreError(
                f"session {session.id}: cannot go from {session.state!r} to {state!r} "
                f"(allowed: {', '.join(allowed) or 'nothing'})"
            )
        if state == "withdrawn":
            self.withdrawal.withdraw(session.participant)
            session.state = state
            return
        with self.db.write_transaction():
            self.conn.execute(
                "UPDATE sessions SET state = ?, updated_at = ?, last_seen_s = ? "
                "WHERE session_id = ?",
                (state, self.db.now_iso(), self.db.clock(), session.id),
            )
            if state in ("running", "completed"):
                digest = session_digest(self.conn, session.id)
                self.db.append_audit(
                    "run" if state == "running" else "finish",
                    session.id,
                    digest,
                    {"resumed_count": session.resumed_count},
                )
            elif state == "interrupted" and by is not None:
                detail = {"by": by, "resumed_count": session.resumed_count}
                self.db.append_audit("pause", session.id, sha256_json(detail), detail)
        session.state = state

    def latest_state(self, study: Study, participant: str) -> tuple[str, int, str] | None:
        """The state of the participant's latest session of `study`, its trials stored
        (committed or in flight) and its id, or None when they have none (read only)."""
        row = self.conn.execute(
            "SELECT s.state, (SELECT COUNT(*) FROM trials t WHERE t.session_id = s.session_id "
            "AND t.trial_index >= 0), s.session_id FROM sessions s JOIN studies st ON st.sha256 = "
            "s.study_sha256 WHERE s.participant = ? AND st.study_id = ? "
            "ORDER BY s.created_at DESC, s.rowid DESC LIMIT 1",
            (participant, study.id),
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def set_adaptive(self, session: SessionRecord, state: dict[str, Any]) -> None:
        """Keep the adaptive procedures' state (estimates, posterior) with the session."""
        with self.db.write_transaction():
            self.conn.execute(
                "UPDATE sessions SET adaptive = ? WHERE session_id = ?",
                (json.dumps(state, sort_keys=True), session.id),
            )

    def adaptive_state(self, session_id: str) -> dict[str, Any] | None:
        """The stored adaptive state of a session (None when the study is not adaptive)."""
        row = self.conn.execute(
            "SELECT adaptive FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def add_event(
        self, session: SessionRecord, kind: str, t_ms: float | None, data: dict[str, Any]
    ) -> None:
        """Store one event of the session, not of a trial (e.g. the terminal's size at a start
        or a resize between trials), at once, under `trial_index` -1 (`END_INDEX`)."""
        payload = json.dumps(data, sort_keys=True, separators=(",", ":"))
        with self.db.write_transaction():
            (seq,) = self.conn.execute(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM events WHERE session_id = ? "
                "AND trial_index = ?",
                (session.id, END_INDEX),
            ).fetchone()
            self.conn.execute(
                "INSERT INTO events VALUES (?,?,?,?,?,?)",
                (session.id, END_INDEX, seq, t_ms, kind, payload),
            )

    def state_of(self, participant: str) -> str | None:
        """The state of the participant's latest session of any study, or None (read only)."""
        row = self.conn.execute(
            "SELECT state FROM sessions WHERE participant = ? ORDER BY created_at DESC LIMIT 1",
            (participant,),
        ).fetchone()
        return str(row[0]) if row else None
