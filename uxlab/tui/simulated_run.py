"""Simulated participants through the real terminal runner: `StudyApp` headless, keys by Pilot.

`simulate_through_ui` runs the study app of `uxlab run` with `App.run_test` and lets an
observer model (`uxlab.simulate`) press the keys a person would: `a` to consent, Enter on
text screens, Enter to send after its send delay, the study's abandonment key when its
patience runs out (on the session clock, while the stream plays), and each question's
answer through the question widgets' keys after its response time. A trial held for its
questions after a step is answered as on the virtual clock (on what was seen so far), and
the planned give-up moves on by the time the hold took. Everything else (the trial list,
adaptive levels, timing, the store) is the runner's own, so this checks the whole path a
person takes. The session is marked simulated, with the truth in its
environment and `through_ui` / `time_scale` beside it.

Times run on a `ScaledClock`: at `time_scale=10` a 5 s wait takes 0.5 s of real time and is
stored as 5,000 ms. The frame cap does not scale, so shown times are as coarse as one
frame times the scale (about 40 ms at 240 fps and x10).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.pilot import WaitForScreenTimeout

from uxlab.errors import UxlabError
from uxlab.kinds import Hold
from uxlab.phases import DONE, Phase
from uxlab.session import StudySession, TrialRun
from uxlab.simulate.driver import (
    draw_observer,
    end_rng,
    recorded_schedule,
    simulated_environment,
    trial_rng,
)
from uxlab.simulate.observers import Cues, Observer, PopulationTruth, cues_after_step
from uxlab.simulate.scripted import ScaledClock, TrialScript, answer_keys
from uxlab.store import Store
from uxlab.study import Study
from uxlab.study.spec import step_response_id
from uxlab.tui.check_screen import CheckScreen
from uxlab.tui.flow_screens import (
    ConsentScreen,
    EndQuestionsScreen,
    EndScreen,
    ParticipantScreen,
    TextScreen,
)
from uxlab.tui.questions import QuestionPanel
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

STALL_S = 120.0
"""Real seconds without the runner moving on before the simulation gives up on it."""


class SimulationStalled(UxlabError):
    """The runner did not reach the screen the simulated participant waited for."""


def ui_participant_id(seed: int, number: int) -> str:
    """`SIM-s<seed>-ui<number>`: apart from the virtual-clock participants of the same seed."""
    return f"SIM-s{seed}-ui{number:03d}"


@dataclass
class UiChoice:
    """One answer the observer gave through the widgets."""

    trial_index: int | None
    """None for an end-of-study question."""
    question_id: str
    value: Any
    """As the widget holds it (and the store keeps it)."""
    rt_ms: float
    """The observer's response time (the stored one adds the runner's latency)."""


@dataclass
class SimulatedTerminalRun:
    """What one simulated participant did in the terminal runner."""

    participant: str
    session_id: str | None
    observer: Observer
    outcome: str
    n_trials: int = 0
    n_abandoned: int = 0
    seconds: float = 0.0
    choices: list[UiChoice] = field(default_factory=list)
    planned_give_ups: dict[int, float] = field(default_factory=dict)
    """trial index -> planned give-up (ms from the send), for trials the observer gave up on."""
    adaptive: dict[str, Any] | None = None


class SimulatedStudyApp(StudyApp):
    """`StudyApp` whose session is marked simulated (nothing else differs)."""

    open_error: UxlabError | None = None

    async def _open_session(self) -> StudySession:
        assert self.participant is not None
        try:
            return StudySession.open(
                self.study, self.store, self.participant, seed=self.seed,
                environment=self.environment, simulated=True, clock=self.clock,
            )  # fmt: skip
        except UxlabError as exc:  # e.g. this participant already completed the study
            self.open_error = exc
            self.exit(self.result)
            await asyncio.Event().wait()  # the flow ends here; shutdown cancels it
            raise


async def _wait_for(app: StudyApp, condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + STALL_S
    while not condition():
        if time.monotonic() > deadline:
            raise SimulationStalled(
                f"simulated participant waited {STALL_S:g} s for {what}; "
                f"the runner shows {type(app.screen).__name__}"
            )
        await asyncio.sleep(0.002)


def _asking(app: StudyApp, question_id: str) -> bool:
    """The question's widget is on screen and has the keyboard focus."""
    focused = app.focused
    return focused is not None and any(
        isinstance(w, QuestionPanel) and w.question.id == question_id
        for w in focused.ancestors_with_self
    )


