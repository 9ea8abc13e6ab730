"""The driver: simulated participants through `uxlab.session.StudySession` on a virtual clock.

`simulate_session` takes one observer through the same design, trial list, store and export
as a person in `uxlab run`, on a `VirtualClock`, so the "shown" times are the schedule's
times and a 60-trial session takes a fraction of a second. Sessions are marked simulated
and their environment holds `simulated_truth`: the population values, this person's own
values and the pooled thresholds they imply. Everything is drawn from
`numpy.random.default_rng` seeded by (seed, participant, trial).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from uxlab.clock import VirtualClock
from uxlab.errors import UxlabError
from uxlab.outcomes import Outcome
from uxlab.phases import Phase
from uxlab.player import HeadlessSink
from uxlab.session import StudySession, TrialRun
from uxlab.simulate.adaptive_truth import adaptive_grid_of, median_point_of, own_points_ms
from uxlab.simulate.observers import (
    Cues,
    Observer,
    PopulationTruth,
    cues_after_step,
    study_truth,
)
from uxlab.simulate.scripted import TrialScript
from uxlab.store.store import Store
from uxlab.streams.recording import Recording
from uxlab.study.spec import Study


class GiveUpClock(VirtualClock):
    """A VirtualClock that stops at a planned give-up instant and calls `on_give_up` there.

    A sleep past the instant wakes at it instead, so the player sees the give-up on its own
    clock exactly as it sees a key press: no second task, no real time.
    """

    def __init__(self, start_ms: float = 0.0) -> None:
        super().__init__(start_ms)
        self.give_up_at_ms: float | None = None
        self.on_give_up: Callable[[float], Any] | None = None

    async def sleep_until(self, t_ms: float) -> None:
        at = self.give_up_at_ms
        if at is not None and t_ms > at and self.on_give_up is not None:
            self._now_ms = max(self._now_ms, at)
            callback, self.on_give_up, self.give_up_at_ms = self.on_give_up, None, None
            callback(self._now_ms)
            await asyncio.sleep(0)
            return
        await super().sleep_until(t_ms)


@dataclass
class SimulatedRun:
    """What one simulated participant did."""

    participant: str
    session_id: str
    observer: Observer
    n_trials: int
    n_abandoned: int
    seconds: float
    adaptive: dict[str, Any] | None = None
    resumed: bool = False
    """True when this run continued a session an earlier (killed) run left unfinished."""
    kept: bool = False
    """True when an earlier run had already completed this participant (nothing was redone)."""


def simulated_environment(
    study: Study, truth: PopulationTruth, observer: Observer, seed: int
) -> dict[str, Any]:
    """The environment record of a simulated session: the truth it was drawn from, and on
    an adaptive study what the session's own estimate estimates (`adaptive_truth`): the
    median person's point (shared) and this person's."""
    record = {**study_truth(study, truth), "participant": observer.own()}
    grid = adaptive_grid_of(study)
    if grid is not None:
        args = (grid.grid_ms, grid.cues, grid.target, grid.cap_ms)
        record["adaptive_point_ms"] = {grid.factor: median_point_of(study, truth)}
        record["participant"]["adaptive_point_ms"] = float(own_points_ms([observer], *args)[0])
    return {"simulated": True, "simulated_truth": record, "simulation_seed": seed}


def draw_observer(study: Study, truth: PopulationTruth, seed: int, number: int) -> Observer:
    """Simulated participant `number`'s observer (the same person on every path)."""
    return Observer.draw(truth, np.random.default_rng([seed, number, 0]), study)


def trial_rng(seed: int, number: int, trial_index: int) -> np.random.Generator:
    """The generator of one trial's choices (`TrialScript`)."""
    return np.random.default_rng([seed, number, 1, trial_index])


def end_rng(seed: int, number: int) -> np.random.Generator:
    """The generator of the end-of-study answers."""
    return np.random.default_rng([seed, number, 2])


def participant_id(seed: int, number: int) -> str:
    """`SIM-s<seed>-<number>`: pseudonymous, and distinct per seed in one database."""
    return f"SIM-s{seed}-{number:03d}"


def recorded_schedule(run: TrialRun) -> Recording:
    """The recording `run` plays: simulated participants need its timing before it plays,
    which a live stream does not have (the CLI refuses live studies before this point)."""
    if not isinstance(run.schedule, Recording):
        raise UxlabError(f"trial {run.trial.index}: a live stream cannot be simulated")
    return run.schedule


