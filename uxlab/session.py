"""The participant-flow controller of a study session: what comes next, and what is kept.

`StudySession` wraps the store and the participant's stored trial list. The terminal app
(`uxlab/tui/study_app.py`) drives it, and simulated participants can drive the very same
object with a `VirtualClock`, so there is no UI here::

    ss = StudySession.open(study, store, "P-7K3QX", environment=env, clock=clock)
    if ss.needs_consent:
        ss.accept_consent()                  # or ss.decline_consent(): only a refusal is kept
    ss.start_running()
    while (trial := ss.next_trial()) is not None:
        if ss.break_before(trial): ...       # a rest screen, ss.progress(trial)
        run = ss.begin(trial)                # committed as in flight; the schedule is shaped
        run.send(t0_ms)                      # the Enter that sends: t = 0 of the trial
        log = await run.play(sink, ask)      # stops itself at the trial timeout; `ask(step,
                                             # questions)` answers mid-chain questions
        run.abandon(t_ms)                    # (from a key handler, while it plays)
        for q in run.questions: run.answer(q.id, value, rt_ms)
        ss.commit(run)                       # one transaction; only then the next screen
    ss.finish(end_answers)

Quitting (`ss.quit(run)`) keeps what the participant did: a trial whose outcome is final
(the stream is over or was given up) is committed with the answers given so far and the
missing ones stored empty; a trial never sent is released, so a resume offers it again;
only a trial quit mid-stream stays in flight (stored as `interrupted` on resume), and is then
run again at the end of the session (`requeue`; `[session] rerun_interrupted = false` turns
this off).

Every stored trial carries how faithfully it was shown (`uxlab.fidelity`: lateness, frame
sharing, drift, the machine's load); one outside the study's `[timing]` tolerance is
flagged (`fidelity_flag`) and, with `requeue_flagged`, run again at the end the same way
(reason `fidelity`). `ss.fidelity_note()` is the researcher's count at the end.

A trial's schedule is `shape(recording, study.profile_for(trial.levels), trial.seed)`: the
recording (`uxlab.study.stimulus.trial_source`, shared with `uxlab serve --study`) and the
seed come from the stored trial list, so every draw is reproducible from
the study seed. All times are ms on the session's one monotonic `clock`; a trial's times
are stored relative to its send instant (t0).
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from uxlab.chain import HeldChainPlayer, chain_steps, offset_at_ms, step_at_ms, step_logs
from uxlab.clock import Clock, MonotonicClock
from uxlab.fidelity import Tolerance, default_max_late_p99_ms, outside_tolerance, trial_fidelity
from uxlab.live.live_schedule import LiveRun, LiveSchedule
from uxlab.machine import load_1m
from uxlab.outcomes import Outcome
from uxlab.player import PlaybackLog, Player, Sink
from uxlab.shaping import shape
from uxlab.store.store import Session, Store
from uxlab.streams.recording import Chunk, Recording
from uxlab.study.adaptive import AdaptivePlan
from uxlab.study.design import Trial
from uxlab.study.reproduce import schedule_sha256
from uxlab.study.spec import Question, Study, condition_id, step_response_id
from uxlab.study.stimulus import chain_trial_schedule, trial_source

Shaper = Callable[[Recording, Any, int], Recording]
AskStep = Callable[[int, list[Question]], Awaitable[None]]
"""Puts a chain's mid-chain questions after a step and returns once they are answered
(`TrialRun.answer_step`); cancelled when the participant gives up meanwhile."""


def shortest_gap_ms(study: Study, shaper: Shaper = shape) -> float | None:
    """The smallest typical gap between shown chunks over the study's conditions (ms).

    Each condition shapes the corpus' first recording and takes the median gap between
    non-empty content chunks; the minimum over conditions is what the frame cap must
    resolve. None when no condition streams two chunks.
    """
    rec = study.corpus.by_id(study.replay_ids[0])
    conditions = [c.levels for c in study.conditions]
    for g in study.groups:
        conditions = [{**c, **g.levels} for c in conditions]
    medians = []
    for levels in conditions:
        schedule = shaper(rec, study.profile_for(levels), study.seed)
        times = [c.t_ms for c in schedule.chunks if c.text and c.channel == "content"]
        gaps = [b - a for a, b in itertools.pairwise(times) if b - a > 0]
        if gaps:
            medians.append(statistics.median(gaps))
    return min(medians) if medians else None


_TOLERANCES: dict[tuple[str, str], Tolerance] = {}
"""(study file SHA-256, corpus path) -> its `[timing]` tolerance (`StudySession.tolerance`)."""


@dataclass
class TrialRecord:
    """What `Store.commit_trial` takes for one trial."""

    outcome: str
    timings: dict[str, float | None]
    responses: dict[str, tuple[Any, float | None]]
    events: list[dict[str, Any]]


@dataclass
class TrialRun:
    """One trial as it happens: send, stream, abandonment or timeout, answers, key presses.

    Absolute times are on `clock`; everything stored is relative to the send (t0).
    """

    trial: Trial
    schedule: Recording
    study: Study
    clock: Clock
    shown_at_ms: float
    """When the trial screen was shown (absolute): keys before the send are kept too."""
    t0_ms: float | None = None
    phase: str = "ready"
    """ready -> waiting -> streaming -> over (the stream is done) -> answered; a chain held
    for mid-chain questions is `asking` meanwhile."""
    abandoned_at_ms: float | None = None
    abandoned_while: str | None = None
    timed_out: bool = False
    log: PlaybackLog | None = None
    responses: dict[str, tuple[Any, float | None]] = field(default_factory=dict)
    keys: list[tuple[float, str, str]] = field(default_factory=list)
    """(absolute ms, key name, phase) of every key press during the trial."""
    answer_times: list[tuple[float, str, float | None]] = field(default_factory=list)
    player: Player | None = None
    typed_prompt: str | None = None
    """A live study with `prompt_from = "participant"`: what the participant sent."""
    live: LiveRun | None = None
    """A live study's request (started at the send); None for recorded stimuli."""
    quit_at_ms: float | None = None
    """When the participant quit with this trial's outcome final (absolute), else None."""
    quit_by: str = "key"
    """What quit: `key` (Ctrl+Q/Ctrl+C), or the signal (`SIGHUP`: the terminal was closed)."""
    committed_sha256: str | None = None
    """Set once the trial is stored (a trial is committed once)."""
    noted: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    """(absolute ms, kind, data) of other events during the trial (a terminal `resize`)."""

    @property
    def prompt(self) -> str:
        return self.trial.prompt if self.typed_prompt is None else self.typed_prompt

    @property
    def timeout_ms(self) -> float | None:
        t = self.study.abandon.timeout_s
        return None if t is None else t * 1000.0

    @property
    def scheduled_end_ms(self) -> float | None:
        end = self.schedule.end
        return end.t_ms if end is not None else None

    # -- the participant's actions ---------------------------------------------------------
    def key(self, name: str, t_ms: float | None = None) -> None:
        """A key press (its name only; text typed into answers is never kept here)."""
        self.keys.append((self.clock.now_ms() if t_ms is None else t_ms, name, self.phase))

    def note(self, kind: str, data: dict[str, Any], t_ms: float | None = None) -> None:
        """Keep an event that happened during the trial (e.g. `resize`, {"cols", "rows"}):
        stored with the trial, its time relative to t0 like the key presses."""
        self.noted.append((self.clock.now_ms() if t_ms is None else t_ms, kind, dict(data)))

    def send(self, t_ms: float | None = None) -> float:
        """The participant sent the prompt: `t_ms` (absolute) becomes t = 0. Returns it."""
        if self.t0_ms is not None:
            return self.t0_ms
        self.t0_ms = self.clock.now_ms() if t_ms is None else float(t_ms)
        self.phase = "waiting"
        if self.live is not None:  # a live study: the request goes out before any repaint
            self.live.start(self.prompt, self.t0_ms)
        return self.t0_ms

    @property
    def step_asks(self) -> list[int]:
        """A chain trial's steps followed by mid-chain questions (`[chain] ask_after_steps`)."""
        steps = chain_steps(self.schedule)
        if steps is None or not self.study.step_questions:
            return []
        return self.study.asks_in(len(steps))

    async def play(self, sink: Sink, ask: AskStep | None = None) -> PlaybackLog:
        """Play the schedule into `sink` from t0, stopping at the study's timeout.

        A chain trial with mid-chain questions holds after each asked step while `ask` puts
        them (without `ask` it plays through and they stay unanswered); the next step's
        clock restarts at the last answer (`uxlab.chain.HeldChainPlayer`).
        """
        if self.t0_ms is None:
            raise RuntimeError("send() the prompt before playing the trial")
        asks = self.step_asks if ask is not None else []
        if asks and ask is not None:
            self.player = HeldChainPlayer(  # type: ignore[assignment]
                self.schedule, _PhaseSink(sink, self), self.clock, asks, self._asker(ask)
            )
        else:
            self.player = Player(self.schedule, _PhaseSink(sink, self), self.clock)
        if self.abandoned_at_ms is not None:  # gave up before the play started
            self.player.cancel()
        log = await self.player.play(self.t0_ms, stop_at_ms=self.timeout_ms)
        if self.live is not None:
            await self.live.finish()
        self.log = log
        if self.abandoned_at_ms is None and log.cancelled_at_ms is not None:
            self.timed_out = True
        self.phase = "over"
        return log

    def _asker(self, ask: AskStep) -> Callable[[int], Awaitable[None]]:
        async def asker(step: int) -> None:
            before, self.phase = self.phase, "asking"
            try:
                await ask(step, list(self.study.step_questions))
            finally:
                if self.phase == "asking" and self.abandoned_at_ms is None:
                    self.phase = before

        return asker

    def answer_step(self, step: int, question_id: str, value: Any, rt_ms: float | None) -> None:
        """Keep one mid-chain answer, as `q_<id>_s<step>` (and its response time)."""
        self.answer(step_response_id(question_id, step), value, rt_ms)

    def abandon(self, t_ms: float | None = None) -> bool:
        """Give up on the stream now (waiting, mid-stream or during mid-chain questions);
        False when it is already over."""
        live = ("waiting", "streaming", "asking")
        if self.phase not in live or self.abandoned_at_ms is not None:
            return False
        self.abandoned_at_ms = self.clock.now_ms() if t_ms is None else float(t_ms)
        self.abandoned_while = self.phase
        if self.player is not None:
            self.player.cancel()
        return True

    @property
    def final(self) -> bool:
        """The outcome can no longer change: the stream is over, or was given up (an
        attention check: once answered; quit before that, it is offered again)."""
        if self.is_check:
            return self.phase == "answered"
        return self.abandoned_at_ms is not None or self.phase in ("over", "answered")

    @property
    def is_check(self) -> bool:
        """An attention check: its text and its one question on their own screen, with no
        send, no stream and no latency (so never a latency trial, `uxlab.tui.check_screen`)."""
        return self.trial.attention is not None

    @property
    def unanswered(self) -> list[str]:
        """Ids of the questions still to be asked (after a quit: stored empty)."""
        if not self.final:
            return []
        return [q.id for q in self.questions if q.id not in self.responses]

    def quit(self, t_ms: float | None = None, by: str = "key") -> bool:
        """The participant quit now; True when the outcome is final (then commit the run).

        A give-up whose stream has not yet wound down takes the player's log so far. `by`
        says what quit (`key`, or a signal's name such as `SIGHUP`).
        """
        if not self.final:
            return False
        self.quit_by = by
        if self.log is None and self.player is not None and self.player.log is not None:
            self.log = self.player.log
        if self.quit_at_ms is None:
            self.quit_at_ms = self.clock.now_ms() if t_ms is None else float(t_ms)
        return True

    @property
    def outcome(self) -> Outcome:
        if self.abandoned_at_ms is not None:
            return Outcome.ABANDONED
        if self.timed_out:
            return Outcome.TIMED_OUT
        if self.log is not None and self.log.error_at_ms is not None:
            return Outcome.ERROR
        return Outcome.COMPLETED

    @property
    def questions(self) -> list[Question]:
        """The per-trial questions to ask now (none after a give-up unless the study asks)."""
        if self.trial.attention is not None:  # only the check's own question
            return [self.study.question(self.trial.attention.question)]
        if self.outcome == Outcome.ABANDONED and not self.study.abandon.ask_questions:
            return []
        return list(self.study.trial_questions)

    def answer(self, question_id: str, value: Any, rt_ms: float | None) -> None:
        """Keep one answer (value and response time in ms)."""
        self.responses[question_id] = (value, rt_ms)
        self.answer_times.append((self.clock.now_ms(), question_id, rt_ms))

    # -- what is stored --------------------------------------------------------------------
    def record(self) -> TrialRecord:
        """The trial's outcome, timings, answers and events, times relative to t0."""
        t0 = self.t0_ms if self.t0_ms is not None else self.shown_at_ms
        events: list[dict[str, Any]] = [
            {"kind": "shown", "t_ms": self.shown_at_ms - t0, "prompt_chars": len(self.prompt)}
        ]
        if self.trial.attention is not None:  # the check's text was shown, not a prompt
            events[0] = {
                "kind": "shown",
                "t_ms": 0.0,
                "attention_check": True,
                "text_chars": len(self.trial.attention.text),
            }
        if self.t0_ms is not None:
            events.append({"kind": "send", "t_ms": 0.0})
        shown_first = shown_last = None
        source = None
        if self.log is not None:
            visible = [r for r in self.log.records if r.n_chars > 0]
            for r in self.log.records:
                events.append(
                    {
                        "kind": "chunk",
                        "t_ms": r.shown_ms,
                        "index": r.index,
                        "scheduled_ms": r.scheduled_ms,
                        "handed_ms": r.handed_ms,
                        "queued_ms": r.queued_ms,
                        "flushed_ms": r.flushed_ms,
                        "channel": r.channel,
                        "n_chars": r.n_chars,
                    }
                )
            if visible:
                shown_first, shown_last = visible[0].shown_ms, visible[-1].shown_ms
                if all(r.flushed_ms is not None for r in visible):
                    source = "flushed"
                elif all(r.queued_ms is not None or r.flushed_ms is not None for r in visible):
                    source = "queued"
                else:
                    source = "handed"
        if self.abandoned_at_ms is not None:
            events.append(
                {
                    "kind": "abandon",
                    "t_ms": self.abandoned_at_ms - t0,
                    "while": self.abandoned_while,
                }
            )
        if self.timed_out and self.log is not None:
            events.append({"kind": "timeout", "t_ms": self.log.cancelled_at_ms})
        for t_ms, name, phase in self.keys:
            events.append({"kind": "key", "t_ms": t_ms - t0, "key": name, "phase": phase})
        for t_ms, kind, data in self.noted:
            events.append({**data, "kind": kind, "t_ms": t_ms - t0})
        for t_ms, qid, rt_ms in self.answer_times:
            events.append({"kind": "answer", "t_ms": t_ms - t0, "question": qid, "rt_ms": rt_ms})
        responses = dict(self.responses)
        if self.quit_at_ms is not None:
            unanswered = self.unanswered
            responses.update({qid: (None, None) for qid in unanswered})
            events.append(
                {
                    "kind": "quit",
                    "t_ms": self.quit_at_ms - t0,
                    "phase": self.phase,
                    "unanswered": unanswered,
                    "by": self.quit_by,
                }
            )
        end_ms = None
        if self.log is not None:
            end_ms = self.log.finished_ms
            if end_ms is None:
                end_ms = self.log.cancelled_at_ms
            if end_ms is None:
                end_ms = self.log.error_at_ms
        events.append(
            {
                "kind": "outcome",
                "t_ms": end_ms,
                "outcome": self.outcome,
                "shown_source": source,
                "abandoned_while": self.abandoned_while,
                "schedule_id": self.schedule.id,
            }
        )
        events.sort(key=lambda e: float("inf") if e["t_ms"] is None else e["t_ms"])
        timings = {
            "t_abandon_ms": None if self.abandoned_at_ms is None else self.abandoned_at_ms - t0,
            "shown_first_ms": shown_first,
            "shown_last_ms": shown_last,
            "scheduled_end_ms": None if self.is_check else self.scheduled_end_ms,
        }
        if self.live is not None:  # violations, arrivals, due/arrival per chunk, the request
            self.live.add_to_record(timings, events)
        steps = chain_steps(self.schedule)
        if steps is not None:  # an agent chain: per-step timings, e2e and the step given up in
            self._chain_record(steps, timings, events)
        return TrialRecord(self.outcome, timings, responses, events)

    def _chain_record(
        self, steps: list[dict[str, Any]], timings: dict[str, Any], events: list[dict[str, Any]]
    ) -> None:
        """Add `e2e_ms` (when the answer ended, measured), `abandon_step` and one `step`
        event per step begun: `t_ms` when its marker was handed out, with the scheduled
        `start_ms`, `end_ms`, per-call `ttft_ms`, `step_kind`, `label` and `tool`."""
        handed: dict[int, float] = {}
        if self.log is not None:  # when each step's marker was handed out
            handed = {s.step: s.started_ms for s in step_logs(self.schedule, self.log)}
        t_abandon = timings["t_abandon_ms"]
        timings["e2e_ms"] = self.log.finished_ms if self.log is not None else None
        holds = list(getattr(self.player, "holds", []))
        if t_abandon is None:
            timings["abandon_step"] = None
        elif self.abandoned_while == "asking" and holds:
            timings["abandon_step"] = holds[-1].step  # gave up at a hold: the step just done
        else:
            t_chain = t_abandon - offset_at_ms(holds, t_abandon)
            timings["abandon_step"] = step_at_ms(steps, t_chain)
        if self.study.step_questions:  # mid-chain questions: the time they held the chain
            held = [h.held_ms if h.held_ms is not None else (t_abandon or 0.0) - h.asked_ms
                    for h in holds]  # fmt: skip
            timings["paused_ms"] = sum(held)  # a hold given up in counts up to the give-up
            offset = offset_at_ms(holds, float("inf"))
            if timings.get("scheduled_end_ms") is not None:  # the end moved with the holds
                timings["scheduled_end_ms"] += offset
            for h in holds:
                events.append({"kind": "hold", "t_ms": h.asked_ms, **h.to_dict()})
        for s in steps:
            if s["step"] not in handed:
                continue
            event = {
                "kind": "step",
                "t_ms": handed[s["step"]],
                **{("step_kind" if k == "kind" else k): v for k, v in s.items()},
            }
            if holds:  # the step as shifted by the holds before it (real time from the send)
                shift = offset_at_ms(holds, handed[s["step"]])
                event.update(
                    offset_ms=round(shift, 3),
                    shifted_start_ms=round(s["start_ms"] + shift, 3),
                    shifted_end_ms=round(s["end_ms"] + shift, 3),
                )
            events.append(event)
        events.sort(key=lambda e: float("inf") if e["t_ms"] is None else e["t_ms"])