class _Driver:
    def __init__(self, app: SimulatedStudyApp, pilot: Any, observer: Observer, seed: int,
                 number: int, out: SimulatedTerminalRun) -> None:  # fmt: skip
        self.app, self.pilot, self.observer = app, pilot, observer
        self.seed, self.number, self.out = seed, number, out
        self.clock: ScaledClock = app.clock  # type: ignore[assignment]
        self._presses: list[asyncio.Future[None]] = []
        """Key presses left to settle while the trial goes on (an answer's after a step)."""

    def _done(self) -> bool:
        return self.app.return_value is not None

    async def run(self) -> None:
        app = self.app
        seen: list[Any] = [None]  # the screen last acted on

        def moved_on() -> bool:
            return self._done() or app.screen is not seen[0]

        while True:
            await _wait_for(app, moved_on, "the next screen")
            if self._done():
                return
            screen = seen[0] = app.screen
            if isinstance(screen, TrialScreen):
                await self.trial(screen)
            elif isinstance(screen, CheckScreen):
                await self.check(screen)
            elif isinstance(screen, EndQuestionsScreen):
                await self.end_questions(screen)
            elif isinstance(screen, ConsentScreen):
                await self.pilot.press("a")
            elif isinstance(screen, EndScreen):
                await self.pilot.press("enter")
                await _wait_for(app, self._done, "the app to close")
                return
            elif isinstance(screen, TextScreen):
                await self.pilot.press("enter")
            elif isinstance(screen, ParticipantScreen):
                raise SimulationStalled("the runner asked for a participant id")
            else:  # the blank start screen: wait for the flow's first screen
                seen[0] = None

                def replaced(blank: object = screen) -> bool:
                    return app.screen is not blank

                await _wait_for(app, replaced, "the first screen")

    async def _sleep(self, ms: float) -> None:
        await self.clock.sleep_until(self.clock.now_ms() + ms)

    async def check(self, screen: CheckScreen) -> None:
        """An attention check: read its text, answer its one question (nothing streams)."""
        run = screen.run
        index = run.trial.index
        script = TrialScript.draw(
            self.observer, recorded_schedule(run), trial_rng(self.seed, self.number, index)
        )
        for q in run.questions:
            value, rt_ms = script.answer(q, run.trial.attention)
            await self._answer(q, value, rt_ms, index)
        await _wait_for(
            self.app, lambda: self.app.screen is not screen, "the check to be committed"
        )
        self.out.n_trials += 1

    async def trial(self, screen: TrialScreen) -> None:
        run, app = screen.run, self.app
        index = run.trial.index
        rng = trial_rng(self.seed, self.number, index)
        script = TrialScript.draw(self.observer, recorded_schedule(run), rng)
        await self._sleep(script.send_delay_ms)
        await self.pilot.press("enter")
        await _wait_for(app, lambda: run.t0_ms is not None, "the prompt to be sent")
        await self._watch(run, script, index)
        for q in run.questions:
            value, rt_ms = script.answer(q, run.trial.attention)
            await self._answer(q, value, rt_ms, index)
        if not run.questions and app.screen is screen:
            # nothing to ask after a give-up: the stopped answer stays until Enter
            await _wait_for(
                app,
                lambda: app.screen is not screen or screen.awaiting_next,
                "the next-trial prompt",
            )
            if app.screen is screen:
                await self.pilot.press("enter")
        await _wait_for(app, lambda: app.screen is not screen, "the trial to be committed")
        self.out.n_trials += 1
        self.out.n_abandoned += run.outcome == "abandoned"

    async def _watch(self, run: TrialRun, script: TrialScript, index: int) -> None:
        """From the send to the stream's end: answer each hold after a step, and press the give-up
        key at the planned instant, moved on by the time each hold took (the answering time
        shifts it, as on the virtual clock: patience counts the waiting, not the answering)."""
        assert run.t0_ms is not None
        app, give_up_ms, paused_ms = self.app, script.give_up_ms, 0.0

        def holds() -> list[Hold]:
            return list(run.kind_run.holds)

        n_seen = 0
        while run.phase not in DONE:

            def over_or_asking(n: int = n_seen) -> bool:
                return run.phase in DONE or (run.phase == Phase.ASKING and len(holds()) > n)

            waiter = asyncio.ensure_future(
                _wait_for(
                    app,
                    over_or_asking,
                    "the stream to end or a question after a step",
                )
            )
            pending: set[asyncio.Future[Any]] = {waiter}
            if give_up_ms is not None:
                deadline_ms = run.t0_ms + give_up_ms + paused_ms
                pending.add(asyncio.ensure_future(self.clock.sleep_until(deadline_ms)))
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            if waiter in done:
                waiter.result()  # a stall raises here
            if run.phase == Phase.ASKING and len(holds()) > n_seen:
                hold = holds()[n_seen]
                n_seen += 1
                await self._answer_hold(run, script, index, hold)
                paused_ms += hold.held_ms or 0.0
            elif waiter not in done:  # the give-up instant came first
                if run.phase in (Phase.WAITING, Phase.STREAMING):
                    self.out.planned_give_ups[index] = give_up_ms  # type: ignore[assignment]
                    await self.pilot.press(run.study.abandon.key)
                give_up_ms = None
        presses, self._presses = self._presses, []
        for press in presses:  # the screen may never settle before a long stream's end
            with contextlib.suppress(WaitForScreenTimeout):
                await press

    async def _answer_hold(
        self, run: TrialRun, script: TrialScript, index: int, hold: Hold
    ) -> None:
        """The questions after `hold.step`, answered on what was seen so far (the observer's
        rule of the virtual-clock path); returns when the trial goes on."""
        cues = cues_after_step(recorded_schedule(run), hold.step)
        for q in run.study.step_questions:
            if run.final:  # the trial stopped (its timeout cannot come during a hold)
                return
            value, rt_ms = script.answer(q, cues=cues)
            await self._answer(q, value, rt_ms, index, step_response_id(q.id, hold.step))
        await _wait_for(
            self.app,
            lambda: hold.resumed_ms is not None or run.final,
            "the trial to go on after the questions after a step",
        )

    async def _answer(
        self, q: Any, value: Any, rt_ms: float, trial_index: int | None,
        response_id: str | None = None,
    ) -> None:  # fmt: skip
        """Choose the answer, then confirm it `rt_ms` after the question was painted.

        The widget's response time runs from its first paint to the confirming key, so the
        choosing keys go first and only the confirming key waits for the response time.
        `response_id` is the stored id when it is not the question's (`q_<id>_s<step>`).
        """
        app = self.app
        await _wait_for(app, lambda: _asking(app, q.id), f"question {q.id!r}")
        widget = app.focused
        keys, shown = answer_keys(q, value)
        self.out.choices.append(UiChoice(trial_index, response_id or q.id, shown, rt_ms))
        await self.pilot.press(*keys[:-1])
        if widget is not None and hasattr(widget, "shown_ms"):  # the widget's RT origin
            await _wait_for(app, lambda: widget.shown_ms is not None, f"{q.id!r} painted")
            await self.clock.sleep_until(widget.shown_ms + rt_ms)
        else:
            await self._sleep(rt_ms)
        if response_id is None:
            await self.pilot.press(keys[-1])
        else:  # the trial goes on at this key: Pilot.press would wait for its stream to settle
            self._presses.append(asyncio.ensure_future(self.pilot.press(keys[-1])))

    async def end_questions(self, screen: EndQuestionsScreen) -> None:
        rng, app = end_rng(self.seed, self.number), self.app
        for q in screen.questions:
            value = self.observer.answer(q, Cues(None, None, 0, 0), rng)
            await self._answer(q, value, 0.0, None)
        await _wait_for(app, lambda: app.screen is not screen, "the end screen")