async def run_trial(
    run: TrialRun, observer: Observer, clock: GiveUpClock, rng: np.random.Generator
) -> None:
    """Send, watch (maybe give up) and answer one trial on the virtual clock.

    Questions after a step are answered on what was seen so far (`cues_after_step`); the
    time spent answering moves the planned give-up on, as it holds the trial.
    """
    script = TrialScript.draw(observer, recorded_schedule(run), rng)
    if run.is_check:  # an attention check: its text and its one question, nothing streams
        for q in run.questions:
            value, rt = script.answer(q, run.trial.attention)
            clock.advance(rt)
            run.answer(q.id, value, rt)
        run.phase = Phase.ANSWERED
        return
    clock.advance(script.send_delay_ms)
    t0 = run.send()
    if script.give_up_ms is not None:
        clock.give_up_at_ms = t0 + script.give_up_ms
        clock.on_give_up = run.abandon

    async def ask(step: int, questions: list[Any]) -> None:
        cues = cues_after_step(recorded_schedule(run), step)
        for q in questions:
            value, rt_ms = script.answer(q, cues=cues)
            clock.advance(rt_ms)
            if clock.give_up_at_ms is not None:
                clock.give_up_at_ms += rt_ms
            run.answer_step(step, q.id, value, rt_ms)

    await run.play(HeadlessSink(), ask)
    clock.give_up_at_ms, clock.on_give_up = None, None
    for q in run.questions:
        value, rt = script.answer(q, run.trial.attention)
        clock.advance(rt)
        run.answer(q.id, value, rt)


async def simulate_session(
    study: Study,
    store: Store,
    number: int,
    *,
    seed: int = 0,
    truth: PopulationTruth | None = None,
    stop_after: int | None = None,
) -> SimulatedRun:
    """Take simulated participant `number` through the study (resuming if unfinished).

    A participant who already completed the study (an earlier run of the same command, e.g.
    one that was killed later on) is kept as stored: returned with `kept=True`.

    `stop_after` ends the run after that many trials in this call, leaving a trial in
    flight as a killed process would (for resume tests).
    """
    truth = truth or PopulationTruth()
    started = time.perf_counter()
    pid = participant_id(seed, number)
    observer = draw_observer(study, truth, seed, number)
    env = simulated_environment(study, truth, observer, seed)
    before = store.sessions.latest_state(study, pid)
    if before is not None and before[0] == "completed":  # a rerun after a kill: keep it
        return SimulatedRun(pid, before[2], observer, before[1], 0, 0.0, None, kept=True)
    clock = GiveUpClock()
    ss = StudySession.open(study, store, pid, environment=env, simulated=True, clock=clock)
    if ss.needs_consent:
        ss.accept_consent()
    ss.start_running()
    n = abandoned = 0
    while (trial := ss.next_trial()) is not None:
        run = ss.begin(trial)
        if stop_after is not None and n >= stop_after:
            break  # this trial stays in flight, as after a kill
        await run_trial(run, observer, clock, trial_rng(seed, number, trial.index))
        ss.commit(run)
        n += 1
        abandoned += run.outcome == Outcome.ABANDONED
    else:
        rng = end_rng(seed, number)
        answers = {
            q.id: (observer.answer(q, Cues(None, None, 0, 0), rng), 0.0) for q in ss.end_questions
        }
        ss.finish({k: v for k, v in answers.items() if v[0] is not None})
    return SimulatedRun(
        pid, ss.session.id, observer, n, abandoned, time.perf_counter() - started,
        ss.adaptive_state(), resumed=ss.resumed,
    )  # fmt: skip


class NotSimulatable(UxlabError):
    """Simulated participants cannot take this study (its kind says why)."""


def refuse_unsimulatable(study: Study) -> None:
    """Raise `NotSimulatable` when simulated participants cannot take `study` (its kind
    says why: a live study sends its prompts to a live model)."""
    problem = study.kind.simulate_problem
    if problem is not None:
        raise NotSimulatable(f"{study.path}: cannot simulate study {study.id!r}: {problem}")


def simulate_cohort(
    study: Study,
    store: Store,
    n_participants: int,
    *,
    seed: int = 0,
    truth: PopulationTruth | None = None,
    progress: Callable[[SimulatedRun], None] | None = None,
) -> list[SimulatedRun]:
    """Simulate `n_participants` sessions one after another; returns what each did.

    A store opened with `Store.open(db, durable=False)` commits without an fsync per
    transaction, which is what keeps a simulated session well under a second.
    """
    out: list[SimulatedRun] = []
    for number in range(1, n_participants + 1):
        done = asyncio.run(simulate_session(study, store, number, seed=seed, truth=truth))
        out.append(done)
        if progress is not None:
            progress(done)
    return out
