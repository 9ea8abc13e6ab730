"""What a simulated participant does in a trial, and which keys say it: shared by both drivers.

`TrialScript` draws one trial's choices in a fixed order from the trial's own generator
(`default_rng([seed, participant, 1, trial])`): the delay before sending, the give-up
instant (from the schedule's cues), then per question the response time and the answer. The
virtual-clock driver (`uxlab.simulate.driver`) and the terminal driver
(`uxlab.tui.simulated_run`) both use it, so participant N makes the same choices on either
path as long as the trial ends the same way.

`answer_keys` turns an answer into the key presses of the runner's question widgets
(`uxlab.tui.questions`); `ScaledClock` is the real monotonic clock running `time_scale` times
faster, so a study's seconds can be played in tenths of seconds through the real runner.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from uxlab.clock import MonotonicClock
from uxlab.errors import UxlabError
from uxlab.simulate.observers import Cues, Observer, stream_cues
from uxlab.streams.recording import Recording
from uxlab.study.questions import REGISTRY
from uxlab.study.spec import Question


class ScaledClock(MonotonicClock):
    """CLOCK_MONOTONIC run `time_scale` times faster: one real ms is `time_scale` study ms.

    Everything the runner stamps on it (send, chunks, key presses, response times) is in
    study ms, so a 5 s wait at `time_scale=10` takes 0.5 s and is stored as 5,000 ms.
    """

    def __init__(self, time_scale: float = 1.0, spin_ms: float = 1.0) -> None:
        if not (time_scale > 0 and math.isfinite(time_scale)):
            raise UxlabError(f"time scale {time_scale!r}: must be a number > 0 (e.g. 10)")
        super().__init__(spin_ms)
        self.time_scale = float(time_scale)

    def now_ms(self) -> float:  # type: ignore[override]
        return time.perf_counter_ns() / 1e6 * self.time_scale

    async def sleep_until(self, t_ms: float) -> None:
        real_deadline_ms = t_ms / self.time_scale
        remaining_ms = real_deadline_ms - time.perf_counter_ns() / 1e6
        if remaining_ms > self.spin_ms:
            await asyncio.sleep((remaining_ms - self.spin_ms) / 1000.0)
        while time.perf_counter_ns() / 1e6 < real_deadline_ms:
            await asyncio.sleep(0)

    def __repr__(self) -> str:
        return f"ScaledClock(time_scale={self.time_scale})"


@dataclass
class TrialScript:
    """One trial's choices, drawn in a fixed order (see the module docstring)."""

    observer: Observer
    rng: np.random.Generator
    cues: Cues
    send_delay_ms: float
    give_up_ms: float | None
    """Planned give-up, ms from the send (None: waits for the end)."""
    answers: list[tuple[str, Any, float]] = field(default_factory=list)
    """(question id, value, response time ms) in the order they were drawn."""

    @classmethod
    def draw(cls, observer: Observer, schedule: Recording, rng: np.random.Generator) -> TrialScript:
        t = observer.truth
        send_delay_ms = float(rng.lognormal(math.log(t.send_delay_median_ms), 0.3))
        cues = stream_cues(schedule)
        return cls(observer, rng, cues, send_delay_ms, observer.give_up_ms(cues, rng))

    def answer(
        self, q: Question, attention: Any = None, cues: Cues | None = None
    ) -> tuple[Any, float]:
        """The next question's (value, response time ms); `cues` of part of the trial (a
        question after a step, `cues_after_step`) instead of the whole trial's."""
        rt_ms = float(self.rng.lognormal(math.log(self.observer.truth.rt_median_ms), 0.4))
        value = self.observer.answer(q, self.cues if cues is None else cues, self.rng, attention)
        self.answers.append((q.id, value, rt_ms))
        return value, rt_ms


def answer_keys(q: Question, value: Any) -> tuple[list[str], Any]:
    """The keys that give `value` to question `q` in the runner, and the value they give
    (`QuestionType.answer_keys` of its type, `uxlab.study.questions`).

    The value differs from `value` only where the widget cannot hold it: a slider moves in
    steps (its value is rounded to the step) and a free-text box needs some text
    (`uxlab.study.questions.FREE_TEXT_ANSWER` for an observer who has nothing to type).
    """
    if q.type not in REGISTRY:
        raise UxlabError(f"question {q.id!r}: no keys for type {q.type!r}")
    return REGISTRY[q.type].answer_keys(q, value)