async def simulate_through_ui(
    study: Study,
    store: Store,
    number: int,
    *,
    seed: int = 0,
    truth: PopulationTruth | None = None,
    time_scale: float = 1.0,
    environment: dict[str, Any] | None = None,
    participant: str | None = None,
    size: tuple[int, int] = (80, 24),
) -> SimulatedTerminalRun:
    """Take simulated participant `number` through `StudyApp` headless (see the module doc).

    The observer is the one `simulate_session` draws for `number`; its id is
    `ui_participant_id(seed, number)` unless `participant` says otherwise (the trial list
    depends on the id: `participant_id(seed, number)` replays the virtual-clock participant
    exactly). `environment` adds to the stored environment (e.g. the frame cap).
    """
    truth = truth or PopulationTruth()
    started = time.perf_counter()
    clock = ScaledClock(time_scale)
    observer = draw_observer(study, truth, seed, number)
    env = {
        **(environment or {}),
        **simulated_environment(study, truth, observer, seed),
        "through_ui": True,
        "time_scale": clock.time_scale,
    }
    pid = participant or ui_participant_id(seed, number)
    app = SimulatedStudyApp(study, store, participant=pid, environment=env, clock=clock)
    out = SimulatedTerminalRun(pid, None, observer, "quit")
    async with app.run_test(size=size) as pilot:
        await _Driver(app, pilot, observer, seed, number, out).run()
    if app.open_error is not None:
        raise app.open_error
    result = app.return_value
    out.outcome = result.outcome if result is not None else "quit"
    out.session_id = result.session_id if result is not None else None
    if app.session is not None:
        out.adaptive = app.session.adaptive_state()
    out.seconds = time.perf_counter() - started
    return out


