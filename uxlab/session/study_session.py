"""One participant's way through a study (`StudySession`): consent, the trial list, each
trial begun and committed, quitting and resuming, re-runs, playback fidelity and the end."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from uxlab.clock import Clock, MonotonicClock, VirtualClock
from uxlab.fidelity import Tolerance, outside_tolerance, trial_fidelity
from uxlab.machine import load_1m
from uxlab.outcomes import EventKind
from uxlab.player import Schedule
from uxlab.session.tolerance import Shaper, study_tolerance
from uxlab.session.trial_run import TrialRecord, TrialRun
from uxlab.shaping import shape
from uxlab.store.store import SessionRecord, Store
from uxlab.study.adaptive import AdaptivePlan
from uxlab.study.design import Trial
from uxlab.study.progress import TrialCounter
from uxlab.study.reproduce import schedule_sha256
from uxlab.study.spec import Question, Study, condition_id
from uxlab.study.stimulus import play_schedule

UNMEASURED_ON_VIRTUAL_CLOCK = (
    "late_handed_p50_ms",
    "late_handed_p99_ms",
    "late_handed_max_ms",
    "late_shown_p50_ms",
    "late_shown_p99_ms",
    "late_shown_max_ms",
    "drift_ms",
)
"""Fidelity columns a simulated session on a virtual clock leaves empty: its chunks are
handed out on schedule by construction, so zeros there would be synthetic, not measured
(its `fidelity_flag` stays empty too: not judged)."""


class StudySession:
    """One participant's way through a study (see the module docstring)."""

    def __init__(
        self,
        study: Study,
        store: Store,
        session: SessionRecord,
        clock: Clock | None = None,
        shaper: Shaper = shape,
    ) -> None:
        self.study = study
        self.store = store
        self.session = session
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.shaper = shaper
        self.needs_consent = session.state == "created" or (
            session.resumed and session.next_index == 0
        )
        self.committed: list[int] = []
        self._last_break_shown: int | None = None
        self.adaptive = AdaptivePlan.for_study(study, session.seed)
        """The adaptive factor's procedure (None when every level is fixed by the design)."""
        self.load_fn: Callable[[], float | None] = load_1m
        """The machine's load, stored with every trial (`load_1m`)."""
        self.flagged: list[int] = []
        """Trials stored this run whose playback was outside the study's `[timing]`
        tolerance (`fidelity_flag` 1)."""
        self.fidelity_requeued: list[int] = []
        """Flagged trials given a re-run at the end (`[timing] requeue_flagged`)."""
        self._tolerance: Tolerance | None = None
        self.opened_ms = self.clock.now_ms()
        """When this start or resume opened the session (absolute ms on `clock`)."""

    @classmethod
    def open(
        cls,
        study: Study,
        store: Store,
        participant: str,
        *,
        seed: int | None = None,
        environment: dict[str, Any] | None = None,
        pilot: bool = False,
        simulated: bool = False,
        clock: Clock | None = None,
        shaper: Shaper = shape,
    ) -> StudySession:
        """Start the participant's session, or resume their unfinished one."""
        store.groups.allocate(study, participant)
        session = store.sessions.start_or_resume(
            study, participant, seed=seed, environment=environment, pilot=pilot,
            simulated=simulated,
        )  # fmt: skip
        ss = cls(study, store, session, clock, shaper)
        if study.session.rerun_interrupted:
            ss.requeue_interrupted()
        return ss

    # -- facts -------------------------------------------------------------------------------
    @property
    def participant(self) -> str:
        return self.session.participant

    @property
    def resumed(self) -> bool:
        return self.session.resumed

    @property
    def trials(self) -> list[Trial]:
        return self.session.trials

    @property
    def counter(self) -> TrialCounter:
        """Counts the trial list as the participant and the researcher see it
        (`uxlab.study.progress`): re-runs included, the total as planned."""
        return TrialCounter(self.trials, self.session.reruns, self.session.n_planned)

    @property
    def n_practice(self) -> int:
        return self.counter.practice_total

    @property
    def n_main(self) -> int:
        """Main trials as planned: neither practice nor attention checks (those are not
        latency trials), nor re-runs (a re-run takes the place of a trial cut off)."""
        return self.counter.main_total

    @property
    def n_checks(self) -> int:
        """Attention checks as planned."""
        return self.counter.checks_total

    def main_done_before(self, trial: Trial) -> int:
        """Main trials done before `trial` (a cut-off attempt shown again later is not done;
        checks, practice and extra trials are not counted)."""
        return self.counter.main_done_before(trial.index)

    def progress(self, trial: Trial) -> str:
        """`Practice 1 of 2`, `Trial 12 of 60` (main trials counted from 1, the total as
        planned), `Extra trial 1` (a re-run for timing, after the planned trials) or
        `Attention check` (not a latency trial, not counted)."""
        if trial.practice:
            return f"Practice {trial.index + 1} of {self.n_practice}"
        if trial.attention is not None:
            return "Attention check"
        counter = self.counter
        if counter.is_extra(trial.index):
            return f"Extra trial {counter.extra_number(trial.index)}"
        return f"Trial {counter.number(trial.index)} of {self.n_main}"

    def resume_note(self) -> str:
        """What to tell a returning participant (empty for a new session): where the
        session goes on, and what becomes of the trial that was cut off, and why."""
        if not self.resumed:
            return ""
        trial = self.next_trial()
        if trial is None:
            note = "Welcome back. All trials are done; only the last questions are left."
        elif trial.practice:
            note = f"Welcome back. The session continues with practice trial {trial.index + 1}."
        elif trial.attention is not None or self.counter.is_extra(trial.index):
            done = self.counter.main_done_before(trial.index)
            note = f"Welcome back. {done} of the {self.n_main} trials are done."
        else:
            at = self.counter.number(trial.index)
            note = f"Welcome back. The session continues with trial {at} of {self.n_main}."
        cut = self.session.interrupted
        if cut:
            rerun = self.store.sessions.requeued_attempts(self.session)
            if all(i in rerun for i in cut):
                note += (
                    " The trial that was on screen when the session stopped was not finished, "
                    "so it will be shown again at the end (the study still has "
                    f"{self.n_main} trials)."
                )
            elif all(self.trials[i].practice for i in cut):
                note += (
                    " The practice trial that was on screen when the session stopped is "
                    "skipped (practice is not counted)."
                )
            else:
                why = (
                    "it had been cut off once before"
                    if self.study.session.rerun_interrupted
                    else "this study does not show a cut-off trial again"
                )
                note += (
                    " The trial that was on screen when the session stopped was not finished "
                    f"and is skipped ({why})."
                )
        return note

    def log_event(self, kind: str, data: dict[str, Any], t_ms: float | None = None) -> None:
        """Store a session event now (not of a trial): `t_ms` is kept as ms since this start
        or resume opened the session (e.g. `terminal` at the start, `resize` between trials)."""
        now = self.clock.now_ms() if t_ms is None else t_ms
        self.store.sessions.add_event(self.session, kind, now - self.opened_ms, data)

    # -- consent and state -------------------------------------------------------------------
    def accept_consent(self) -> None:
        self.store.sessions.set_state(self.session, "consented")
        self.needs_consent = False

    def decline_consent(self) -> None:
        """Only the refusal is kept: the session and participant rows are deleted."""
        self.store.withdrawal.record_refusal(self.session)

    def start_running(self) -> None:
        if self.session.state != "running":
            self.store.sessions.set_state(self.session, "running")

    def interrupt(self, by: str = "key") -> None:
        """The participant or researcher quit (`by`: `key` or a signal's name): the session
        is paused (state `interrupted`) and can be resumed later."""
        if self.session.state in ("created", "consented", "running"):
            self.store.sessions.set_state(self.session, "interrupted", by=by)

    # -- trials ------------------------------------------------------------------------------
    def requeue(self, trial: Trial, reason: str) -> Trial | None:
        """Run `trial` again at the end of the session (after every other trial); returns
        the re-run, or None when it is not queued again (see `store.sessions.requeue_trial`).

        `trial` must be over (committed, or stored as `interrupted`); that attempt stays
        stored as it is and is marked as replaced (`requeued`, with `reason`). The re-run
        plays the same planned condition, recording and seed, so the design cell is still
        complete. A planned trial is re-run at most once per reason; practice is never.
        """
        return self.store.sessions.requeue_trial(self.session, trial.index, reason)

    def requeue_interrupted(self) -> list[Trial]:
        """Queue every `interrupted` trial not yet queued again (reason `interrupted`);
        returns the re-runs queued now. Safe to call again (e.g. after a crash meanwhile)."""
        queued = []
        for index in self.store.sessions.interrupted_trials(self.session):
            rerun = self.requeue(self.trials[index], "interrupted")
            if rerun is not None:
                queued.append(rerun)
        return queued

    def next_trial(self) -> Trial | None:
        """The next trial to run (None when all are done)."""
        i = self.session.next_index
        return self.trials[i] if i < len(self.trials) else None

    def practice_just_ended(self, trial: Trial) -> bool:
        """True for the first main trial after practice trials (a 'real trials start' note)."""
        return not trial.practice and trial.index > 0 and self.trials[trial.index - 1].practice

    def break_before(self, trial: Trial) -> bool:
        """A rest break comes before this trial (once, also after a resume)."""
        return trial.break_before and self._last_break_shown != trial.index

    def break_taken(self, trial: Trial) -> None:
        self._last_break_shown = trial.index

    def schedule_for(self, trial: Trial) -> Schedule:
        """What a trial plays, made by its kind from its stimulus, levels and stored seed."""
        return play_schedule(self.study, trial, self.shaper)

    def resolve(self, trial: Trial) -> Trial:
        """The trial with its adaptive level chosen from the committed responses only."""
        plan = self.adaptive
        if plan is None or trial.practice or trial.attention is not None:
            return trial
        level = plan.level_for(trial.levels, self.store.trials.committed(self.session))
        levels = {**trial.levels, plan.factor: level}
        within = {f.name: levels[f.name] for f in self.study.within_factors}
        return dataclasses.replace(trial, levels=levels, condition_id=condition_id(within))

    def adaptive_state(self) -> dict[str, Any] | None:
        """Every track's estimate, interval and posterior after the committed trials."""
        if self.adaptive is None:
            return None
        tracks = sorted({self.adaptive.track(c.levels) for c in self.study.conditions})
        return self.adaptive.states(self.store.trials.committed(self.session), tracks)

    def begin(self, trial: Trial, shown_at_ms: float | None = None) -> TrialRun:
        """Mark the trial in flight (committed) and build its schedule.

        With an adaptive factor, its level is chosen now (`resolve`) and stored with the trial.
        The SHA-256 of the schedule is stored too (`uxlab verify` rebuilds it), as the
        trial's kind takes it: of its exact replay-file text, or for a live trial, whose text
        the model writes, of its profile, seed and source id only.
        """
        trial = self.resolve(trial)
        schedule = self.schedule_for(trial)
        digest = schedule_sha256(self.study, trial, schedule)
        self.store.trials.begin(self.session, trial.index, planned=trial, schedule_sha256=digest)
        shown = self.clock.now_ms() if shown_at_ms is None else shown_at_ms
        return TrialRun(trial, schedule, self.study, self.clock, shown)

    def commit(self, run: TrialRun) -> str:
        """Store the trial (one transaction); returns its SHA-256. Then move on.

        Safe to call again after a failure (e.g. a locked database): a trial already stored
        is not stored twice, and the adaptive state is written again.
        """
        digest = run.committed_sha256
        if digest is None:
            rec = run.record()
            reasons = self._judge_fidelity(run, rec)
            digest = self.store.trials.commit(
                self.session,
                run.trial.index,
                rec.outcome,
                timings=rec.timings,
                responses=rec.responses,
                events=rec.events,
            )
            run.committed_sha256 = digest
            self.committed.append(run.trial.index)
            if reasons:
                self.flagged.append(run.trial.index)
                self._requeue(run.trial)
        if self.adaptive is not None:
            state = self.adaptive_state()
            assert state is not None
            self.store.sessions.set_adaptive(self.session, state)
        return digest

    # -- playback fidelity (`uxlab.fidelity`) ------------------------------------------------
    @property
    def tolerance(self) -> Tolerance:
        """The study's `[timing]` tolerance; derived from its shortest gap when not set."""
        if self._tolerance is None:
            self._tolerance = study_tolerance(self.study)
        return self._tolerance

    def _judge_fidelity(self, run: TrialRun, rec: TrialRecord) -> list[str]:
        """Add the fidelity columns to the trial's timings; returns why its playback is
        outside the tolerance (also kept as a `fidelity` event).

        A trial whose kind is not `judged` (a live trial) is measured but not judged: its
        lateness is mostly the model's (`violations_n`), not this machine's.
        """
        if run.log is None:
            return []
        fidelity = trial_fidelity(run.log.records)
        # a simulated participant's data is the same from the same seed on any machine
        fidelity["load_1m"] = None if self.session.simulated else self.load_fn()
        if self._nothing_measured():
            fidelity.update(dict.fromkeys(UNMEASURED_ON_VIRTUAL_CLOCK))
        reasons: list[str] = []
        measured = fidelity["late_handed_p99_ms"] is not None
        if fidelity["n_chunks"] and measured and run.kind.judged:
            reasons = outside_tolerance(fidelity, self.tolerance)
            fidelity["fidelity_flag"] = int(bool(reasons))
        rec.timings.update(fidelity)
        if reasons:
            rec.events.append(
                {"kind": EventKind.FIDELITY, "t_ms": None, "reasons": reasons,
                 "tolerance": self.tolerance.describe()}
            )  # fmt: skip
        return reasons

    def _nothing_measured(self) -> bool:
        """A simulated session on a virtual clock: chunks are handed out exactly on
        schedule by construction, so its lateness is not a measurement (stored empty)."""
        return self.session.simulated and isinstance(self.clock, VirtualClock)

    def _requeue(self, trial: Trial) -> Trial | None:
        """Give a flagged main trial a re-run after the last trial (`[timing]
        requeue_flagged`, at most `max_requeued`); returns the re-run, if any.

        The session's re-run queue (`requeue`, reason `fidelity`): the planned trial again
        (same stimulus and seed) after every other trial, at most once per planned trial.
        """
        timing = self.study.timing
        n_queued = sum(1 for _, why in self.session.reruns.values() if why == "fidelity")
        if not timing.requeue_flagged or n_queued >= timing.max_requeued:
            return None
        if trial.practice or trial.attention is not None:
            return None
        rerun = self.requeue(trial, "fidelity")
        if rerun is not None:
            self.fidelity_requeued.append(trial.index)
        return rerun

    def fidelity_note(self) -> str:
        """For the researcher at the end: how many trials were outside the tolerance."""
        if not self.committed:
            return ""
        n, total = len(self.flagged), len(self.committed)
        note = (
            f"{n} of {total} trials stored this run were shown outside the study's timing "
            f"tolerance ({self.tolerance.describe()})"
        )
        if n and self.fidelity_requeued:
            note += f"; {len(self.fidelity_requeued)} re-run at the end"
        if n:
            note += "; they are marked fidelity_flag = 1 and left out of the report by default"
        return note + "."

    def quit(self, run: TrialRun | None, t_ms: float | None = None, by: str = "key") -> str:
        """The participant quits with `run` on screen; returns what became of the trial.

        `committed`: its outcome was final, so it is stored with the answers given so far
        (the missing ones empty) and a `quit` event. `released`: it was never sent, so it is
        taken back and a resume offers it again. `in_flight`: quit mid-stream; it stays in
        flight and a resume stores it as `interrupted`. `none`: no trial was on screen.
        The session is then left `interrupted` (paused, resumable). `by` is what quit: `key`
        (Ctrl+Q) or a signal's name (`SIGHUP`, `SIGTERM`), kept in the quit event and audit.
        """
        what = "none"
        if run is not None and run.committed_sha256 is not None:
            what = "committed"
        elif run is not None and run.quit(t_ms, by):
            self.commit(run)
            what = "committed"
        elif run is not None and run.t0_ms is None:
            self.store.trials.release(self.session, run.trial.index)
            what = "released"
        elif run is not None:
            what = "in_flight"
        self.interrupt(by)
        return what

    # -- the end -----------------------------------------------------------------------------
    @property
    def end_questions(self) -> list[Question]:
        """The end-of-study questions still to ask: those answered before a crash (stored,
        the session not yet marked completed) are not asked again."""
        answered = self.store.end_answers.answered(self.session)
        return [q for q in self.study.end_questions if q.id not in answered]

    def save_end_answers(self, responses: dict[str, tuple[Any, float | None]]) -> None:
        """Store end-of-study answers as they are given (one transaction); the first answer to
        a question is kept."""
        self.store.end_answers.commit(self.session, responses)

    def finish(self, responses: dict[str, tuple[Any, float | None]] | None = None) -> None:
        """Store the end-of-study answers and mark the session completed."""
        if responses:
            self.store.end_answers.commit(self.session, responses)
        self.start_running()
        self.store.sessions.set_state(self.session, "completed")
