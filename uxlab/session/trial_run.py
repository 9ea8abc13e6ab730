"""One trial as it happens (`TrialRun`): send, stream, abandonment or timeout, answers and
key presses, and what is stored of it (`TrialRecord`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from uxlab.clock import Clock
from uxlab.kinds.chain import HeldChainPlayer, chain_steps, offset_at_ms, step_at_ms, step_logs
from uxlab.live.live_request import LiveRun
from uxlab.live.live_schedule import LiveSchedule
from uxlab.outcomes import Outcome
from uxlab.phases import DONE, LIVE, Phase
from uxlab.player import Playback, PlaybackLog, Player, Sink
from uxlab.streams.recording import Chunk, Recording
from uxlab.study.design import Trial
from uxlab.study.spec import Question, Study, step_response_id

AskStep = Callable[[int, list[Question]], Awaitable[None]]
"""Puts a chain's mid-chain questions after a step and returns once they are answered
(`TrialRun.answer_step`); cancelled when the participant gives up meanwhile."""


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
    schedule: Recording | LiveSchedule
    study: Study
    clock: Clock
    shown_at_ms: float
    """When the trial screen was shown (absolute): keys before the send are kept too."""
    t0_ms: float | None = None
    phase: Phase = Phase.READY
    """ready -> waiting -> streaming -> over (the stream is done) -> answered; a chain held
    for mid-chain questions is `asking` meanwhile (`uxlab.phases`)."""
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
        self.phase = Phase.WAITING
        if self.live is not None:  # a live study: the request goes out before any repaint
            self.live.start(self.prompt, self.t0_ms)
        return self.t0_ms

    @property
    def step_asks(self) -> list[int]:
        """A chain trial's steps followed by mid-chain questions (`[chain] ask_after_steps`)."""
        steps = self._chain_steps()
        if steps is None or not self.study.step_questions:
            return []
        return self.study.asks_in(len(steps))

    async def play(self, sink: Sink, ask: AskStep | None = None) -> PlaybackLog:
        """Play the schedule into `sink` from t0, stopping at the study's timeout.

        A chain trial with mid-chain questions holds after each asked step while `ask` puts
        them (without `ask` it plays through and they stay unanswered); the next step's
        clock restarts at the last answer (`uxlab.kinds.chain.HeldChainPlayer`).
        """
        if self.t0_ms is None:
            raise RuntimeError("send() the prompt before playing the trial")
        asks = self.step_asks if ask is not None else []
        player: Playback
        if asks and ask is not None and isinstance(self.schedule, Recording):
            player = HeldChainPlayer(
                self.schedule, sink, self.clock, asks, self._asker(ask), on_chunk=self._shown
            )
        else:
            player = Player(self.schedule, sink, self.clock, on_chunk=self._shown)
        self.player = player
        if self.abandoned_at_ms is not None:  # gave up before the play started
            player.cancel()
        log = await player.play(self.t0_ms, stop_at_ms=self.timeout_ms)
        if self.live is not None:
            await self.live.finish()
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
        """Keep one mid-chain answer, as `q_<id>_s<step>` (and its response time)."""
        self.answer(step_response_id(question_id, step), value, rt_ms)

    def abandon(self, t_ms: float | None = None) -> bool:
        """Give up on the stream now (waiting, mid-stream or during mid-chain questions);
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
        shown_first = shown_last = source = None
        if self.log is not None:
            events.extend(chunk_events(self.log))
            shown_first, shown_last, source = shown_span(self.log)
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
        events.append(
            {
                "kind": "outcome",
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
        if self.live is not None:  # violations, arrivals, due/arrival per chunk, the request
            self.live.add_to_record(timings, events)
        steps = self._chain_steps()
        if steps is not None:  # an agent chain: per-step timings, e2e and the step given up in
            self._chain_record(steps, timings, events)
        return TrialRecord(self.outcome, timings, responses, events)

    def _chain_steps(self) -> list[dict[str, Any]] | None:
        """A chain trial's step timings (None: a single stream, recorded or live)."""
        return chain_steps(self.schedule) if isinstance(self.schedule, Recording) else None

    def _chain_record(
        self, steps: list[dict[str, Any]], timings: dict[str, Any], events: list[dict[str, Any]]
    ) -> None:
        """Add `e2e_ms` (when the answer ended, measured), `abandon_step` and one `step`
        event per step begun: `t_ms` when its marker was handed out, with the scheduled
        `start_ms`, `end_ms`, per-call `ttft_ms`, `step_kind`, `label` and `tool`."""
        handed: dict[int, float] = {}
        if self.log is not None and isinstance(self.schedule, Recording):  # markers handed out
            handed = {s.step: s.started_ms for s in step_logs(self.schedule, self.log)}
        t_abandon = timings["t_abandon_ms"]
        timings["e2e_ms"] = self.log.finished_ms if self.log is not None else None
        holds = list(self.player.holds) if isinstance(self.player, HeldChainPlayer) else []
        if t_abandon is None:
            timings["abandon_step"] = None
        elif self.abandoned_while == Phase.ASKING and holds:
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


def chunk_events(log: PlaybackLog) -> list[dict[str, Any]]:
    """One stored `chunk` event per chunk played: when it was due, handed out and shown
    (and, where a glass probe ran, painted in the terminal window: `painted_ms`,
    `shared_repaint`)."""
    events = []
    for r in log.records:
        event: dict[str, Any] = {
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