def simulate_cohort_through_ui(
    study: Study,
    db: Path | str,
    n_participants: int,
    *,
    seed: int = 0,
    truth: PopulationTruth | None = None,
    time_scale: float = 1.0,
    durable: bool = False,
    say: Callable[[str], None] = print,
) -> list[SimulatedTerminalRun]:
    """Participants 1..n through the real runner, headless, one after another, stored in
    `db`; one who completed in an earlier run (a rerun after a kill) is kept, not rerun.
    `say` gets a line per participant. Unless `durable`, commits skip the fsync."""
    from uxlab.tui import frame_cap

    env: dict[str, Any] = {"frame_cap_fps": frame_cap(), "headless": True}
    done: list[SimulatedTerminalRun] = []
    with Store.open(db, durable=durable) as store:
        for number in range(1, n_participants + 1):
            before = store.sessions.latest_state(study, ui_participant_id(seed, number))
            if before is not None and before[0] == "completed":  # a rerun after a kill
                say(f"  {ui_participant_id(seed, number)}: already completed, kept")
                continue
            s = asyncio.run(
                simulate_through_ui(
                    study, store, number, seed=seed, truth=truth, time_scale=time_scale,
                    environment=env,
                )
            )  # fmt: skip
            done.append(s)
            say(
                f"  {s.participant}: {s.outcome}, {s.n_trials} trials, {s.n_abandoned} "
                f"abandoned, {len(s.choices)} answers by key ({s.seconds:.1f} s)"
            )
    return done
