"""How a trial ended: the one list of trial outcomes (`outcome` in the trial table), and
the one list of stored event kinds (`kind` in the events table and `events.csv`).

`Outcome` is a `StrEnum`: each member is its stored text (`Outcome.TIMED_OUT == "timed_out"`),
so it goes into SQLite, CSV and JSON as that text. `FINISHED` are the outcomes of a trial
that played to its end and was answered; `interrupted` is set by the store alone, for a trial
in flight when its process stopped. `trial_table_spec.OUTCOMES` (contract 2 as data, which
the analysis reads) lists the same values, and a test checks they agree.

`EventKind` is a `StrEnum` too: what one stored event is. A test runs sessions through the
store and checks that every kind it finds is a member.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """How one trial ended."""

    COMPLETED = "completed"
    """The stream played to its end."""
    ABANDONED = "abandoned"
    """The participant gave up while it played (`t_abandon_ms` says when)."""
    TIMED_OUT = "timed_out"
    """The study's trial timeout ended it."""
    ERROR = "error"
    """The stream ended with an error event."""
    INTERRUPTED = "interrupted"
    """The process stopped (quit, hang-up, crash) while the trial was in flight."""


FINISHED = (Outcome.COMPLETED, Outcome.ABANDONED, Outcome.TIMED_OUT, Outcome.ERROR)
"""What a trial that played to its end can be stored with (`store.trials.commit`)."""


class EventKind(StrEnum):
    """What one stored event is (`kind` in the events table; docs/reference/trial-table.md)."""

    SHOWN = "shown"
    """The trial's screen appeared (its prompt, or an attention check's text)."""
    SEND = "send"
    """The prompt was sent: t = 0."""
    CHUNK = "chunk"
    """A chunk played: when it was due, handed out, shown (and painted)."""
    KEY = "key"
    """A key press during the trial (typed text only as `char`)."""
    ANSWER = "answer"
    """A question answered (`question`, `rt_ms`)."""
    ABANDON = "abandon"
    """The participant gave up (`while`: what was on screen)."""
    TIMEOUT = "timeout"
    """The study's trial timeout ended the stream."""
    QUIT = "quit"
    """The participant or a signal quit during the trial."""
    OUTCOME = "outcome"
    """How the trial ended (`Outcome`), and what "shown" was measured by."""
    FIDELITY = "fidelity"
    """The trial was played outside the study's timing tolerance (the reasons)."""
    RESIZE = "resize"
    """The terminal was resized (during a trial, or between trials as a session event)."""
    TERMINAL = "terminal"
    """The terminal's size at a session's start or resume (a session event)."""
    STEP = "step"
    """An agent chain's step began on screen."""
    HOLD = "hold"
    """An agent chain was held for questions after a step."""
    ARRIVAL = "arrival"
    """A live model's event arrived (live trials)."""
    LIVE_REQUEST = "live_request"
    """The live request: its endpoint, status and timings (live trials)."""