class _PhaseSink:
    """Passes chunks on to the real sink and moves the run from waiting to streaming."""

    def __init__(self, sink: Sink, run: TrialRun) -> None:
        self.sink = sink
        self.run = run

    def apply(self, index: int, chunk: Chunk) -> None:
        if chunk.text and self.run.phase == "waiting":
            self.run.phase = "streaming"
        self.sink.apply(index, chunk)

    def finish(self, end: Any, error: Any) -> None:
        self.sink.finish(end, error)

    def cancel(self) -> None:
        self.sink.cancel()

    def __getattr__(self, name: str) -> Any:  # paint reporting, when the sink has it
        return getattr(self.sink, name)


class StudySession:
    """One participant's way through a study (see the module docstring)."""

    def __init__(
        self,
        study: Study,
        store: Store,
        session: Session,
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
        store.allocate_group(study, participant)
        session = store.start_or_resume_session(
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
    def n_practice(self) -> int:
        return sum(t.practice for t in self.trials)

    @property
    def n_main(self) -> int:
        """Main trials: neither practice nor attention checks (those are not latency trials)."""
        return sum(1 for t in self.trials if not t.practice and t.attention is None)

    def main_done_before(self, trial: Trial) -> int:
        """Main trials before `trial` in the list (checks and practice not counted)."""
        return sum(1 for t in self.trials[: trial.index] if not t.practice and t.attention is None)

    def progress(self, trial: Trial) -> str:
        """`Practice 1 of 2`, `Trial 12 of 60` (main trials counted from 1) or `Attention
        check` (not a latency trial, not counted)."""
        if trial.practice:
            return f"Practice {trial.index + 1} of {self.n_practice}"
        if trial.attention is not None:
            return "Attention check"
        return f"Trial {self.main_done_before(trial) + 1} of {self.n_main}"

    def resume_note(self) -> str:
        """What to tell a returning participant (empty for a new session)."""
        if not self.resumed:
            return ""
        trial = self.next_trial()
        if trial is None:
            note = "Welcome back. All trials are done; only the last questions are left."
        elif trial.practice:
            note = f"Welcome back. The session continues with practice trial {trial.index + 1}."
        else:
            done = self.main_done_before(trial)
            note = f"Welcome back. You have done {done} of {self.n_main} trials; the session "
            note += "continues with the next one."
        if self.session.interrupted:
            rerun = self.store.requeued_attempts(self.session)
            if all(i in rerun for i in self.session.interrupted):
                note += " The trial that was running when it stopped is shown again at the end."
            else:
                note += " The trial that was running when it stopped is skipped."
        return note

    def log_event(self, kind: str, data: dict[str, Any], t_ms: float | None = None) -> None:
        """Store a session event now (not of a trial): `t_ms` is kept as ms since this start
        or resume opened the session (e.g. `terminal` at the start, `resize` between trials)."""
        now = self.clock.now_ms() if t_ms is None else t_ms
        self.store.add_session_event(self.session, kind, now - self.opened_ms, data)

    # -- consent and state -------------------------------------------------------------------
    def accept_consent(self) -> None:
        self.store.set_state(self.session, "consented")
        self.needs_consent = False

    def decline_consent(self) -> None:
        """Only the refusal is kept: the session and participant rows are deleted."""
        self.store.record_refusal(self.session)

    def start_running(self) -> None:
        if self.session.state != "running":
            self.store.set_state(self.session, "running")

    def interrupt(self, by: str = "key") -> None:
        """The participant or researcher quit (`by`: `key` or a signal's name): the session
        is paused (state `interrupted`) and can be resumed later."""
        if self.session.state in ("created", "consented", "running"):
            self.store.set_state(self.session, "interrupted", by=by)

    # -- trials ------------------------------------------------------------------------------
    def requeue(self, trial: Trial, reason: str) -> Trial | None:
        """Run `trial` again at the end of the session (after every other trial); returns
        the re-run, or None when it is not queued again (see `Store.requeue_trial`).

        `trial` must be over (committed, or stored as `interrupted`); that attempt stays
        stored as it is and is marked as replaced (`requeued`, with `reason`). The re-run
        plays the same planned condition, recording and seed, so the design cell is still
        complete. A planned trial is re-run at most once per reason; practice is never.
        """
        return self.store.requeue_trial(self.session, trial.index, reason)

    def requeue_interrupted(self) -> list[Trial]:
        """Queue every `interrupted` trial not yet queued again (reason `interrupted`);
        returns the re-runs queued now. Safe to call again (e.g. after a crash meanwhile)."""
        queued = []
        for index in self.store.interrupted_trials(self.session):
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

    def schedule_for(self, trial: Trial) -> Recording | LiveSchedule:
        """The shaped stream of a trial, from its recording, levels and stored seed."""
        chained = chain_trial_schedule(self.study, trial)  # an agent chain, flattened
        if chained is not None:
            return chained
        source = trial_source(self.study, trial)  # the same stimulus `uxlab serve` plays
        if self.study.live is not None and trial.attention is None:  # learnt while it plays
            return LiveSchedule(self.study.profile_for(trial.levels), trial.seed, source.header)
        return self.shaper(source, self.study.profile_for(trial.levels), trial.seed)

    def resolve(self, trial: Trial) -> Trial:
        """The trial with its adaptive level chosen from the committed responses only."""
        plan = self.adaptive
        if plan is None or trial.practice or trial.attention is not None:
            return trial
        level = plan.level_for(trial.levels, self.store.committed_trials(self.session))
        levels = {**trial.levels, plan.factor: level}
        within = {f.name: levels[f.name] for f in self.study.within_factors}
        return dataclasses.replace(trial, levels=levels, condition_id=condition_id(within))

    def adaptive_state(self) -> dict[str, Any] | None:
        """Every track's estimate, interval and posterior after the committed trials."""
        if self.adaptive is None:
            return None
        tracks = sorted({self.adaptive.track(c.levels) for c in self.study.conditions})
        return self.adaptive.states(self.store.committed_trials(self.session), tracks)

    def begin(self, trial: Trial, shown_at_ms: float | None = None) -> TrialRun:
        """Mark the trial in flight (committed) and build its schedule.

        With an adaptive factor, its level is chosen now (`resolve`) and stored with the trial.
        The SHA-256 of the schedule is stored too (`uxlab verify` rebuilds it): of its exact
        replay-file text, or for a live trial, whose text the model writes, of its profile,
        seed and source id only.
        """
        trial = self.resolve(trial)
        schedule = self.schedule_for(trial)
        self.store.begin_trial(
            self.session, trial.index, planned=trial, schedule_sha256=schedule_sha256(schedule)
        )
        shown = self.clock.now_ms() if shown_at_ms is None else shown_at_ms
        run = TrialRun(trial, schedule, self.study, self.clock, shown)
        if isinstance(schedule, LiveSchedule) and self.study.live is not None:
            run.live = LiveRun(schedule, self.study.live.endpoint, self.clock)
        return run

    def commit(self, run: TrialRun) -> str:
        """Store the trial (one transaction); returns its SHA-256. Then move on.

        Safe to call again after a failure (e.g. a locked database): a trial already stored
        is not stored twice, and the adaptive state is written again.
        """
        digest = run.committed_sha256
        if digest is None:
            rec = run.record()
            reasons = self._judge_fidelity(run, rec)
            digest = self.store.commit_trial(
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
            self.store.set_adaptive(self.session, state)
        return digest

    # -- playback fidelity (`uxlab.fidelity`) ------------------------------------------------
    @property
    def tolerance(self) -> Tolerance:
        """The study's `[timing]` tolerance; derived from its shortest gap when not set."""
        if self._tolerance is None:
            key = (self.study.sha256, str(self.study.corpus_path))
            if key not in _TOLERANCES:  # shaping every condition: once per study, not session
                timing = self.study.timing
                limit, derived = timing.max_late_p99_ms, False
                if limit is None:
                    limit, derived = default_max_late_p99_ms(shortest_gap_ms(self.study)), True
                _TOLERANCES[key] = Tolerance(limit, timing.max_frame_shared_share, derived)
            self._tolerance = _TOLERANCES[key]
        return self._tolerance

    def _judge_fidelity(self, run: TrialRun, rec: TrialRecord) -> list[str]:
        """Add the fidelity columns to the trial's timings; returns why its playback is
        outside the tolerance (also kept as a `fidelity` event).

        A live trial is measured but not judged: its lateness is mostly the model's
        (`violations_n`), not this machine's.
        """
        if run.log is None:
            return []
        fidelity = trial_fidelity(run.log.records)
        # a simulated participant's data is the same from the same seed on any machine
        fidelity["load_1m"] = None if self.session.simulated else self.load_fn()
        reasons: list[str] = []
        if fidelity["n_chunks"] and run.live is None:
            reasons = outside_tolerance(fidelity, self.tolerance)
            fidelity["fidelity_flag"] = int(bool(reasons))
        rec.timings.update(fidelity)
        if reasons:
            rec.events.append(
                {"kind": "fidelity", "t_ms": None, "reasons": reasons,
                 "tolerance": self.tolerance.describe()}
            )  # fmt: skip
        return reasons

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
            self.store.release_trial(self.session, run.trial.index)
            what = "released"
        elif run is not None:
            what = "in_flight"
        self.interrupt(by)
        return what

    # -- the end -----------------------------------------------------------------------------
    @property
    def end_questions(self) -> list[Question]:
        return list(self.study.end_questions)

    def finish(self, responses: dict[str, tuple[Any, float | None]] | None = None) -> None:
        """Store the end-of-study answers and mark the session completed."""
        if responses:
            self.store.commit_end_responses(self.session, responses)
        self.start_running()
        self.store.set_state(self.session, "completed")
