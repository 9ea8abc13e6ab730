"""One trial as it happens (`TrialRun`): send, stream, abandonment or timeout, answers and
key presses, and what is stored of it (`TrialRecord`).

What differs between trial kinds (a request sent at the send, a trial held after steps,
what each adds to the record) is the kind's (`uxlab.kinds`): the run asks its `KindRun`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from uxlab.clock import Clock
from uxlab.kinds import KindRun, PlayedTrial, TrialKind
from uxlab.outcomes import EventKind, Outcome
from uxlab.phases import DONE, LIVE, Phase
from uxlab.player import Playback, PlaybackLog, Schedule, Sink
from uxlab.streams.recording import Chunk
from uxlab.study.design import Trial
from uxlab.study.spec import Question, Study, step_response_id
from uxlab.study.stimulus import trial_kind

AskStep = Callable[[int, list[Question]], Awaitable[None]]
"""Puts the questions asked after a step and returns once they are answered
(`TrialRun.answer_step`); cancelled when the participant gives up meanwhile."""


@dataclass
class TrialRecord:
    """What `store.trials.commit` takes for one trial."""

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
    schedule: Schedule
    study: Study
    clock: Clock
    shown_at_ms: float
    """When the trial screen was shown (absolute): keys before the send are kept too."""
    t0_ms: float | None = None
    phase: Phase = Phase.READY
    """ready -> waiting -> streaming -> over (the stream is done) -> answered; a trial held
    after a step for its questions is `asking` meanwhile (`uxlab.phases`)."""
    abandoned_at_ms: float | None = None
    abandoned_while: Phase | None = None
    timed_out: bool = False
    log: PlaybackLog | None = None
    responses: dict[str, tuple[Any, float | None]] = field(default_factory=dict)
    keys: list[tuple[float, str, str]] = field(default_factory=list)
    """(absolute ms, key name, phase) of every key press during the trial."""
    answer_times: list[tuple[float, str, float | None]] = field(default_factory=list)
    player: Playback | None = None
    typed_prompt: str | None = None
    """A kind whose participant types the prompt (`TrialKind.prompt_typed`): what was sent."""
    quit_at_ms: float | None = None
    """When the participant quit with this trial's outcome final (absolute), else None."""
    quit_by: str = "key"
    """What quit: `key` (Ctrl+Q/Ctrl+C), or the signal (`SIGHUP`: the terminal was closed)."""
    committed_sha256: str | None = None
    """Set once the trial is stored (a trial is committed once)."""
    noted: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    """(absolute ms, kind, data) of other events during the trial (a terminal `resize`)."""
    kind: TrialKind = field(init=False)
    """The kind the trial plays as (`uxlab.study.stimulus.trial_kind`)."""
    kind_run: KindRun = field(init=False)
    """What the kind keeps of this trial while it plays (made when the trial is shown: a
    live trial's HTTP client is made then)."""

    def __post_init__(self) -> None:
        self.kind = trial_kind(self.study, self.trial)
        self.kind_run = self.kind.begin(self.schedule, self.clock)

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
        self.phase = Phase.WAITING
        self.kind_run.send(self.prompt, self.t0_ms)  # e.g. a live request, before any repaint
        return self.t0_ms

    @property
    def step_asks(self) -> list[int]:
        """The trial's steps followed by questions (`Study.ask_after_steps`)."""
        n_steps = self.kind_run.n_steps
        if n_steps is None or not self.study.step_questions:
            return []
        return self.study.asks_in(n_steps)

    async def play(self, sink: Sink, ask: AskStep | None = None) -> PlaybackLog:
        """Play the schedule into `sink` from t0, stopping at the study's timeout.

        A trial with questions after steps holds after each asked step while
        `ask` puts them (without `ask` it plays through and they stay unanswered); the next
        step's clock restarts at the last answer (the kind's player).
        """
        if self.t0_ms is None:
            raise RuntimeError("send() the prompt before playing the trial")
        asks = self.step_asks if ask is not None else []
        asker = self._asker(ask) if ask is not None else None
        player = self.kind_run.player(sink, self._shown, asks, asker)
        self.player = player
        if self.abandoned_at_ms is not None:  # gave up before the play started
            player.cancel()
        log = await player.play(self.t0_ms, stop_at_ms=self.timeout_ms)
        await self.kind_run.finish()  # e.g. a live request stopped or awaited
        self.log = log
        if self.abandoned_at_ms is None and log.cancelled_at_ms is not None:
            self.timed_out = True
        self.phase = Phase.OVER
        return log

    def _shown(self, chunk: Chunk) -> None:
        """A chunk goes to the screen: the first with text moves the run to streaming."""
        if chunk.text and self.phase == Phase.WAITING:
            self.phase = Phase.STREAMING

    def _asker(self, ask: AskStep) -> Callable[[int], Awaitable[None]]:
        async def asker(step: int) -> None:
            before, self.phase = self.phase, Phase.ASKING
            try:
                await ask(step, list(self.study.step_questions))
            finally:
                if self.phase == Phase.ASKING and self.abandoned_at_ms is None:
                    self.phase = before

        return asker

    def answer_step(self, step: int, question_id: str, value: Any, rt_ms: float | None) -> None:
        """Keep one answer given after a step, as `q_<id>_s<step>` (and its response time)."""
        self.answer(step_response_id(question_id, step), value, rt_ms)

    def abandon(self, t_ms: float | None = None) -> bool:
        """Give up on the stream now (waiting, mid-stream or during questions after a step);
        False when it is already over."""
        if self.phase not in LIVE or self.abandoned_at_ms is not None:
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
            return self.phase == Phase.ANSWERED
        return self.abandoned_at_ms is not None or self.phase in DONE

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
            {
                "kind": EventKind.SHOWN,
                "t_ms": self.shown_at_ms - t0,
                "prompt_chars": len(self.prompt),
            }
        ]
        if self.trial.attention is not None:  # the check's text was shown, not a prompt
            events[0] = {
                "kind": EventKind.SHOWN,
                "t_ms": 0.0,
                "attention_check": True,
                "text_chars": len(self.trial.attention.text),
            }
        if self.t0_ms is not None:
            events.append({"kind": EventKind.SEND, "t_ms": 0.0})
        shown_first = shown_last = source = None
        if self.log is not None:
            events.extend(chunk_events(self.log))
            shown_first, shown_last, source = shown_span(self.log)
        if self.abandoned_at_ms is not None:
            events.append(
                {
                    "kind": EventKind.ABANDON,
                    "t_ms": self.abandoned_at_ms - t0,
                    "while": self.abandoned_while,
                }
            )
        if self.timed_out and self.log is not None:
            events.append({"kind": EventKind.TIMEOUT, "t_ms": self.log.cancelled_at_ms})
        for t_ms, name, phase in self.keys:
            events.append({"kind": EventKind.KEY, "t_ms": t_ms - t0, "key": name, "phase": phase})
        for t_ms, kind, data in self.noted:
            events.append({**data, "kind": kind, "t_ms": t_ms - t0})
        for t_ms, qid, rt_ms in self.answer_times:
            events.append(
                {"kind": EventKind.ANSWER, "t_ms": t_ms - t0, "question": qid, "rt_ms": rt_ms}
            )
        responses = dict(self.responses)
        if self.quit_at_ms is not None:
            unanswered = self.unanswered
            responses.update({qid: (None, None) for qid in unanswered})
            events.append(
                {
                    "kind": EventKind.QUIT,
                    "t_ms": self.quit_at_ms - t0,
                    "phase": self.phase,
                    "unanswered": unanswered,
                    "by": self.quit_by,
                }
            )
        events.append(
            {
                "kind": EventKind.OUTCOME,
                "t_ms": None if self.log is None else ended_ms(self.log),
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
        played = PlayedTrial(self.log, self.abandoned_while, bool(self.study.step_questions))
        self.kind_run.add_to_record(timings, events, played)  # the kind's columns and events
        return TrialRecord(self.outcome, timings, responses, events)


def chunk_events(log: PlaybackLog) -> list[dict[str, Any]]:
    """One stored `chunk` event per chunk played: when it was due, handed out and shown
    (and, where a glass probe ran, painted in the terminal window: `painted_ms`,
    `shared_repaint`)."""
    events = []
    for r in log.records:
        event: dict[str, Any] = {
            "kind": EventKind.CHUNK,
            "t_ms": r.shown_ms,
            "index": r.index,
            "scheduled_ms": r.scheduled_ms,
            "handed_ms": r.handed_ms,
            "queued_ms": r.queued_ms,
            "flushed_ms": r.flushed_ms,
            "channel": r.channel,
            "n_chars": r.n_chars,
        }
        if r.painted_ms is not None:
            event["painted_ms"] = r.painted_ms
            event["shared_repaint"] = r.shared_repaint
        events.append(event)
    return events


def shown_span(log: PlaybackLog) -> tuple[float | None, float | None, str | None]:
    """When the first and the last visible chunk were shown, and what "shown" is measured
    by for all of them (`flushed`, `queued` or `handed`); all None when nothing was shown."""
    visible = [r for r in log.records if r.n_chars > 0]
    if not visible:
        return None, None, None
    if all(r.flushed_ms is not None for r in visible):
        source = "flushed"
    elif all(r.queued_ms is not None or r.flushed_ms is not None for r in visible):
        source = "queued"
    else:
        source = "handed"
    return visible[0].shown_ms, visible[-1].shown_ms, source


def ended_ms(log: PlaybackLog) -> float | None:
    """When the play ended: finished, else cancelled, else cut by an error (ms from t0)."""
    for t_ms in (log.finished_ms, log.cancelled_at_ms, log.error_at_ms):
        if t_ms is not None:
            return t_ms
    return None
